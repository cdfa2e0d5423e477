// Package logql is the LogQL language: its lexer, parser, syntax tree and
// printer. Parse reads any LogQL query, a log query (*LogExpr) or a metric
// query (SampleExpr), and reports a *ParseError with the line and column
// of the offending token, worded as Loki words it where that is known.
// Every node prints canonical LogQL with String: parsing that text gives
// an equal tree.
//
// The parser checks what Loki checks when it parses: regular expressions
// and patterns are compiled, ip() arguments, label names and the rules of
// range and vector aggregations are validated. Templates of line_format
// and label_format are kept as text; the executor compiles them.
//
// It imports nothing else of sluice: it knows no storage and no executor.
// Parsed trees are not modified by this package after Parse returns, so
// they may be shared between goroutines.
package logql
