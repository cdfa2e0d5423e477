package part

import (
	"math/rand/v2"
	"testing"
)

// TestIDsBelow checks the check of a dictionary's ids, eight at a time,
// against a byte at a time: for every dictionary size, ids all below it
// and ids with one out of range at each place, next to small and large
// neighbours (whose sums carry).
func TestIDsBelow(t *testing.T) {
	plain := func(ids []byte, n int) bool {
		for _, id := range ids {
			if int(id) >= n {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 256; n++ {
		for size := range 26 {
			ids := make([]byte, size)
			for i := range ids {
				if n > 0 {
					ids[i] = byte(rng.IntN(n))
				}
			}
			if got, want := idsBelow(ids, n), plain(ids, n); got != want {
				t.Fatalf("n=%d ids=%v: %v, want %v", n, ids, got, want)
			}
			for at := range size {
				for _, bad := range []int{n, n + 1, 127, 128, 200, 255} {
					if bad < n || bad > 255 {
						continue
					}
					was := ids[at]
					ids[at] = byte(bad)
					if got, want := idsBelow(ids, n), plain(ids, n); got != want {
						t.Fatalf("n=%d ids=%v: %v, want %v", n, ids, got, want)
					}
					ids[at] = was
				}
			}
		}
	}
}

func BenchmarkIDsBelow(b *testing.B) {
	ids := make([]byte, 6000)
	for i := range ids {
		ids[i] = byte(i % 5)
	}
	b.SetBytes(int64(len(ids)))
	for b.Loop() {
		if !idsBelow(ids, 5) {
			b.Fatal("out of range")
		}
	}
}
