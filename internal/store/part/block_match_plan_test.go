package part

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestShapeTable: the table of plans by shape and literal answers as a
// map does, across its growth and a reset.
func TestShapeTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var tb shapeTable[litPlan]
	want := map[shapeKey]litPlan{}
	for round := range 3 {
		for i := range 5000 {
			// Few distinct first words (many keys share a slot's start)
			// and shapes (a shape with each literal).
			k := shapeKey{Shape{rng.Uint64() % 64, rng.Uint64() % 256}, rng.IntN(3)}
			if i%3 == 0 && len(want) > 0 {
				for old := range want {
					k = old
					break
				}
			}
			p := litPlan(1 + rng.IntN(3))
			tb.put(k, p)
			want[k] = p
			if got, ok := tb.get(shapeKey{Shape{rng.Uint64() % 64, 256 + rng.Uint64()%256}, 0}); ok {
				t.Fatalf("round %d: a key never put has plan %d", round, got)
			}
		}
		for k, p := range want {
			if got, _ := tb.get(k); got != p {
				t.Fatalf("round %d: key %v: plan %d, want %d", round, k, got, p)
			}
		}
		if tb.n != len(want) {
			t.Fatalf("round %d: %d keys held, want %d", round, tb.n, len(want))
		}
		tb.reset()
		for k := range want {
			if _, ok := tb.get(k); ok {
				t.Fatal("a plan survived the reset")
			}
		}
		clear(want)
	}
}

// TestOrEntries: the bits orEntries sets are those of the plain loop, for
// every length around a word's and entries of any density.
func TestOrEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for n := range 300 {
		idx := make([]byte, n)
		var has [256]bool
		for e := range has {
			has[e] = rng.IntN(4) == 0
		}
		for i := range idx {
			idx[i] = byte(rng.IntN(256))
		}
		got := make([]uint64, (n+63)/64)
		want := make([]uint64, len(got))
		for i := range got {
			got[i] = rng.Uint64() & rng.Uint64() // bits set before stay set
			want[i] = got[i]
		}
		for vi, e := range idx {
			if has[e] {
				want[vi/64] |= 1 << (vi % 64)
			}
		}
		orEntries(got, idx, &has)
		if !slices.Equal(got, want) {
			t.Fatalf("%d values: bits %x, want %x", n, got, want)
		}
	}
}
