package wal

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

// TestSyncThroughRing: on the OS's file system the log syncs through an
// io_uring where the kernel has one (BlockingSync: by File.Sync), and
// either way what concurrent appends were acknowledged replays after a
// reopen, every append covered by an fdatasync.
func TestSyncThroughRing(t *testing.T) {
	ring, err := vfs.NewSyncer()
	if err == nil {
		ring.Close()
	}
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			opts := Options{FS: vfs.OS, Dir: t.TempDir(), BlockingSync: blocking}
			l, _, _ := openLog(t, opts, 0)
			if got, want := l.syncer != nil, !blocking && err == nil; got != want {
				t.Fatalf("syncing through a ring: %v, want %v (io_uring: %v)", got, want, err)
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 50 {
						mustAppend(t, l, fmt.Appendf(nil, "g%d-%d", g, i))
					}
				})
			}
			wg.Wait()
			st := l.Stats()
			if st.Appends != 400 || st.Syncs < 2 {
				t.Fatalf("stats %+v: want 400 appends and some syncs", st)
			}
			_, _, recs := reopen(t, l, opts, 0)
			seen := map[string]bool{}
			for _, r := range recs {
				seen[string(r.payload)] = true
			}
			for g := range 8 {
				for i := range 50 {
					if p := fmt.Appendf(nil, "g%d-%d", g, i); !seen[string(p)] {
						t.Fatalf("%s acknowledged, not replayed", bytes.Clone(p))
					}
				}
			}
		})
	}
}
