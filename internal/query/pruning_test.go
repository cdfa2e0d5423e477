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
