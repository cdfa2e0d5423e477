package record

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sluicelog/sluice/internal/timestamp"
)

// build makes one record from name/value string pairs, all String kind.
func build(bl *Builder, b *Batch, kv ...string) {
	start := len(b.Data)
	for _, s := range kv {
		b.Data = append(b.Data, s...)
	}
	bl.Begin(Span{Off: uint32(start), Len: uint32(len(b.Data) - start)})
	off := uint32(start)
	for i := 0; i < len(kv); i += 2 {
		id, _ := bl.Name([]byte(kv[i]))
		off += uint32(len(kv[i]))
		bl.Add(Field{Name: id, Kind: String, Raw: Span{Off: off, Len: uint32(len(kv[i+1]))}})
		off += uint32(len(kv[i+1]))
	}
	bl.End()
}

func TestBuilderResolves(t *testing.T) {
	bl := NewBuilder(Config{
		TimeFields:   []string{"ts", "time"},
		MsgFields:    []string{"msg", "message"},
		StreamFields: []string{"svc", "app"},
	})
	b := &Batch{ReceiveTime: 42}
	bl.Start(b)
	build(bl, b, "time", "2026-01-15T08:00:00Z", "message", "m2", "msg", "m1", "svc", "a", "app", "x")
	build(bl, b, "ts", "garbage", "time", "1970-01-01T00:00:01Z", "app", "x", "svc", "a")
	build(bl, b, "other", "v")

	r := b.Records
	if r[0].Time != 1768464000e9 || r[0].TimeSource != FromData {
		t.Errorf("record 0 time %d source %d", r[0].Time, r[0].TimeSource)
	}
	if got := string(b.Bytes(r[0].Msg)); got != "m1" {
		t.Errorf("record 0 msg %q: msg outranks message", got)
	}
	if r[1].Time != 1e9 || r[1].TimeSource != FromData {
		t.Errorf("record 1: an unreadable first choice must fall back to the next: time %d", r[1].Time)
	}
	if r[2].Time != 42 || r[2].TimeSource != FromReceive {
		t.Errorf("record 2: no time field must give the receive time: %d %d", r[2].Time, r[2].TimeSource)
	}
	if r[0].Stream != r[1].Stream || r[0].Stream == 0 {
		t.Errorf("same labels in another order must be one stream: %d %d", r[0].Stream, r[1].Stream)
	}
	if got := b.Labels(0).String(); got != `{app="x", svc="a"}` {
		t.Errorf("labels %s", got)
	}
	if r[2].Stream != 0 {
		t.Errorf("a record without stream fields has stream %d, want 0 (empty)", r[2].Stream)
	}
	// The fields that became _time and _msg are marked, the rest are not.
	roles := map[string]Role{}
	for _, f := range b.RecordFields(0) {
		roles[b.Name(&f)] = f.Role
	}
	if roles["time"] != RoleTime || roles["msg"] != RoleMsg || roles["message"] != RoleNone {
		t.Errorf("roles %v", roles)
	}
}

func TestBuilderFail(t *testing.T) {
	bl := NewBuilder(Config{MaxFields: 2})
	b := &Batch{}
	bl.Start(b)
	bl.SetPos(7, 1000)
	build(bl, b, "a", "1", "b", "2", "c", "3")
	build(bl, b, "a", "1")
	if len(b.Records) != 1 || len(b.Fields) != 1 {
		t.Fatalf("records %d fields %d: the failed record's fields must be dropped", len(b.Records), len(b.Fields))
	}
	e := b.Errors[0]
	if e.Kind != ErrTooManyFields || e.Line != 7 || e.Offset != 1000 || e.Error() != "7:1: 3 fields, more than the limit of 2" {
		t.Errorf("error %+v %q", e, e.Error())
	}
}

// TestTableReadersWhileWriting checks that batches handed to another
// goroutine can read their ids while the writer keeps interning. Run with
// -race.
func TestTableReadersWhileWriting(t *testing.T) {
	n := NewNames()
	ch := make(chan uint32, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := range ch {
			if n.Get(id) == "" {
				t.Errorf("name %d is empty", id)
			}
		}
	}()
	for i := range 5000 {
		id, ok := n.Lookup([]byte{byte('a' + i%26), byte(i >> 8), byte(i)})
		if !ok {
			t.Fatal("table full")
		}
		ch <- id
	}
	close(ch)
	wg.Wait()
}

func TestConfigCheck(t *testing.T) {
	if err := DefaultConfig().Check(); err != nil {
		t.Errorf("default config: %v", err)
	}
	var many []string
	for i := range MaxStreamFields + 1 {
		many = append(many, fmt.Sprint("f", i))
	}
	if err := (Config{StreamFields: many}).Check(); err == nil {
		t.Error("65 stream fields passed the check")
	}
}

func TestBuilderTimeLayout(t *testing.T) {
	bl := NewBuilder(Config{TimeFields: []string{"time"}, TimeLayout: timestamp.Spark})
	b := &Batch{ReceiveTime: 42}
	bl.Start(b)
	build(bl, b, "time", "17/06/09 20:10:40")
	build(bl, b, "time", "2017-06-09T20:10:40Z") // not the layout: receive time
	if b.Records[0].Time != 1497039040e9 || b.Records[0].TimeSource != FromData {
		t.Errorf("spark layout: %d", b.Records[0].Time)
	}
	if b.Records[1].TimeSource != FromReceive {
		t.Errorf("a time in another format must not be read with a fixed layout")
	}
	if b.BadTime != 1 {
		t.Errorf("BadTime %d, want 1", b.BadTime)
	}
}

// TestBuilderBadTime: a time field that is present but unusable gives the
// receive time and is counted; a record without one is not counted.
func TestBuilderBadTime(t *testing.T) {
	bl := NewBuilder(Config{TimeFields: []string{"ts", "time"}})
	b := &Batch{ReceiveTime: 42}
	bl.Start(b)
	for _, c := range []struct {
		kv   []string
		time int64
		bad  bool
	}{
		{[]string{"time", "2026-01-15T08:00:00Z"}, 1768464000e9, false},
		{[]string{"time", "1970-01-01T00:00:00Z"}, 0, false},
		{[]string{"time", "1969-12-31T23:59:59Z"}, 42, true}, // before 1970
		{[]string{"time", "0000-01-01T00:00:00Z"}, 42, true},
		{[]string{"time", "9999-01-01T00:00:00Z"}, 42, true},
		{[]string{"time", "NaN"}, 42, true},
		{[]string{"time", "soon"}, 42, true},
		{[]string{"ts", "garbage", "time", "2026-01-15T08:00:00Z"}, 1768464000e9, false}, // the next candidate
		{[]string{"msg", "no time"}, 42, false},
	} {
		before := b.BadTime
		build(bl, b, c.kv...)
		r := b.Records[len(b.Records)-1]
		if r.Time != c.time || (b.BadTime > before) != c.bad {
			t.Errorf("%q: time %d (bad %v), want %d (bad %v)", c.kv, r.Time, b.BadTime > before, c.time, c.bad)
		}
	}
}
