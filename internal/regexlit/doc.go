// Package regexlit derives, from a regular expression, the literals every
// text it matches must contain: a prefilter that a literal search (one
// bytes.Index, or one pass of a literal.Set) evaluates far faster than the
// regexp runs, so that the regexp runs only on the texts that pass, and
// not at all when the regexp is exactly "contains one of these literals"
// (error|fatal|panic, (?i)timeout) or, anchored, "is one of these
// strings" (a label matcher's info|warn).
//
// The prefilter is a formula in conjunctive normal form, an AND of
// groups each an OR of literals, each literal exact or folding ASCII
// case, in the manner of Russ Cox's codesearch and RE2's prefilter tree:
// sound (every text the regexp matches satisfies it) and bounded (at most
// maxSet literals a group, maxGroups groups); where an analysis would
// exceed a bound or is unsure it requires less, down to nothing, which
// every text satisfies.
//
// It knows nothing of queries, storage or records, and must not: it takes
// a regexp's syntax and returns literals. Searching them is the literal
// package's job; Prefilter.Matcher wires the two.
package regexlit
