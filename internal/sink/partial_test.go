package sink

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	lokiproto "github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

// partialDest delivers part of a batch on its first attempt (every other
// record, and "bad" ones rejected), then fails asking for a wait; the
// retry must carry only the rest.
type partialDest struct {
	mu       sync.Mutex
	attempts [][]string // lines offered (not settled) per attempt
	lines    []string   // delivered
	calls    chan struct{}
}

func (d *partialDest) Open(context.Context) (wal.Pos, bool, error) { return wal.Pos{}, false, nil }
func (d *partialDest) Close() error                                { return nil }

func (d *partialDest) Positionless() {}

func (d *partialDest) Deliver(_ context.Context, b *Batch) ([]Rejected, error) {
	defer func() {
		select {
		case d.calls <- struct{}{}:
		default:
		}
	}()
	d.mu.Lock()
	defer d.mu.Unlock()
	var offered []string
	for i := range b.Records {
		if !b.Settled(i) {
			offered = append(offered, string(b.Records[i].Line))
		}
	}
	d.attempts = append(d.attempts, offered)
	first := len(d.attempts) == 1
	var rej []Rejected
	for i := range b.Records {
		if b.Settled(i) {
			continue
		}
		line := string(b.Records[i].Line)
		switch {
		case first && strings.Contains(line, "bad"):
			rej = append(rej, Rejected{Index: i, Reason: "mapper_parsing_exception"})
		case !first || i%2 == 0:
			d.lines = append(d.lines, line)
			b.Settle(i)
		}
	}
	if first {
		return rej, RetryAfter(errors.New("429 Too Many Requests"), 7*time.Second)
	}
	return nil, nil
}

func TestPartialRetryAndRetryAfter(t *testing.T) {
	dir := t.TempDir()
	l := openWAL(t, filepath.Join(dir, "wal"))
	dest := &partialDest{calls: make(chan struct{}, 1)}
	cfg := Config{Name: "es", BatchSize: 10, Linger: time.Hour, Retry: Backoff{Initial: time.Millisecond, Max: time.Millisecond},
		Dir: filepath.Join(dir, "sinks", "es")}
	s, err := New(cfg, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waits []time.Duration
	s.waitFn = func(_ context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return true
	}
	m := NewManager([]*Sink{s}, nil, sinktest.Quiet())
	m.Start(l)
	var all []string
	for i := range 10 {
		extra := ""
		if i == 3 {
			extra = " bad"
		}
		all = append(all, jsonLine("api", i, extra))
	}
	// One WAL record of 10 lines: the batch is full at once (no linger).
	sinktest.AppendLines(t, l, "t1", all...)
	var dones atomic.Int32
	s.onDone = func() {
		dones.Add(1)
		select {
		case dest.calls <- struct{}{}:
		default:
		}
	}
	start(t, m, l)
	cond := func() bool {
		dest.mu.Lock()
		defer dest.mu.Unlock()
		return len(dest.attempts) >= 2
	}
	for !cond() {
		select {
		case <-dest.calls:
		case <-time.After(30 * time.Second):
			t.Fatal("gave up waiting for the retry")
		}
	}
	// The counters settle once the batch is done (onDone).
	for dones.Load() == 0 || m.Status()[0].Records != 9 || m.Status()[0].DeadLettered != 1 {
		select {
		case <-dest.calls:
		case <-time.After(30 * time.Second):
			t.Fatalf("status %+v: want 9 records sent, 1 dead-lettered", m.Status()[0])
		}
	}
	// A destination without positions has the position file saved after
	// each batch, not only when a WAL segment is passed.
	if p, ok, err := readPosition(s.positionPath()); err != nil || !ok || p != l.Committed() {
		t.Fatalf("position file %v (%v, %v) after the batch, want the log's end %v", p, ok, err, l.Committed())
	}
	dest.mu.Lock()
	defer dest.mu.Unlock()
	if len(dest.attempts[0]) != 10 {
		t.Fatalf("first attempt offered %d records, want 10", len(dest.attempts[0]))
	}
	var wantRetry []string
	for i, line := range all {
		if i%2 == 1 && i != 3 {
			wantRetry = append(wantRetry, line)
		}
	}
	if !slices.Equal(dest.attempts[1], wantRetry) {
		t.Fatalf("retry offered %d records:\n%s\nwant only the undelivered, not rejected %d:\n%s", len(dest.attempts[1]),
			strings.Join(dest.attempts[1], "\n"), len(wantRetry), strings.Join(wantRetry, "\n"))
	}
	got := slices.Clone(dest.lines)
	slices.Sort(got)
	want := slices.Clone(all)
	want = slices.Delete(want, 3, 4)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %d lines, want each of %d once", len(got), len(want))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 || waits[0] < 7*time.Second {
		t.Fatalf("waits before retries %v: want one of at least the 7s Retry-After", waits)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{"7", 7 * time.Second},
		{"soon", 0},
		{"99999999999", MaxRetryAfter},
		{"Thu, 15 Jan 2026 08:00:30 GMT", 30 * time.Second},
		{"Thu, 15 Jan 2026 07:59:30 GMT", 0},
		{"Fri, 16 Jan 2026 08:00:00 GMT", MaxRetryAfter},
	} {
		t.Run(c.in, func(t *testing.T) {
			if got := ParseRetryAfter(c.in, now); got != c.want {
				t.Fatalf("ParseRetryAfter(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

// Structured metadata of a Loki push survives the WAL into Record.Metadata;
// fields parsed from a line do not become metadata.
func TestRecordMetadata(t *testing.T) {
	d := lokiproto.Decoder{Limits: lokiproto.DefaultLimits}
	var pushed record.Batch
	if _, err := d.DecodeJSON([]byte(`{"streams":[{"stream":{"app":"api"},"values":[
		["1768464000000000001","plain"],
		["1768464000000000002","with meta",{"trace_id":"abc","user":"a\"b"}]]}]}`), &pushed); err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	var b Batch
	for _, src := range []*record.Batch{&pushed} {
		blk, err := rows.Decode(enc.Append(nil, "t1", src))
		if err != nil {
			t.Fatal(err)
		}
		b.appendBlock(&filter{}, blk, wal.Pos{})
	}
	p, err := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Bytes(context.Background(), []byte(`{"service":"api","trace_id":"abc","msg":"parsed"}`+"\n"), func(rb *record.Batch) error {
		blk, err := rows.Decode(enc.Append(nil, "t1", rb))
		if err == nil {
			b.appendBlock(&filter{}, blk, wal.Pos{})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range b.Records {
		got = append(got, fmt.Sprintf("%s %v", r.Line, r.Metadata))
	}
	want := []string{`plain {}`, `with meta {trace_id="abc", user="a\"b"}`, `{"service":"api","trace_id":"abc","msg":"parsed"} {}`}
	if !slices.Equal(got, want) {
		t.Fatalf("records and metadata:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
