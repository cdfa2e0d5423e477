package query

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// cancelSource is a Source that cancels the query's context once after
// rows have come to the engine (a block read columnar counts its rows),
// as a client that goes away mid-query, and counts the rows that still
// come after it.
type cancelSource struct {
	Source
	cancel     func()
	after      int64
	seen, late atomic.Int64
	canceled   atomic.Bool
	maxBlock   atomic.Int64 // the most rows of a block read columnar
}

func (c *cancelSource) note(n int) {
	if c.canceled.Load() {
		c.late.Add(int64(n))
		return
	}
	if c.seen.Add(int64(n)) >= c.after && !c.canceled.Swap(true) {
		c.cancel()
	}
}

func (c *cancelSource) rows(fn store.RowFunc) store.RowFunc {
	return func(r *rows.Row, names []string) error {
		c.note(1)
		return fn(r, names)
	}
}

func (c *cancelSource) Scan(ctx context.Context, tenant string, stream store.Stream, from, to int64, opts store.ScanOptions, fn store.RowFunc) error {
	return c.Source.Scan(ctx, tenant, stream, from, to, opts, c.rows(fn))
}

func (c *cancelSource) ScanColumns(ctx context.Context, tenant string, stream store.Stream, from, to int64, shard store.Shard, order store.Order, blockFn store.BlockFunc, metaOK store.MetaFunc, rowFn store.RowFunc) error {
	return c.Source.ScanColumns(ctx, tenant, stream, from, to, shard, order, func(b *part.Block) error {
		if n := int64(b.NumRows()); n > c.maxBlock.Load() {
			c.maxBlock.Store(n) // (racy, but a test's bound: the largest a worker saw)
		}
		c.note(b.NumRows())
		return blockFn(b)
	}, metaOK, c.rows(rowFn))
}

// TestCanceledQueryStops: a query whose context is canceled (its client
// gone) stops where it is: on the row path within the rows between two
// checks of the context (1,024 per stream), on the columnar path within
// the block at hand, per worker; it returns context.Canceled.
func TestCanceledQueryStops(t *testing.T) {
	// Small heads: many parts of small blocks, as a busy server has.
	st := openMemWith(t, store.Options{HeadBytes: 256 << 10})
	lines := diffLines(60000)
	for i := 0; i < len(lines); i += 5000 {
		appendText(t, st, strings.Join(lines[i:min(i+5000, len(lines))], "\n")+"\n")
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	sn := st.Snapshot()
	defer sn.Release()
	at := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(10 * time.Minute).UnixNano()
	const workers = 2
	for _, c := range []struct {
		q   string
		log bool
	}{
		{`sum by (level) (count_over_time({service=~".+"} | logfmt | level=~"err.*" [1h]))`, false}, // rows
		{`sum by (level) (count_over_time({service=~".+"} | json level [1h]))`, false},              // columns
		{`{service=~".+"} | json | level="error"`, true},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		src := &cancelSource{Source: sn, cancel: cancel, after: 2000}
		prm := Params{Tenant: store.DefaultTenant, Query: c.q, Start: at - int64(time.Hour), End: at, Instant: !c.log, Limit: 100000}
		if !c.log {
			prm.Start = at
		}
		_, err := (&Engine{workers: workers, limits: DefaultLimits}).Exec(ctx, src, prm)
		cancel()
		if !src.canceled.Load() {
			t.Fatalf("%s: only %d rows came: the test canceled nothing", c.q, src.seen.Load())
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: canceled after %d rows: %v, want context.Canceled", c.q, src.seen.Load(), err)
		}
		// Per worker, the rest of a check's 1,024 rows or of a block.
		if late, most := src.late.Load(), workers*(1024+src.maxBlock.Load()); late > most || src.seen.Load()+late > int64(len(lines))/2 {
			t.Errorf("%s: %d rows came after the cancel (at %d of %d), want at most %d", c.q, late, src.seen.Load(), len(lines), most)
		}
		t.Logf("%s: canceled after %d rows, %d came after", c.q, src.seen.Load(), src.late.Load())
	}
}

// failSource is a Source whose columnar scans fail after their first
// block, as a block found corrupt does.
type failSource struct {
	Source
	err error
}

func (f *failSource) ScanColumns(ctx context.Context, tenant string, stream store.Stream, from, to int64, shard store.Shard, order store.Order, blockFn store.BlockFunc, metaOK store.MetaFunc, rowFn store.RowFunc) error {
	if err := f.Source.ScanColumns(ctx, tenant, stream, from, to, shard, order, blockFn, metaOK, rowFn); err != nil {
		return err
	}
	return f.err
}

// TestColumnarScanErrorsReachTheAnswer: an error of a columnar scan is
// the query's answer, on the paths of range aggregations and log queries.
func TestColumnarScanErrorsReachTheAnswer(t *testing.T) {
	st := openMemWith(t, store.Options{})
	appendText(t, st, strings.Join(diffLines(5000), "\n")+"\n")
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	sn := st.Snapshot()
	defer sn.Release()
	at := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(10 * time.Minute).UnixNano()
	boom := errors.New("block 7 is corrupt")
	for _, c := range []struct {
		q   string
		log bool
	}{
		{`sum by (level) (count_over_time({service=~".+"} | json level [1h]))`, false},
		{`{service=~".+"} | json | level="error"`, true},
		{`{service=~".+"} |= "error" | json lat="http.latency_ms" | lat > 1`, true},
	} {
		prm := Params{Tenant: store.DefaultTenant, Query: c.q, Start: at, End: at, Instant: true, Limit: 100}
		if c.log {
			prm.Start, prm.Instant, prm.Direction = at-int64(time.Hour), false, Backward
		}
		if _, err := (&Engine{workers: 2, limits: DefaultLimits}).Exec(context.Background(), &failSource{Source: sn, err: boom}, prm); !errors.Is(err, boom) {
			t.Errorf("%s: %v, want %v", c.q, err, boom)
		}
	}
}
