package server

import (
	"slices"
	"testing"

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
	l := newStreamLimit(2)
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
	rf = newStreamLimit(1).admit("t", c, false, func(i int) { refused = append(refused, i) })
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
