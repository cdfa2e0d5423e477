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
