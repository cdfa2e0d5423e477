package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/record"
	sinkstore "github.com/sluicelog/sluice/internal/sink/store"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// batch returns n records of the stream {app="a"}, the second one
// dropped by an earlier stage.
func batch(t *testing.T, tenant string, n int) *record.Batch {
	t.Helper()
	b := record.GetBatch()
	t.Cleanup(func() { record.PutBatch(b) })
	b.Tenant = tenant
	b.Names, b.Streams = record.NewNames(), record.NewStreams()
	id, _ := b.Streams.Intern(record.Labels{{Name: "app", Value: "a"}})
	for i := range n {
		b.Data = append(b.Data, "line"...)
		b.Records = append(b.Records, record.Record{Time: int64(i + 1), Stream: id,
			Line: record.Span{Off: uint32(4 * i), Len: 4}})
	}
	if n > 1 {
		b.Drop(1)
	}
	return b
}

func TestFlowIntoStore(t *testing.T) {
	st := open(t)
	f := &flow.Flow{Sink: sinkstore.New(st)}
	res, err := f.Write(context.Background(), flow.Input{Protocol: "test"}, batch(t, "t1", 3))
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 2 {
		t.Errorf("accepted %d, want 2 (the kept records)", res.Accepted)
	}
	if got := st.Stats().HeadRows; got != 2 {
		t.Errorf("head rows %d, want 2", got)
	}
	sn := st.Snapshot()
	defer sn.Release()
	if got := sn.Tenants(); len(got) != 1 || got[0] != "t1" {
		t.Errorf("tenants %v, want [t1]", got)
	}
}

// TestPrepareError: the store's refusal comes back as the error with a
// nil Pending (not a nil *store.Pending in an interface).
func TestPrepareError(t *testing.T) {
	st := open(t)
	p, err := sinkstore.New(st).Prepare(batch(t, "no/such", 1))
	if !errors.Is(err, store.ErrBadTenant) {
		t.Fatalf("err %v, want %v", err, store.ErrBadTenant)
	}
	if p != nil {
		t.Errorf("pending %#v with an error, want nil", p)
	}
}
