// Package logfmt parses logfmt lines (`key=value key2="quoted value"
// bare_key`) into records, one line at a time, as a lines.Parser.
//
// The grammar follows go-logfmt and Loki's logfmt parser:
//
//   - Fields are separated by whitespace (any byte <= ' ').
//   - A key is a run of bytes other than whitespace, '=' and '"'; it must
//     be valid UTF-8.
//   - An unquoted value runs to the next whitespace. It may hold '=' and
//     '"' (URLs often do), which go-logfmt rejects and we keep.
//     Unquoted values are typed: a JSON integer is Int (BigInt past
//     int64), a JSON number with a fraction or exponent is Float, true and
//     false are Bool; anything else (007, +1, 1.5ms, null) is String.
//   - A quoted value is always String. Its backslash escapes are kept as
//     written and flagged Escaped; record.AppendUnescaped decodes them.
//   - A bare key (no '=') gets the empty string, as in Loki, where
//     `key` and `key=` both yield key="". Its Raw is an empty span just
//     after the key.
//   - Duplicate keys are kept: each occurrence is its own field, in input
//     order. Nothing is merged or dropped.
//   - A value holding invalid UTF-8 is kept byte-exact and flagged
//     BadUTF8 (and counted in Batch.BadUTF8).
//
// A line fails, with the column of the problem, on: a '=' with no key
// before it, a '"' inside or at the start of a key, an unterminated quoted
// value, a byte other than whitespace right after a closing quote, and a
// key that is not valid UTF-8. A line of only whitespace is a record with
// no fields.
//
// The package owns only the logfmt grammar. It must never allocate per
// line in steady state, never see or handle newlines (package lines does),
// and never decide time, message or stream: the record.Builder does, from
// the fields it is given.
package logfmt
