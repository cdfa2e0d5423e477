package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricTypes: a counter of lines, a counter of an unwrapped number,
// a gauge and a histogram, as /metrics shows them, with the overflow of
// their label sets counted; a line whose unwrap is not a number fails the
// rule (counted, and dropped with on_error: drop).
func TestMetricTypes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	s, err := Compile("rules.yaml", []byte(`
rules:
  - name: lines
    match: '{service=~".+"} | logfmt'
    metric: {name: lines_total, labels: [service], max_series: 2}
  - name: bytes
    match: '{service=~".+"} | logfmt'
    metric: {name: sent_bytes_total, type: counter, unwrap: bytes, labels: [service]}
  - name: queue
    match: '{service="api"} | logfmt | queue != ""'
    metric: {name: queue_depth, type: gauge, unwrap: queue}
  - name: latency
    match: '{service=~"api|web"} | logfmt'
    metric: {name: latency_ms, type: histogram, unwrap: took, buckets: [10, 100]}
    on_error: drop
`), m)
	if err != nil {
		t.Fatal(err)
	}
	b := parseLines(t,
		`service=api bytes=100 took=5 queue=7`,
		`service=api bytes=50 took=50 queue=3`,
		`service=web bytes=1 took=500`,
		`service=db bytes=2 took=1`,
		`service=web bytes=3 took=slow`,
	)
	s.Apply(b)
	want := `
# HELP latency_ms Lines counted by a sluice rule.
# TYPE latency_ms histogram
latency_ms_bucket{le="10"} 1
latency_ms_bucket{le="100"} 2
latency_ms_bucket{le="+Inf"} 3
latency_ms_sum 555
latency_ms_count 3
# HELP lines_total Lines counted by a sluice rule.
# TYPE lines_total counter
lines_total{service="api"} 2
lines_total{service="web"} 2
# HELP queue_depth Lines counted by a sluice rule.
# TYPE queue_depth gauge
queue_depth 3
# HELP sent_bytes_total Lines counted by a sluice rule.
# TYPE sent_bytes_total counter
sent_bytes_total{service="api"} 150
sent_bytes_total{service="db"} 2
sent_bytes_total{service="web"} 4
# HELP sluice_rule_metric_overflow_total Lines a rule's metric did not count because a new label set was past its max_series.
# TYPE sluice_rule_metric_overflow_total counter
sluice_rule_metric_overflow_total{metric="latency_ms"} 0
sluice_rule_metric_overflow_total{metric="lines_total"} 1
sluice_rule_metric_overflow_total{metric="queue_depth"} 0
sluice_rule_metric_overflow_total{metric="sent_bytes_total"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"latency_ms", "lines_total", "queue_depth", "sent_bytes_total", "sluice_rule_metric_overflow_total"); err != nil {
		t.Error(err)
	}
	// took=slow is no number: the latency rule fails on it and, with
	// on_error: drop, drops it.
	if c := m.Rule("latency"); c.Errors != 1 || c.Dropped != 1 {
		t.Errorf("latency counted %+v", c)
	}
	if b.NumKept() != 4 || b.Kept(4) {
		t.Errorf("kept %d records, the last %v; want 4, not the last", b.NumKept(), b.Kept(4))
	}
}

// TestEvalTime: a rule's evaluation time is sampled, one line in
// evalSample of each evaluator, into its histogram on /metrics; a rule
// its literal keeps off every line is never timed.
func TestEvalTime(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	s, err := Compile("rules.yaml", []byte(`
rules:
  - name: all
    match: '{service=~".+"} | logfmt | n > 0'
    metric: {name: lines_total}
  - name: none
    match: '{service=~".+"} |= "no line holds this"'
    drop: true
`), m)
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]string, 2*evalSample+10)
	for i := range lines {
		lines[i] = fmt.Sprintf("service=api n=%d", i+1)
	}
	s.Apply(parseLines(t, lines...))
	if c := m.Rule("all"); c.Matched != uint64(len(lines)) || c.EvalSampled != 2 || c.EvalSeconds <= 0 {
		t.Errorf("rule all: %d matched, %d timed in %v s; want %d, 2, more than 0", c.Matched, c.EvalSampled, c.EvalSeconds, len(lines))
	}
	if c := m.Rule("none"); c.EvalSampled != 0 {
		t.Errorf("rule none: %d lines timed, want 0", c.EvalSampled)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "sluice_rule_eval_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			h := mt.GetHistogram()
			if mt.GetLabel()[0].GetValue() != "all" {
				continue
			}
			found = true
			bs := h.GetBucket()
			if h.GetSampleCount() != 2 || len(bs) != len(evalBounds) || bs[len(bs)-1].GetCumulativeCount() > 2 || bs[0].GetUpperBound() != 1e-6 {
				t.Errorf("histogram of rule all: %v", h)
			}
		}
	}
	if !found {
		t.Error("no sluice_rule_eval_seconds{rule=\"all\"}")
	}
}
