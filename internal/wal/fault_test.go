package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/vfs"
)

// TestCrash crashes a MemFS under concurrent appenders, with random torn
// tails, several times over: every payload acknowledged before a crash is
// replayed after it, exactly once, and nothing but written payloads is.
func TestCrash(t *testing.T) {
	const seeds, rounds, writers = 12, 4, 6
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 99))
			mem := vfs.NewMem()
			var nextID atomic.Uint64
			var acked []uint64 // acknowledged before the last crash
			for round := 0; ; round++ {
				// Slow fdatasyncs (every other round) keep written,
				// unsynced bytes around for the crash to tear.
				var syncs atomic.Int64
				fs := vfs.NewFault(mem, syncCounter(&syncs, time.Duration(round%2)*200*time.Microsecond))
				opts := Options{FS: fs, Dir: "w", SegmentSize: 2 << 10, Logger: discardLogger()}
				l, _, recs := openLog(t, opts, 0)
				checkCrashReplay(t, recs, acked)
				if round == rounds {
					return
				}

				var mu sync.Mutex
				var ackedNow []uint64
				var stop atomic.Bool
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						wr := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
						for !stop.Load() {
							id := nextID.Add(1)
							if _, err := l.Append(testPayload(id, 8+wr.IntN(300))); err != nil {
								if !errors.Is(err, ErrClosed) {
									t.Errorf("Append: %v", err)
								}
								return
							}
							mu.Lock()
							ackedNow = append(ackedNow, id)
							mu.Unlock()
						}
					})
				}
				time.Sleep(time.Duration(2+r.IntN(8)) * time.Millisecond)
				mu.Lock()
				acked = append(acked, ackedNow...)
				mu.Unlock()
				crashed := mem.Crash(vfs.CrashOptions{Rand: r})
				stop.Store(true)
				wg.Wait()
				l.Close()
				mem = crashed
			}
		})
	}
}

// checkCrashReplay checks that recs holds every id of acked, each payload
// once and each intact.
func checkCrashReplay(t *testing.T, recs []record, acked []uint64) {
	t.Helper()
	seen := map[uint64]bool{}
	for _, r := range recs {
		if len(r.payload) < 8 {
			t.Fatalf("replayed a %d-byte payload at %v", len(r.payload), r.pos)
		}
		id := binary.LittleEndian.Uint64(r.payload)
		if seen[id] {
			t.Fatalf("payload %d replayed twice", id)
		}
		seen[id] = true
		if !bytes.Equal(r.payload, testPayload(id, len(r.payload))) {
			t.Fatalf("payload %d replayed wrong at %v", id, r.pos)
		}
	}
	for _, id := range acked {
		if !seen[id] {
			t.Fatalf("acknowledged payload %d lost (%d acknowledged, %d replayed)", id, len(acked), len(recs))
		}
	}
}

// used returns the file bytes in mem.
func used(t *testing.T, mem *vfs.MemFS) int64 {
	t.Helper()
	const big = 1 << 40
	mem.SetCapacity(big)
	free, err := mem.Free("/")
	if err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(0)
	return big - int64(free)
}

func TestNoSpace(t *testing.T) {
	tests := []struct {
		name        string
		segmentSize int64
		room        int64 // bytes left when the failing append comes
		size        int   // of the failing payload
	}{
		{"mid-frame", 1 << 20, 100, 1000},
		{"in-frame-header", 1 << 20, 4, 1000},
		{"no-room", 1 << 20, 0, 10},
		{"direct-write", 4 << 20, 1000, directSize + 10},
		{"new-segment", 100, 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := Options{FS: mem, Dir: "w", SegmentSize: tt.segmentSize}
			l, _, _ := openLog(t, opts, 0)
			var want []record
			for i := range 3 {
				p := testPayload(uint64(i), 50)
				want = append(want, record{mustAppend(t, l, p), p})
			}
			seg := filepath.Join("w", segmentName(l.Stats().Segment))
			size := len(readFS(t, mem, seg))

			mem.SetCapacity(used(t, mem) + tt.room)
			_, err := l.Append(testPayload(100, tt.size))
			if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "wal: ") {
				t.Fatalf("Append on a full disk = %v, want a wal: error wrapping ENOSPC", err)
			}
			if got := len(readFS(t, mem, seg)); got != size {
				t.Fatalf("segment is %d bytes after the failed write, was %d: partial frame left", got, size)
			}
			if l.Stats().Broken {
				t.Fatal("a failed write broke the log")
			}
			mem.SetCapacity(0)
			for i := 3; i < 6; i++ {
				p := testPayload(uint64(i), 50)
				want = append(want, record{mustAppend(t, l, p), p})
			}
			_, rep, recs := reopen(t, l, opts, 0)
			checkRecords(t, recs, want)
			if rep.TornTail != nil || len(rep.Corrupt) != 0 {
				t.Fatalf("report %+v", rep)
			}
		})
	}
}

// walOp matches operations on segment files.
func walOp(op vfs.Op) func(vfs.Op, string) bool {
	return func(o vfs.Op, name string) bool { return o == op && strings.HasSuffix(name, segmentSuffix) }
}

func TestTruncateAfterFailedWriteFails(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewFault(mem, nil)
	opts := Options{FS: fs, Dir: "w"}
	l, _, _ := openLog(t, opts, 0)
	p := testPayload(1, 50)
	want := []record{{mustAppend(t, l, p), p}}
	var writes atomic.Int64
	fs.SetInjector(func(op vfs.Op, name string) error {
		switch {
		case walOp(vfs.OpWrite)(op, name) && writes.Add(1) == 1:
			return &vfs.PartialWriteError{N: 5, Err: syscall.ENOSPC}
		case walOp(vfs.OpTruncate)(op, name):
			return syscall.EIO
		}
		return nil
	})
	if _, err := l.Append(testPayload(2, 50)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append = %v, want ENOSPC", err)
	}
	if _, err := l.Append(testPayload(3, 50)); !errors.Is(err, ErrBroken) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append after a failed truncate = %v, want ErrBroken wrapping EIO", err)
	}
	if err := l.Close(); !errors.Is(err, ErrBroken) {
		t.Fatalf("Close = %v, want ErrBroken", err)
	}
	// The partial frame is a torn tail for recovery to cut.
	fs.SetInjector(nil)
	_, rep, recs := openLog(t, opts, 0)
	checkRecords(t, recs, want)
	if rep.TornTail == nil || rep.TornTail.Offset != want[0].pos.Offset+frameSize(50) {
		t.Fatalf("TornTail = %v", rep.TornTail)
	}
}

func TestSyncError(t *testing.T) {
	tests := []struct {
		name string
		sync SyncPolicy
		// fail makes an fdatasync fail; it returns the error of the call
		// that observed it, if any.
		fail func(t *testing.T, l *Log) error
	}{
		{"append", SyncPolicy{}, func(t *testing.T, l *Log) error {
			_, err := l.Append(testPayload(100, 10))
			return err
		}},
		{"concurrent-appends", SyncPolicy{}, func(t *testing.T, l *Log) error {
			var wg sync.WaitGroup
			errs := make([]error, 16)
			for i := range errs {
				wg.Go(func() { _, errs[i] = l.Append(testPayload(uint64(100+i), 10)) })
			}
			wg.Wait()
			for _, err := range errs {
				if err == nil {
					t.Fatal("an Append succeeded while every fdatasync failed")
				}
			}
			return errs[0]
		}},
		{"rotate", SyncPolicy{Mode: SyncNever}, func(t *testing.T, l *Log) error {
			_, err := l.Rotate()
			return err
		}},
		{"interval", SyncPolicy{Mode: SyncInterval, Interval: time.Millisecond}, func(t *testing.T, l *Log) error {
			if _, err := l.Append(testPayload(100, 10)); err != nil {
				t.Fatalf("Append under SyncInterval: %v", err)
			}
			for !l.Stats().Broken {
				time.Sleep(time.Millisecond)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := vfs.NewMem()
			fs := vfs.NewFault(mem, nil)
			opts := Options{FS: fs, Dir: "w", Sync: tt.sync}
			l, _, _ := openLog(t, opts, 0)
			p := testPayload(1, 10)
			pos := mustAppend(t, l, p)
			if tt.sync.Mode != SyncAlways {
				// Make the first payload durable before the failure.
				if _, err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			fs.SetInjector(vfs.FailWhen(walOp(vfs.OpSync), syscall.EIO))
			if err := tt.fail(t, l); err != nil && !errors.Is(err, syscall.EIO) {
				t.Fatalf("the call that saw the failed fdatasync got %v, want EIO", err)
			}
			if !l.Stats().Broken {
				t.Fatal("Stats.Broken is false")
			}
			// The disk "recovers": the log stays broken all the same.
			fs.SetInjector(nil)
			if _, err := l.Append(testPayload(2, 10)); !errors.Is(err, ErrBroken) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("Append after a failed fdatasync = %v, want ErrBroken wrapping EIO", err)
			}
			if _, err := l.Rotate(); !errors.Is(err, ErrBroken) {
				t.Fatalf("Rotate after a failed fdatasync = %v, want ErrBroken", err)
			}
			if err := l.Close(); !errors.Is(err, ErrBroken) {
				t.Fatalf("Close = %v, want ErrBroken", err)
			}
			// What was acknowledged survives a crash; a reopened log works.
			_, _, recs := openLog(t, Options{FS: mem.Crash(vfs.CrashOptions{}), Dir: "w"}, 0)
			if len(recs) == 0 || recs[0].pos != pos || !bytes.Equal(recs[0].payload, p) {
				t.Fatalf("acknowledged payload lost: %d records", len(recs))
			}
			l, _, _ = openLog(t, opts, 0)
			mustAppend(t, l, p)
		})
	}
}

func TestCreateSegmentFails(t *testing.T) {
	fs := vfs.NewFault(vfs.NewMem(), nil)
	opts := Options{FS: fs, Dir: "w"}
	l, _, _ := openLog(t, opts, 0)
	p := testPayload(1, 10)
	want := []record{{mustAppend(t, l, p), p}}
	fs.SetInjector(vfs.FailWhen(func(op vfs.Op, _ string) bool { return op == vfs.OpCreate }, syscall.EMFILE))
	if _, err := l.Rotate(); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Rotate = %v, want EMFILE", err)
	}
	if _, err := l.Append(p); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Append without a segment = %v, want EMFILE", err)
	}
	fs.SetInjector(nil)
	p2 := testPayload(2, 10)
	want = append(want, record{mustAppend(t, l, p2), p2})
	if want[1].pos.Segment != want[0].pos.Segment+1 {
		t.Fatalf("append went to segment %d after %d", want[1].pos.Segment, want[0].pos.Segment)
	}
	_, rep, recs := reopen(t, l, opts, 0)
	checkRecords(t, recs, want)
	if rep.TornTail != nil || len(rep.Corrupt) != 0 {
		t.Fatalf("report %+v", rep)
	}
}

// seekFS is vfs.OS whose segment files fail their first write part way with
// ENOSPC. Unlike FaultFS files, its files can Seek, which takes the other
// way back to the end of the good frames.
type seekFS struct {
	vfs.FS
	failed atomic.Bool
}

type seekFile struct {
	vfs.File
	fs *seekFS
}

func (fs *seekFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return seekFile{f, fs}, nil
}

func (f seekFile) Write(p []byte) (int, error) {
	if len(p) > 10 && strings.HasSuffix(f.Name(), segmentSuffix) && f.fs.failed.CompareAndSwap(false, true) {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f seekFile) Seek(off int64, whence int) (int64, error) {
	return f.File.(io.Seeker).Seek(off, whence)
}

func TestNoSpaceSeek(t *testing.T) {
	fs := &seekFS{FS: vfs.OS}
	fs.failed.Store(true) // not yet: let Open write the header
	opts := Options{FS: fs, Dir: t.TempDir()}
	l, _, _ := openLog(t, opts, 0)
	p := testPayload(1, 100)
	want := []record{{mustAppend(t, l, p), p}}
	fs.failed.Store(false)
	if _, err := l.Append(testPayload(2, 100)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append = %v, want ENOSPC", err)
	}
	p = testPayload(3, 100)
	want = append(want, record{mustAppend(t, l, p), p})
	if want[1].pos.Offset != want[0].pos.Offset+frameSize(100) {
		t.Fatalf("append after the failed write went to %v, want right after %v", want[1].pos, want[0].pos)
	}
	_, rep, recs := reopen(t, l, opts, 0)
	checkRecords(t, recs, want)
	if rep.TornTail != nil || len(rep.Corrupt) != 0 {
		t.Fatalf("report %+v", rep)
	}
}
