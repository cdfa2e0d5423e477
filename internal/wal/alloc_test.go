//go:build !race

// The race detector makes sync.Pool drop items on purpose, so allocations
// are only counted without it.

package wal

import (
	"fmt"
	"testing"
)

// TestAppendAllocs checks that an Append allocates nothing once the log is
// warm: requests come from a pool and frames are assembled in a reused
// buffer.
func TestAppendAllocs(t *testing.T) {
	for _, sync := range []SyncPolicy{{Mode: SyncNever}, {Mode: SyncAlways}} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			l, _, _ := openLog(t, Options{Dir: t.TempDir(), Sync: sync}, 0)
			p := testPayload(1, 128)
			for range 10 {
				mustAppend(t, l, p)
			}
			if n := testing.AllocsPerRun(200, func() { mustAppend(t, l, p) }); n != 0 {
				t.Fatalf("Append allocates %v times", n)
			}
		})
	}
}
