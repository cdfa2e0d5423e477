package bin

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
)

// FuzzVarints: Varints decodes as many calls of Varint do, values,
// offset and error alike, on any bytes.
func FuzzVarints(f *testing.F) {
	var seed []byte
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 300, -300, 1 << 40, -1 << 62} {
		seed = binary.AppendVarint(seed, v)
	}
	f.Add(seed, uint8(10), uint8(0))
	f.Add(seed, uint8(12), uint8(3))
	f.Add([]byte{0x80, 0x80}, uint8(2), uint8(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, n, skip uint8) {
		start := min(int(skip), len(b))
		one := NewReader(b)
		one.off = start
		var want []int64
		for range int(n) {
			want = append(want, one.Varint("integer"))
		}
		many := NewReader(b)
		many.off = start
		got := many.Varints(nil, int(n), "integer")
		if !slices.Equal(got, want) || many.off != one.off || fmt.Sprint(many.Err()) != fmt.Sprint(one.Err()) {
			t.Fatalf("Varints gave %v at %d (%v), Varint %v at %d (%v)", got, many.off, many.Err(), want, one.off, one.Err())
		}
	})
}

func BenchmarkVarints(b *testing.B) {
	// Numbers of every length from one byte to four, in no order (sizes,
	// latencies, statuses of log lines), so that the length of the next
	// varint is not the last one's.
	var enc []byte
	x := uint64(1)
	for range 8192 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		enc = binary.AppendVarint(enc, int64(x%(1<<(7*(1+x%4)-1))))
	}
	dst := make([]int64, 0, 8192)
	b.Run("Varint", func(b *testing.B) {
		for b.Loop() {
			r := NewReader(enc)
			dst = dst[:0]
			for range 8192 {
				dst = append(dst, r.Varint("integer"))
			}
		}
	})
	b.Run("Varints", func(b *testing.B) {
		for b.Loop() {
			r := NewReader(enc)
			dst = r.Varints(dst[:0], 8192, "integer")
		}
	})
}

// FuzzEnds: Ends reads as many calls of Bounded do, ends, offset and
// error alike, on any bytes.
func FuzzEnds(f *testing.F) {
	var seed []byte
	for _, v := range []uint64{0, 1, 5, 127, 128, 300, 16383, 16384, 1 << 30, 7, 7, 7, 7, 7, 7, 7, 7, 9} {
		seed = binary.AppendUvarint(seed, v)
	}
	f.Add(seed, uint8(18), uint8(0), uint32(1<<30))
	f.Add(seed, uint8(20), uint8(2), uint32(200))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, uint8(17), uint8(0), uint32(100))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 0x80}, uint8(9), uint8(0), uint32(100))
	f.Fuzz(func(t *testing.T, b []byte, n, skip uint8, limit uint32) {
		start := min(int(skip), len(b))
		one := NewReader(b)
		one.off = start
		var want []uint32
		var wantEnd uint64
		for range int(n) {
			wantEnd += one.Bounded("length", uint64(limit))
			want = append(want, uint32(wantEnd))
		}
		many := NewReader(b)
		many.off = start
		got, end := many.Ends(nil, int(n), uint64(limit), "length")
		if fmt.Sprint(one.Err()) != fmt.Sprint(many.Err()) || one.off != many.off {
			t.Fatalf("error %v at %d, Bounded's %v at %d", many.Err(), many.off, one.Err(), one.off)
		}
		if !slices.Equal(got, want) || end != wantEnd {
			t.Fatalf("ends %v (sum %d), Bounded's %v (sum %d)", got, end, want, wantEnd)
		}
	})
}

// BenchmarkEnds: the lengths of 8,192 values, short (all one byte), of
// log lines around 128 bytes (one byte or two, in no order), and long
// (two bytes each).
func BenchmarkEnds(b *testing.B) {
	x := uint64(1)
	for _, c := range []struct {
		name     string
		min, max uint64
	}{{"short", 5, 60}, {"lines", 90, 200}, {"long", 300, 2000}} {
		var enc []byte
		for range 8192 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			enc = binary.AppendUvarint(enc, c.min+x%(c.max-c.min))
		}
		dst := make([]uint32, 0, 8192)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r := NewReader(enc)
				dst, _ = r.Ends(dst[:0], 8192, 1<<20, "length")
			}
		})
	}
}
