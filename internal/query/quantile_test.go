package query

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantileSelect: quantile by selection equals quantile by sorting,
// NaNs and ties included.
func TestQuantileSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bySort := func(phi float64, vs []float64) float64 {
		s := slices.Clone(vs)
		slices.Sort(s)
		rank := phi * float64(len(s)-1)
		lo := math.Floor(rank)
		hi := math.Min(lo+1, float64(len(s)-1))
		w := rank - lo
		return s[int(lo)]*(1-w) + s[int(hi)]*w
	}
	for n := 1; n < 300; n += 7 {
		for _, phi := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 1} {
			vs := make([]float64, n)
			for i := range vs {
				switch rng.IntN(10) {
				case 0:
					vs[i] = math.NaN()
				case 1, 2:
					vs[i] = 7 // ties
				default:
					vs[i] = rng.NormFloat64() * 100
				}
			}
			got, want := quantile(phi, slices.Clone(vs)), bySort(phi, vs)
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("n %d phi %v: %v, want %v", n, phi, got, want)
			}
		}
	}
}
