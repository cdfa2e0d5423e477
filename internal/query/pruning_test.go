package query

import (
	"regexp"
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/store"
)

// TestRegexpPruning: a line filter regexp gives the store the literals
// it requires alone (tokens, needles, Contains) and its groups of
// alternatives as probes of the blocks.
func TestRegexpPruning(t *testing.T) {
	lit := func(s string, fold bool) store.Literal { return store.Literal{Text: []byte(s), Fold: fold} }
	for _, tc := range []struct {
		re       string
		contains []store.Literal
		any      int
		only     bool // literalsOnly
	}{
		{"error", []store.Literal{lit("error", false)}, 0, true},
		{"error.*", []store.Literal{lit("error", false)}, 0, true},
		{"(?i)error", []store.Literal{lit("error", true)}, 0, true},
		{"(?i)kafka", []store.Literal{lit("kafka", true)}, 0, false},
		{"error|fatal|panic", nil, 1, false},
		{".*user.*root", []store.Literal{lit("user", false), lit("root", false)}, 0, false},
		{"connection (refused|reset)", []store.Literal{lit("connection re", false)}, 1, false},
		{"[Ee]rror: \\d+", []store.Literal{lit("rror: ", false)}, 1, false},
		{"a.*b", nil, 0, false},
		{"\\d+", nil, 0, false},
	} {
		t.Run(tc.re, func(t *testing.T) {
			stages := []logql.Stage{&logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: tc.re, Re: regexp.MustCompile("(?s)" + tc.re)}}}}
			o := pruning(stages)
			eq := func(a, b store.Literal) bool { return string(a.Text) == string(b.Text) && a.Fold == b.Fold }
			if !slices.EqualFunc(o.Contains, tc.contains, eq) {
				t.Errorf("Contains %+v, want %+v", o.Contains, tc.contains)
			}
			if len(o.Any) != tc.any {
				t.Errorf("%d groups, want %d", len(o.Any), tc.any)
			}
			if got := literalsOnly(stages); got != tc.only {
				t.Errorf("literalsOnly %v, want %v", got, tc.only)
			}
		})
	}
}

// TestChainPruning: an "or" chain of literals, or of regexps that are
// only literals, is a group of probes for the blocks; one with a value
// that is neither, or a negative one, prunes nothing.
func TestChainPruning(t *testing.T) {
	for _, tc := range []struct {
		f      *logql.LineFilter
		probes int
	}{
		{&logql.LineFilter{Op: logql.FilterContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "fatal"}}}, 2},
		{&logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: "error|warn", Re: regexp.MustCompile("error|warn")}, {Value: "(?i)fatal", Re: regexp.MustCompile("(?i)fatal")}}}, 3},
		{&logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: "error", Re: regexp.MustCompile("error")}, {Value: "fa.al", Re: regexp.MustCompile("fa.al")}}}, 0},
		{&logql.LineFilter{Op: logql.FilterNotContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "fatal"}}}, 0},
		{&logql.LineFilter{Op: logql.FilterContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "-"}}}, 0},
		{&logql.LineFilter{Op: logql.FilterContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "10.0.0.1", IP: true}}}, 0},
	} {
		o := pruning([]logql.Stage{tc.f})
		n := 0
		for _, g := range o.Any {
			n += len(g)
		}
		if n != tc.probes || len(o.Tokens)+len(o.Needles)+len(o.Contains) > 0 {
			t.Errorf("%v: %d probes (%d tokens, %d needles, %d literals), want %d probes only", tc.f.Values, n, len(o.Tokens), len(o.Needles), len(o.Contains), tc.probes)
		}
	}
}
