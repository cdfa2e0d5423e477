package rules

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/stage"
)

// TestDifferential checks the compiled evaluation (streams decided once
// per evaluator, or in the compile for the streams the last set saw, the literal pre-check over all rules, one parse of a line
// for the rules that share a parser) against running each
// rule's LogQL pipeline alone on each line, for random lines and rules.
// Some rules repeat the match of an earlier rule of the file (they share
// its compiled match) or of the last round's file; each file is compiled
// cold and from the last round's set, as a reload does (the matches they
// share and, with the same literals, the gate are kept from it).
func TestDifferential(t *testing.T) {
	words := []string{"error", "ERROR", "Error", "warn", "timeout", "GET", "POST", "/healthz", "/users", "user=bob",
		"status=500", "status=200", "level=error", "level=info", "took=3ms", "a.b", "x|y", "héllo", "k8s", "δ", "at shard", "on shard"}
	services := []string{"api", "web", "db"}
	filters := []string{
		`|= "%s"`, `!= "%s"`, `|~ "%s"`, `!~ "%s"`, `|~ "(?i)%s"`, `|= "%s" or "%s"`, `|~ "%s|%s"`, `|~ "%s.*%s"`,
		`|~ "(%s|%s) (at|on) shard"`,
	}
	parsers := []string{` | logfmt`, ` | json`, ` | regexp "level=(?P<level>\\w+)"`, ` | pattern "<_> <word> <_>"`, ` |= "e" | logfmt`}
	after := []string{` | level="error"`, ` | level=~"err.*"`, ` | word="GET"`, ` | __error__=""`, ` | service="api"`, ""}
	rng := rand.New(rand.NewPCG(1, 2))
	gated, shared, inherited, warmed, musts := 0, 0, 0, 0, 0
	defer func() {
		if gated == 0 || shared == 0 || inherited == 0 || warmed == 0 || musts == 0 {
			t.Errorf("rules with a literal pre-check %d, sharing a match %d, keeping the last set's %d, streams decided in the compile %d, with a substring all their literals hold %d: the test checks nothing of one of them", gated, shared, inherited, warmed, musts)
		}
	}()
	var prev *Set
	var prevExprs []string
	for round := range 40 {
		var src strings.Builder
		src.WriteString("rules:\n")
		var exprs []string
		for r := range 2 + rng.IntN(30) {
			var e strings.Builder
			switch k := rng.IntN(8); {
			case k == 0 && len(exprs) > 0:
				e.WriteString(exprs[rng.IntN(len(exprs))])
			case k == 1 && len(prevExprs) > 0:
				e.WriteString(prevExprs[rng.IntN(len(prevExprs))])
			}
			if e.Len() > 0 {
				exprs = append(exprs, e.String())
				fmt.Fprintf(&src, "  - name: r%d\n    match: '%s'\n    metric: {name: m%d_%d}\n", r, strings.ReplaceAll(e.String(), "'", "''"), round, r)
				continue
			}
			switch rng.IntN(3) {
			case 0:
				fmt.Fprintf(&e, `{service="%s"}`, services[rng.IntN(len(services))])
			case 1:
				fmt.Fprintf(&e, `{service=~"%s|%s"}`, services[rng.IntN(len(services))], services[rng.IntN(len(services))])
			default:
				e.WriteString(`{service=~".+"}`)
			}
			for range rng.IntN(3) {
				f := filters[rng.IntN(len(filters))]
				a, b := quoteRe(words[rng.IntN(len(words))]), quoteRe(words[rng.IntN(len(words))])
				if strings.Count(f, "%s") == 1 {
					fmt.Fprintf(&e, " "+f, a)
				} else {
					fmt.Fprintf(&e, " "+f, a, b)
				}
			}
			if rng.IntN(3) == 0 {
				// Rules that share a parser share its parse of a line:
				// the same parsers, with different filters after them.
				e.WriteString(parsers[rng.IntN(len(parsers))])
				e.WriteString(after[rng.IntN(len(after))])
			}
			exprs = append(exprs, e.String())
			fmt.Fprintf(&src, "  - name: r%d\n    match: '%s'\n    metric: {name: m%d_%d}\n", r, strings.ReplaceAll(e.String(), "'", "''"), round, r)
		}
		cold, err := Compile("diff.yaml", []byte(src.String()), nil)
		if err != nil {
			t.Fatalf("%v\n%s", err, src.String())
		}
		warm, err := compileFrom("diff.yaml", []byte(src.String()), nil, prev)
		if err != nil {
			t.Fatalf("%v\n%s", err, src.String())
		}
		for i, r := range warm.rules {
			if r.gated() {
				gated++
			}
			if r.must != nil {
				musts++
			}
			for _, o := range warm.rules[:i] {
				if o.compiledMatch == r.compiledMatch && !r.all {
					shared++
					break
				}
			}
			if prev != nil && prev.matches[r.spec.match] == r.compiledMatch {
				inherited++
			}
		}
		// The streams the last set's evaluators decided are decided in
		// the compile (Set.warm), for the first batch under this one.
		warmed += len(warm.warm)
		prev, prevExprs = warm, exprs
		// Twice each: the second batch finds the streams the first
		// decided (the evaluator is the same).
		for _, s := range []*Set{cold, warm, cold, warm} {
			check(t, s, round, exprs, src.String(), services, words, rng)
		}
	}
}

// check applies s to random lines and compares the rules that matched
// each with what each rule's LogQL pipeline alone keeps.
func check(t *testing.T, s *Set, round int, exprs []string, src string, services, words []string, rng *rand.Rand) {
	t.Helper()
	var lines []string
	for range 200 {
		var l strings.Builder
		fmt.Fprintf(&l, "service=%s", services[rng.IntN(len(services))])
		for range 1 + rng.IntN(6) {
			l.WriteByte(' ')
			l.WriteString(words[rng.IntN(len(words))])
		}
		lines = append(lines, l.String())
	}
	b := parseLines(t, lines...)
	got := make([][]string, len(b.Records))
	s.Trace(b, func(st Step) {
		if st.Action == Matched {
			got[st.Record] = append(got[st.Record], st.Rule)
		}
	})
	sels := make([]logql.Selector, len(exprs))
	pipes := make([]*stage.Pipeline, len(exprs))
	for r, src := range exprs {
		expr, err := logql.ParseLogExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		if pipes[r], err = stage.Compile(expr.Pipeline); err != nil {
			t.Fatal(err)
		}
		sels[r] = expr.Selector
	}
	for i := range b.Records {
		var want []string
		line := b.Bytes(b.Records[i].Line)
		for r, p := range pipes {
			var lb stage.Labels
			ls := b.Labels(i)
			lb.Reset(ls)
			if !sels[r].Matches(ls.Value) {
				continue
			}
			if _, ok := p.Process(b.Records[i].Time, line, &lb); ok {
				want = append(want, fmt.Sprintf("r%d", r))
			}
		}
		if !slices.Equal(got[i], want) {
			t.Fatalf("round %d, line %q: compiled matched %q, each pipeline alone %q\nrules:\n%s", round, line, got[i], want, src)
		}
	}
}

// quoteRe escapes what a LogQL string and a regexp would take as
// syntax in a word.
func quoteRe(w string) string {
	return strings.NewReplacer(`|`, `\\|`, `.`, `\\.`).Replace(w)
}
