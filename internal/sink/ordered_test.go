package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

// orderedDest is an Ordered destination the test steps through: each
// Deliver announces itself on calls and waits for the test's word (nil:
// go on to the turn and commit; an error: fail before the turn, as a
// broken connection would), then announces its turn, waits for it
// (Batch.Turn) and commits, or rolls back when the turn says so.
type orderedDest struct {
	calls   chan *orderedCall
	turning chan string // the batch's first line, right before Turn

	mu        sync.Mutex
	committed []string // first lines of the batches, in commit order
	ends      []wal.Pos
	lines     []string
	rolled    []string // first lines of the batches rolled back by their turn
}

type orderedCall struct {
	first string
	word  chan error
}

func newOrderedDest() *orderedDest {
	return &orderedDest{calls: make(chan *orderedCall), turning: make(chan string, 16)}
}

func (d *orderedDest) Open(context.Context) (wal.Pos, bool, error) { return wal.Pos{}, false, nil }
func (d *orderedDest) Close() error                                { return nil }
func (d *orderedDest) Ordered()                                    {}

func (d *orderedDest) Deliver(ctx context.Context, b *Batch) ([]Rejected, error) {
	c := &orderedCall{first: string(b.Records[0].Line), word: make(chan error)}
	select {
	case d.calls <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var err error
	select {
	case err = <-c.word:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	d.turning <- c.first
	if err := b.Turn(ctx); err != nil {
		d.mu.Lock()
		d.rolled = append(d.rolled, c.first)
		d.mu.Unlock()
		return nil, fmt.Errorf("roll back: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.committed = append(d.committed, c.first)
	d.ends = append(d.ends, b.End)
	for _, r := range b.Records {
		d.lines = append(d.lines, string(r.Line))
	}
	return nil, nil
}

// TestOrderedConcurrency: with Concurrency 2, two batches are in the
// destination at once; the later one commits only after the earlier one,
// even when it reaches its turn first; when the earlier one fails, the
// later one is rolled back at its turn, the failed one is retried alone,
// then the later one again: every record committed once, in order, and
// the position at the last batch's end.
func TestOrderedConcurrency(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, dir+"/wal")
	d := newOrderedDest()
	s, err := New(Config{Name: "o", BatchSize: 2, Linger: time.Hour, Concurrency: 2, Dir: dir + "/sink"}, d, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.waitFn = func(ctx context.Context, _ time.Duration) bool { return ctx.Err() == nil }
	m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
	m.Start(l)
	r := start(t, m, l)
	var want []string
	// Each append is one WAL record of two lines: one batch.
	batch := func() string {
		a, b := jsonLine("api", len(want), ""), jsonLine("api", len(want)+1, "")
		want = append(want, a, b)
		sinktest.AppendLines(t, l, "t", a, b)
		return a
	}
	expect := func(c *orderedCall, first string) {
		t.Helper()
		if c.first != first {
			t.Fatalf("Deliver of the batch starting %q, want %q", c.first, first)
		}
	}
	// two takes the two Deliver calls in flight, which announce
	// themselves in either order, as the calls of x and y.
	two := func(x, y string) (*orderedCall, *orderedCall) {
		t.Helper()
		c1, c2 := <-d.calls, <-d.calls
		if c1.first == y {
			c1, c2 = c2, c1
		}
		expect(c1, x)
		expect(c2, y)
		return c1, c2
	}
	a, b, c := batch(), batch(), batch()
	ca, cb := two(a, b) // both in Deliver at once
	cb.word <- nil
	if got := <-d.turning; got != b {
		t.Fatalf("turn of %q, want %q's", got, b)
	}
	// b waits for its turn: a has not committed.
	ca.word <- nil
	cc := <-d.calls // a's slot freed
	expect(cc, c)
	cc.word <- nil

	// A failure: e reaches its turn, then d fails before its own.
	dd, e := batch(), batch()
	cd, ce := two(dd, e)
	ce.word <- nil
	cd.word <- errors.New("connection reset")
	cd2 := <-d.calls // d again, alone: e was rolled back
	expect(cd2, dd)
	cd2.word <- nil
	ce2 := <-d.calls
	expect(ce2, e)
	ce2.word <- nil
	for i := 0; ; i++ {
		d.mu.Lock()
		n := len(d.committed)
		d.mu.Unlock()
		if n == 5 && s.donePos() == l.Committed() {
			break
		}
		if i > 6000 {
			t.Fatalf("%d batches committed, position %v, want 5 and %v", n, s.donePos(), l.Committed())
		}
		time.Sleep(time.Millisecond)
	}
	r.stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	if got, w := strings.Join(d.committed, "\n"), strings.Join([]string{a, b, c, dd, e}, "\n"); got != w {
		t.Fatalf("committed in the order\n%s\nwant\n%s", got, w)
	}
	if fmt.Sprint(d.lines) != fmt.Sprint(want) {
		t.Fatalf("lines %q, want each once, in order: %q", d.lines, want)
	}
	for i := 1; i < len(d.ends); i++ {
		if !posLess(d.ends[i-1], d.ends[i]) {
			t.Fatalf("batch ends out of order: %v", d.ends)
		}
	}
	if len(d.rolled) != 1 || d.rolled[0] != e {
		t.Fatalf("rolled back at their turn: %q, want only %q", d.rolled, e)
	}
	if st := m.Status()[0]; st.Retries == 0 {
		t.Fatalf("status: %+v, want the failed attempt counted as a retry", st)
	}
}

// TestConcurrencyConfig: above 1, Concurrency needs an Ordered destination
// and policy block, and has a bound.
func TestConcurrencyConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		cfg  Config
		dest Destination
		want string
	}{
		{"not ordered", Config{Name: "a", Type: "file", Concurrency: 2}, newMemDest(0), `sink "a": concurrency 2: the file destination delivers one batch at a time`},
		{"drop_oldest", Config{Name: "b", Concurrency: 2, Policy: DropOldest}, newOrderedDest(), `sink "b": concurrency 2 needs policy block`},
		{"too many", Config{Name: "c", Concurrency: MaxConcurrency + 1}, newOrderedDest(), fmt.Sprintf(`sink "c": concurrency %d: at most %d`, MaxConcurrency+1, MaxConcurrency)},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Dir = dir + "/" + c.cfg.Name
			_, err := New(c.cfg, c.dest, sinktest.Quiet())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want %q", err, c.want)
			}
		})
	}
	if _, err := New(Config{Name: "d", Concurrency: 2, Dir: dir + "/d"}, newOrderedDest(), sinktest.Quiet()); err != nil {
		t.Fatal(err)
	}
}
