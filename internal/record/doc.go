// Package record is sluice's data model: the Record, the typed Field, and
// the Batch that carries many records from the parsers to every later stage
// (rules, the write-ahead log, the store, sinks and queries).
//
// A Batch owns one input buffer, Data. Every byte a record refers to (its
// original line, its message, each field's raw value) is a Span, an offset
// and length into Data, so parsing copies nothing. Views stay valid until
// the batch is Reset or returned to its pool; a stage that keeps values
// beyond that (the store) copies what it keeps.
//
// Field names and stream label sets repeat from line to line, so they are
// interned once into tables (Names, Streams) that the parser owns and the
// batch points to. Records then carry small integer ids instead of strings.
//
// The Builder is the one way records enter a batch: format parsers hand it
// tokens, and it resolves the record's timestamp, message and stream from
// the fields according to a Config. Parsers are thereby pure tokenizers and
// the normalization rules live in one place.
//
// This package must never do I/O, start goroutines, or know of any wire
// protocol or storage format.
package record
