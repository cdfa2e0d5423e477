package wal

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

// crc32c is an independent CRC32C for the tests, so that they do not trust
// the code they check.
func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// frameVerifies reports whether seg's bytes hold, at off, a frame carrying
// payload whose checksums check out, computed from the spec in
// docs/format/wal.md.
func frameVerifies(seg []byte, n uint64, off int64, payload []byte) bool {
	end := off + 12 + int64(len(payload))
	if off < headerSize || end > int64(len(seg)) {
		return false
	}
	h := seg[off : off+12]
	if !bytes.Equal(seg[off+12:end], payload) ||
		binary.LittleEndian.Uint32(h[0:4]) != uint32(len(payload)) ||
		binary.LittleEndian.Uint32(h[4:8]) != crc32c(payload) {
		return false
	}
	var in []byte
	in = binary.LittleEndian.AppendUint64(in, n)
	in = binary.LittleEndian.AppendUint64(in, uint64(off))
	in = append(in, h[0:8]...)
	return binary.LittleEndian.Uint32(h[8:12]) == crc32c(in)
}

// FuzzRecover feeds arbitrary bytes to recovery as a segment, once as the
// last segment and once followed by a valid one. Recovery must not panic,
// must replay only payloads of frames that verify where they stand in the
// input, must leave a log that takes appends, and a second Open must
// replay the same and report nothing.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{})
	f.Add(appendSegmentHeader(nil, 1))
	f.Add([]byte("SLWL\x01\x00\x00\x00"))
	f.Add(bytes.Repeat([]byte{0}, 64))
	seed := func(payloads ...[]byte) []byte {
		b := appendSegmentHeader(nil, 1)
		for _, p := range payloads {
			b = appendFrame(b, 1, int64(len(b)), p)
		}
		return b
	}
	f.Add(seed([]byte("hello"), nil, []byte("world")))
	f.Add(seed(testPayload(1, 100), testPayload(2, 3), testPayload(3, 40)))
	whole := seed(testPayload(4, 30), testPayload(5, 30), testPayload(6, 30))
	f.Add(whole[:len(whole)-5])
	damaged := bytes.Clone(whole)
	damaged[headerSize+frameHeaderSize+3] ^= 0x10
	f.Add(damaged)
	f.Add(append(bytes.Clone(whole), 0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4))

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, middle := range []bool{false, true} {
			fs := vfs.NewMem()
			if err := fs.MkdirAll("w", 0o755); err != nil {
				t.Fatal(err)
			}
			writeFS(t, fs, filepath.Join("w", segmentName(1)), data)
			var next []byte
			if middle {
				next = appendSegmentHeader(nil, 2)
				next = appendFrame(next, 2, headerSize, []byte("next"))
				writeFS(t, fs, filepath.Join("w", segmentName(2)), next)
			}
			opts := Options{FS: fs, Dir: "w", Logger: discardLogger()}
			var got [][]byte
			l, rep, err := Open(opts, 0, func(pos Pos, p []byte) error {
				src, n := data, uint64(1)
				if pos.Segment == 2 {
					src, n = next, 2
				}
				if !frameVerifies(src, n, pos.Offset, p) {
					t.Fatalf("replayed %d bytes at %v that are not a valid frame of the input", len(p), pos)
				}
				got = append(got, bytes.Clone(p))
				return nil
			})
			if err != nil {
				// Only a header of a newer version stops recovery.
				if st, _ := checkSegmentHeader(data, 1); st != headerNewer {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			if middle && (len(got) == 0 || string(got[len(got)-1]) != "next") {
				t.Fatalf("the segment after the damaged one was not replayed")
			}
			if rep.Records != len(got) {
				t.Fatalf("report counts %d records, replay saw %d", rep.Records, len(got))
			}
			if _, err := l.Append([]byte("after")); err != nil {
				t.Fatalf("Append after recovery: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var again [][]byte
			l, rep, err = Open(opts, 0, func(_ Pos, p []byte) error {
				again = append(again, bytes.Clone(p))
				return nil
			})
			if err != nil {
				t.Fatalf("second Open: %v", err)
			}
			l.Close()
			if rep.TornTail != nil || len(rep.Corrupt) != 0 {
				t.Fatalf("second Open reports %+v %v", rep, rep.Corrupt)
			}
			got = append(got, []byte("after"))
			if len(again) != len(got) {
				t.Fatalf("second Open replays %d payloads, want %d", len(again), len(got))
			}
			for i := range got {
				if !bytes.Equal(again[i], got[i]) {
					t.Fatalf("second Open: payload %d differs", i)
				}
			}
		}
	})
}
