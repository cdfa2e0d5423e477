// Package literal finds whether a text contains any of a set of
// literals: what a chain of line filters joined by "or" asks of every
// line (|= "a" or "b" or ...), and what alerting rules over many terms
// will ask.
//
// A few literals are searched one by one with bytes.Index, whose
// vectorised search wins while the set is small; more are compiled into
// one Aho-Corasick automaton that reads each byte of the text once,
// whatever the number of literals. Matching may fold ASCII case. Byte
// classes keep the automaton's table small: github.com/cloudflare/
// ahocorasick, as fast per byte, keeps two arrays of 256 pointers per
// state (4 KiB; some 500 MB for 20,000 ten-byte terms), and
// github.com/BobuSumisu/aho-corasick was 1.5-4 times slower; neither
// folds case.
//
// The package knows nothing of queries, storage or records, and must
// not: it takes bytes and answers yes or no.
package literal
