package wal

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

// BenchmarkAppend appends to a log on the real filesystem (b.TempDir), by
// one writer or by many at once (group commit), under SyncNever (the cost
// of framing and write) and SyncAlways (the cost of durability).
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []SyncPolicy{{Mode: SyncNever}, {Mode: SyncAlways}} {
		for _, writers := range []int{1, 16} {
			for _, size := range []int{128, 4 << 10, 64 << 10} {
				name := fmt.Sprintf("sync=%v/writers=%d/size=%d", sync, writers, size)
				b.Run(name, func(b *testing.B) { benchmarkAppend(b, sync, writers, size) })
			}
		}
	}
}

func benchmarkAppend(b *testing.B, policy SyncPolicy, writers, size int) {
	var syncs atomic.Int64
	fs := vfs.NewFault(vfs.OS, syncCounter(&syncs, 0))
	l, _, err := Open(Options{FS: fs, Dir: b.TempDir(), Sync: policy, Logger: discardLogger()}, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	payload := testPayload(1, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	base := syncs.Load()
	if writers == 1 {
		for b.Loop() {
			if _, err := l.Append(payload); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		// b.N appends shared by exactly writers goroutines.
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		for range writers {
			wg.Go(func() {
				for next.Add(1) <= int64(b.N) {
					if _, err := l.Append(payload); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
	}
	b.ReportMetric(float64(syncs.Load()-base)/float64(b.N), "fsyncs/op")
}

// BenchmarkReplay measures recovery: Open replaying a log of 16 MiB on the
// real filesystem (the page cache, after the first round).
func BenchmarkReplay(b *testing.B) {
	for _, size := range []int{256, 4 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			opts := Options{Dir: b.TempDir(), Sync: SyncPolicy{Mode: SyncNever}, SegmentSize: 4 << 20, Logger: discardLogger()}
			l, _, err := Open(opts, 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			const total = 16 << 20
			payload := testPayload(1, size)
			for range total / size {
				if _, err := l.Append(payload); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(total)
			b.ReportAllocs()
			for b.Loop() {
				records := 0
				l, _, err := Open(opts, 0, func(Pos, []byte) error { records++; return nil })
				if err != nil {
					b.Fatal(err)
				}
				seg := l.Stats().Segment
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				// Drop the empty segment Open started, so that every
				// round replays the same log.
				if err := vfs.OS.Remove(filepath.Join(opts.Dir, segmentName(seg))); err != nil {
					b.Fatal(err)
				}
				if records != total/size {
					b.Fatalf("replayed %d records, want %d", records, total/size)
				}
			}
		})
	}
}
