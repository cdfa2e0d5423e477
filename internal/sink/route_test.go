package sink

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink/sinktest"
)

// TestFromRules runs three sinks on one WAL: two that take what the rules
// route to them (pg, for every tenant; files, of tenant t1 only) and one
// that takes its subscription (all of t1, routes or not). Each gets
// exactly its lines, in order.
func TestFromRules(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, filepath.Join(dir, "wal"))
	mk := func(name, tenant, from string) (*Sink, *memDest) {
		d := newMemDest(0)
		s, err := New(Config{Name: name, Tenant: tenant, From: from, Linger: time.Millisecond, BatchSize: 5,
			Dir: filepath.Join(dir, "sinks", name)}, d, sinktest.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		s.onDone = d.notify
		return s, d
	}
	pg, pgDest := mk("pg", "", FromRules)
	files, filesDest := mk("files", "t1", FromRules)
	all, allDest := mk("all", "t1", "")
	m := NewManager([]*Sink{pg, files, all}, prometheus.NewRegistry(), sinktest.Quiet())
	start(t, m, l)
	for _, s := range []*Sink{pg, files, all} {
		waitFile(t, filepath.Join(s.cfg.Dir, "position"))
	}
	var wantPG, wantFiles, wantAll []string
	for i := range 40 {
		var route []string
		switch i % 4 {
		case 0:
			route = []string{"pg"}
		case 1:
			route = []string{"files", "pg"}
		case 2:
			route = []string{"files", "other"}
		}
		tenant := "t1"
		if i%5 == 0 {
			tenant = "t2"
		}
		line := jsonLine("api", i, " "+tenant+" "+strings.Join(route, "+"))
		sinktest.AppendRouted(t, l, tenant, func(int) []string { return route }, line)
		if slices.Contains(route, "pg") {
			wantPG = append(wantPG, line)
		}
		if slices.Contains(route, "files") && tenant == "t1" {
			wantFiles = append(wantFiles, line)
		}
		if tenant == "t1" {
			wantAll = append(wantAll, line)
		}
	}
	for _, c := range []struct {
		name string
		d    *memDest
		want []string
	}{{"pg", pgDest, wantPG}, {"files", filesDest, wantFiles}, {"all", allDest, wantAll}} {
		waitCalls(t, c.d, c.name+"'s lines", func() bool { return len(c.d.got()) >= len(c.want) })
		if got := c.d.got(); !slices.Equal(got, c.want) {
			t.Errorf("sink %s got %d lines:\n%s\nwant %d:\n%s", c.name, len(got), strings.Join(got, "\n"), len(c.want), strings.Join(c.want, "\n"))
		}
	}
	// Every sink passes the frames it skipped: none holds the WAL.
	for s, d := range map[*Sink]*memDest{pg: pgDest, files: filesDest, all: allDest} {
		waitCalls(t, d, s.cfg.Name+"'s position", func() bool { return s.donePos() == l.Committed() })
	}
}

func TestFromRulesConfig(t *testing.T) {
	_, err := New(Config{Name: "x", From: "rule", Dir: t.TempDir()}, newMemDest(0), sinktest.Quiet())
	if err == nil || !strings.Contains(err.Error(), `sink "x": from "rule": want rules`) {
		t.Errorf("err %v", err)
	}
}

// TestBudgetBlockRouted checks that a sink that takes routed lines, over
// its budget with policy block, refuses only the batches that route a
// kept line to it.
func TestBudgetBlockRouted(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, filepath.Join(dir, "wal"))
	dest := newMemDest(0)
	dest.fail = true
	cfg := Config{Name: "pg-errors", From: FromRules, Linger: time.Millisecond, Budget: 8 << 10, Policy: Block,
		Retry: Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}, Dir: filepath.Join(dir, "sinks", "pg")}
	s, err := New(cfg, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.onDone = dest.notify
	m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
	m.Interval = time.Hour // measured by hand below
	start(t, m, l)
	waitFile(t, filepath.Join(cfg.Dir, "position"))
	toPG := func(int) []string { return []string{"pg-errors"} }
	for i := range 200 {
		sinktest.AppendRouted(t, l, "t1", toPG, jsonLine("api", i, strings.Repeat("x", 100)))
	}
	m.measure(l)
	if st := m.Status()[0]; !st.Blocked || st.From != "rules" {
		t.Fatalf("after 200 undelivered routed lines: %+v, want over the budget", st)
	}
	stored := 0
	g := m.Gate(flow.SinkFunc(func(*record.Batch) error { stored++; return nil }))
	batch := func(route func(int) []string, drop ...int) *record.Batch {
		b := &record.Batch{Tenant: "t1", Records: make([]record.Record, 3)}
		sinktest.SetRoutes(b, route)
		for _, i := range drop {
			b.Drop(i)
		}
		return b
	}
	if _, err := g.Prepare(batch(func(i int) []string {
		if i == 1 {
			return []string{"archive", "pg-errors"}
		}
		return nil
	})); !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), `sink "pg-errors"`) {
		t.Fatalf("a batch routing a line to the blocked sink: %v, want ErrBlocked naming it", err)
	}
	for name, b := range map[string]*record.Batch{
		"no route":                   batch(func(int) []string { return nil }),
		"routed elsewhere":           batch(func(int) []string { return []string{"archive"} }),
		"its routed line is dropped": batch(func(i int) []string { return map[int][]string{2: {"pg-errors"}}[i] }, 2),
	} {
		if _, err := g.Prepare(b); err != nil {
			t.Errorf("%s: %v, want stored: the sink takes nothing of it", name, err)
		}
	}
	if stored != 3 {
		t.Errorf("stored %d batches, want 3", stored)
	}
}
