package logql

import (
	"regexp"
	"time"
)

// Expr is a parsed LogQL query: a *LogExpr (a log query) or a SampleExpr
// (a metric query).
type Expr interface {
	String() string
	expr()
}

// SampleExpr is a metric query: it evaluates to samples.
type SampleExpr interface {
	Expr
	sample()
}

// LogExpr is a log query: a stream selector and a pipeline of stages
// applied to each line in order.
type LogExpr struct {
	Selector Selector
	Pipeline []Stage
}

// Stage is one stage of a log pipeline: *LineFilter, *JSONParser,
// *LogfmtParser, *RegexpParser, *PatternParser, *Unpack,
// *LabelFilterStage, *LineFormat, *LabelFormat, *Drop, *Keep or
// *Decolorize.
type Stage interface {
	String() string
	stage()
}

// FilterOp is the operator of a line filter.
type FilterOp uint8

const (
	FilterContains    FilterOp = iota // |=
	FilterNotContains                 // !=
	FilterRegexp                      // |~
	FilterNotRegexp                   // !~
	FilterPattern                     // |>
	FilterNotPattern                  // !>
)

// LineFilter keeps the lines that match: with several Values (joined by
// "or" in the query) a positive operator keeps a line matching any of
// them, a negative one keeps a line matching none of them.
type LineFilter struct {
	Op     FilterOp
	Values []FilterValue
}

// FilterValue is one operand of a line filter: a literal, a regular
// expression (Re set, unanchored, as Loki matches line filters), a
// pattern (Pattern set) or an ip("...") filter (IP set; Value is its
// argument).
type FilterValue struct {
	Value   string
	IP      bool
	Re      *regexp.Regexp
	Pattern *Pattern
}

// LabelExtraction is one parameter of json or logfmt: the label Name
// to set and the Expr that selects the value (a JSON path such as
// `request.headers["User-Agent"]` or `items[0]`, or a logfmt key).
type LabelExtraction struct {
	Name string
	Expr string
}

// JSONParser is `| json` with optional parameters. Without parameters
// every field becomes a label, nested names joined by "_".
type JSONParser struct {
	Params []LabelExtraction
}

// LogfmtParser is `| logfmt` with its flags and optional parameters.
type LogfmtParser struct {
	Strict    bool // --strict: stop at the first malformed pair
	KeepEmpty bool // --keep-empty: keep standalone keys as empty labels
	Params    []LabelExtraction
}

// RegexpParser is `| regexp "..."`: each named group becomes a label.
type RegexpParser struct {
	Re *regexp.Regexp
}

// PatternParser is `| pattern "..."`.
type PatternParser struct {
	Pattern *Pattern
}

// Unpack is `| unpack`: a JSON line whose fields become labels, its
// `_entry` field becoming the line.
type Unpack struct{}

// LabelFilterStage is a label filter in a pipeline: `| status >= 500`.
type LabelFilterStage struct {
	Filter LabelFilter
}

// LabelFilter is a predicate on labels: *LabelFilterBinary,
// *LabelFilterString, *LabelFilterNumber, *LabelFilterDuration,
// *LabelFilterBytes or *LabelFilterIP.
type LabelFilter interface {
	String() string
	labelFilter()
}

// LabelFilterBinary is two filters joined by "and" (also written "," or
// as two filters one after the other) or "or".
type LabelFilterBinary struct {
	And         bool
	Left, Right LabelFilter
}

// LabelFilterString compares a label as a string: =, !=, =~, !~.
type LabelFilterString struct {
	Matcher *Matcher
}

// CmpOp is a comparison of a numeric label filter.
type CmpOp uint8

const (
	CmpEq CmpOp = iota // == (also written =)
	CmpNe              // !=
	CmpGt              // >
	CmpGe              // >=
	CmpLt              // <
	CmpLe              // <=
)

// LabelFilterNumber compares a label parsed as a float64.
type LabelFilterNumber struct {
	Name  string
	Op    CmpOp
	Value float64
}

// LabelFilterDuration compares a label parsed as a Go duration.
type LabelFilterDuration struct {
	Name  string
	Op    CmpOp
	Value time.Duration
}

// LabelFilterBytes compares a label parsed as a byte size (10KB, 1MiB).
type LabelFilterBytes struct {
	Name  string
	Op    CmpOp
	Value uint64
}

// LabelFilterIP is `label = ip("...")` or `label != ip("...")`: the
// argument is an address, a range a-b or a CIDR.
type LabelFilterIP struct {
	Name   string
	Negate bool
	Value  string
}

// LineFormat is `| line_format "template"`: the line becomes the
// template's output.
type LineFormat struct {
	Template string
}

// LabelFormatItem is one `dst=src` (rename, Template empty) or
// `dst="template"` (Template set, Src empty) of label_format.
type LabelFormatItem struct {
	Dst      string
	Src      string
	Template string
}

// LabelFormat is `| label_format a=b, c="{{.x}}"`.
type LabelFormat struct {
	Items []LabelFormatItem
}

// LabelItem is one operand of drop and keep: a bare label name
// (Matcher nil) or a matcher that selects by value.
type LabelItem struct {
	Name    string
	Matcher *Matcher
}

// Drop is `| drop a, b="x"`.
type Drop struct {
	Items []LabelItem
}

// Keep is `| keep a, b="x"`.
type Keep struct {
	Items []LabelItem
}

// Decolorize is `| decolorize`: ANSI colour sequences are removed from
// the line.
type Decolorize struct{}

// Unwrap is `| unwrap [conv(]label[)]` of a range aggregation with the
// label filters that follow it (commonly `| __error__=""`).
type Unwrap struct {
	Label string
	// Conv is "", "duration", "duration_seconds" or "bytes".
	Conv    string
	Filters []LabelFilter
}

// LogRange is the log query of a range aggregation with its range,
// optional unwrap and offset: `{app="x"} | json | unwrap latency [5m]
// offset 1h`.
type LogRange struct {
	Log      *LogExpr
	Unwrap   *Unwrap
	Interval time.Duration
	Offset   time.Duration
}

// Grouping is `by (a, b)` or `without (a, b)`. Without false and no
// labels (`by ()`) groups everything into one series.
type Grouping struct {
	Without bool
	Labels  []string
}

// RangeAggregation applies a function over a range of each stream:
// count_over_time, rate, bytes_over_time, bytes_rate, absent_over_time,
// and with unwrap sum_over_time, avg_over_time, min_over_time,
// max_over_time, first_over_time, last_over_time, stddev_over_time,
// stdvar_over_time, quantile_over_time (Param set), rate and
// rate_counter.
type RangeAggregation struct {
	Op       string
	Range    *LogRange
	Param    float64 // the quantile of quantile_over_time
	Grouping *Grouping
}

// VectorAggregation aggregates across series: sum, avg, min, max, count,
// stddev, stdvar, topk, bottomk and approx_topk (Param is k), sort,
// sort_desc.
type VectorAggregation struct {
	Op       string
	Grouping *Grouping
	Param    int
	Expr     SampleExpr
}

// Cardinality is the match cardinality of a binary operation.
type Cardinality uint8

const (
	OneToOne  Cardinality = iota
	ManyToOne             // group_left
	OneToMany             // group_right
)

// VectorMatching is `on (...)` or `ignoring (...)` with an optional
// group_left or group_right and its extra labels.
type VectorMatching struct {
	On      bool
	Labels  []string
	Card    Cardinality
	Include []string
}

// BinaryExpr is an arithmetic (+ - * / % ^), comparison (== != > >= <
// <=) or set (and or unless) operation. ReturnBool is the `bool`
// modifier of a comparison.
type BinaryExpr struct {
	Op         string
	LHS, RHS   SampleExpr
	ReturnBool bool
	Matching   *VectorMatching
}

// LiteralExpr is a number; with a sign when written -1.
type LiteralExpr struct {
	Value float64
}

// VectorExpr is vector(x): one series with no labels.
type VectorExpr struct {
	Value float64
}

// LabelReplace is label_replace(expr, "dst", "replacement", "src",
// "regex"); Re is the regex anchored at both ends.
type LabelReplace struct {
	Expr        SampleExpr
	Dst         string
	Replacement string
	Src         string
	Regex       string
	Re          *regexp.Regexp
}

// Pattern is a compiled pattern expression of Loki's syntax:
// literals and <name> or <_> captures.
type Pattern struct {
	Source string
	Parts  []PatternPart
}

// PatternPart is a literal (Name empty, Capture false) or a capture
// (Capture true; Name empty for <_>).
type PatternPart struct {
	Literal string
	Name    string
	Capture bool
}

func (*LogExpr) expr()           {}
func (*RangeAggregation) expr()  {}
func (*VectorAggregation) expr() {}
func (*BinaryExpr) expr()        {}
func (*LiteralExpr) expr()       {}
func (*VectorExpr) expr()        {}
func (*LabelReplace) expr()      {}

func (*RangeAggregation) sample()  {}
func (*VectorAggregation) sample() {}
func (*BinaryExpr) sample()        {}
func (*LiteralExpr) sample()       {}
func (*VectorExpr) sample()        {}
func (*LabelReplace) sample()      {}

func (*LineFilter) stage()       {}
func (*JSONParser) stage()       {}
func (*LogfmtParser) stage()     {}
func (*RegexpParser) stage()     {}
func (*PatternParser) stage()    {}
func (*Unpack) stage()           {}
func (*LabelFilterStage) stage() {}
func (*LineFormat) stage()       {}
func (*LabelFormat) stage()      {}
func (*Drop) stage()             {}
func (*Keep) stage()             {}
func (*Decolorize) stage()       {}

func (*LabelFilterBinary) labelFilter()   {}
func (*LabelFilterString) labelFilter()   {}
func (*LabelFilterNumber) labelFilter()   {}
func (*LabelFilterDuration) labelFilter() {}
func (*LabelFilterBytes) labelFilter()    {}
func (*LabelFilterIP) labelFilter()       {}
