// Package json parses JSON log lines (NDJSON) into records, validating
// each line fully against RFC 8259 in the same single pass that types and
// flattens its fields. It never builds a tree and never copies a value:
// every field is a view into the input.
//
// # What a line becomes
//
// A line holding an object becomes one record. Nested objects are
// flattened to dotted names ({"http":{"status":200}} gives http.status);
// an empty nested object and every array are kept as their JSON text;
// integers that fit int64 are Int, larger ones BigInt (exact text), all
// others Float; strings are kept as written between their quotes and
// flagged Escaped when they hold escapes, decoded only when someone needs
// the text. Duplicate keys are all kept, in input order.
//
// A line holding any other JSON value (a string, a number, an array) is
// kept as a record whose message is that value, with no fields.
//
// # Policies
//
//   - Invalid UTF-8 inside a string does not reject the line: the value is
//     flagged BadUTF8 and counted in Batch.BadUTF8, the original line is
//     kept byte for byte, and decoding the value as text yields U+FFFD for
//     each invalid sequence. Invalid bytes outside strings are syntax
//     errors.
//   - An escaped lone surrogate (\ud800) is accepted, as RFC 8259 permits
//     it syntactically, and decodes to U+FFFD.
//   - Nesting deeper than MaxDepth (objects and arrays together) rejects
//     the line, as does any syntax error; the error names the column and,
//     when inside a value, the field.
//   - Whitespace around the value, a CRLF terminator and a UTF-8 byte
//     order mark at the start of the input are accepted (the last two are
//     handled by package lines).
//
// # Speed
//
// Keys are read through a shape cache (shape.go) that predicts each key
// from the one before it; string ends past their first eight bytes are
// found 32 bytes at a time with AVX2 where the CPU has it (special_amd64.s),
// eight at a time otherwise. BENCHMARKS.md has the figures.
//
// This package must never do I/O, allocate per line in steady state, or
// know anything of storage.
package json
