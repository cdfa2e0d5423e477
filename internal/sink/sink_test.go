package sink

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memDest is a destination in memory that keeps its position with its
// records, as PostgreSQL does, fails its first failures deliveries, and
// rejects for good the records whose line contains "bad".
type memDest struct {
	mu       sync.Mutex
	lines    []string
	pos      wal.Pos
	hasPos   bool
	failures int // deliveries still to fail
	fail     bool
	calls    chan struct{} // receives after every Deliver
}

func newMemDest(failures int) *memDest {
	return &memDest{failures: failures, calls: make(chan struct{}, 1)}
}

func (d *memDest) Open(context.Context) (wal.Pos, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pos, d.hasPos, nil
}

func (d *memDest) Deliver(_ context.Context, b *Batch) ([]Rejected, error) {
	defer d.notify()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail || d.failures > 0 {
		d.failures--
		return nil, errors.New("destination down")
	}
	var rej []Rejected
	for i, r := range b.Records {
		if strings.Contains(string(r.Line), "bad") {
			rej = append(rej, Rejected{Index: i, Reason: "check constraint: bad line"})
			continue
		}
		d.lines = append(d.lines, string(r.Line))
	}
	d.pos, d.hasPos = b.End, true
	return rej, nil
}

func (d *memDest) Close() error { return nil }

func (d *memDest) notify() {
	select {
	case d.calls <- struct{}{}:
	default:
	}
}

func (d *memDest) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.lines...)
}

func jsonLine(service string, i int, extra string) string {
	return fmt.Sprintf(`{"time":"2026-01-15T08:00:%02d.000Z","service":"%s","msg":"line %d%s","n":%d}`, i%60, service, i, extra, i)
}

func openWAL(t *testing.T, dir string) *wal.Log {
	t.Helper()
	l, _, err := wal.Open(wal.Options{Dir: dir, SegmentSize: 4 << 10, Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// running is a manager running in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, m *Manager, l *wal.Log) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Run(ctx, l) }()
	t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// waitCalls waits for deliveries until cond holds.
func waitCalls(t *testing.T, d *memDest, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-d.calls:
		case <-deadline:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func TestRetriesThenExactlyOnceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, filepath.Join(dir, "wal"))
	dest := newMemDest(3)
	cfg := Config{Name: "pg", Type: "mem", Tenant: "t1", Selector: `{service="api"}`, BatchSize: 7, Linger: time.Millisecond,
		Retry: Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}, Dir: filepath.Join(dir, "sinks", "pg")}
	s, err := New(cfg, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	if s.Hold() != ^uint64(0) {
		t.Fatalf("a new sink holds segment %d before it started", s.Hold())
	}
	s.onDone = dest.notify
	m := NewManager([]*Sink{s}, prometheus.NewRegistry(), sinktest.Quiet())
	r := start(t, m, l)
	// The sink starts at the end of the log: wait for its position file.
	waitFile(t, filepath.Join(cfg.Dir, "position"))
	var want []string
	for i := range 60 {
		svc := "api"
		if i%3 == 0 {
			svc = "web" // not the selector's
		}
		line := jsonLine(svc, i, "")
		sinktest.AppendLines(t, l, "t1", line)
		sinktest.AppendLines(t, l, "t2", jsonLine("api", i, " other tenant"))
		if svc == "api" {
			want = append(want, line)
		}
	}
	// The counters move after Deliver returns: wait for them too.
	waitCalls(t, dest, "every line", func() bool {
		return len(dest.got()) >= len(want) && m.Status()[0].Records >= float64(len(want))
	})
	if got := dest.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("delivered %d lines:\n%s\nwant %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	st := m.Status()[0]
	if st.Retries != 3 || st.Records != float64(len(want)) {
		t.Fatalf("status after 3 failures: retries %v, records %v; want 3, %d", st.Retries, st.Records, len(want))
	}
	r.stop()

	// A restart resumes where the destination is: nothing twice.
	s2, err := New(cfg, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	if s2.Hold() > l.Committed().Segment {
		t.Fatalf("restarted sink holds %d, beyond the log's %d", s2.Hold(), l.Committed().Segment)
	}
	s2.onDone = dest.notify
	m2 := NewManager([]*Sink{s2}, prometheus.NewRegistry(), sinktest.Quiet())
	start(t, m2, l)
	more := jsonLine("api", 99, " after restart")
	sinktest.AppendLines(t, l, "t1", more)
	want = append(want, more)
	waitCalls(t, dest, "the line after the restart", func() bool { return len(dest.got()) >= len(want) })
	if got := dest.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after restart: %d lines, want %d (a duplicate or a loss)", len(got), len(want))
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if i > 30000 {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(time.Millisecond) // polling a file: no event to wait on
	}
}

// TestNewSinkStartsDurably: a new sink whose destination never opened
// still resumes, after a crash, where Manager.Start first put it, not at
// the WAL's end of the next start.
func TestNewSinkStartsDurably(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, filepath.Join(dir, "wal"))
	cfg := Config{Name: "s", BatchSize: 10, Linger: time.Millisecond, Dir: filepath.Join(dir, "sink")}
	s, err := New(cfg, newMemDest(0), sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	NewManager([]*Sink{s}, nil, sinktest.Quiet()).Start(l)
	// Ingest takes lines; the process dies before the destination opened.
	for i := range 5 {
		sinktest.AppendLines(t, l, "t1", jsonLine("api", i, ""))
	}
	d := newMemDest(0)
	s, err = New(cfg, d, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	start(t, NewManager([]*Sink{s}, nil, sinktest.Quiet()), l)
	waitCalls(t, d, "5 lines", func() bool { return len(d.got()) == 5 })
}

// lineOnlyDest is a memDest that reads only lines (LineOnly), and
// counts the records that came with fields anyway.
type lineOnlyDest struct {
	*memDest
	withFields atomic.Int64
}

func (d *lineOnlyDest) LineOnly() bool { return true }

func (d *lineOnlyDest) Deliver(ctx context.Context, b *Batch) ([]Rejected, error) {
	for _, r := range b.Records {
		if r.FieldsJSON != nil || r.Metadata != nil {
			d.withFields.Add(1)
		}
	}
	return d.memDest.Deliver(ctx, b)
}

// TestDeadLetter: a record the destination rejects goes to the dead letter
// with its fields, also from a sink whose records carry none (LineOnly:
// they are read back from the WAL).
func TestDeadLetter(t *testing.T) {
	for _, lineOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("line_only=%v", lineOnly), func(t *testing.T) {
			dir := t.TempDir()
			l := openWAL(t, filepath.Join(dir, "wal"))
			mem := newMemDest(0)
			var dest Destination = mem
			lo := &lineOnlyDest{memDest: mem}
			if lineOnly {
				dest = lo
			}
			cfg := Config{Name: "files", Linger: time.Millisecond, Dir: filepath.Join(dir, "sinks", "files")}
			s, err := New(cfg, dest, sinktest.Quiet())
			if err != nil {
				t.Fatal(err)
			}
			s.onDone = mem.notify
			m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
			start(t, m, l)
			waitFile(t, filepath.Join(cfg.Dir, "position"))
			sinktest.AppendLines(t, l, "t1", jsonLine("api", 1, ""), jsonLine("api", 2, " bad"), jsonLine("api", 3, ""))
			waitCalls(t, mem, "the good lines", func() bool { return len(mem.got()) >= 2 })
			waitCalls(t, mem, "the dead letter count", func() bool { return m.Status()[0].DeadLettered == 1 })
			if n := lo.withFields.Load(); n != 0 {
				t.Errorf("a line-only destination got %d records with fields", n)
			}
			f, err := os.Open(DeadLetterPath(cfg.Dir))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			var dls []DeadLetter
			for sc.Scan() {
				var d DeadLetter
				if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
					t.Fatalf("dead letter line %q: %v", sc.Text(), err)
				}
				dls = append(dls, d)
			}
			if len(dls) != 1 || !strings.Contains(dls[0].Line, "line 2 bad") || dls[0].Reason != "check constraint: bad line" ||
				string(dls[0].Labels) != `{"service":"api"}` || dls[0].Tenant != "t1" {
				t.Fatalf("dead letter: %+v", dls)
			}
			var fields map[string]any
			if err := json.Unmarshal(dls[0].Fields, &fields); err != nil || fields["n"] != float64(2) {
				t.Fatalf("dead letter fields %s: %v", dls[0].Fields, err)
			}
		})
	}
}

func TestBudgetBlock(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, filepath.Join(dir, "wal"))
	dest := newMemDest(0)
	dest.fail = true
	cfg := Config{Name: "pg-audit", Tenant: "t1", Linger: time.Millisecond, Budget: 8 << 10, Policy: Block,
		Retry: Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}, Dir: filepath.Join(dir, "sinks", "a")}
	s, err := New(cfg, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.onDone = dest.notify
	m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
	m.Interval = time.Hour // measured by hand below
	start(t, m, l)
	waitFile(t, filepath.Join(cfg.Dir, "position"))
	first := l.Committed()
	var stored int
	next := flow.SinkFunc(func(*record.Batch) error { stored++; return nil })
	g := m.Gate(next)
	for i := range 200 {
		sinktest.AppendLines(t, l, "t1", jsonLine("api", i, strings.Repeat("x", 100)))
	}
	m.measure(l)
	if st := m.Status()[0]; !st.Blocked || st.Backlog <= cfg.Budget {
		t.Fatalf("after 200 undelivered lines: %+v, want over the budget", st)
	}
	_, err = g.Prepare(&record.Batch{Tenant: "t1"})
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), `sink "pg-audit"`) {
		t.Fatalf("ingest of t1 while blocked: %v, want ErrBlocked naming the sink", err)
	}
	if _, err := g.Prepare(&record.Batch{Tenant: "t2"}); err != nil || stored != 1 {
		t.Fatalf("ingest of t2, which the sink does not take: %v (stored %d)", err, stored)
	}
	// The WAL is held from the sink's position.
	if h := m.Hold(); h > first.Segment {
		t.Fatalf("hold %d, want at most %d (the sink has delivered nothing)", h, first.Segment)
	}
	// The destination comes back: the sink catches up, ingest flows.
	dest.mu.Lock()
	dest.fail = false
	dest.mu.Unlock()
	waitCalls(t, dest, "every line", func() bool { return len(dest.got()) == 200 })
	waitCalls(t, dest, "the position", func() bool { return s.donePos() == l.Committed() })
	m.measure(l)
	if _, err := g.Prepare(&record.Batch{Tenant: "t1"}); err != nil {
		t.Fatalf("ingest after the sink caught up: %v", err)
	}
}

func TestBudgetDropOldest(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, filepath.Join(dir, "wal"))
	dest := newMemDest(0)
	dest.fail = true
	cfg := Config{Name: "lossy", Linger: time.Millisecond, Budget: 8 << 10, Policy: DropOldest, BatchSize: 10,
		Retry: Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}, Dir: filepath.Join(dir, "sinks", "l")}
	s, err := New(cfg, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.onDone = dest.notify
	m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
	m.Interval = time.Hour
	start(t, m, l)
	waitFile(t, filepath.Join(cfg.Dir, "position"))
	for i := range 200 {
		sinktest.AppendLines(t, l, "t1", jsonLine("api", i, strings.Repeat("x", 100)))
	}
	m.measure(l)
	if _, err := m.Gate(flow.SinkFunc(func(*record.Batch) error { return nil })).Prepare(&record.Batch{Tenant: "t1"}); err != nil {
		t.Fatalf("drop_oldest never blocks ingest: %v", err)
	}
	waitCalls(t, dest, "dropping", func() bool { return m.Status()[0].Dropped > 0 })
	dest.mu.Lock()
	dest.fail = false
	dest.mu.Unlock()
	waitCalls(t, dest, "the rest", func() bool { return s.donePos() == l.Committed() })
	st := m.Status()[0]
	got := len(dest.got())
	if int(st.Dropped)+got != 200 || st.Dropped == 0 || got == 0 {
		t.Fatalf("dropped %v + delivered %d, want 200 in all with some of each", st.Dropped, got)
	}
	backlog, err := l.BytesSince(s.donePos())
	if err != nil || backlog != 0 {
		t.Fatalf("backlog after catching up: %d, %v", backlog, err)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for _, tc := range []struct {
		n      int
		lo, hi time.Duration
	}{{1, 50 * time.Millisecond, 100 * time.Millisecond}, {2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond}, {10, 500 * time.Millisecond, time.Second}} {
		for _, r := range []func(int64) int64{func(int64) int64 { return 0 }, func(n int64) int64 { return n - 1 }} {
			if d := b.delay(tc.n, r); d < tc.lo || d > tc.hi {
				t.Errorf("delay(%d) = %v, want in [%v, %v]", tc.n, d, tc.lo, tc.hi)
			}
		}
	}
}
