// Package pattern mines line patterns from log lines with a variant of the
// Drain algorithm (He et al., "Drain: An Online Log Parsing Approach with
// Fixed Depth Tree", ICWS 2017), as Loki's /patterns endpoint answers them:
// a line's constant text with `<_>` where lines of the same statement
// differ, and how many lines each pattern matched per time step.
//
// A line is cut into tokens: words (runs of letters, digits and `_ . - /
// @ : + %`), single punctuation characters and runs of blanks. Only words
// vary: punctuation and blanks are the pattern's frame. Lines are grouped
// by their tokens' count, then by their first word (a word holding
// a digit is taken for a value and goes to a wildcard branch), and a line
// joins the most similar cluster of its group (similarity: the share of
// its words equal to the cluster's, at least Similarity), which then
// generalises every word where they differ to `<_>`.
//
// The package knows nothing of storage or queries: it takes lines and
// times. It must never keep a line's bytes past Add: clusters copy what
// they keep.
package pattern
