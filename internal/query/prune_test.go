package query

import (
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
)

// TestPruned: drops of the error labels before any stage that can set
// one are taken out, others stay, and the query parsed is left as it was.
func TestPruned(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{a="x"} | drop __error__, __error_details__`, `{a="x"}`},
		{`{a="x"} |= "y" | drop __error__ | decolorize`, `{a="x"} |= "y" | decolorize`},
		{`sum by (a) (count_over_time({a="x"} | drop __error__, __error_details__ [1m]))`, `sum by (a) (count_over_time({a="x"}[1m]))`},
		{`sum(rate({a="x"} | drop __error__="e" [1m])) / sum(rate({a="x"} | json | drop __error__ [1m]))`, `sum(rate({a="x"}[1m])) / sum(rate({a="x"} | json | drop __error__ [1m]))`},
		{`{a="x"} | json | drop __error__`, `{a="x"} | json | drop __error__`},
		{`{a="x"} | drop __error__, b`, `{a="x"} | drop __error__, b`},
		{`{a="x"} | b="1" | drop __error__`, `{a="x"} | b="1" | drop __error__`},
	} {
		x, err := logql.Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		before := x.String()
		y, _ := logql.Parse(c.want)
		if got := pruned(x).String(); got != y.String() {
			t.Errorf("%s: pruned to %s, want %s", c.in, got, y.String())
		}
		if x.String() != before {
			t.Errorf("%s: changed to %s", c.in, x.String())
		}
	}
}

// TestPrunedSameAsReference: queries with drops of the error labels
// answer as the reference, which runs them.
func TestPrunedSameAsReference(t *testing.T) {
	sn := diffSnapshot(t)
	for _, q := range []string{
		`sum by (service) (count_over_time({service=~".+"} | drop __error__, __error_details__ [1h]))`,
		`sum(count_over_time({service=~".+"} |= "error" | drop __error__ [1h]))`,
		`sum by (service) (count_over_time({service=~".+"} | drop __error__="x" [10s]))`,
		`sum by (detected_level) (count_over_time({service="pushed"} | drop __error__, __error_details__ [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json | drop __error__, __error_details__ [1h]))`,
		// A drop at the end of a json pipeline: the columnar path runs
		// the rows with errors (malformed lines, number filters on no
		// number) through it.
		`sum by (level) (count_over_time({service=~".+"} | json | http_status >= 500 | drop __error__ [1h]))`,
		`sum by (service) (count_over_time({service=~".+"} | json level | level="error" | drop __error__, __error_details__ [10s]))`,
		`sum(count_over_time({service=~".+"} | json lat="http.latency_ms" | lat > 100 | drop __error__ [1h]))`,
		`sum by (level) (count_over_time({service="pushed"} | json | drop __error__, __error_details__ [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json level | drop __error__ [2s]))`,
		`sum by (service) (sum_over_time({service=~".+"} | json | drop __error__ | unwrap http_latency_ms | __error__="" [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json | drop __error__ | __error__="" [1h]))`,
	} {
		if diff := sameAnswer(sn, q, false, false); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}
	}
	for _, q := range []string{`{service=~".+"} | drop __error__, __error_details__`, `{service="pushed"} |~ "m[0-3]" | drop __error__`,
		`{service=~".+"} | json level | level="error" | drop __error__`, `{service=~".+"} | json lat="http.latency_ms" | lat > 100 | drop __error__, __error_details__`} {
		for _, backward := range []bool{true, false} {
			if diff := sameAnswer(sn, q, true, backward); diff != "" {
				t.Errorf("%s: %s", q, diff)
			}
		}
	}
}
