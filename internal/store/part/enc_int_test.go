package part

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// FuzzIntAt: an integer column's numbers read one at a time (intAt, in
// any order, across its switch to decoding them all) are what decoding
// them all gives, and bytes that are not the column's count of varints
// are refused at load or give an error, never a panic.
func FuzzIntAt(f *testing.F) {
	var seed []byte
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 300, -300, 1 << 40, -1 << 62, 7, 99999} {
		seed = binary.AppendVarint(seed, v)
	}
	f.Add(seed, []byte{0, 11, 3, 3, 2, 9, 1}, false)
	f.Add(seed, []byte{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte{0}, false)
	f.Add([]byte{0x80, 0x80}, []byte{0, 1}, false)
	f.Fuzz(func(t *testing.T, s, reads []byte, decimal bool) {
		n := 0
		for _, c := range s {
			if c < 0x80 {
				n++
			}
		}
		enc := byte(encInt)
		if decimal {
			enc = encDecimal
		}
		whole := colData{enc: enc, n: n, varints: s}
		wantErr := whole.decodeInts()
		if wantErr != nil && !errors.Is(wantErr, ErrCorrupt) {
			t.Fatalf("%v is no ErrCorrupt", wantErr)
		}
		if !varintCount(s, n) {
			if len(s) > 0 && s[len(s)-1] < 0x80 || len(s) == 0 && n == 0 {
				t.Fatalf("varintCount refused %x, %d varints", s, n)
			}
			return
		}
		lazy := colData{enc: enc, n: n, varints: s}
		for k, r := range reads {
			if n == 0 {
				break
			}
			vi := int(r) % n
			got, err := lazy.intAt(vi)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read %d: %v is no ErrCorrupt", k, err)
			}
			if wantErr != nil {
				// The whole column fails; a read of one value may
				// succeed, unless it is the bad one.
				continue
			}
			if err != nil || got != whole.ints[vi] {
				t.Fatalf("read %d: value %d = %d, %v; decoded whole %d", k, vi, got, err, whole.ints[vi])
			}
		}
		if wantErr == nil && n > 0 && !lazy.intsDone && len(reads) > max(lazyIntReads, n/8) {
			t.Fatalf("%d reads and the column is not decoded", len(reads))
		}
	})
}

// TestIntAtSkips: reads of one value each, forward and back, over
// varints of every length, agree with decoding them all.
func TestIntAtSkips(t *testing.T) {
	var s []byte
	var want []int64
	for i := range 1000 {
		v := int64(i*i*i*i) ^ -int64(i&1)<<(i%60)
		want = append(want, v)
		s = binary.AppendVarint(s, v)
	}
	if !varintCount(s, len(want)) || varintCount(s, len(want)-1) || varintCount(s[:len(s)-1], len(want)-1) {
		t.Fatal("varintCount")
	}
	for _, tc := range []struct {
		order []int
		whole bool // decoded whole by the end
	}{
		{[]int{999, 0, 500, 501, 3, 998}, false},
		{[]int{5, 4, 3, 2, 1, 0}, false},
		{[]int{998, 997, 990, 700, 699}, false},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, false},
		// A quarter of the column skipped a read: decoded once the reads
		// have skipped its length.
		{[]int{250, 750, 250, 750, 250, 750, 250, 750, 250, 750}, true},
		// A walk of every value: decoded after lazyIntReads of them;
		// other reads: after an eighth of the column's count.
		{seq(lazyIntReads + 1), true},
		{slices.Repeat([]int{7}, 1000/8), false},
		{slices.Repeat([]int{7}, 1000/8+1), true},
	} {
		c := colData{enc: encInt, n: len(want), varints: s}
		for _, vi := range tc.order {
			if got, err := c.intAt(vi); err != nil || got != want[vi] {
				t.Fatalf("order %v: value %d = %d, %v, want %d", tc.order, vi, got, err, want[vi])
			}
		}
		if c.intsDone != tc.whole {
			t.Fatalf("order %v: decoded whole %v after %d reads", tc.order, c.intsDone, len(tc.order))
		}
	}
}

// seq returns 0, 1, ..., n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// intsColumn returns the varints of n numbers of one to three bytes, as a
// log's latencies and sizes are.
func intsColumn(n int) []byte {
	var s []byte
	for i := range n {
		s = binary.AppendVarint(s, int64(i*7919%20000))
	}
	return s
}

// BenchmarkIntAtBackward: a read of one value each, walking back from
// the last, as a newest-first walk renders rows (ns per read).
func BenchmarkIntAtBackward(b *testing.B) {
	const n = 24000
	s := intsColumn(n)
	b.ResetTimer()
	for i := 0; i < b.N; {
		c := colData{enc: encInt, n: n, varints: s}
		for vi := n - 1; vi >= n-n/8+1 && i < b.N; vi, i = vi-1, i+1 {
			if _, err := c.intAt(vi); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDecodeInts: a column's numbers decoded whole (ns per value).
func BenchmarkDecodeInts(b *testing.B) {
	const n = 24000
	s := intsColumn(n)
	ints := make([]int64, 0, n)
	b.ResetTimer()
	for i := 0; i < b.N; i += n {
		c := colData{enc: encInt, n: n, varints: s, ints: ints}
		if err := c.decodeInts(); err != nil {
			b.Fatal(err)
		}
	}
}
