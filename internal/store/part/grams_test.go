package part_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluicelog/sluice/internal/store/part"
)

// TestGramFilter: a gram filter holds every text inside a value, in any
// ASCII case, rules most others out, and is left out for values with too
// many distinct grams.
func TestGramFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() []byte {
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 :/._-\"é"
		b := make([]byte, 3+rng.IntN(20))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return b
	}
	var values [][]byte
	for range 60 {
		values = append(values, word())
	}
	f := part.GramFilter(values...)
	if f == nil {
		t.Fatal("no filter for 60 short values")
	}
	for _, v := range values {
		for i := range v {
			for j := i + 1; j <= len(v); j++ {
				if !part.GramsMayHold(f, v[i:j]) || !part.GramsMayHold(f, upperASCII(v[i:j])) {
					t.Fatalf("filter rules out %q, which %q holds", v[i:j], v)
				}
			}
		}
	}
	// Values are never joined: a text across two values is no find.
	falsePos := 0
	for i := range 1000 {
		lit := fmt.Appendf(nil, "absent %d literal", i)
		if part.GramsMayHold(f, lit) {
			falsePos++
		}
	}
	if falsePos > 10 {
		t.Errorf("%d of 1000 absent literals may be held", falsePos)
	}
	if !part.GramsMayHold(f, []byte("zz")) {
		t.Error("a literal shorter than a gram is ruled out")
	}
	var many [][]byte
	for range 20000 {
		many = append(many, word())
	}
	if f := part.GramFilter(many...); f != nil {
		t.Errorf("a %d-byte filter for 20000 random values", len(f))
	}
}

func upperASCII(b []byte) []byte {
	u := make([]byte, len(b))
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			c -= 32
		}
		u[i] = c
	}
	return u
}
