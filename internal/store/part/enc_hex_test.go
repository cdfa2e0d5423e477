package part

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestHexEqualBits: the values equal to a wanted one, found four heads a
// step, are those a comparison of each value finds: a value placed at
// each place in turn (in every lane of a step and in the tail), beside
// one whose head agrees and whose rest does not, for values of 8 bytes
// or more and fewer.
func TestHexEqualBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, w := range []int{4, 8, 16} {
		for n := 1; n < 23; n++ {
			for p := range n {
				data := make([]byte, n*w)
				for i := range data {
					data[i] = byte(rng.IntN(3))
				}
				want := make([]byte, w)
				for i := range want {
					want[i] = 3 + byte(rng.IntN(3))
				}
				copy(data[p*w:], want)
				if q := rng.IntN(n); q != p {
					copy(data[q*w:], want[:min(8, w)]) // the head alone
				}
				c := colData{n: n, hexLen: 2 * w, data: data}
				got := make([]uint64, (n+63)/64)
				c.hexEqualBits(want, got)
				for vi := range n {
					if eq := bytes.Equal(data[vi*w:(vi+1)*w], want); eq != (got[vi/64]&(1<<(vi%64)) != 0) {
						t.Fatalf("%d values of %d bytes, the wanted one at %d: value %d equal %v, its bit says otherwise", n, w, p, vi, eq)
					}
				}
			}
		}
	}
}

// TestHexPrefixBits: the values whose text starts with a prefix (or is
// it), found on their bytes, are those whose written text does: prefixes
// of every length up to the values' and past them, odd and even, and
// prefixes that no hex text can start with.
func TestHexPrefixBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, w := range []int{1, 4, 16} {
		n := 150
		data := make([]byte, n*w)
		for i := range data {
			data[i] = byte(rng.IntN(3)) * 0x51 // 0x00, 0x51, 0xa2: prefixes often shared
		}
		b := &Block{cols: []colData{{enc: encHex, loaded: true, n: n, hexLen: 2 * w, data: data}}}
		c := &b.cols[0]
		var prefixes []string
		for range 40 {
			v := string(c.appendHexValue(nil, rng.IntN(n)))
			prefixes = append(prefixes, v[:rng.IntN(len(v)+1)])
		}
		prefixes = append(prefixes, "", "A", "5g", string(c.appendHexValue(nil, 0))+"0")
		for _, p := range prefixes {
			for _, exact := range []bool{false, true} {
				got := make([]uint64, (n+63)/64)
				if ok, err := b.HexPrefixBits(0, p, exact, got); !ok || err != nil {
					t.Fatalf("a hex column: %v, %v", ok, err)
				}
				for vi := range n {
					v := c.appendHexValue(nil, vi)
					want := bytes.HasPrefix(v, []byte(p))
					if exact {
						want = string(v) == p
					}
					if want != (got[vi/64]&(1<<(vi%64)) != 0) {
						t.Fatalf("values of %d bytes, prefix %q (exact %v): value %d (%s) passes %v, its bit says otherwise", w, p, exact, vi, v, want)
					}
				}
			}
		}
	}
}
