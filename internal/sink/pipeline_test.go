package sink

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

// gateDest holds every Deliver until the test lets it go, and records the
// batches it took.
type gateDest struct {
	mu      sync.Mutex
	entered chan struct{} // receives when a Deliver starts
	release chan struct{} // a Deliver returns after one receive
	lines   []string
	ends    []wal.Pos
}

func (d *gateDest) Open(context.Context) (wal.Pos, bool, error) { return wal.Pos{}, false, nil }
func (d *gateDest) Close() error                                { return nil }

func (d *gateDest) Deliver(ctx context.Context, b *Batch) ([]Rejected, error) {
	d.entered <- struct{}{}
	select {
	case <-d.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range b.Records {
		d.lines = append(d.lines, string(r.Line))
	}
	d.ends = append(d.ends, b.End)
	return nil, nil
}

// TestPipelineFillsAhead: while the destination holds a batch, the next one
// is read and decoded (its oldest record is known while the first is being
// sent), the position moves only with deliveries, and every record is
// delivered once, in order.
func TestPipelineFillsAhead(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, dir+"/wal")
	d := &gateDest{entered: make(chan struct{}), release: make(chan struct{})}
	s, err := New(Config{Name: "p", BatchSize: 2, Linger: time.Hour, Dir: dir + "/sink"}, d, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
	m.Start(l)
	start0 := s.donePos()
	r := start(t, m, l)
	var want []string
	for i := range 6 {
		want = append(want, jsonLine("api", i, ""))
	}
	sinktest.AppendLines(t, l, "t", want[0], want[1])
	<-d.entered // the first batch is being sent
	sinktest.AppendLines(t, l, "t", want[2], want[3])
	// The second batch fills meanwhile: its oldest record shows up beside
	// the one being sent.
	for i := 0; s.oldest.Load() == 0; i++ {
		if i > 6000 {
			t.Fatal("the next batch was not read while the first was being sent")
		}
		time.Sleep(time.Millisecond)
	}
	if s.sending.Load() == 0 || s.oldestUnsent() == 0 {
		t.Fatalf("while sending: sending %d, oldest unsent %d", s.sending.Load(), s.oldestUnsent())
	}
	if got := s.donePos(); got != start0 {
		t.Fatalf("the position moved to %v before a delivery (from %v)", got, start0)
	}
	d.release <- struct{}{}
	<-d.entered
	sinktest.AppendLines(t, l, "t", want[4], want[5])
	d.release <- struct{}{}
	<-d.entered
	d.release <- struct{}{}
	r.stop()
	if fmt.Sprint(d.lines) != fmt.Sprint(want) {
		t.Fatalf("delivered %q, want %q", d.lines, want)
	}
	for i := 1; i < len(d.ends); i++ {
		if !posLess(d.ends[i-1], d.ends[i]) {
			t.Fatalf("batch ends out of order: %v", d.ends)
		}
	}
	if got := s.donePos(); got != d.ends[len(d.ends)-1] {
		t.Fatalf("position %v, want the last batch's end %v", got, d.ends[len(d.ends)-1])
	}
	if s.oldestUnsent() != 0 {
		t.Fatalf("oldest unsent %d after everything was delivered", s.oldestUnsent())
	}
}

// TestBatchBytes: a batch ends at the WAL record that takes it past
// BatchBytes, without waiting for BatchSize records or the linger.
func TestBatchBytes(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, dir+"/wal")
	d := &gateDest{entered: make(chan struct{}), release: make(chan struct{})}
	s, err := New(Config{Name: "b", BatchSize: 1000, BatchBytes: 1, Linger: time.Hour, Dir: dir + "/sink"}, d, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
	m.Start(l)
	r := start(t, m, l)
	var want []string
	for i := range 3 {
		a, b := jsonLine("api", 2*i, ""), jsonLine("api", 2*i+1, "")
		want = append(want, a, b)
		sinktest.AppendLines(t, l, "t", a, b)
	}
	for range 3 {
		<-d.entered
		d.release <- struct{}{}
	}
	r.stop()
	if fmt.Sprint(d.lines) != fmt.Sprint(want) || len(d.ends) != 3 {
		t.Fatalf("%d batches of %q, want 3 of two lines each: %q", len(d.ends), d.lines, want)
	}
}

// TestBatchMemory: two batches of BatchBytes per sink, the default where
// a sink sets none; Concurrency+1 with a concurrency.
func TestBatchMemory(t *testing.T) {
	dir := t.TempDir()
	var sinks []*Sink
	for i, bb := range []int{1 << 20, 0} {
		s, err := New(Config{Name: fmt.Sprint("s", i), BatchBytes: bb, Dir: fmt.Sprint(dir, "/", i)}, newMemDest(0), sinktest.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		sinks = append(sinks, s)
	}
	if got, want := NewManager(sinks, nil, sinktest.Quiet()).BatchMemory(), int64(2<<20+2*DefaultBatchBytes); got != want {
		t.Fatalf("BatchMemory %d, want %d", got, want)
	}
	if got := NewManager(nil, nil, sinktest.Quiet()).BatchMemory(); got != 0 {
		t.Fatalf("BatchMemory without sinks %d, want 0", got)
	}
	// Concurrency 2: two batches in the destination and one filling.
	s, err := New(Config{Name: "c", BatchBytes: 1 << 20, Concurrency: 2, Dir: dir + "/c"}, newOrderedDest(), sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := NewManager([]*Sink{s}, nil, sinktest.Quiet()).BatchMemory(), int64(3<<20); got != want {
		t.Fatalf("BatchMemory at concurrency 2: %d, want %d", got, want)
	}
}
