package flow

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/record"
)

// TestStreamLimitSkipsDropped: records an earlier stage dropped neither
// take a stream nor count as refused, and leave with the refused ones.
func TestStreamLimitSkipsDropped(t *testing.T) {
	b := &record.Batch{Names: record.NewNames(), Streams: record.NewStreams()}
	for i, app := range []string{"a", "b", "c", "a", "c"} {
		id, ok := b.Streams.Intern(record.Labels{{Name: "app", Value: app}})
		if !ok {
			t.Fatal("stream table full")
		}
		off := uint32(len(b.Data))
		b.Data = append(b.Data, app...)
		b.Records = append(b.Records, record.Record{Time: int64(i), Stream: id, Line: record.Span{Off: off, Len: 1}})
	}
	b.Drop(1) // stream b: dropped, so it must not take the second slot
	l := NewStreamLimit(2)
	var refused []int
	rf := l.admit("t", b, false, func(i int) { refused = append(refused, i) })
	if rf.lines != 0 || rf.streams != 0 || len(refused) != 0 {
		t.Fatalf("refusal %+v, refused %v: streams a and c fit the limit of 2 once b's record is dropped", rf, refused)
	}
	if len(b.Records) != 5 || b.Kept(1) || b.NumKept() != 4 {
		t.Errorf("nothing refused: %d records, %d kept, want the batch untouched", len(b.Records), b.NumKept())
	}

	// A limit of 1: stream c is refused; the refused records leave, and
	// the dropped one with them, without a call.
	c := &record.Batch{Names: b.Names, Streams: b.Streams, Data: b.Data, Records: slices.Clone(b.Records)}
	c.Drop(1)
	rf = NewStreamLimit(1).admit("t", c, false, func(i int) { refused = append(refused, i) })
	if rf.lines != 2 || rf.streams != 1 || !slices.Equal(refused, []int{2, 4}) {
		t.Errorf("refusal %+v, refused %v: want stream c's 2 lines, at 2 and 4", rf, refused)
	}
	var times []int64
	for i := range c.Records {
		times = append(times, c.Records[i].Time)
	}
	if !slices.Equal(times, []int64{0, 3}) || !c.AllKept() {
		t.Errorf("records left %v (AllKept %v), want [0 3], all kept", times, c.AllKept())
	}

	// Whole: the refused count is of kept records only.
	b.Drop(0)
	b.Records = append(b.Records, record.Record{Time: 9, Stream: mustIntern(t, b, "d"), Line: record.Span{Len: 1}})
	if rf := l.admit("t", b, true, nil); rf.lines != 4 || rf.streams != 1 {
		t.Errorf("whole refusal %+v, want 4 lines (the kept ones) of 1 new stream", rf)
	}
}

func mustIntern(t *testing.T, b *record.Batch, app string) uint32 {
	t.Helper()
	id, ok := b.Streams.Intern(record.Labels{{Name: "app", Value: app}})
	if !ok {
		t.Fatal("stream table full")
	}
	return id
}

// batchOf returns a batch of tenant t with one record per app, each of
// stream {app=APP}.
func batchOf(t *testing.T, apps ...string) *record.Batch {
	t.Helper()
	return batchOfTenant(t, "t", apps...)
}

func batchOfTenant(t *testing.T, tenant string, apps ...string) *record.Batch {
	t.Helper()
	b := &record.Batch{Tenant: tenant, Names: record.NewNames(), Streams: record.NewStreams()}
	for i, app := range apps {
		off := uint32(len(b.Data))
		b.Data = append(b.Data, app...)
		b.Records = append(b.Records, record.Record{Time: int64(i), Stream: mustIntern(t, b, app), Line: record.Span{Off: off, Len: uint32(len(app))}})
	}
	return b
}

// apps returns the app of each record left in b.
func apps(b *record.Batch) []string {
	var out []string
	for i := range b.Records {
		out = append(out, b.Streams.Get(b.Records[i].Stream)[0].Value)
	}
	return out
}

// TestStreamLimitAdmit: past the limit, lines of new streams are refused
// with a message naming the limit; known streams and other tenants pass.
func TestStreamLimitAdmit(t *testing.T) {
	l := NewStreamLimit(2)
	b := batchOf(t, "a", "b", "c", "a", "d")
	var refused []int
	rf := l.Admit(b, false, func(i int) { refused = append(refused, i) })
	if rf.Lines != 2 || rf.Reason != "stream_limit" || !slices.Equal(refused, []int{2, 4}) {
		t.Errorf("refusal %+v, refused %v: want 2 lines (c and d, at 2 and 4) for stream_limit", rf, refused)
	}
	for _, want := range []string{"tenant t", "limit of 2 active streams", "max_streams_per_tenant", "2 lines of 2 new streams"} {
		if !strings.Contains(rf.Message, want) {
			t.Errorf("message %q lacks %q", rf.Message, want)
		}
	}
	if got := apps(b); !slices.Equal(got, []string{"a", "b", "a"}) {
		t.Errorf("left %v, want [a b a]", got)
	}
	if rf := l.Admit(batchOf(t, "b", "a"), false, nil); rf.Lines != 0 {
		t.Errorf("known streams refused: %+v", rf)
	}
	if rf := l.Admit(batchOfTenant(t, "other", "c", "d"), false, nil); rf.Lines != 0 {
		t.Errorf("another tenant refused: %+v", rf)
	}
	if rf := NewStreamLimit(0).Admit(batchOf(t, "a", "b", "c"), false, nil); rf.Lines != 0 {
		t.Errorf("no limit refused: %+v", rf)
	}
}

// TestStreamLimitWhole: a batch refused whole marks none of its streams,
// so that they do not take the room of a later batch.
func TestStreamLimitWhole(t *testing.T) {
	l := NewStreamLimit(2)
	l.Admit(batchOf(t, "a"), true, nil)
	b := batchOf(t, "a", "b", "c")
	if rf := l.Admit(b, true, nil); rf.Lines != 3 {
		t.Errorf("whole refusal %+v, want all 3 lines", rf)
	}
	if len(b.Records) != 3 {
		t.Errorf("a batch refused whole lost records: %d left", len(b.Records))
	}
	// b was not marked by the refused batch: c fits beside a.
	if rf := l.Admit(batchOf(t, "c"), true, nil); rf.Lines != 0 {
		t.Errorf("c refused after a whole refusal: %+v", rf)
	}
}

// TestStreamLimitIdle: a stream with no line for longer than StreamIdle
// no longer counts.
func TestStreamLimitIdle(t *testing.T) {
	now := time.Unix(1_768_464_000, 0)
	l := NewStreamLimit(2)
	l.Now = func() time.Time { return now }
	l.Admit(batchOf(t, "a", "b"), false, nil)
	now = now.Add(StreamIdle / 2)
	if rf := l.Admit(batchOf(t, "a", "c"), false, nil); rf.Lines != 1 {
		t.Errorf("within StreamIdle: %+v, want c refused", rf)
	}
	// b has been idle past StreamIdle, a has not.
	now = now.Add(StreamIdle/2 + 2*time.Minute)
	if rf := l.Admit(batchOf(t, "c"), false, nil); rf.Lines != 0 {
		t.Errorf("after b went idle: %+v, want c admitted", rf)
	}
	if rf := l.Admit(batchOf(t, "b"), false, nil); rf.Lines != 1 {
		t.Errorf("b came back past the limit: %+v, want refused", rf)
	}
}
