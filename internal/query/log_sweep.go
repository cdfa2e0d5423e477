package query

import (
	"iter"
	"math/bits"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store/part"
)

// The swept path of a columnar log query whose filters keep few rows:
// a block's rows that pass the stages the columns decide (the leading
// line filters, json and the label filters after it) are found as a
// count of them finds them, a column at a time, without a row walked
// (the filter sweep's plan and bits, range_filters.go: a trace id's
// equality compared as the bytes of a column of hex values, a level's
// once per dictionary entry); only the lines of those rows, and of the
// rows stored whole, are made, from the scan's start, each run through the
// whole pipeline as the row path runs it. The count is a probe: a range
// worker of `count_over_time` over that prefix, kept per log worker,
// whose series are never read.
//
// The walk of a block costs every row's cursor moved and every row's
// values read; the sweep costs the block's templates planned and one
// pass over its rows' templates, whatever the filters keep. So it is
// taken, as the implied clauses are (logCols.selection), once the rows
// walked show the filters rare: a walk for the newest lines of a common
// value stops after a few of a block's rows.

// newLogProbe returns the probe of log query x over [from, to]: a
// worker of the count of the rows the prefix of its pipeline that the
// columns decide keeps; nil when that count takes no filter sweep.
func newLogProbe(ev *evaluator, x *logql.LogExpr, from, to int64) (*rangeWorker, error) {
	lf := leadingFilters(x.Pipeline, true)
	stages := x.Pipeline[lf.n:]
	stages = stages[:logPrefix(stages)]
	prefix := x.Pipeline[:lf.n+len(stages)]
	// The count observes the labels its filters read, and no grouping.
	observed := stage.ObservedBy(stages, nil)
	rng := to - from + 1
	ra := &logql.RangeAggregation{Op: "count_over_time", Range: &logql.LogRange{
		Log: &logql.LogExpr{Selector: x.Selector, Pipeline: prefix}, Interval: time.Duration(rng)}}
	if !columnarPipeline(ra, observed) {
		return nil, nil
	}
	pipe, err := stage.CompileObserving(prefix, observed)
	if err != nil {
		return nil, err
	}
	// Its rows merged into one series (by ()): the filters' labels are
	// no grouping's, which the sweep would have to keep apart.
	w := &rangeWorker{pipe: pipe, lb: &stage.Labels{}, plans: &ev.e.plans, x: ra, op: opSum,
		mergedBy: &logql.Grouping{}, shape: &matrix{start: to, steps: 1}, rng: rng, probe: true}
	if w.colPipe, err = stage.CompileObserving(stages, observed); err != nil {
		return nil, err
	}
	if cp := w.colPlanner(); cp.byLabel == nil && cp.byWhole == nil {
		return nil, nil // no stream's filters are swept
	}
	return w, nil
}

// sweeps reports whether the block at hand is to be swept, making the
// probe at the first block that is.
func (lc *logCols) sweeps(ev *evaluator, from, to int64) (bool, error) {
	if lc.probeMade {
		return lc.probe != nil, nil
	}
	if !ev.e.sweepAlways && (lc.walked < rareRows || lc.kept*rareShare >= lc.walked) {
		return false, nil
	}
	lc.probeMade = true
	var err error
	lc.probe, err = newLogProbe(ev, lc.x, from, to)
	return lc.probe != nil, err
}

// startProbe readies the probe for the rows of stream ls, once per
// stream (startStream clears probeOn).
func (lc *logCols) startProbe(ls record.Labels) {
	if !lc.probeOn {
		lc.probe.startColumns(ls)
		lc.probeOn = true
	}
}

// sweptBlock keeps the lines of block b's rows in [from, to] that the
// pipeline keeps, from the scan's start, until a row beyond the cutoff, by
// the probe's sweep; done false: the block cannot be swept (a template
// the sweep cannot plan), and nothing was kept.
func (w *logWorker) sweptBlock(ev *evaluator, ls record.Labels, b *part.Block, from, to int64, cut *cutoff, keep func(t int64, line []byte) error) (done bool, err error) {
	lc := w.cols
	if err := b.DecodeTimes(); err != nil {
		return true, err
	}
	n := b.NumRows()
	// Newest first, the rows before lo are older than the cutoff, and not
	// swept. (Oldest first, those after the cutoff are swept: the plan's
	// count of places would be the rows before them.)
	lo := 0
	if cut.backward && cut.full.Load() {
		lo, _ = cut.nearRows(b, from, to)
	}
	sel, some, err := lc.lead.of(b) // the rows the line filters before json keep (nil: every row)
	if err != nil || !some {
		return true, err
	}
	lc.startProbe(ls)
	fs, ok, err := lc.probe.passed(ls, b, sel, lo)
	if err != nil || !ok {
		return err != nil, err
	}
	w.tally.rows += int64(n - lo)
	w.tally.columnar += int64(n - lo)
	w.tally.swept += int64(n - lo)
	if len(fs.hits) == 0 && fs.raws == 0 {
		return true, ev.flush(&w.tally)
	}
	// The rows to make: those that pass, and those the sweep leaves to
	// the row path.
	lc.rows = growClear(lc.rows, (n+63)/64)
	for _, k := range fs.hits {
		lc.rows[k>>6] |= 1 << (k & 63)
	}
	tids := b.RowTemplates()
	if fs.raws > 0 {
		for k := lo; k < n; k++ {
			if fs.tmpls[tids[k]].walked && (sel == nil || sel[k>>6]>>(k&63)&1 != 0) {
				lc.rows[k>>6] |= 1 << (k & 63)
			}
		}
	}
	// From the scan's start, the cursor moved past the rows between.
	cur := &w.cur
	at := 0 // the cursor is at row at (forward), or before it (backward)
	if cut.backward {
		cur.StartAtEnd(b, nil)
		at = n
	} else {
		cur.Start(b, nil)
	}
	for k := range bitPlaces(lc.rows, cut.backward) {
		if cut.backward {
			cur.BackOver(tids[k:at])
		} else {
			cur.NextOver(tids[at:k])
		}
		at = k
		t := b.RowTime(k)
		if t < from || t > to {
			continue
		}
		if cut.beyond(t) {
			break // the block's farther rows come too late too
		}
		if err := w.wholeRow(ls, b, int(tids[k]), t, keep); err != nil {
			return true, err
		}
	}
	return true, ev.flush(&w.tally)
}

// bitPlaces yields the places of the bits set in words, in order, or in
// reverse order when backward.
func bitPlaces(words []uint64, backward bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		if backward {
			for wi := len(words) - 1; wi >= 0; wi-- {
				for m := words[wi]; m != 0; {
					j := 63 - bits.LeadingZeros64(m)
					m &^= 1 << j
					if !yield(wi<<6 | j) {
						return
					}
				}
			}
			return
		}
		for wi, m := range words {
			for ; m != 0; m &= m - 1 {
				if !yield(wi<<6 | bits.TrailingZeros64(m)) {
					return
				}
			}
		}
	}
}
