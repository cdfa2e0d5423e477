package store

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortRefs checks that sortRefs orders refs as a general sort by
// (time, WAL order, row) does, for refs as head.insert leaves them (each
// block's together): in order, a few places late (what it sorts by
// insertion), blocks of two chains interleaved (what it merges), with
// ties in time across blocks and rows, one row a block, in reverse and in
// no order (where it gives up on insertion).
func TestSortRefs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 10, 1000, 5000} {
		for _, shape := range []string{"sorted", "late", "interleaved", "ties", "one-row", "reversed", "random"} {
			t.Run(fmt.Sprintf("n=%d/shape=%s", n, shape), func(t *testing.T) {
				// Blocks in WAL order, some pairs swapped: a block's
				// order is not its index.
				order := make([]uint64, n+1)
				for i := range order {
					order[i] = uint64(i) * 10
				}
				for i := 0; i+1 < len(order); i += 3 {
					order[i], order[i+1] = order[i+1], order[i]
				}
				refs := make([]headRef, n)
				perBlock := 3
				if shape == "one-row" {
					perBlock = 1
				}
				for i := range refs {
					refs[i] = headRef{time: int64(i) * 100, blk: uint32(i / perBlock), row: uint32(i % perBlock)}
				}
				switch shape {
				case "interleaved":
					// Blocks of 50 rows; even blocks from a chain of
					// early times, odd ones from a chain of late times,
					// a few rows late within each.
					for i := range refs {
						blk := i / 50
						t := int64(blk/2*50+i%50) * 100
						if blk%2 == 1 {
							t += int64(n) * 100
						}
						refs[i] = headRef{time: t - int64(rng.IntN(3))*100, blk: uint32(blk), row: uint32(i % 50)}
					}
				case "late":
					for i := range refs {
						refs[i].time -= int64(rng.IntN(4)) * 100
					}
				case "ties":
					for i := range refs {
						refs[i].time = int64(rng.IntN(3))
					}
				case "reversed":
					slices.Reverse(refs)
				case "random":
					rng.Shuffle(len(refs), func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
				}
				want := slices.Clone(refs)
				slices.SortFunc(want, func(a, b headRef) int {
					return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(order[a.blk], order[b.blk]), cmp.Compare(a.row, b.row))
				})
				sortRefs(refs, order)
				if !slices.Equal(refs, want) {
					t.Errorf("sortRefs gave %v, want %v", refs, want)
				}
			})
		}
	}
}
