package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// limitStore holds 10 streams of 100 lines each, a second apart.
func limitStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var block []string
	for s := range 10 {
		for i := range 100 {
			block = append(block, fmt.Sprintf(`{app="a%d"} %ds line %d of stream %d`, s, i, i, s))
		}
	}
	load(t, st, store.DefaultTenant, "limits", 0, block)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLimits(t *testing.T) {
	st := limitStore(t)
	sn := st.Snapshot()
	defer sn.Release()
	run := func(l Limits, p Params) (*Result, error) {
		p.Tenant = store.DefaultTenant
		return NewEngine(l).Exec(context.Background(), sn, p)
	}
	logq := Params{Query: `{app=~"a.*"}`, Start: t0, End: t0 + int64(time.Hour), Limit: 1000}

	res, err := run(Limits{MaxLines: 50}, logq)
	if err != nil || res.Stats.LinesOut != 50 {
		t.Errorf("MaxLines 50, limit 1000: %v lines, %v", res.Stats.LinesOut, err)
	}
	_, err = run(Limits{MaxBytesScanned: 1000}, logq)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 1000 bytes") {
		t.Errorf("MaxBytesScanned: %v", err)
	}
	metric := Params{Query: `count_over_time({app=~"a.*"}[1h])`, Start: t0 + int64(time.Hour), End: t0 + int64(time.Hour), Instant: true}
	_, err = run(Limits{MaxSeries: 5}, metric)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "maximum of series (5)") {
		t.Errorf("MaxSeries: %v", err)
	}
	if res, err := run(Limits{MaxSeries: 10}, metric); err != nil || len(res.Vector) != 10 {
		t.Errorf("10 series within MaxSeries 10: %v", err)
	}
	_, err = run(Limits{Timeout: time.Nanosecond}, logq)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "ran longer than") {
		t.Errorf("Timeout: %v", err)
	}
	rangeq := Params{Query: `count_over_time({app="a1"}[1m])`, Start: t0, End: t0 + int64(time.Hour), Step: time.Millisecond}
	if _, err = run(Limits{MaxPoints: 11000}, rangeq); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "maximum resolution of 11000") {
		t.Errorf("MaxPoints: %v", err)
	}

	// A canceled request stops the scan.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	logq.Tenant = store.DefaultTenant
	if _, err := NewEngine(Limits{}).Exec(ctx, sn, logq); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}
