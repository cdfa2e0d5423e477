// Package pattern parses text lines with a Loki-style pattern expression:
// literal text with captures between it, such as
//
//	<ip> - <user> [<time>] "<method> <path> <proto>" <status> <bytes> "<referer>" "<ua>"
//
// # Syntax
//
// <name> captures, where name is [a-zA-Z_][a-zA-Z0-9_]*; <_> skips; every
// other byte, '<' included when it does not open such a capture, is
// literal. Two captures may not be adjacent (nothing would say where one
// ends), a name may not repeat, and at least one capture must be named.
//
// # Matching
//
// A leading literal must start the line. A capture extends, non-greedily,
// to the first place the literal after it matches; a capture that ends the
// pattern takes the rest of the line, and text after a trailing literal is
// ignored (as in Loki). The first place a literal matches is always the
// right one, because the rest of the pattern can only do better with more
// line left, so matching is one pass of literal searches (bytes.Index),
// with no backtracking but the one retry of the timestamp rule below.
// Three rules differ from Loki's pattern stage, for the sake of ingest and
// of real logs:
//
//   - A line matches only if every literal is found. Loki gives a line
//     that lacks a literal partial captures (the capture before it takes
//     the rest); here such a line is kept unmatched (see Records).
//   - Spaces are flexible: a run of spaces in a literal matches a whole
//     run of one or more spaces in the line (a run is never split), so
//     column-padded logs ("INFO  [", "Jul  1", "  1702  2395") parse with
//     single spaces in the pattern, and the padding that a space in the
//     pattern stands for goes to no capture. Options.ExactSpaces restores
//     Loki's byte-exact literals.
//   - A capture named time, _time, timestamp or ts first takes the whole
//     timestamp at its start, when package timestamp recognizes one there
//     (in Options.TimeLayout, for formats that cannot be detected),
//     the next literal matches right after it and the rest of the pattern
//     then matches. So "<time> <level>" captures "2015-10-18 18:01:47,978"
//     whole, where Loki would stop at the first space. Otherwise the
//     ordinary rule applies ("<time>,<ms>" splits at the comma). The rule
//     changes where a time capture ends, never whether a line matches.
//
// # Records
//
// Every named capture becomes a String field, the empty string included,
// holding its bytes from the line (no copy, no unescaping). Values are not
// typed: "200" stays text, as in Loki, because the pattern says nothing
// about what a capture holds and guessing would print "007" as 7; the
// query engine compares numerically when a query asks it to. Which field
// becomes the record's _time, _msg and stream labels is the Builder's
// choice by field name (name a capture time, msg, host, ...).
//
// A line the pattern does not match is kept, never dropped and never
// failed: it becomes a record whose _msg is the whole line, with no fields
// and the receive time, counted in Batch.Unmatched. A matched line whose
// pattern names no message field has the whole line as its _msg.
//
// This package must never allocate per line in steady state, use package
// regexp, or reject a line for not matching. A Parser is immutable after
// Compile and safe for concurrent use.
package pattern
