package sink

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

func TestPauseFor(t *testing.T) {
	const budget = 1000
	for _, c := range []struct {
		name      string
		share     float64
		work      time.Duration
		prev, now int64
		want      time.Duration
	}{
		{"off", 0, 10 * time.Millisecond, 100, 200, 0},
		{"the WAL grew: a quarter's share pauses 3x the work", 0.25, 10 * time.Millisecond, 100, 200, 30 * time.Millisecond},
		{"a half's share pauses as long as the work", 0.5, 10 * time.Millisecond, 100, 200, 10 * time.Millisecond},
		{"the first look: nothing to compare", 0.25, 10 * time.Millisecond, -1, 200, 0},
		{"the WAL shrank: catching up", 0.25, 10 * time.Millisecond, 200, 100, 0},
		{"the WAL stayed: no pause", 0.25, 10 * time.Millisecond, 200, 200, 0},
		{"half the budget: no pause", 0.25, 10 * time.Millisecond, 100, budget / 2, 0},
		{"a pause is at most maxPause", 0.1, time.Second, 100, 200, maxPause},
		{"no work", 0.25, 0, 100, 200, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pauseFor(c.share, c.work, c.prev, c.now, budget); got != c.want {
				t.Fatalf("pauseFor(%v, %v, %d, %d, %d) = %v, want %v", c.share, c.work, c.prev, c.now, budget, got, c.want)
			}
		})
	}
}

func TestPaceOutOfRange(t *testing.T) {
	for _, pace := range []float64{-0.1, 1, 2} {
		_, err := New(Config{Name: "p", Dir: t.TempDir(), Pace: pace}, newMemDest(0), sinktest.Quiet())
		if err == nil || !strings.Contains(err.Error(), "pace") {
			t.Fatalf("pace %v: %v, want an error naming pace", pace, err)
		}
	}
}

// growDest is a memDest whose first grows deliveries each append more
// lines to the WAL, as ingest going on while the sink is behind.
type growDest struct {
	*memDest
	t     *testing.T
	l     *wal.Log
	mu    sync.Mutex
	grows int
	next  int
	want  []string
}

func (d *growDest) Deliver(ctx context.Context, b *Batch) ([]Rejected, error) {
	rej, err := d.memDest.Deliver(ctx, b)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.grows > 0 {
		d.grows--
		d.appendLocked(10)
	}
	return rej, err
}

func (d *growDest) appendLocked(n int) {
	for range n {
		line := jsonLine("api", d.next, "")
		d.next++
		sinktest.AppendLines(d.t, d.l, "t1", line)
		d.want = append(d.want, line)
	}
}

// TestPaceDeliversEverythingOnce: a paced sink pauses while the WAL grows
// faster than it reads (its pauses counted), and still delivers every
// line once, in order, with either policy's loop.
func TestPaceDeliversEverythingOnce(t *testing.T) {
	for _, policy := range []Policy{Block, DropOldest} {
		t.Run("policy="+policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := openWAL(t, filepath.Join(dir, "wal"))
			dest := &growDest{memDest: newMemDest(0), t: t, l: l, grows: 10}
			cfg := Config{Name: "paced", Type: "mem", BatchSize: 5, Linger: time.Millisecond, Pace: 0.25, Policy: policy,
				Dir: filepath.Join(dir, "sinks", "paced")}
			s, err := New(cfg, dest, sinktest.Quiet())
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var pauses []time.Duration
			s.waitFn = func(ctx context.Context, d time.Duration) bool {
				mu.Lock()
				pauses = append(pauses, d)
				mu.Unlock()
				return ctx.Err() == nil
			}
			s.onDone = dest.notify
			m := NewManager([]*Sink{s}, prometheus.NewRegistry(), sinktest.Quiet())
			m.Start(l)
			dest.mu.Lock()
			dest.appendLocked(20)
			dest.mu.Unlock()
			start(t, m, l)
			waitCalls(t, dest.memDest, "every line", func() bool {
				dest.mu.Lock()
				defer dest.mu.Unlock()
				return dest.grows == 0 && len(dest.got()) >= len(dest.want)
			})
			dest.mu.Lock()
			want := dest.want
			dest.mu.Unlock()
			if got := dest.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("delivered %d lines, want %d once each, in order:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(pauses) == 0 {
				t.Fatal("the sink never paused while the WAL grew faster than it read")
			}
			var sum time.Duration
			for _, p := range pauses {
				if p <= 0 || p > maxPause {
					t.Fatalf("pause %v, want within (0, %v]", p, maxPause)
				}
				sum += p
			}
			if st := m.Status()[0]; st.Paused < sum.Seconds()*0.999 {
				t.Fatalf("status: paused %v s, the pauses were %v", st.Paused, sum)
			}
		})
	}
}
