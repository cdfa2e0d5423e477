package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

// sampleLog is a small closed log in a MemFS, and what was written to it.
type sampleLog struct {
	dir   string
	segs  []uint64          // segment numbers, ascending
	files map[uint64][]byte // segment number → file bytes
	recs  []record          // every payload, in order, with its position
}

// writeSample writes count payloads (8 to 8+maxExtra bytes, so that each
// names itself) with the given segment size, then rotates and writes tail
// more to the last segment, and closes the log.
func writeSample(t *testing.T, count, tail, maxExtra int, segmentSize int64) sampleLog {
	t.Helper()
	fs := vfs.NewMem()
	s := sampleLog{dir: "w", files: map[uint64][]byte{}}
	l, _, _ := openLog(t, Options{FS: fs, Dir: s.dir, SegmentSize: segmentSize}, 1)
	r := rand.New(rand.NewPCG(uint64(count), uint64(segmentSize)))
	for i := range count + tail {
		if i == count {
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		p := testPayload(uint64(i), 8+r.IntN(maxExtra+1))
		s.recs = append(s.recs, record{mustAppend(t, l, p), p})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s.segs = segmentFiles(t, fs, s.dir)
	for _, n := range s.segs {
		s.files[n] = readFS(t, fs, filepath.Join(s.dir, segmentName(n)))
	}
	return s
}

// install writes the sample's segments into a new MemFS, with the bytes of
// some replaced.
func (s sampleLog) install(t *testing.T, replace map[uint64][]byte) vfs.FS {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.segs {
		b, ok := replace[n]
		if !ok {
			b = s.files[n]
		}
		writeFS(t, fs, filepath.Join(s.dir, segmentName(n)), b)
	}
	return fs
}

// frames returns the records of segment n.
func (s sampleLog) frames(n uint64) []record {
	var out []record
	for _, r := range s.recs {
		if r.pos.Segment == n {
			out = append(out, r)
		}
	}
	return out
}

func TestTornTailEveryOffset(t *testing.T) {
	s := writeSample(t, 10, 4, 40, 200)
	if len(s.segs) < 2 {
		t.Fatalf("sample has %d segments, want several", len(s.segs))
	}
	last := s.segs[len(s.segs)-1]
	full := s.files[last]
	lastFrames := s.frames(last)
	if len(lastFrames) < 2 {
		t.Fatalf("last segment has %d frames, want several", len(lastFrames))
	}
	before := len(s.recs) - len(lastFrames)
	for cut := 0; cut <= len(full); cut++ {
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			fs := s.install(t, map[uint64][]byte{last: full[:cut]})
			opts := Options{FS: fs, Dir: s.dir}
			l, rep, recs := openLog(t, opts, 0)

			// Replay gives exactly the frames that end by the cut.
			want := s.recs[:before]
			boundary := int64(headerSize)
			for _, f := range lastFrames {
				end := f.pos.Offset + frameSize(len(f.payload))
				if end > int64(cut) {
					break
				}
				want = s.recs[:len(want)+1]
				boundary = end
			}
			checkRecords(t, recs, want)
			if len(rep.Corrupt) != 0 {
				t.Fatalf("corruption reported: %v", rep.Corrupt)
			}
			switch {
			case cut < headerSize:
				if rep.TornTail == nil || *rep.TornTail != (Pos{last, 0}) {
					t.Fatalf("TornTail = %v, want %v", rep.TornTail, Pos{last, 0})
				}
			case int64(cut) == boundary:
				if rep.TornTail != nil {
					t.Fatalf("TornTail = %v at a frame boundary", *rep.TornTail)
				}
			default:
				if rep.TornTail == nil || *rep.TornTail != (Pos{last, boundary}) {
					t.Fatalf("TornTail = %v, want %v", rep.TornTail, Pos{last, boundary})
				}
			}

			// The log takes appends, and the next Open is clean.
			p := testPayload(1000, 30)
			want = append(want[:len(want):len(want)], record{mustAppend(t, l, p), p})
			_, rep, recs = reopen(t, l, opts, 0)
			checkRecords(t, recs, want)
			if rep.TornTail != nil || len(rep.Corrupt) != 0 {
				t.Fatalf("second Open reports %+v", rep)
			}
		})
	}
}

// region is a part of a segment that a bit flip can hit.
type region int

// The frame's two checksums are one region.
const (
	regionHeader region = iota
	regionLength
	regionCRC
	regionPayload
)

func (r region) String() string {
	return [...]string{"header", "length", "crc", "payload"}[r]
}

func TestBitFlips(t *testing.T) {
	s := writeSample(t, 25, 5, 60, 300)
	if len(s.segs) < 3 {
		t.Fatalf("sample has %d segments, want at least 3", len(s.segs))
	}
	const trials = 25
	for _, which := range []string{"first", "last"} {
		for _, reg := range []region{regionHeader, regionLength, regionCRC, regionPayload} {
			t.Run(fmt.Sprintf("segment=%s/region=%v", which, reg), func(t *testing.T) {
				seg := s.segs[0]
				if which == "last" {
					seg = s.segs[len(s.segs)-1]
				}
				frames := s.frames(seg)
				r := rand.New(rand.NewPCG(uint64(seg), uint64(reg)))
				for trial := range trials {
					b := bytes.Clone(s.files[seg])
					hit := -1 // index into frames of the damaged frame
					var lo, hi int64
					if reg == regionHeader {
						lo, hi = 0, headerSize
					} else {
						hit = r.IntN(len(frames))
						f := frames[hit]
						switch reg {
						case regionLength:
							lo, hi = f.pos.Offset, f.pos.Offset+4
						case regionCRC:
							lo, hi = f.pos.Offset+4, f.pos.Offset+frameHeaderSize
						case regionPayload:
							lo, hi = f.pos.Offset+frameHeaderSize, f.pos.Offset+frameSize(len(f.payload))
						}
					}
					for range 1 + r.IntN(3) {
						bit := lo*8 + r.Int64N((hi-lo)*8)
						b[bit/8] ^= 1 << (bit % 8)
					}
					if bytes.Equal(b, s.files[seg]) {
						continue // the flips cancelled out
					}
					t.Run(fmt.Sprintf("trial=%d", trial), func(t *testing.T) {
						checkFlip(t, s, seg, b, hit)
					})
				}
			})
		}
	}
}

// checkFlip installs s with segment seg replaced by damaged and checks
// recovery: every untouched frame replayed at its place, the damaged one
// (frames[hit], or the header when hit < 0) reported and not replayed, the
// original kept, and a clean second Open.
func checkFlip(t *testing.T, s sampleLog, seg uint64, damaged []byte, hit int) {
	fs := s.install(t, map[uint64][]byte{seg: damaged})
	var logs logBuffer
	opts := Options{FS: fs, Dir: s.dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	l, rep, recs := openLog(t, opts, 0)

	var want []record
	var damagedPos Pos
	frames := s.frames(seg)
	for _, r := range s.recs {
		if hit >= 0 && r.pos == frames[hit].pos {
			damagedPos = r.pos
			continue
		}
		want = append(want, r)
	}
	checkRecords(t, recs, want)

	last := seg == s.segs[len(s.segs)-1]
	if hit >= 0 && last && hit == len(frames)-1 {
		// The damaged frame ends the log: a torn tail, cut off.
		if rep.TornTail == nil || *rep.TornTail != damagedPos || len(rep.Corrupt) != 0 {
			t.Fatalf("report %+v, want a torn tail at %v", rep, damagedPos)
		}
	} else {
		wantOff := int64(0)
		if hit >= 0 {
			wantOff = damagedPos.Offset
		}
		if len(rep.Corrupt) != 1 || rep.Corrupt[0].Segment != seg || rep.Corrupt[0].Offset != wantOff || rep.TornTail != nil {
			t.Fatalf("report %+v (corrupt %v), want corruption in segment %d at %d", rep, rep.Corrupt, seg, wantOff)
		}
		if err := error(rep.Corrupt[0]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v does not match ErrCorrupt", err)
		}
		name := segmentName(seg)
		if out := logs.String(); !strings.Contains(out, name) || !strings.Contains(out, fmt.Sprintf("offset=%d", wantOff)) {
			t.Fatalf("log does not name the file and offset:\n%s", out)
		}
		if got := l.Stats().Corruptions; got != 1 {
			t.Fatalf("Stats.Corruptions = %d", got)
		}
		if kept := readFS(t, fs, filepath.Join(s.dir, name+corruptSuffix)); !bytes.Equal(kept, damaged) {
			t.Fatal("the copy kept aside differs from the damaged segment")
		}
	}

	// Reopened, the log is clean and replays the same payloads.
	_, rep, recs = reopen(t, l, opts, 0)
	if rep.TornTail != nil || len(rep.Corrupt) != 0 {
		t.Fatalf("second Open reports %+v", rep)
	}
	if len(recs) != len(want) {
		t.Fatalf("second Open replays %d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if !bytes.Equal(recs[i].payload, want[i].payload) {
			t.Fatalf("second Open: record %d differs", i)
		}
	}
}

func TestRecoverCases(t *testing.T) {
	s := writeSample(t, 20, 4, 30, 250)
	first, last := s.segs[0], s.segs[len(s.segs)-1]
	header := func(n uint64) []byte { return appendSegmentHeader(nil, n) }
	tests := []struct {
		name    string
		replace map[uint64][]byte
		extra   map[string][]byte // other files in the directory
		want    func(rec record) bool
		corrupt []Pos
		torn    *Pos
		wantErr string
	}{
		{
			name:    "first segment empty",
			replace: map[uint64][]byte{first: nil},
			want:    func(r record) bool { return r.pos.Segment != first },
			corrupt: []Pos{{first, 0}},
		},
		{
			name:    "last segment header only",
			replace: map[uint64][]byte{last: header(last)},
			want:    func(r record) bool { return r.pos.Segment != last },
		},
		{
			name:    "last segment zeroed header",
			replace: map[uint64][]byte{last: append(make([]byte, headerSize), s.files[last][headerSize:]...)},
			want:    func(record) bool { return true },
			corrupt: []Pos{{last, 0}},
		},
		{
			name:    "header of another segment",
			replace: map[uint64][]byte{first: append(header(first+100), s.files[first][headerSize:]...)},
			want:    func(record) bool { return true },
			corrupt: []Pos{{first, 0}},
		},
		{
			name:    "zeros after the last frame",
			replace: map[uint64][]byte{last: append(bytes.Clone(s.files[last]), make([]byte, 100)...)},
			want:    func(record) bool { return true },
			torn:    &Pos{last, int64(len(s.files[last]))},
		},
		{
			name:    "zeros after the last frame of a middle segment",
			replace: map[uint64][]byte{first: append(bytes.Clone(s.files[first]), make([]byte, 100)...)},
			want:    func(record) bool { return true },
			corrupt: []Pos{{first, int64(len(s.files[first]))}},
		},
		{
			// The frames are intact, but none verifies one byte later.
			name:    "frames shifted",
			replace: map[uint64][]byte{first: shifted(s.files[first])},
			want:    func(r record) bool { return r.pos.Segment != first },
			corrupt: []Pos{{first, headerSize}},
		},
		{
			name:    "frame from another segment",
			replace: map[uint64][]byte{last: append(bytes.Clone(s.files[last]), s.files[first][headerSize:]...)},
			want:    func(record) bool { return true },
			torn:    &Pos{last, int64(len(s.files[last]))},
		},
		{
			name:    "segment missing",
			replace: map[uint64][]byte{},
			extra:   map[string][]byte{"remove": nil},
			want:    func(r record) bool { return r.pos.Segment != s.segs[1] },
			corrupt: []Pos{{s.segs[1], 0}},
		},
		{
			name:  "leftover files",
			extra: map[string][]byte{segmentName(first) + tmpSuffix: []byte("partial"), "notes.txt": []byte("x")},
			want:  func(record) bool { return true },
		},
		{
			name: "newer version",
			replace: map[uint64][]byte{first: func() []byte {
				b := bytes.Clone(s.files[first])
				b[4] = FormatVersion + 1
				binary.LittleEndian.PutUint32(b[16:20], crc32c(b[:16]))
				return b
			}()},
			wantErr: "format version 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := s.install(t, tt.replace)
			for name, data := range tt.extra {
				if name == "remove" {
					if err := fs.Remove(filepath.Join(s.dir, segmentName(s.segs[1]))); err != nil {
						t.Fatal(err)
					}
					continue
				}
				writeFS(t, fs, filepath.Join(s.dir, name), data)
			}
			opts := Options{FS: fs, Dir: s.dir}
			if tt.wantErr != "" {
				l, _, err := Open(Options{FS: fs, Dir: s.dir, Logger: discardLogger()}, 0, nil)
				if err == nil {
					l.Close()
					t.Fatal("Open succeeded")
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open: %v, want %q", err, tt.wantErr)
				}
				if got := readFS(t, fs, filepath.Join(s.dir, segmentName(first))); !bytes.Equal(got, tt.replace[first]) {
					t.Fatal("Open changed a segment it cannot read")
				}
				return
			}
			l, rep, recs := openLog(t, opts, 0)
			var want []record
			for _, r := range s.recs {
				if tt.want(r) {
					want = append(want, r)
				}
			}
			checkRecords(t, recs, want)
			var corrupt []Pos
			for _, c := range rep.Corrupt {
				corrupt = append(corrupt, Pos{c.Segment, c.Offset})
			}
			if fmt.Sprint(corrupt) != fmt.Sprint(tt.corrupt) {
				t.Fatalf("corruption at %v, want %v", corrupt, tt.corrupt)
			}
			if fmt.Sprint(rep.TornTail) != fmt.Sprint(tt.torn) {
				t.Fatalf("TornTail %v, want %v", rep.TornTail, tt.torn)
			}
			for _, name := range segmentFilesAll(t, fs, s.dir) {
				if strings.HasSuffix(name, tmpSuffix) {
					t.Fatalf("%s left behind", name)
				}
			}
			_, rep, recs = reopen(t, l, opts, 0)
			if len(recs) != len(want) || rep.TornTail != nil {
				t.Fatalf("second Open: %d records (want %d), report %+v", len(recs), len(want), rep)
			}
		})
	}
}

func segmentFilesAll(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// shifted returns the segment with a byte inserted after its header.
func shifted(seg []byte) []byte {
	out := append([]byte(nil), seg[:headerSize]...)
	out = append(out, 0)
	return append(out, seg[headerSize:]...)
}

// TestResyncIsLinear damages the length of a frame with a large, random
// payload: recovery must skip the payload by trying every offset in it, in
// work linear in its size, and replay the frame after it. The work is
// counted, not timed: the reads of the damaged segment must be about one
// per readAhead of it, or a few (a scan that reread at every offset, or read every
// plausible payload, would make millions).
func TestResyncIsLinear(t *testing.T) {
	const big = 8 << 20
	var counting atomic.Bool
	var reads atomic.Int64
	var name string
	fs := vfs.NewFault(vfs.NewMem(), func(op vfs.Op, n string) error {
		if op == vfs.OpRead && counting.Load() && n == name {
			reads.Add(1)
		}
		return nil
	})
	opts := Options{FS: fs, Dir: "w"}
	l, _, _ := openLog(t, opts, 0)
	var want []record
	for i, n := range []int{100, big, 100, 100} {
		p := testPayload(uint64(i), n)
		want = append(want, record{mustAppend(t, l, p), p})
	}
	if _, err := l.Rotate(); err != nil { // the damaged segment is not the last
		t.Fatal(err)
	}
	l.Close()
	name = filepath.Join("w", segmentName(want[0].pos.Segment))
	b := readFS(t, fs, name)
	b[want[1].pos.Offset+2] ^= 0x01 // length += 64 KiB
	writeFS(t, fs, name, b)

	counting.Store(true)
	_, rep, recs := openLog(t, opts, 0)
	counting.Store(false)
	checkRecords(t, recs, []record{want[0], want[2], want[3]})
	if len(rep.Corrupt) != 1 || rep.Corrupt[0].Offset != want[1].pos.Offset {
		t.Fatalf("corruption %v, want one at %v", rep.Corrupt, want[1].pos)
	}
	bound := 4*int64(len(b))/readAhead + 16
	t.Logf("resynchronized over %d MiB in %d reads (bound %d)", big>>20, reads.Load(), bound)
	if reads.Load() > bound {
		t.Fatalf("recovery read the damaged segment of %d bytes %d times, more than %d: resynchronization is not linear", len(b), reads.Load(), bound)
	}
	if reads.Load() == 0 {
		t.Fatalf("no read of %s counted: the test counts nothing", name)
	}
}
