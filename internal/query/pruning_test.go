package query

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/store"
)

// clausesText writes clauses as the tests below expect them: a clause's
// literals in brackets, a folding one after (?i), or (?I) when it folds
// ASCII letters alone (Literal.ASCII).
func clausesText(cs []store.Clause) string {
	var s strings.Builder
	for _, c := range cs {
		s.WriteString("[")
		for i, l := range c {
			if i > 0 {
				s.WriteString(" ")
			}
			s.WriteString(l.String())
		}
		s.WriteString("]")
	}
	return s.String()
}

// TestRegexpPruning: a line filter regexp gives the store the clauses of
// literals it requires (Contains), a literal alone also as tokens and
// needles and a clause of several as a group of probes of the blocks
// (Any); literalsOnly says whether the clauses are exactly the regexp.
func TestRegexpPruning(t *testing.T) {
	for _, tc := range []struct {
		re       string
		contains string
		any      int
		only     bool // literalsOnly
	}{
		{"error", `["error"]`, 0, true},
		{"error.*", `["error"]`, 0, true},
		{"(?i)error", `[(?i)"error"]`, 0, true},
		// With a k or an s: the runes Unicode folds to them as literals
		// of their own, and each literal folds ASCII case alone.
		{"(?i)kafka", "[(?I)\"kafka\" (?I)\"kaf\u212aa\" (?I)\"\u212aafka\" (?I)\"\u212aaf\u212aa\"]", 1, true},
		{"error|fatal|panic", `["error" "fatal" "panic"]`, 1, true},
		{"upstream timeout|payment declined", `["upstream timeout" "payment declined"]`, 1, true},
		{"(?i)timeout|DECLINED", `[(?I)"timeout" (?I)"declined"]`, 1, true},
		{"(?i)upstream|declined", `[(?I)"upstream" (?I)"upſtream" (?I)"declined"]`, 1, true},
		{".*user.*root", `["user"]["root"]`, 0, false},
		{"connection (refused|reset)", `["connection refused" "connection reset"]`, 1, true},
		{"(error|warn).*m[0-9]", `["error" "warn"]`, 2, false},
		{"(error|warn)ing: \\d+", `["ing: "]`, 1, false},
		{"[Ee]rror: \\d+", `["rror: "]`, 1, false},
		{"a.*b", ``, 0, false},
		{"\\d+", ``, 0, false},
		{"x|yz", `["x" "yz"]`, 1, true},
		{"", ``, 0, false},
	} {
		t.Run(tc.re, func(t *testing.T) {
			stages := []logql.Stage{&logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: tc.re, Re: regexp.MustCompile("(?s)" + tc.re)}}}}
			o := pruning(stages)
			if got := clausesText(o.Contains); got != tc.contains {
				t.Errorf("Contains %s, want %s", got, tc.contains)
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
// only literals, is one clause of them for the rows and a group of
// probes for the blocks (none when a literal has no token to probe); one
// with a value that is neither, or a negative one, prunes nothing.
func TestChainPruning(t *testing.T) {
	for _, tc := range []struct {
		f        *logql.LineFilter
		contains string
		probes   int
	}{
		{&logql.LineFilter{Op: logql.FilterContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "fatal"}}}, `["error" "fatal"]`, 2},
		{&logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: "error|warn", Re: regexp.MustCompile("error|warn")}, {Value: "(?i)fatal", Re: regexp.MustCompile("(?i)fatal")}}}, `["error" "warn" (?i)"fatal"]`, 3},
		{&logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: "error", Re: regexp.MustCompile("error")}, {Value: "fa.al", Re: regexp.MustCompile("fa.al")}}}, ``, 0},
		{&logql.LineFilter{Op: logql.FilterNotContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "fatal"}}}, ``, 0},
		{&logql.LineFilter{Op: logql.FilterContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "-"}}}, `["error" "-"]`, 0},
		{&logql.LineFilter{Op: logql.FilterContains, Values: []logql.FilterValue{{Value: "error"}, {Value: ""}}}, ``, 0},
		{&logql.LineFilter{Op: logql.FilterContains, Values: []logql.FilterValue{{Value: "error"}, {Value: "10.0.0.1", IP: true}}}, ``, 0},
	} {
		stages := []logql.Stage{tc.f}
		o := pruning(stages)
		n := 0
		for _, g := range o.Any {
			n += len(g)
		}
		if got := clausesText(o.Contains); n != tc.probes || len(o.Tokens)+len(o.Needles) > 0 || got != tc.contains {
			t.Errorf("%v: %d probes (%d tokens, %d needles), clauses %s; want %d probes only, clauses %s", tc.f.Values, n, len(o.Tokens), len(o.Needles), got, tc.probes, tc.contains)
		}
		if got, want := literalsOnly(stages), tc.contains != ""; got != want {
			t.Errorf("%v: literalsOnly %v, want %v", tc.f.Values, got, want)
		}
	}
}

// TestChainPruningBound: an "or" chain of more than maxClause literals
// gives the store nothing (each literal would be a search per block).
func TestChainPruningBound(t *testing.T) {
	for _, n := range []int{maxClause, maxClause + 1} {
		for _, op := range []logql.FilterOp{logql.FilterContains, logql.FilterRegexp} {
			f := &logql.LineFilter{Op: op}
			for i := range n {
				v := fmt.Sprintf("term%03d", i)
				f.Values = append(f.Values, logql.FilterValue{Value: v, Re: regexp.MustCompile(v)})
			}
			o := pruning([]logql.Stage{f})
			if got, want := len(o.Contains), btoi(n <= maxClause); got != want {
				t.Errorf("%d values (op %v): %d clauses, want %d", n, op, got, want)
			}
			if got, want := literalsOnly([]logql.Stage{f}), n <= maxClause; got != want {
				t.Errorf("%d values (op %v): literalsOnly %v, want %v", n, op, got, want)
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFiltersFirst: line filters move before the parsers and stages of
// labels alone before them, in their order, never past a stage that
// changes the line.
func TestFiltersFirst(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		{`{a="b"} | json | level="error" |= "timeout"`, `{a="b"} |= "timeout" | json | level="error"`},
		{`{a="b"} |= "x" | json | drop y | logfmt != "z" |~ "w"`, `{a="b"} |= "x" != "z" |~ "w" | json | drop y | logfmt`},
		{`{a="b"} | json | line_format "{{.m}}" | logfmt |= "c" | keep k | json != "d"`, `{a="b"} | json | line_format "{{.m}}" |= "c" != "d" | logfmt | keep k | json`},
		{`{a="b"} | unpack |= "c"`, `{a="b"} | unpack |= "c"`},
		{`{a="b"} |= "c" | json`, `{a="b"} |= "c" | json`},
	} {
		x, err := logql.ParseLogExpr(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		stages, moved := filtersFirst(x.Pipeline)
		got := (&logql.LogExpr{Selector: x.Selector, Pipeline: stages}).String()
		w, err := logql.ParseLogExpr(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		if want := w.String(); got != want || moved != (tc.q != tc.want) {
			t.Errorf("%s: %s (moved %v), want %s", tc.q, got, moved, want)
		}
		if again, _ := filtersFirst(x.Pipeline); fmt.Sprint(again) != fmt.Sprint(stages) || x.String() != mustParse(t, tc.q) {
			t.Errorf("%s: not the same twice, or the query changed", tc.q)
		}
	}
}

func mustParse(t *testing.T, q string) string {
	t.Helper()
	x, err := logql.ParseLogExpr(q)
	if err != nil {
		t.Fatal(err)
	}
	return x.String()
}
