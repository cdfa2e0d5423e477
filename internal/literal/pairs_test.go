package literal

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// indexPairsPlain is IndexPairs a position at a time.
func indexPairsPlain(s []byte, p, q Pair) int {
	for i := 0; i+1 < len(s); i++ {
		if p.at(s, i) || q.at(s, i) {
			return i
		}
	}
	return -1
}

// TestIndexPairs checks IndexPairs (AVX2 where the machine has it)
// against the plain search: every length around the 32-byte steps, each
// pair at every place, in either case, and at the end where the vector
// loop stops.
func TestIndexPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pairs := []Pair{PairOf([]byte("de"), 0, false), PairOf([]byte("Ti"), 0, true), PairOf([]byte(`\u`), 0, false), PairOf([]byte("-9"), 0, true)}
	for n := range 140 {
		s := make([]byte, n)
		for i := range s {
			s[i] = "abcdeTIti\\u-9 "[rng.IntN(14)]
		}
		for _, p := range pairs {
			for _, q := range pairs {
				if got, want := IndexPairs(s, p, q), indexPairsPlain(s, p, q); got != want {
					t.Fatalf("%+v or %+v in %q: %d, want %d", p, q, s, got, want)
				}
			}
		}
		// One pair alone, at each place in a text of other bytes.
		for at := 0; at+1 < n; at++ {
			s := bytes.Repeat([]byte{'x'}, n)
			s[at], s[at+1] = 'D', 'e'
			p := PairOf([]byte("dE"), 0, true)
			if got := IndexPairs(s, p, p); got != at {
				t.Fatalf("len %d, pair at %d: found at %d", n, at, got)
			}
		}
	}
}

// FuzzIndexPairs: IndexPairs gives what the plain search gives.
func FuzzIndexPairs(f *testing.F) {
	f.Add([]byte(`{\"msg\":\"payment declined\",\"u\":\"caf\u00e9\"} and some more text to pass 33`), []byte("ec"), []byte(`\u`), false, false)
	f.Add(bytes.Repeat([]byte("TIMEOUT timeout "), 5), []byte("ti"), []byte("OU"), true, false)
	f.Fuzz(func(t *testing.T, s, a, b []byte, foldA, foldB bool) {
		if len(a) < 2 || len(b) < 2 {
			return
		}
		p, q := PairOf(a, 0, foldA), PairOf(b, 0, foldB)
		want := indexPairsPlain(s, p, q)
		if got := IndexPairs(s, p, q); got != want {
			t.Fatalf("%+v or %+v in %q: %d, want %d", p, q, s, got, want)
		}
		avx2 := useAVX2
		useAVX2 = false // eight positions at a time
		got := IndexPairs(s, p, q)
		useAVX2 = avx2
		if got != want {
			t.Fatalf("%+v or %+v in %q, without AVX2: %d, want %d", p, q, s, got, want)
		}
	})
}

func BenchmarkIndexPairs(b *testing.B) {
	s := bytes.Repeat([]byte(`{\"ts\":1768464000001,\"level\":\"info\",\"msg\":\"payment ok\",\"service\":\"auth\"} `), 1000)
	p, q := PairOf([]byte("cl"), 0, false), PairOf([]byte(`\u`), 0, false)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if IndexPairs(s, p, q) >= 0 {
			b.Fatal("found")
		}
	}
}

// TestIndexPairsWords checks the search eight positions at a time (its
// path without AVX2, and the tail's with it) against the plain one.
func TestIndexPairsWords(t *testing.T) {
	avx2 := useAVX2
	useAVX2 = false
	defer func() { useAVX2 = avx2 }()
	TestIndexPairs(t)
}
