package query

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

// randomSeries returns n series of random label sets: names and values
// that are prefixes of each other, empty, or hold zero bytes.
func randomSeries(n int, rng *rand.Rand) *matrix {
	m := newMatrix(0, 1, 1)
	names := []string{"a", "ab", "b", "a\x00", "trace_id"}
	values := []string{"", "x", "x\x00", "x\x00y", "xy", "\x00", "y", "é"}
	for range n {
		var ls record.Labels
		for _, name := range names {
			if rng.IntN(2) == 0 {
				ls = append(ls, record.Label{Name: name, Value: values[rng.IntN(len(values))] + fmt.Sprint(rng.IntN(3))})
			}
		}
		slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
		m.add(ls)
	}
	return m
}

// TestSortSeriesByKey: the keyed sort of many series orders them as
// compareLabels does.
func TestSortSeriesByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		m := randomSeries(3000, rng)
		m.sortSeries()
		if !slices.IsSortedFunc(m.series, func(a, b *series) int { return compareLabels(a.labels, b.labels) }) {
			t.Fatal("the keyed sort disagrees with compareLabels")
		}
	}
}

func BenchmarkSortSeries(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := newMatrix(0, 1, 1)
	for range 1 << 20 {
		m.add(record.Labels{{Name: "trace_id", Value: fmt.Sprintf("%032x", rng.Uint64())}})
	}
	orig := slices.Clone(m.series)
	for _, keyed := range []bool{false, true} {
		b.Run(fmt.Sprintf("keyed=%v", keyed), func(b *testing.B) {
			for b.Loop() {
				copy(m.series, orig)
				if keyed {
					m.sortSeries()
				} else {
					slices.SortFunc(m.series, func(a, b *series) int { return compareLabels(a.labels, b.labels) })
				}
			}
		})
	}
}
