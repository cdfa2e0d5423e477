// Package regex parses text lines with a Go RE2 regular expression whose
// named groups, (?P<name>re) or (?<name>re), become fields.
//
// The expression is unanchored, as in Loki's regexp stage and promtail's
// regex stage: write ^ and $ to anchor it. Every named group that takes
// part in the match becomes a String field holding its bytes from the line
// (the empty string included); a group that does not take part (the other
// side of an alternation, an unused optional group) adds no field. Unnamed
// groups add nothing. At least one group must be named, and a name may
// not repeat. Which field becomes _time, _msg and stream labels is the
// Builder's choice by field name.
//
// A line the expression does not match is kept, never dropped and never
// failed: it becomes a record whose _msg is the whole line, with no fields
// and the receive time, counted in Batch.Unmatched. A matched line whose
// expression names no message group has the whole line as its _msg.
//
// Cost: package regexp has no append-style API, so FindSubmatchIndex
// allocates its result, one slice per matched line (unmatched lines
// allocate nothing). That is the one allocation per line this package
// makes, and its tests assert exactly that count. Prefer package pattern,
// which allocates nothing and runs several times faster, wherever its
// syntax can say what is needed.
//
// This package must never reject a line for not matching, or run an
// expression other than RE2's (no backtracking engine, so no catastrophic
// inputs). A Parser is immutable after Compile and safe for concurrent use.
package regex
