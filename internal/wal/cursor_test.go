package wal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

// drain reads everything committed from c.
func drain(t *testing.T, c *Cursor) []record {
	t.Helper()
	var recs []record
	for {
		p, at, err := c.Next()
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			t.Fatalf("Next at %s: %v", c.Pos(), err)
		}
		recs = append(recs, record{at, bytes.Clone(p)})
	}
}

func TestCursorFollowsAcrossRotation(t *testing.T) {
	for name, dir := range map[string]func(*testing.T) (vfs.FS, string){"mem": memDir, "os": osDir} {
		t.Run("fs="+name, func(t *testing.T) {
			fs, d := dir(t)
			// Small segments: appends rotate every few frames.
			opts := Options{FS: fs, Dir: d, SegmentSize: 300}
			l, _, _ := openLog(t, opts, 0)
			var want []record
			for i := range 40 {
				p := testPayload(uint64(i), 50+i)
				want = append(want, record{mustAppend(t, l, p), p})
			}
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
			c := l.Cursor(Pos{})
			defer c.Close()
			got := drain(t, c)
			if len(got) != len(want) {
				t.Fatalf("read %d frames, want %d", len(got), len(want))
			}
			segs := map[uint64]bool{}
			for i := range want {
				if got[i].pos != want[i].pos || !bytes.Equal(got[i].payload, want[i].payload) {
					t.Fatalf("frame %d: got %s, want %s (or payload differs)", i, got[i].pos, want[i].pos)
				}
				segs[got[i].pos.Segment] = true
			}
			if len(segs) < 5 {
				t.Fatalf("frames span %d segments; the test wants rotations", len(segs))
			}
			// Resume from a stored position: the frames after it, exactly.
			c2 := l.Cursor(want[17].pos)
			c2.Next()
			resume := c2.Pos()
			c2.Close()
			c3 := l.Cursor(resume)
			defer c3.Close()
			rest := drain(t, c3)
			if len(rest) != len(want)-18 || rest[0].pos != want[18].pos {
				t.Fatalf("resume at %s: %d frames from %v, want %d from %s", resume, len(rest), rest[0].pos, len(want)-18, want[18].pos)
			}
			// Caught up: a new append wakes Changed and is read next.
			ch := l.Changed()
			p := testPayload(99, 70)
			pos := mustAppend(t, l, p)
			<-ch
			got = drain(t, c3)
			if len(got) != 1 || got[0].pos != pos || !bytes.Equal(got[0].payload, p) {
				t.Fatalf("after a new append: %v, want one frame at %s", got, pos)
			}
			if c3.Pos() != l.Committed() {
				t.Fatalf("cursor at %s after reading everything, committed %s", c3.Pos(), l.Committed())
			}
		})
	}
}

func TestCursorGoneAndBytesSince(t *testing.T) {
	fs, d := memDir(t)
	l, _, _ := openLog(t, Options{FS: fs, Dir: d, SegmentSize: 200}, 0)
	var first []Pos
	for i := range 20 {
		first = append(first, mustAppend(t, l, testPayload(uint64(i), 60)))
	}
	total, err := l.BytesSince(Pos{})
	if err != nil {
		t.Fatal(err)
	}
	// Every frame (72 bytes on disk) and the header of each segment after
	// the first (the cursor starts past the first one's).
	segs := first[len(first)-1].Segment - first[0].Segment + 1
	if want := int64(20*72) + int64(segs-1)*headerSize; total != want {
		t.Fatalf("BytesSince(start) = %d, want %d", total, want)
	}
	mid := first[10]
	after, err := l.BytesSince(mid)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(10*72) + int64(first[19].Segment-mid.Segment)*headerSize; after != want {
		t.Fatalf("BytesSince(%s) = %d, want %d", mid, after, want)
	}
	// Segments below the cursor's are removed: the cursor says so and
	// where the log resumes.
	if err := l.RemoveBefore(mid.Segment); err != nil {
		t.Fatal(err)
	}
	c := l.Cursor(first[0])
	defer c.Close()
	_, _, err = c.Next()
	var gone *GoneError
	if !errors.As(err, &gone) || !errors.Is(err, ErrGone) || gone.Oldest != mid.Segment {
		t.Fatalf("Next on a removed segment: %v, want a GoneError naming segment %d", err, mid.Segment)
	}
	c.Seek(Pos{Segment: gone.Oldest})
	got := drain(t, c)
	if got[0].pos.Segment != mid.Segment || got[len(got)-1].pos != first[19] {
		t.Fatalf("after the jump: %s..%s, want from segment %d to %s", got[0].pos, got[len(got)-1].pos, mid.Segment, first[19])
	}
}

func TestCursorCorruptFrame(t *testing.T) {
	fs, d := osDir(t)
	l, _, _ := openLog(t, Options{FS: fs, Dir: d}, 0)
	pos := mustAppend(t, l, testPayload(1, 40))
	mustAppend(t, l, testPayload(2, 40))
	name := filepath.Join(d, segmentName(pos.Segment))
	b := readFS(t, fs, name)
	b[pos.Offset+frameHeaderSize+3] ^= 0xff // in the first payload
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b[pos.Offset:pos.Offset+frameSize(40)], pos.Offset); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c := l.Cursor(pos)
	defer c.Close()
	_, _, err = c.Next()
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != pos.Offset {
		t.Fatalf("Next over a damaged payload: %v, want a CorruptionError at %d", err, pos.Offset)
	}
	if c.Pos() != pos {
		t.Fatalf("cursor moved to %s after a corrupt frame", c.Pos())
	}
}
