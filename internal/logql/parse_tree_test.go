package logql

import (
	"reflect"
	"regexp"
	"testing"
	"time"
)

func mustMatcher(t *testing.T, name string, mt MatchType, v string) *Matcher {
	t.Helper()
	m, err := newMatcher(name, mt, v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustPattern(t *testing.T, src string, named bool) *Pattern {
	t.Helper()
	p, err := compilePattern(src, named)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParseTree checks the trees of queries whose shape matters beyond
// their printed text: precedence, associativity and every field.
func TestParseTree(t *testing.T) {
	sel := func() Selector { return Selector{mustMatcher(t, "a", MatchEqual, "b")} }
	lit := func(v float64) *LiteralExpr { return &LiteralExpr{Value: v} }
	vec := func(v float64) *VectorExpr { return &VectorExpr{Value: v} }
	rate := func() *RangeAggregation {
		return &RangeAggregation{Op: "rate", Range: &LogRange{Log: &LogExpr{Selector: sel()}, Interval: time.Minute}}
	}
	for _, tc := range []struct {
		in   string
		want Expr
	}{
		{
			in: `{a="b"} |= "x" or "y" |~ "a.b" |> "<_> z" | json a, b="c.d" | logfmt --strict | regexp "(?P<x>.)" | pattern "<x> <_>"`,
			want: &LogExpr{Selector: sel(), Pipeline: []Stage{
				&LineFilter{Op: FilterContains, Values: []FilterValue{{Value: "x"}, {Value: "y"}}},
				&LineFilter{Op: FilterRegexp, Values: []FilterValue{{Value: "a.b", Re: regexp.MustCompile("(?s)a.b")}}},
				&LineFilter{Op: FilterPattern, Values: []FilterValue{{Value: "<_> z", Pattern: mustPattern(t, "<_> z", false)}}},
				&JSONParser{Params: []LabelExtraction{{Name: "a", Expr: "a"}, {Name: "b", Expr: "c.d"}}},
				&LogfmtParser{Strict: true},
				&RegexpParser{Re: regexp.MustCompile("(?P<x>.)")},
				&PatternParser{Pattern: mustPattern(t, "<x> <_>", true)},
			}},
		},
		{
			in: `{a="b"} != ip("10.0.0.0/8") | level=~"e.*" or status >= 500 and latency > 1.5s, size <= 1.5KiB | addr != ip("::1") | x = -2`,
			want: &LogExpr{Selector: sel(), Pipeline: []Stage{
				&LineFilter{Op: FilterNotContains, Values: []FilterValue{{Value: "10.0.0.0/8", IP: true}}},
				&LabelFilterStage{Filter: &LabelFilterBinary{
					Left: &LabelFilterString{Matcher: mustMatcher(t, "level", MatchRegexp, "e.*")},
					Right: &LabelFilterBinary{
						And: true,
						Left: &LabelFilterBinary{
							And:   true,
							Left:  &LabelFilterNumber{Name: "status", Op: CmpGe, Value: 500},
							Right: &LabelFilterDuration{Name: "latency", Op: CmpGt, Value: 1500 * time.Millisecond},
						},
						Right: &LabelFilterBytes{Name: "size", Op: CmpLe, Value: 1536},
					},
				}},
				&LabelFilterStage{Filter: &LabelFilterIP{Name: "addr", Negate: true, Value: "::1"}},
				&LabelFilterStage{Filter: &LabelFilterNumber{Name: "x", Op: CmpEq, Value: -2}},
			}},
		},
		{
			in: `{a="b"} | label_format a=b, c="{{.x}}" | drop a, b="x" | keep c | line_format "{{.y}}" | unpack | decolorize`,
			want: &LogExpr{Selector: sel(), Pipeline: []Stage{
				&LabelFormat{Items: []LabelFormatItem{{Dst: "a", Src: "b"}, {Dst: "c", Template: "{{.x}}"}}},
				&Drop{Items: []LabelItem{{Name: "a"}, {Name: "b", Matcher: mustMatcher(t, "b", MatchEqual, "x")}}},
				&Keep{Items: []LabelItem{{Name: "c"}}},
				&LineFormat{Template: "{{.y}}"},
				&Unpack{},
				&Decolorize{},
			}},
		},
		{
			in: `quantile_over_time(0.99, {a="b"} | json | unwrap duration(x) | __error__="" [1m] offset 5m) by (svc)`,
			want: &RangeAggregation{
				Op: "quantile_over_time",
				Range: &LogRange{
					Log: &LogExpr{Selector: sel(), Pipeline: []Stage{&JSONParser{}}},
					Unwrap: &Unwrap{Label: "x", Conv: "duration", Filters: []LabelFilter{
						&LabelFilterString{Matcher: mustMatcher(t, "__error__", MatchEqual, "")},
					}},
					Interval: time.Minute,
					Offset:   5 * time.Minute,
				},
				Param:    0.99,
				Grouping: &Grouping{Labels: []string{"svc"}},
			},
		},
		{
			in:   `2 ^ 3 ^ 2`,
			want: &BinaryExpr{Op: "^", LHS: lit(2), RHS: &BinaryExpr{Op: "^", LHS: lit(3), RHS: lit(2)}},
		},
		{
			in:   `1 - 2 - -3`,
			want: &BinaryExpr{Op: "-", LHS: &BinaryExpr{Op: "-", LHS: lit(1), RHS: lit(2)}, RHS: lit(-3)},
		},
		{
			in: `1 + 2 * 3 > bool 4 unless vector(1) or vector(2)`,
			want: &BinaryExpr{
				Op: "or",
				LHS: &BinaryExpr{
					Op: "unless",
					LHS: &BinaryExpr{
						Op:         ">",
						ReturnBool: true,
						LHS:        &BinaryExpr{Op: "+", LHS: lit(1), RHS: &BinaryExpr{Op: "*", LHS: lit(2), RHS: lit(3)}},
						RHS:        lit(4),
					},
					RHS: vec(1),
				},
				RHS: vec(2),
			},
		},
		{
			in: `rate({a="b"}[1m]) / on (x) group_left (y) rate({a="b"}[1m]) * ignoring () group_right rate({a="b"}[1m])`,
			want: &BinaryExpr{
				Op: "*",
				LHS: &BinaryExpr{
					Op: "/", LHS: rate(), RHS: rate(),
					Matching: &VectorMatching{On: true, Labels: []string{"x"}, Card: ManyToOne, Include: []string{"y"}},
				},
				RHS:      rate(),
				Matching: &VectorMatching{Card: OneToMany},
			},
		},
		{
			in:   `topk by (a) (5, vector(1))`,
			want: &VectorAggregation{Op: "topk", Grouping: &Grouping{Labels: []string{"a"}}, Param: 5, Expr: vec(1)},
		},
		{
			in:   `sum(vector(-2.5)) without ()`,
			want: &VectorAggregation{Op: "sum", Grouping: &Grouping{Without: true}, Expr: vec(-2.5)},
		},
		{
			in: `label_replace(vector(1), "dst", "$1", "src", "(.*)")`,
			want: &LabelReplace{
				Expr: vec(1), Dst: "dst", Replacement: "$1", Src: "src", Regex: "(.*)",
				Re: regexp.MustCompile("^(?:(.*))$"),
			},
		},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestRegexpSemantics pins how each kind of regexp matches: line
// filters unanchored with "." matching newlines, label matchers and
// label filters anchored.
func TestRegexpSemantics(t *testing.T) {
	e, err := ParseLogExpr(`{a=~"b|c"} |~ "x.y" | l=~"v.*"`)
	if err != nil {
		t.Fatal(err)
	}
	if m := e.Selector[0]; !m.Matches("b") || m.Matches("bb") {
		t.Errorf("selector regexp %s is not anchored", m)
	}
	re := e.Pipeline[0].(*LineFilter).Values[0].Re
	if !re.MatchString("--x\ny--") {
		t.Errorf("line filter %s does not match across a newline inside a line", re)
	}
	m := e.Pipeline[1].(*LabelFilterStage).Filter.(*LabelFilterString).Matcher
	if !m.Matches("vv") || m.Matches("uv") {
		t.Errorf("label filter %s is not anchored", m)
	}
}

func TestParseKind(t *testing.T) {
	if _, err := ParseLogExpr(`{a="b"} | json`); err != nil {
		t.Error(err)
	}
	if _, err := ParseLogExpr(`vector(1)`); err == nil || err.Error() != "parse error at line 1, col 1: only log selector is supported" {
		t.Errorf("ParseLogExpr of a metric query: %v", err)
	}
	if _, err := ParseSampleExpr(`vector(1)`); err != nil {
		t.Error(err)
	}
	if _, err := ParseSampleExpr(`{a="b"}`); err == nil || err.Error() != "parse error at line 1, col 1: only sample expression supported" {
		t.Errorf("ParseSampleExpr of a log query: %v", err)
	}
	if _, err := ParseSampleExpr(`vector(`); err == nil {
		t.Error("ParseSampleExpr of a bad query: no error")
	}
}
