package record

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// streamValues are label values around the word boundaries of the stream
// cache (8 and 16 bytes), values that differ only in their length ("ab"
// and "ab\x00"), and values that differ only past their 16th byte.
var streamValues = []string{
	"", "x", "ab", "ab\x00", "payments", "payments\x00", "inventory",
	"sixteen-bytes-ok", "sixteen-bytes-ok!", "sixteen-bytes-ok?",
	"a value much longer than sixteen bytes", "a value much longer than sixteen bytez",
}

// TestStreamCacheLabels builds records with random stream labels, the last
// value of each at the very end of the data, and checks every record's
// labels against its fields, and that equal label sets share an id.
func TestStreamCacheLabels(t *testing.T) {
	names := []string{"c", "a", "b"}
	bl := NewBuilder(Config{StreamFields: names})
	b := &Batch{}
	bl.Start(b)
	rng := rand.New(rand.NewPCG(1, 2))
	var want []Labels
	for range 5000 {
		var kv []string
		var ls Labels
		for _, n := range rng.Perm(len(names)) {
			if rng.IntN(4) == 0 {
				continue
			}
			v := streamValues[rng.IntN(len(streamValues))]
			kv = append(kv, names[n], v)
			ls = append(ls, Label{names[n], v})
		}
		kv = append(kv, "other", "v")
		slices.SortFunc(ls, func(x, y Label) int { return cmpString(x.Name, y.Name) })
		want = append(want, ls)
		build(bl, b, kv...)
	}
	ids := map[string]uint32{}
	for i, ls := range want {
		got := b.Labels(i)
		if got.String() != ls.String() {
			t.Fatalf("record %d: labels %s, want %s", i, got, ls)
		}
		if id, ok := ids[ls.String()]; ok && id != b.Records[i].Stream {
			t.Fatalf("record %d: labels %s have ids %d and %d", i, ls, id, b.Records[i].Stream)
		}
		ids[ls.String()] = b.Records[i].Stream
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestStreamCacheVerifies makes the cache entry of one label set answer
// the hash of another, as a hash collision would, and checks that the
// builder still finds the other's stream.
func TestStreamCacheVerifies(t *testing.T) {
	sets := [][]string{{"b", "x"}, {"b", "x", "a", "y"}}
	for _, v := range streamValues {
		sets = append(sets, []string{"a", v}, []string{"a", "x", "b", v})
	}
	for i, x := range sets {
		for j, y := range sets {
			if i == j {
				continue
			}
			t.Run(fmt.Sprintf("%q/%q", x, y), func(t *testing.T) {
				bl := NewBuilder(Config{StreamFields: []string{"a", "b"}})
				b := &Batch{}
				bl.Start(b)
				build(bl, b, x...)
				idX := b.Records[0].Stream
				build(bl, b, y...)
				idY, hY := b.Records[1].Stream, bl.scHash
				if idX == idY || hY == 0 {
					t.Fatalf("ids %d and %d, hash %#x", idX, idY, hY)
				}
				e := streamCacheEntry{hY, idX, bl.scKeyOff[idX]}
				bl.scache[hY&(streamCacheSets-1)] = [2]streamCacheEntry{e, e}
				build(bl, b, y...)
				if got := b.Records[2].Stream; got != idY {
					t.Errorf("stream %d (%s), want %d (%s)", got, b.Streams.Get(got), idY, b.Streams.Get(idY))
				}
			})
		}
	}
}

// TestNameGuess checks the name lookup's guesses: names of every length
// around the 8-byte word compare, in slices with and without room for a
// word, in changing orders.
func TestNameGuess(t *testing.T) {
	var names []string
	for n := range 12 {
		names = append(names, "abcdefghijkl"[:n], "abcdefghijkx"[:n]+"\x00")
	}
	bl := NewBuilder(Config{})
	b := &Batch{}
	bl.Start(b)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		bl.Begin(Span{})
		for range 6 {
			want := names[rng.IntN(len(names))]
			buf := []byte(want + "=value")
			key := buf[:len(want)]
			if rng.IntN(2) == 0 {
				key = key[:len(want):len(want)]
			}
			id, ok := bl.Name(key)
			if !ok || b.Names.Get(id) != want {
				t.Fatalf("Name(%q) = %d %q", want, id, b.Names.Get(id))
			}
		}
		bl.End()
	}
}
