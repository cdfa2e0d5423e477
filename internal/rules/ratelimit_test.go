package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// clock is a test's time: it moves only when the test says.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// limited compiles src with m and gives every rate limit the clock c.
func limited(t *testing.T, src string, m *Metrics, c *clock) *Set {
	t.Helper()
	s, err := Compile("rules.yaml", []byte(src), m)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.rules {
		if r.limiter != nil {
			r.limiter.now = c.now
		}
	}
	return s
}

// kept applies s to lines and returns how many it kept per service.
func kept(t *testing.T, s *Set, lines ...string) map[string]int {
	t.Helper()
	b := parseLines(t, lines...)
	s.Apply(b)
	out := map[string]int{}
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		svc, _ := b.Labels(i).Get("service")
		out[svc]++
	}
	return out
}

func repeat(line string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = line
	}
	return out
}

func TestRateLimitLines(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	m := NewMetrics(nil)
	s := limited(t, `
rules:
  - name: rl
    rate_limit: {by: [service], lines: 2, burst_lines: 5}
`, m, c)
	lines := append(repeat(`service=api msg=a`, 8), repeat(`service=web msg=b`, 3)...)
	// A full burst per label set, no more.
	if got := kept(t, s, lines...); got["api"] != 5 || got["web"] != 3 {
		t.Fatalf("first second: kept %v, want api 5, web 3", got)
	}
	// Nothing more until the clock moves; then 2 lines a second.
	if got := kept(t, s, repeat(`service=api msg=a`, 4)...); got["api"] != 0 {
		t.Fatalf("same instant: kept %v, want none", got)
	}
	c.t = c.t.Add(1500 * time.Millisecond)
	if got := kept(t, s, repeat(`service=api msg=a`, 10)...); got["api"] != 3 {
		t.Fatalf("1.5 s later: kept %v, want 3", got)
	}
	// Tokens do not pile up past the burst.
	c.t = c.t.Add(time.Hour)
	if got := kept(t, s, repeat(`service=api msg=a`, 10)...); got["api"] != 5 {
		t.Fatalf("an hour later: kept %v, want 5", got)
	}
	if rc := m.Rule("rl"); rc.RateLimited != 3+4+7+5 || rc.Matched != 11+4+10+10 {
		t.Errorf("counts %+v", rc)
	}
}

func TestRateLimitBytes(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := limited(t, `
rules:
  - name: rl
    match: '{service="api"}'
    rate_limit: {bytes: 100}
`, nil, c)
	line := `service=api msg=` + strings.Repeat("x", 24) // 40 bytes
	if got := kept(t, s, repeat(line, 5)...); got["api"] != 2 {
		t.Fatalf("kept %v, want 2 of 40 bytes in a burst of 100", got)
	}
	// A line longer than the burst passes when the bucket is full, and
	// leaves it in debt.
	c.t = c.t.Add(time.Second)
	long := `service=api msg=` + strings.Repeat("y", 200)
	if got := kept(t, s, long, line); got["api"] != 1 {
		t.Fatalf("kept %v, want the long line alone", got)
	}
	c.t = c.t.Add(time.Second)
	if got := kept(t, s, line); got["api"] != 0 {
		t.Fatalf("kept %v, want none while in debt", got)
	}
}

// TestRateLimitOverflow: label sets past max_sets share one bucket, and
// their lines are counted as overflow on /metrics; a reload that does
// not change the limit keeps its buckets.
func TestRateLimitOverflow(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	src := `
rules:
  - name: rl
    rate_limit: {by: [service], lines: 1, burst_lines: 2, max_sets: 2}
`
	s := limited(t, src, m, c)
	var lines []string
	for i := range 5 {
		lines = append(lines, repeat(fmt.Sprintf("service=s%d msg=x", i), 3)...)
	}
	got := kept(t, s, lines...)
	// s0 and s1 have buckets of their own; s2, s3 and s4 share one.
	if got["s0"] != 2 || got["s1"] != 2 || got["s2"]+got["s3"]+got["s4"] != 2 {
		t.Fatalf("kept %v", got)
	}
	want := `
# HELP sluice_rule_rate_limit_overflow_total Lines of a label set past a rule's rate_limit max_sets, limited together in one shared bucket.
# TYPE sluice_rule_rate_limit_overflow_total counter
sluice_rule_rate_limit_overflow_total{rule="rl"} 9
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_rule_rate_limit_overflow_total"); err != nil {
		t.Error(err)
	}
	// The same limit after a reload: the same buckets, still empty.
	s2 := limited(t, src+"\n# changed\n", m, c)
	if s2.rules[0].limiter != s.rules[0].limiter {
		t.Fatal("a reload that does not change the limit made a new one")
	}
	if got := kept(t, s2, `service=s0 msg=x`); got["s0"] != 0 {
		t.Errorf("after reload: kept %v, want none", got)
	}
}
