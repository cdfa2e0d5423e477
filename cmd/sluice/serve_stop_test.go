package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// onMessage is a slog handler that calls fn when a record with msg is
// logged, at that moment.
type onMessage struct {
	msg    string
	fn     func()
	called bool
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *onMessage) WithGroup(string) slog.Handler            { return h }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.called = true
		h.fn()
	}
	return nil
}

// TestStoppedCleanlyIsTrue: with 5,000 tenants (parts for each, and
// more lines in the WAL), "stopped cleanly" is logged only once the store
// is closed: at that moment the directory is unlocked, and a power loss
// would keep every line.
func TestStoppedCleanlyIsTrue(t *testing.T) {
	const tenants = 5000
	mem := vfs.NewMem()
	st, err := store.Open(store.Options{FS: mem, Dir: "data", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	add := func(round int) {
		for i := range tenants {
			line := fmt.Sprintf(`{"time":"2026-01-15T08:00:0%dZ","msg":"round %d tenant %d","service":"a"}`+"\n", round, round, i)
			err := p.Bytes(context.Background(), []byte(line), func(b *record.Batch) error { return st.Append(context.Background(), fmt.Sprintf("t%d", i), b) })
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	add(1)
	if err := st.Flush(); err != nil { // a part per tenant
		t.Fatal(err)
	}
	add(2) // and a line each in the WAL only

	h := &onMessage{msg: "stopped cleanly", fn: func() {
		again, err := store.Open(store.Options{FS: mem, Dir: "data", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Errorf("when \"stopped cleanly\" is logged, the directory is not free: %v", err)
		} else {
			again.Close()
		}
		crashed := mem.Crash(vfs.CrashOptions{})
		after, err := store.Open(store.Options{FS: crashed, Dir: "data", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer after.Close()
		sn := after.Snapshot()
		defer sn.Release()
		var out strings.Builder
		if err := sn.Export(context.Background(), nil, math.MinInt64, math.MaxInt64, nil, &out); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out.String(), "\n"); n != 2*tenants {
			t.Errorf("a power loss when \"stopped cleanly\" is logged keeps %d lines, want %d", n, 2*tenants)
		}
	}}
	if err := stopStore(st, slog.New(h)); err != nil {
		t.Fatal(err)
	}
	if !h.called {
		t.Error(`"stopped cleanly" was not logged`)
	}
}
