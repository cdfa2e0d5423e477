package query

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWindowsCache: windows, answering from the span its last
// computation holds for, gives what the two divisions give, for times in
// order (as a block's rows come) and out of it, ranges shorter, equal
// to and longer than the step, offsets, times before and after the
// query's steps, and instant queries.
func TestWindowsCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		step := int64(1 + rng.IntN(20))
		shape := &matrix{start: int64(rng.IntN(200)) - 100, step: step, steps: 1 + rng.IntN(30)}
		w := &rangeWorker{shape: shape, rng: int64(1 + rng.IntN(60)), off: int64(rng.IntN(21)) - 10}
		if rng.IntN(4) == 0 { // an instant query's one step of 1 ns
			shape.step, shape.steps, w.rng = 1, 1, int64(1+rng.IntN(600))
		}
		times := make([]int64, 400)
		for i := range times {
			times[i] = int64(rng.IntN(900)) - 300
		}
		if rng.IntN(2) == 0 {
			slices.Sort(times)
		}
		for _, tm := range times {
			lo, hi := w.windows(tm)
			ts := tm + w.off
			wlo := max(ceilDiv(ts-shape.start, shape.step), 0)
			whi := min(floorDiv(ts+w.rng-1-shape.start, shape.step), int64(shape.steps-1))
			if lo != wlo || hi != whi {
				t.Fatalf("start %d step %d steps %d range %d offset %d, t %d: windows %d..%d, want %d..%d",
					shape.start, shape.step, shape.steps, w.rng, w.off, tm, lo, hi, wlo, whi)
			}
		}
	}
}

// BenchmarkWindows: the windows of rows in time order, 60 rows a second
// for a 10 s step and range, as k8s-stderr-10s's streams have them.
func BenchmarkWindows(b *testing.B) {
	const sec = int64(1e9)
	shape := &matrix{start: 10*sec - 1, step: 10 * sec, steps: 100}
	times := make([]int64, 60000)
	for i := range times {
		times[i] = int64(i) * sec / 60
	}
	b.Run("cached", func(b *testing.B) {
		w := &rangeWorker{shape: shape, rng: 10 * sec}
		var sum int64
		for b.Loop() {
			for _, t := range times {
				lo, hi := w.windows(t)
				sum += lo + hi
			}
		}
		_ = sum
	})
	b.Run("divisions", func(b *testing.B) {
		w := &rangeWorker{shape: shape, rng: 10 * sec}
		var sum int64
		for b.Loop() {
			for _, t := range times {
				lo, hi := w.windowsAt(t)
				sum += lo + hi
			}
		}
		_ = sum
	})
}
