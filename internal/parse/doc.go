// Package parse turns input bytes of any supported format into record
// batches. Each format is a package of its own below this one (json,
// logfmt, text, syslog, pattern, regex); lines splits input into lines,
// and this package names the formats and chooses among them.
//
// Parsers are pure: no I/O, no goroutines, no allocation per line in
// steady state.
package parse
