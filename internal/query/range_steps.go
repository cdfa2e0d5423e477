package query

import "math"

// The windows of a range aggregation a row's time counts in, and counts
// added a run of rows at a time.

// sameWindows reports whether samples at times lo and hi, and so at every
// time between, count in the same windows.
func (w *rangeWorker) sameWindows(lo, hi int64) bool {
	a, b := w.windows(lo)
	c, d := w.windows(hi)
	return a == c && b == d
}

// windows returns the first and last window that count a sample at time
// t (hi < lo: none).
func (w *rangeWorker) windows(t int64) (lo, hi int64) {
	ts := t + w.off
	if c := &w.win; c.ok && ts >= c.from && ts <= c.to {
		return c.lo, c.hi
	}
	return w.windowsAt(ts)
}

// windowsAt is windows for ts, t+off, computed; it keeps in w.win the
// times for which the answer is the same: a block's rows come in time
// order, most in the windows of the row before (a 10 s step holds
// hundreds of a stream's rows), and each computation costs two divisions.
func (w *rangeWorker) windowsAt(ts int64) (lo, hi int64) {
	shape := w.shape
	last := int64(shape.steps - 1)
	ulo := ceilDiv(ts-shape.start, shape.step)
	uhi := floorDiv(ts+w.rng-1-shape.start, shape.step)
	// ulo is the same for ts in [start+(ulo-1)*step+1, start+ulo*step],
	// uhi for ts in [start+uhi*step-rng+1, start+(uhi+1)*step-rng].
	// Clamped to the query's steps, lo is 0 for every ts up to start,
	// and hi the last step for every ts from start+last*step-rng+1 on:
	// an instant query's (one step of 1 ns) are the same for every row
	// in its range.
	c := windowCache{ok: true, from: math.MinInt64, to: math.MaxInt64, lo: max(ulo, 0), hi: min(uhi, last)}
	if ulo > 0 {
		c.from, c.to = shape.start+(ulo-1)*shape.step+1, shape.start+ulo*shape.step
	} else {
		c.to = shape.start
	}
	if uhi < last {
		c.from = max(c.from, shape.start+uhi*shape.step-w.rng+1)
		c.to = min(c.to, shape.start+(uhi+1)*shape.step-w.rng)
	} else {
		c.from = max(c.from, shape.start+last*shape.step-w.rng+1)
	}
	w.win = c
	return c.lo, c.hi
}

// windowCache is what windowsAt last found: the windows of the times
// from..to (windows' ts).
type windowCache struct {
	ok       bool
	from, to int64
	lo, hi   int64
}

// onesRun adds a count's samples (opSum, a value of 1 each) of rows
// taken in time order a run at a time: the rows whose times share their
// windows (windowsAt's cache) are added to them together, not one by
// one (a 10 s step holds hundreds of a stream's rows).
type onesRun struct {
	s        *rangeSeries
	lo, hi   int64 // the run's windows
	last, to int64 // its last row's time; the last ts with the same windows
	n        int
}

// one adds a row at time t to r.
func (w *rangeWorker) one(r *onesRun, t int64) {
	if r.n > 0 && t >= r.last && t+w.off <= r.to {
		r.n++
		r.last = t
		return
	}
	w.flushOnes(r)
	r.lo, r.hi = w.windows(t)
	r.to, r.last, r.n = w.win.to, t, 1
}

// flushOnes adds r's run to its windows and empties it.
func (w *rangeWorker) flushOnes(r *onesRun) {
	if r.n > 0 {
		r.s.addCount(r.lo, r.hi, r.n)
		r.n = 0
	}
}

// addN adds n samples of value 1 at time t: n rows counted (opSum).
func (w *rangeWorker) addN(s *rangeSeries, t int64, n int) {
	lo, hi := w.windows(t)
	s.addCount(lo, hi, n)
}

// addCount adds n samples of value 1 to windows lo to hi: n rows
// counted (opSum).
func (s *rangeSeries) addCount(lo, hi int64, n int) {
	for k := lo; k <= hi; k++ {
		s.n[k] += float64(n)
		s.v[k] += float64(n)
	}
}
