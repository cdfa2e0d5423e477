package part_test

import (
	"fmt"
	"testing"

	"github.com/sluicelog/sluice/internal/store/part"
)

// TestFilterFalsePositivesIndependent: blocks share the words every
// block of a stream has, and each has words of its own. A token no block
// holds must be a false "maybe" in each block independently of the
// others: without a salt per filter, the shared words set the same bits
// in every block, and a token whose probes fall on them passes many
// blocks at once (a trace id passed 17 of 984 blocks of the 20M-line
// store where the filters' fill promised 3).
func TestFilterFalsePositivesIndependent(t *testing.T) {
	const blocks, shared, own, absent = 200, 500, 500, 400
	filters := make([]part.Filter, blocks)
	for b := range filters {
		var toks [][]byte
		for i := range shared {
			toks = append(toks, fmt.Appendf(nil, "word%d", i))
		}
		for i := range own {
			toks = append(toks, fmt.Appendf(nil, "block%dword%d", b, i))
		}
		filters[b] = part.TokenFilter(toks...)
		for _, tok := range toks {
			if !filters[b].MayContain(part.TokenHash(tok)) {
				t.Fatalf("block %d: its token %q is not in its filter", b, tok)
			}
		}
	}
	total, most := 0, 0
	for j := range absent {
		h := part.TokenHash(fmt.Appendf(nil, "absent%dtoken", j))
		n := 0
		for _, f := range filters {
			if f.MayContain(h) {
				n++
			}
		}
		total += n
		most = max(most, n)
	}
	// 1000 tokens in 8192 bits, 6 probes: about 2% false positives, 4 of
	// the 200 blocks for a token on average. Were they independent, a
	// token passing 16 blocks or more would be a chance below 10^-5.
	if mean := float64(total) / absent; mean > 6 {
		t.Errorf("an absent token passes %.1f of %d blocks on average, want about 4", mean, blocks)
	}
	if most >= 16 {
		t.Errorf("an absent token passes %d of %d blocks: the blocks' false positives are not independent", most, blocks)
	}
}
