package store

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/sluicelog/sluice/internal/wal"
)

// TestWALHold: a flush removes the WAL segments it covered, except those
// at or above what WALHold returns (a sink's cursor), at Open too; once
// the hold moves, the next flush removes them.
func TestWALHold(t *testing.T) {
	dir := t.TempDir()
	var hold atomic.Uint64
	opts := Options{Dir: dir, Logger: quiet, WALHold: hold.Load}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	first := s.WAL().Committed().Segment
	hold.Store(first)
	for i := range 3 {
		appendLines(t, s, "t", genLines(50, uint64(i)), 10)
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	segs := func() []string {
		m, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if n := len(segs()); n < 4 {
		t.Fatalf("%d WAL segments after 3 flushes with the first held, want all 4 kept", n)
	}
	// What is held reads back through a cursor, from the first record.
	c := s.WAL().Cursor(wal.Pos{Segment: first})
	_, at, err := c.Next()
	c.Close()
	if err != nil || at.Segment != first {
		t.Fatalf("cursor at the held segment: %v at %v", err, at)
	}
	// Reopened, the store keeps them too.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(opts); err != nil {
		t.Fatal(err)
	}
	if n := len(segs()); n < 4 {
		t.Fatalf("%d WAL segments after a reopen with the first held", n)
	}
	// Released: the next flush removes what it covered.
	hold.Store(^uint64(0))
	appendLines(t, s, "t", genLines(10, 9), 10)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(segs()); n > 2 {
		t.Fatalf("%d WAL segments after the hold was released, want at most 2", n)
	}
}
