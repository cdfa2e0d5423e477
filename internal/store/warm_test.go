package store

import (
	"context"
	"math"
	"testing"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// TestWarmBlockCache: a store opened with WarmBlockCache fills the block
// cache with what a columnar read of its parts would keep, its columns
// decompressed included, so that the
// first queries add nothing to it; with a small cache it stops at half
// of the budget; and a store closed while it warms stops it.
func TestWarmBlockCache(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{HeadBytes: 32 << 10})
	appendLines(t, s, "default", genLines(6000, 5), 250)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// readAll reads every stored block as a query's columnar read does,
	// every column's values too.
	readAll := func(s *Store) {
		t.Helper()
		sn := s.Snapshot()
		defer sn.Release()
		for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
			err := sn.ScanColumns(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, Shard{}, NewestFirst, func(b *part.Block) error {
				if err := b.DecodeTimes(); err != nil {
					return err
				}
				for c := range b.NumColumns() {
					if b.ColumnValues(c) > 0 {
						if _, _, err := b.Value(c, 0, b.RowTime(0), nil); err != nil {
							return err
						}
					}
				}
				return nil
			}, nil, func(*rows.Row, []string) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	cold := open(t, fs, Options{})
	<-cold.warmed
	if used := cold.blocks.Used(); used != 0 {
		t.Fatalf("without WarmBlockCache the cache holds %d bytes after Open", used)
	}
	readAll(cold)
	queried := cold.blocks.Used()
	cold.Close()
	if queried == 0 {
		t.Fatal("a read of every block cached nothing")
	}

	warm := open(t, fs, Options{WarmBlockCache: true})
	<-warm.warmed
	warmed := warm.blocks.Used()
	if warmed < queried {
		t.Fatalf("warming cached %d bytes, a read of every block %d", warmed, queried)
	}
	readAll(warm)
	if used := warm.blocks.Used(); used != warmed {
		t.Fatalf("after warming, a read of every block grew the cache from %d to %d bytes", warmed, used)
	}
	warm.Close()

	small := open(t, fs, Options{WarmBlockCache: true, BlockCacheBytes: queried / 4})
	<-small.warmed
	if used := small.blocks.Used(); used < queried/8 || used > queried/4 {
		t.Fatalf("warming a cache of %d bytes left %d in it, want half of it or a little more", queried/4, used)
	}
	small.Close()

	closed := open(t, fs, Options{WarmBlockCache: true})
	closed.Close() // the warming goroutine stops with it (TestMain checks none is left)
}
