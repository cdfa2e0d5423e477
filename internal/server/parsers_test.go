package server

import (
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
)

// TestParsersKeepManyIdle: as many parsers as requests held at once come
// back from the free list, past maxFreePerKey, up to maxIdle in all.
func TestParsersKeepManyIdle(t *testing.T) {
	var ps parsers
	opts := parse.Options{Format: "json", Record: record.DefaultConfig()}
	get := func(n int) ([]*parse.Parser, *parserList) {
		t.Helper()
		out := make([]*parse.Parser, n)
		var list *parserList
		for i := range out {
			p, l, err := ps.get(opts)
			if err != nil {
				t.Fatal(err)
			}
			out[i], list = p, l
		}
		return out, list
	}
	held, list := get(3 * maxFreePerKey)
	for _, p := range held {
		ps.put(list, p)
	}
	if ps.idle != len(held) || len(list.idle) != len(held) {
		t.Fatalf("%d idle (%d in the list), want %d", ps.idle, len(list.idle), len(held))
	}
	was := map[*parse.Parser]bool{}
	for _, p := range held {
		was[p] = true
	}
	again, _ := get(len(held))
	for i, p := range again {
		if !was[p] {
			t.Fatalf("parser %d of %d is new, want one kept", i, len(held))
		}
	}
	if ps.idle != 0 {
		t.Fatalf("%d idle after taking them all", ps.idle)
	}
	more, _ := get(maxIdle + 10 - len(again))
	for _, p := range append(again, more...) {
		ps.put(list, p)
	}
	if ps.idle != maxIdle || len(list.idle) != maxIdle {
		t.Errorf("%d idle (%d in the list), want the bound %d", ps.idle, len(list.idle), maxIdle)
	}
}
