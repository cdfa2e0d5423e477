package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// rangeSeries accumulates one series of a range aggregation: per step,
// the count of samples in the step's window and what the function needs.
type rangeSeries struct {
	// one holds n and v of a series of one step (an instant query),
	// beside their headers, the three in the first 64 bytes: adding a
	// sample to one of many series is one cache miss, not two.
	one    [2]float64
	n      []float64     // samples in each window
	v      []float64     // sum, min, max, first or last value, or the mean
	labels record.Labels // nil: those its key says (labelChunks.of)
	// What only some functions keep (nil for the others): a series of
	// a sum or a count is 128 bytes, not 192, and a query of a million
	// series writes (and faults in) 64 MB less.
	*seriesMore
	key string // its key in the series table (seriesTable.add)
	// The size a multiple of 64, so that in seriesAlloc's chunks (whose
	// size classes are multiples of 64) every series starts a cache
	// line. The collector scans none of it: no pointer follows.
	_ [16]byte
}

// seriesMore is the state of a range series that only some functions
// keep.
type seriesMore struct {
	t     []int64     // first_ and last_over_time: the value's time
	m2    []float64   // stddev_ and stdvar_over_time (Welford)
	lists [][]tv      // rate_counter: every sample
	vals  [][]float64 // quantile_over_time: every sample's value
}

// tv is one sample of a window.
type tv struct {
	t int64
	v float64
}

// rangeWorker is one worker's state in a range aggregation.
type rangeWorker struct {
	pipe *stage.Pipeline
	// colPipe is the columnar path's pipeline: pipe's stages after its
	// leading line filters (lead_filters.go), which select a block's
	// rows (lead) before their values are read. Without them, pipe.
	colPipe *stage.Pipeline
	lead    *rowSelection
	post    *stage.Pipeline // the label filters after unwrap
	lb      *stage.Labels
	tally   tally
	series  seriesTable
	key     []byte
	// touched keeps the loads of flushKeys' touches of slots and
	// series, which only warm the cache, from being optimized away.
	touched uint64

	alloc    seriesAlloc
	x        *logql.RangeAggregation
	mergedBy *logql.Grouping // rangeHints.mergedBy
	op       rangeOp
	shape    *matrix
	rng, off int64
	win      windowCache  // windowsAt's last answer
	cols     *colPlanner  // the columnar path's state (range_columns.go)
	lines    *lineEval    // the lean path of a line parser (range_lines.go); nil: not taken
	lens     []int32      // a block's lines' lengths (selectedRows)
	measures bool         // the samples are the lines' lengths
	run      onesRun      // the stream's rows found by the store (counted)
	keyLines *keyLines    // the rows a quiet logfmt parser may read a label from (logfmt_after.go); nil: none
	meta     *metaCounter // metaCount's (range_meta.go)
	// by, when the row's series are grouped by labels (by (...), not
	// without), are the names its key keeps, sorted: seriesOf finds a
	// known series by looking them up (byKey), without reducing the
	// labels and sorting them. byOn says they are set.
	by   []string
	byOn bool
	// distinct: the query counts the distinct series at one step, so
	// that rows counted by key alone mark their keys (series.marks)
	// rather than find their series (flushKeys).
	distinct bool
	plans    *planShare // the engine's plans of templates (colPlanner.share)
	// batched: the key batch holds samples whose order counts (of
	// unwrap): add flushes it before adding another (flushKeys).
	batched bool
	// noFlat: the worker's states are series from now on (flatKeys).
	noFlat bool
	// probe: the worker is a log query's probe (log_sweep.go), whose
	// rows pass with a pipeline error as without: the log query keeps
	// them, with their error labels.
	probe bool
	_     workerPad
}

// workerPad pads the state a worker writes row by row (rangeWorker,
// lineEval) past 512 bytes, where every size class of the allocator is a
// multiple of 64: so that no cache line holds the end of one worker's
// state and the start of another's. At 472 bytes (the 480 class) the
// next worker's tally, counted at every row, shared a line with this
// one's batched, read at every add: 7% of a sum by method's profile.
type workerPad [128]byte

// row runs one row through the pipeline and adds its sample. r, when
// given, is the stored row, whose structured metadata are labels.
func (w *rangeWorker) row(ev *evaluator, ls record.Labels, t int64, line []byte, r *rows.Row, names []string) error {
	s, v, err := w.rowSeries(ls, t, line, r, names)
	if s != nil {
		w.add(s, t, v)
	}
	return err
}

// rowSeries runs one row through the pipeline and returns its series and
// value, as row adds them; no series when the pipeline drops it.
func (w *rangeWorker) rowSeries(ls record.Labels, t int64, line []byte, r *rows.Row, names []string) (*rangeSeries, float64, error) {
	w.lb.Reset(ls)
	if r != nil {
		rowMeta(w.lb, r, names)
	}
	line, ok := w.pipe.Process(t, line, w.lb)
	if !ok {
		return nil, 0, nil
	}
	return w.sampleSeries(t, line)
}

// sample adds the sample of a row the pipeline kept, whose labels are in
// w.lb.
func (w *rangeWorker) sample(t int64, line []byte) error {
	s, v, err := w.sampleSeries(t, line)
	if s != nil {
		w.add(s, t, v)
	}
	return err
}

// counted adds a stored row of stream ls at time t that the store found
// to hold the line filters' literals, and gave without its line: a
// count's sample of 1 (opSum), added with the rows before it whose
// windows are the same (onesRun: a row of a window of an hour over
// minute steps counts in sixty).
func (w *rangeWorker) counted(ls record.Labels, t int64) error {
	if w.run.s == nil {
		w.lb.Reset(ls)
		s, err := w.seriesOf()
		if err != nil || s == nil {
			return err
		}
		w.run.s = s
	}
	w.one(&w.run, t)
	return nil
}

// sampleSeries returns the series and value of a row the pipeline kept,
// whose labels are in w.lb; no series when unwrap leaves the row out.
func (w *rangeWorker) sampleSeries(t int64, line []byte) (*rangeSeries, float64, error) {
	x, unwrap := w.x, w.x.Range.Unwrap
	v := 1.0
	switch {
	case unwrap != nil:
		var ok bool
		if v, ok = w.unwrap(unwrap, t, line); !ok {
			return nil, 0, nil
		}
	case measuresLines(x.Op):
		v = float64(len(line))
	}
	s, err := w.seriesOf()
	return s, v, err
}

// seriesOf returns the series of the labels in w.lb, grouped.
func (w *rangeWorker) seriesOf() (*rangeSeries, error) {
	if w.lb.HasError() && !w.probe {
		return nil, pipelineError(w.lb)
	}
	n := 0
	if w.byOn {
		// The key of the labels once grouped, without grouping them
		// (a new series groups them only to copy them).
		n = w.byKey()
	} else {
		group(w.lb, w.x.Grouping)
		group(w.lb, w.mergedBy)
		w.key = w.lb.AppendKey(w.key[:0])
		n = len(w.lb.Current())
	}
	s := w.series.get(w.key)
	if s == nil {
		s = w.alloc.series(nil, w.op, w.shape.steps)
		k := w.series.add(w.key, s)
		if !keyHolds(k, n) {
			// A value holds the separator: the series keeps its labels.
			if w.byOn {
				group(w.lb, w.x.Grouping)
				group(w.lb, w.mergedBy)
			}
			s.labels = w.lb.Copy()
		}
		w.tally.held += s.size(len(w.key))
	}
	return s, nil
}

// byKey writes into w.key the key AppendKey gives the labels in w.lb
// once grouped by w.by (those of its names that are set, in name order),
// and returns how many labels it holds.
func (w *rangeWorker) byKey() int {
	w.key = w.key[:0]
	n := 0
	for _, name := range w.by {
		if v, ok := w.lb.Lookup(name); ok {
			w.key = append(w.key, name...)
			w.key = append(w.key, 0xff)
			w.key = append(w.key, v...)
			w.key = append(w.key, 0xff)
			n++
		}
	}
	return n
}

// groupedBy returns the names grouping by g1 then by g2 keeps, sorted,
// and whether both group by names (or not at all, but not both).
func groupedBy(g1, g2 *logql.Grouping) ([]string, bool) {
	var by []string
	switch {
	case g1 == nil && g2 == nil, g1 != nil && g1.Without, g2 != nil && g2.Without:
		return nil, false
	case g1 == nil:
		by = slices.Clone(g2.Labels)
	case g2 == nil:
		by = slices.Clone(g1.Labels)
	default:
		for _, n := range g1.Labels {
			if slices.Contains(g2.Labels, n) {
				by = append(by, n)
			}
		}
	}
	slices.Sort(by)
	return slices.Compact(by), true
}

// add adds a sample at time t to the windows of s that hold it.
func (w *rangeWorker) add(s *rangeSeries, t int64, v float64) {
	if w.batched {
		w.flushKeys()
	}
	lo, hi := w.windows(t)
	for k := lo; k <= hi; k++ {
		s.add(w.op, int(k), t, v)
	}
	switch {
	case hi < lo:
	case w.op == opList:
		w.tally.held += 16 * (hi - lo + 1) // a sample kept in each window
	case w.op == opValues:
		w.tally.held += 8 * (hi - lo + 1) // a value kept in each window
	}
}

// rangeOp describes how a range function accumulates.
type rangeOp uint8

const (
	opSum rangeOp = iota // count, bytes, sum, rate
	opMin
	opMax
	opFirst
	opLast
	opAvg
	opVar    // stddev, stdvar
	opList   // rate_counter: every sample, with its time
	opValues // quantile: every sample's value, in any order
)

var rangeOps = map[string]rangeOp{
	"count_over_time": opSum, "rate": opSum, "bytes_over_time": opSum, "bytes_rate": opSum,
	"absent_over_time": opSum, "sum_over_time": opSum, "min_over_time": opMin, "max_over_time": opMax,
	"first_over_time": opFirst, "last_over_time": opLast, "avg_over_time": opAvg,
	"stddev_over_time": opVar, "stdvar_over_time": opVar, "quantile_over_time": opValues, "rate_counter": opList,
}

// rangeAggregation evaluates a range function at the steps of shape.
func (ev *evaluator) rangeAggregation(ctx context.Context, x *logql.RangeAggregation, shape *matrix, ordered bool) (*matrix, error) {
	merged, err := ev.states(ctx, x, shape, false)
	if err != nil {
		return nil, err
	}
	m := rangeMatrix(x, shape, merged, ordered)
	if h := ev.hintsOf(x); h.mergedBy != nil {
		m.mergedBy, m.mergeOp = h.mergedBy.Labels, h.mergeOp
	}
	return m, nil
}

// states returns the series states of x: the parts' merged ones in
// Partial.Finish, else rangeStates'.
func (ev *evaluator) states(ctx context.Context, x *logql.RangeAggregation, shape *matrix, distinct bool) (*seriesTable, error) {
	if merged, ok := ev.merged[x]; ok {
		return merged, nil
	}
	return ev.rangeStates(ctx, x, shape, distinct)
}

// preselectK reports whether an instant topk or bottomk (x) over every
// series of a range aggregation can take the k series it keeps from the
// aggregation's states, making no other (rangeAggregationK); and
// returns that aggregation. It can when x has no grouping and its
// operand is the range aggregation, or the aggregation by the labels
// its rows were merged by as they were read (which leaves it as it is).
// The reference engine never does.
func (ev *evaluator) preselectK(x *logql.VectorAggregation, shape *matrix) (*logql.RangeAggregation, bool) {
	if ev.e.reference || shape.steps != 1 || x.Op != "topk" && x.Op != "bottomk" || x.Grouping != nil || x.Param < 1 || x.Param > maxPreselectK {
		return nil, false
	}
	return ev.allStates(x)
}

// allStates returns the range aggregation whose states an instant
// aggregation x over all its operand's series (no grouping) may read as
// they are: its operand, or what its operand aggregates by the labels
// the aggregation's rows were merged by as they were read.
func (ev *evaluator) allStates(x *logql.VectorAggregation) (*logql.RangeAggregation, bool) {
	switch e := x.Expr.(type) {
	case *logql.RangeAggregation:
		return e, e.Op != "absent_over_time"
	case *logql.VectorAggregation:
		ra, ok := e.Expr.(*logql.RangeAggregation)
		return ra, ok && ev.hintsOf(ra).mergedAs(e.Op, e.Grouping) && ra.Op != "absent_over_time"
	}
	return nil, false
}

// maxPreselectK bounds the k of a preselected topk: its candidates are
// kept in order by insertion.
const maxPreselectK = 64

// rangeAggregationK is rangeAggregation at one step for an instant topk
// (top) or bottomk of k over all its series: of the states, only the k
// series that aggregateK keeps are made into the matrix, chosen as it
// chooses them (by value, NaN last, then by labels, which are made only
// for a tie). A high-cardinality topk (a series per user) made hundreds
// of thousands of series, their labels and values, to keep five.
func (ev *evaluator) rangeAggregationK(ctx context.Context, x *logql.RangeAggregation, shape *matrix, k int, top bool) (*matrix, error) {
	merged, err := ev.states(ctx, x, shape, false)
	if err != nil {
		return nil, err
	}
	rng := int64(x.Range.Interval)
	var chunks labelChunks
	best := make([]rankedSeries, 0, k)
	keyOf := func(c *rankedSeries) string {
		if c.flat != nil && c.key == "" {
			c.key = c.flat.key(c.flat.keys[c.at])
		}
		return c.key
	}
	labelsOf := func(c *rankedSeries) record.Labels {
		if c.labels == nil {
			c.labels = chunks.of(keyOf(c), c.rs)
		}
		return c.labels
	}
	// compare orders a before b as compareRanked does. A tie is broken
	// on the keys, whose labels are made only for a series kept.
	ties := 0
	compare := func(a, b rankedSeries) int {
		if c := compareValues(a.v, b.v, top); c != 0 {
			return c
		}
		ties++
		if a.rs.labels == nil && b.rs.labels == nil {
			if c, ok := compareKeys(keyOf(&a), keyOf(&b)); ok {
				return c
			}
		}
		return compareLabels(labelsOf(&a), labelsOf(&b))
	}
	if f := merged.flat; f != nil && merged.used == 0 {
		// The states in the flat table: a candidate is a state's
		// value and place, its key looked up only for a tie or when
		// kept (a key of each state was a miss each: 19% of a top 5 of
		// 3.3M), and its series one without labels of its own.
		plain := &rangeSeries{}
		for sl, v := range f.values(x, rng) {
			best, _ = keepBest(best, k, rankedSeries{rs: plain, v: v, flat: f, at: sl.key}, compare)
			if ties > maxKeyTies {
				best = flatBestTied(f, x, rng, k, top)
				break
			}
		}
	} else {
		merged.each(func(key string, rs *rangeSeries) {
			if v, ok := rs.instant(x, rng); ok {
				best, _ = keepBest(best, k, rankedSeries{key: key, rs: rs, v: v}, compare)
			}
		})
	}
	out := shape.like()
	for i := range best {
		out.add(labelsOf(&best[i])).set(0, best[i].v)
	}
	if merged.flat != nil {
		merged.flat.release() // the labels kept view its chunks, which stay
	}
	out.sortSeries()
	if h := ev.hintsOf(x); h.mergedBy != nil {
		out.mergedBy, out.mergeOp = h.mergedBy.Labels, h.mergeOp
	}
	return out, nil
}

// maxKeyTies is how many ties rangeAggregationK breaks on the keys of a
// flat table's states, each a miss or two in its arrays, before it takes
// flatBestTied instead: in a count of lines by pod name, each pod its
// own, every state ties (1.25 s for the top 5 of 2M).
const maxKeyTies = 4096

// flatBestTied returns the k states of flat table f that rank best by
// their value at the one step, then by their labels, as
// rangeAggregationK's loop does, for states many of which tie: the k-th
// best value is found first on the values alone; the states that rank
// better are all kept, and the rest are the tied ones whose labels come
// first, their keys read in the order they came (one pass over the key
// chunks) rather than in the slots' order.
func flatBestTied(f *flatTable, x *logql.RangeAggregation, rng int64, k int, top bool) []rankedSeries {
	// The k best values, best first.
	vals := make([]float64, 0, k)
	byValue := func(a, b float64) int { return compareValues(a, b, top) }
	for _, v := range f.values(x, rng) {
		vals, _ = keepBest(vals, k, v, byValue)
	}
	if len(vals) == 0 {
		return nil
	}
	kth := vals[len(vals)-1]
	var best []rankedSeries
	// A state's series: no labels of its own. tied: by the keys' places.
	plain := &rangeSeries{}
	tied := make([]uint64, (len(f.keys)+63)/64)
	for sl, v := range f.values(x, rng) {
		switch compareValues(v, kth, top) {
		case -1:
			best = append(best, rankedSeries{rs: plain, v: v, flat: f, at: sl.key})
		case 0:
			tied[sl.key/64] |= 1 << (sl.key % 64)
		}
	}
	// The tied states whose keys come first, in the order of their keys.
	need := len(vals) - len(best)
	keys := make([]rankedSeries, 0, need)
	byKey := func(a, b rankedSeries) int { c, _ := compareKeys(a.key, b.key); return c }
	for w, word := range tied {
		for ; word != 0; word &= word - 1 {
			at := uint32(w*64 + bits.TrailingZeros64(word))
			keys, _ = keepBest(keys, need, rankedSeries{rs: plain, v: kth, key: f.key(f.keys[at]), flat: f, at: at}, byKey)
		}
	}
	return append(best, keys...)
}

// foldAll reports whether an instant sum, max or min over all the series
// of a range aggregation (x) can be taken from the aggregation's states,
// making no series nor labels (rangeFold); and returns that
// aggregation. The reference engine never does.
func (ev *evaluator) foldAll(x *logql.VectorAggregation, shape *matrix) (*logql.RangeAggregation, bool) {
	if ev.e.reference || shape.steps != 1 || x.Op != "sum" && x.Op != "max" && x.Op != "min" || x.Grouping != nil && (x.Grouping.Without || len(x.Grouping.Labels) > 0) {
		return nil, false
	}
	return ev.allStates(x)
}

// rangeFold is the sum (exactSum), the largest (max) or the smallest
// value of the series of x at the one step of shape, as aggregateValues
// gives it, read from their states: a maximum over 3.3M users' sums made
// a series and labels for each (1.3 of its 2.1 s).
func (ev *evaluator) rangeFold(ctx context.Context, x *logql.RangeAggregation, shape *matrix, op string) (*matrix, error) {
	merged, err := ev.states(ctx, x, shape, false)
	if err != nil {
		return nil, err
	}
	rng := int64(x.Range.Interval)
	// each calls add with the value of each series that has one.
	each := func(add func(float64)) {
		if f := merged.flat; f != nil && merged.used == 0 {
			for _, v := range f.values(x, rng) {
				add(v)
			}
			return
		}
		merged.each(func(_ string, rs *rangeSeries) {
			if v, ok := rs.instant(x, rng); ok {
				add(v)
			}
		})
	}
	var m float64
	seen := false
	if op == "sum" {
		m = sumOf(func(add func(float64)) {
			each(func(v float64) { add(v); seen = true })
		})
	} else {
		each(func(v float64) {
			switch {
			case !seen:
				m, seen = v, true
			case op == "max":
				m = maxStep(m, v)
			default:
				m = minStep(m, v)
			}
		})
	}
	if merged.flat != nil {
		merged.flat.release()
	}
	out := shape.like()
	if seen {
		out.add(record.Labels{}).set(0, m)
	}
	return out, nil
}

// rankedSeries is a candidate of rangeAggregationK: a series' key, state,
// value at the step, and labels once made.
type rankedSeries struct {
	key    string
	rs     *rangeSeries
	v      float64
	labels record.Labels
	// flat, when not nil, holds the key, at its place at in flat.keys.
	flat *flatTable
	at   uint32
}

// rangeStates reads the samples of a range function at the steps of
// shape: its series' accumulated states, by their labels' key.
//
// distinct says that only the number of series with a value at the one
// step of shape is wanted (countSeries): rows may then leave their
// series' keys in the table's marks instead of series.
func (ev *evaluator) rangeStates(ctx context.Context, x *logql.RangeAggregation, shape *matrix, distinct bool) (*seriesTable, error) {
	op, ok := rangeOps[x.Op]
	if !ok {
		return nil, fmt.Errorf("%w: unknown range aggregation %s", ErrBadRequest, x.Op)
	}
	rng, off := int64(x.Range.Interval), int64(x.Range.Offset)
	if rng <= 0 {
		return nil, fmt.Errorf("%w: the range of %s must be positive", ErrBadRequest, x.Op)
	}
	first, last := shape.start, shape.time(shape.steps-1)
	from, to := first-off-rng+1, last-off // windows are (t-range, t]
	unwrap := x.Range.Unwrap
	hints := ev.hintsOf(x)
	if ps, ok := withoutQuietParsers(x.Range.Log.Pipeline, hints.observed); ok && unwrap == nil {
		r := *x.Range
		r.Log = &logql.LogExpr{Selector: x.Range.Log.Selector, Pipeline: ps}
		y := *x
		y.Range = &r
		x = &y
	}
	streams := ev.streams(x.Range.Log.Selector, from, to)
	opts := ev.pruning(x.Range.Log.Pipeline)
	opts.LinesOnly = true // the stages parse lines
	opts.Meta = true      // a row's structured metadata are among its labels
	// A count whose pipeline is only literal filters the store applies
	// exactly needs no line: the stored rows come without.
	opts.NoLines = !ev.e.reference && unwrap == nil && countsRows(x.Op) && literalsOnly(x.Range.Log.Pipeline)
	implied := ev.impliedOptions(opts, x.Range.Log.Pipeline)
	columnar := !ev.e.reference && columnarPipeline(x, hints.observed)
	// The lengths of the lines of streams, perhaps of those the leading
	// line filters keep, are measured in their columns; a count of the
	// rows those filters keep, !=, !~ or !> among them, is a count of the
	// rows selected (selectedRows). With positive filters alone the
	// store counts (NoLines) the rows of a block that fall in the same
	// windows, and yields the others one by one: over steps, which
	// split blocks, the rows are selected instead (a count by service
	// of `|= "timeout"` in 10 s steps: 69-73 ms of CPU yielded, 44 selected).
	onlyLead := leadingFilters(x.Range.Log.Pipeline, true).n == len(x.Range.Log.Pipeline)
	selected := !ev.e.reference && unwrap == nil && onlyLead &&
		(measuresLines(x.Op) || countsRows(x.Op) && len(x.Range.Log.Pipeline) > 0 && (!opts.NoLines || shape.steps > 1))
	setup := func() (*rangeWorker, error) {
		pipe, err := stage.CompileObserving(x.Range.Log.Pipeline, hints.observed)
		if err != nil {
			return nil, err
		}
		w := &rangeWorker{pipe: pipe, lb: &stage.Labels{}, plans: &ev.e.plans,
			x: x, mergedBy: hints.mergedBy, op: op, shape: shape, rng: rng, off: off, distinct: distinct && shape.steps == 1}
		if !ev.e.reference {
			w.by, w.byOn = groupedBy(x.Grouping, hints.mergedBy)
		}
		if unwrap != nil {
			if w.post, err = stage.CompileFilters(unwrap.Filters); err != nil {
				return nil, err
			}
		}
		if !ev.e.reference {
			if w.lines, err = newLineEval(w); err != nil {
				return nil, err
			}
		}
		w.colPipe = pipe
		w.measures = measuresLines(x.Op)
		if !columnar && !selected {
			return w, nil
		}
		if columnar {
			w.keyLines, _ = logfmtKeys(x.Range.Log.Pipeline, hints.observed)
		}
		if lf := leadingFilters(x.Range.Log.Pipeline, true); lf.n > 0 {
			w.lead = &rowSelection{lf: lf}
			if !columnar {
				return w, nil
			}
			if w.colPipe, err = stage.CompileObserving(x.Range.Log.Pipeline[lf.n:], hints.observed); err != nil {
				return nil, err
			}
		}
		return w, nil
	}
	// A count of every row of the streams: over steps it reads their
	// rows' times only (a block whose rows all count in the same windows,
	// not even those); at one instant the parts' index counts them.
	countsAll := !ev.e.reference && unwrap == nil && countsRows(x.Op) && len(x.Range.Log.Pipeline) == 0
	timesOnly := countsAll && shape.steps > 1
	// Shares of a stream merge as streams do, but for first and last
	// (rows of the same time in two shares: which one is first?) and the
	// lists of samples, whose order among equal times would change (a
	// quantile's values have no order).
	counter, _ := ev.src.(indexCounter)
	units := ev.shardStreams(streams, op != opFirst && op != opLast && op != opList)
	workers, err := forUnits(ctx, ev, units, func(u streamShard) bool { return u.shard.I == 0 }, setup, func(ctx context.Context, w *rangeWorker, u streamShard) error {
		ls := u.st.Labels
		row := func(r *rows.Row, names []string) error {
			if err := ev.scanned(&w.tally, r.Line); err != nil {
				return err
			}
			if r.Line == nil { // a stored row the store found to hold the literals
				return w.counted(ls, r.Time)
			}
			if w.lines != nil && w.lines.takes(r) {
				return w.lines.row(ev, w, ls, r.Time, r.Line)
			}
			return w.row(ev, ls, r.Time, r.Line, r, names)
		}
		if w.lines != nil {
			w.lines.startStream(ls)
		}
		var err error
		if columnar {
			w.startColumns(ls)
		}
		if countsAll && !timesOnly && counter != nil {
			// At one instant, most streams' counts are in the index.
			if n, ok := counter.CountIndexed(ev.p.Tenant, u.st.Key, from, to, u.shard); ok {
				return w.countRows(ev, ls, to, n)
			}
		}
		switch {
		case countsAll && hints.observed.Beyond(ls):
			// Labels the stream has not (or every label) are asked: its
			// rows' metadata may have them.
			err = ev.src.ScanColumns(ctx, ev.p.Tenant, u.st, from, to, u.shard, store.NewestFirst, func(b *part.Block) error {
				return w.metaCount(ev, ls, b, from, to)
			}, metaCountable, row)
		case timesOnly:
			err = ev.src.ScanColumns(ctx, ev.p.Tenant, u.st, from, to, u.shard, store.NewestFirst, func(b *part.Block) error {
				return w.countTimes(ev, ls, b, from, to)
			}, metaUnseen(hints.observed), row)
		case columnar:
			err = ev.src.ScanColumns(ctx, ev.p.Tenant, u.st, from, to, u.shard, store.NewestFirst, func(b *part.Block) error {
				return w.block(ev, ls, b, from, to)
			}, metaUnseen(hints.observed), row)
		case selected:
			err = ev.src.ScanColumns(ctx, ev.p.Tenant, u.st, from, to, u.shard, store.NewestFirst, func(b *part.Block) error {
				return w.selectedRows(ev, ls, b, from, to)
			}, metaUnseen(hints.observed), row)
		case w.lines != nil && w.lines.on && unpruned(implied.of(ls)):
			err = ev.src.ScanColumns(ctx, ev.p.Tenant, u.st, from, to, u.shard, store.NewestFirst, func(b *part.Block) error {
				return w.lines.block(ev, w, ls, b, from, to)
			}, metaUnseen(hints.observed), row)
		default:
			o := implied.of(ls)
			o.MetaOK = metaUnseen(hints.observed)
			o.CountAll = countsAll
			if o.NoLines || o.CountAll {
				// A block whose rows all count in the same windows is
				// counted by the store, its rows never yielded.
				o.BlockCount = func(lo, hi int64) func(int) error {
					if lo < from || hi > to || !w.sameWindows(lo, hi) {
						return nil
					}
					return func(n int) error { return w.countRows(ev, ls, lo, n) }
				}
			}
			o.Shard = u.shard
			err = ev.src.Scan(ctx, ev.p.Tenant, u.st, from, to, o, row)
		}
		w.flushOnes(&w.run)
		w.run.s = nil // the next unit's stream is another
		if ferr := ev.flush(&w.tally); err == nil {
			err = ferr
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(workers) == 0 {
		return &seriesTable{}, nil
	}
	merged := &workers[0].series
	for i, w := range workers[1:] {
		merged.marks.union(&w.series.marks)
		merged.union(&w.series, func(m, s *rangeSeries) { m.merge(op, s) }, i == len(workers)-2)
	}
	// Its readers take its series in order: its slots can serve the
	// next query.
	merged.seal()
	return merged, nil
}

// metaUnseen returns the store.MetaFunc of a range aggregation that
// observes the labels o: it takes a block whose rows may have structured
// metadata when o sees none of the names the metadata may have
// (stage.Observed.Sees), for then the rows' answers are what they would
// be without it (read columnar, or as lines alone, or counted from the
// index). nil (no block) when o is nil: every label counts.
func metaUnseen(o *stage.Observed) store.MetaFunc {
	if o == nil {
		return nil
	}
	return func(b *part.Block) bool {
		for _, c := range b.MetaColumns() {
			if o.Sees(b.Names[c]) {
				return false
			}
		}
		return true
	}
}

// seriesCount reports whether x, a vector aggregation, is a count of
// the series of a range aggregation ra, without grouping: `count(ra)`,
// or `count(sum by (g) (ra))` (or max, min) and `count(count by (g)
// (ra))` where ra groups its rows by g as they are read
// (rangeHints.mergedBy), so that each of its series is one group of the
// inner aggregation, which has a value
// at a step exactly when the series has. Then the answer at a step is
// how many of ra's series have a value at it: countSeries, without the
// labels and matrices of every series (the distinct users of a day, a
// million of them, counted).
func (ev *evaluator) seriesCount(x *logql.VectorAggregation) (*logql.RangeAggregation, bool) {
	if ev.e.reference || x.Op != "count" || x.Grouping != nil && (x.Grouping.Without || len(x.Grouping.Labels) > 0) {
		return nil, false
	}
	var ra *logql.RangeAggregation
	switch in := x.Expr.(type) {
	case *logql.RangeAggregation:
		ra = in
	case *logql.VectorAggregation:
		r, ok := in.Expr.(*logql.RangeAggregation)
		if !ok || in.Grouping == nil {
			return nil, false
		}
		// An inner count is countOfGroups' (merged as a sum).
		if h := ev.hintsOf(r); !h.mergedAs(in.Op, in.Grouping) && !(in.Op == "count" && h.mergedAs("sum", in.Grouping)) {
			return nil, false
		}
		ra = r
	default:
		return nil, false
	}
	return ra, ra.Op != "absent_over_time"
}

// countSeries is the count of the series of x with a value, per step of
// shape: what rangeMatrix and two aggregations give for seriesCount's
// forms, one series without labels (none when x has no series).
func (ev *evaluator) countSeries(ctx context.Context, x *logql.RangeAggregation, shape *matrix) (*matrix, error) {
	merged, err := ev.states(ctx, x, shape, true)
	if err != nil {
		return nil, err
	}
	rng := int64(x.Range.Interval)
	counts := make([]float64, shape.steps)
	if merged.marks.used > 0 {
		// Rows were counted by key alone (one step): the series with a
		// value join their keys, and the count is of the keys.
		marks := &merged.marks
		merged.each(func(k string, rs *rangeSeries) {
			if _, ok := rs.instant(x, rng); ok {
				marks.add(merged.hashString(k))
			}
		})
		counts[0] = float64(marks.used)
		marks.release() // read no more
		return countsMatrix(shape, counts), nil
	}
	for _, rs := range merged.all() {
		for i, n := range rs.n {
			if n == 0 {
				continue
			}
			if _, ok := rs.result(x, i, n, rng); ok {
				counts[i]++
			}
		}
	}
	return countsMatrix(shape, counts), nil
}

// countsMatrix is one series without labels with counts' values at the
// steps of shape, those not 0 (none when all are).
func countsMatrix(shape *matrix, counts []float64) *matrix {
	out := shape.like()
	var s *series
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if s == nil {
			s = out.add(record.Labels{})
		}
		s.set(i, c)
	}
	return out
}

// rangeMatrix is a range function's value at the steps of shape, from
// its series' accumulated states.
func rangeMatrix(x *logql.RangeAggregation, shape *matrix, merged *seriesTable, ordered bool) *matrix {
	rng := int64(x.Range.Interval)
	out := shape.like()
	if x.Op == "absent_over_time" {
		return absent(out, merged, x.Range.Log.Selector)
	}
	var labels labelChunks
	merged.each(func(k string, rs *rangeSeries) { // sortSeries orders them, if they must be
		s := out.add(labels.of(k, rs))
		for i, n := range rs.n {
			if n == 0 {
				continue
			}
			if v, ok := rs.result(x, i, n, rng); ok {
				s.set(i, v)
			}
		}
	})
	if ordered {
		out.sortSeries()
	}
	return out
}

// countRows adds n rows of stream ls that the store counted (they hold
// the literals, and all count in the windows of time t).
func (w *rangeWorker) countRows(ev *evaluator, ls record.Labels, t int64, n int) error {
	if n == 0 {
		return nil
	}
	w.tally.rows += int64(n)
	w.lb.Reset(ls)
	s, _, err := w.sampleSeries(t, nil)
	if err != nil {
		return err
	}
	if s != nil {
		w.addN(s, t, n)
	}
	return ev.flush(&w.tally)
}

// countTimes counts the rows of a stored block of stream ls in [from,
// to] in the windows their times fall in, reading nothing but the times
// (and those only when the rows do not all count in the same windows).
func (w *rangeWorker) countTimes(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) error {
	lo, hi := b.TimeRange()
	if lo >= from && hi <= to && w.sameWindows(lo, hi) {
		return w.countRows(ev, ls, hi, b.NumRows())
	}
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	w.lb.Reset(ls)
	s, _, err := w.sampleSeries(hi, nil)
	if err != nil || s == nil {
		return err
	}
	if w.op != opSum {
		for k := range b.NumRows() {
			if t := b.RowTime(k); t >= from && t <= to {
				w.tally.rows++
				w.add(s, t, 1)
			}
		}
		return ev.flush(&w.tally)
	}
	w.timeRuns(b, from, to, func(k, j int, lo, hi int64) {
		s.addCount(lo, hi, j-k)
		w.tally.rows += int64(j - k)
	})
	return ev.flush(&w.tally)
}

// timeRuns calls run for each run [k, j) of a stored block's rows in
// [from, to] whose times fall in the same windows, lo to hi, in time
// order. The rows come in time order, and a run's end is found by a
// galloping search (a 10 s step over a block of two minutes is a dozen
// runs of hundreds of rows), so that a count by windows costs a few
// looks a run rather than one a row.
func (w *rangeWorker) timeRuns(b *part.Block, from, to int64, run func(k, j int, lo, hi int64)) {
	n := b.NumRows()
	k := sort.Search(n, func(k int) bool { return b.RowTime(k) >= from })
	end := k + sort.Search(n-k, func(i int) bool { return b.RowTime(k+i) > to })
	for k < end {
		lo, hi := w.windows(b.RowTime(k))
		j := runEnd(k, end, func(j int) bool { return b.RowTime(j)+w.off <= w.win.to })
		run(k, j, lo, hi)
		k = j
	}
}

// runEnd returns the first j in (k, end] at which in(j) fails (end if
// none does), for an in that holds from k up to some point and fails
// from there on: a galloping search, in about twice the logarithm of
// the run's length, so that runs of a row or two cost as little as a
// look at each.
func runEnd(k, end int, in func(int) bool) int {
	step := 1
	for k+step < end && in(k+step) {
		k += step
		step *= 2
	}
	// in(k) holds; the end is in (k, min(k+step, end)].
	hi := min(k+step, end)
	return k + 1 + sort.Search(hi-k-1, func(i int) bool { return !in(k + 1 + i) })
}

// selectedRows adds the rows of a stored block of stream ls in [from,
// to] that the leading line filters keep (all, without): counted, or
// with measures each its line's length, measured in its columns
// (part.Block.LineLengths). No line is rebuilt.
func (w *rangeWorker) selectedRows(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) error {
	sel, some, err := w.lead.of(b)
	if err != nil || !some {
		return err
	}
	if w.measures {
		w.lens, err = b.LineLengths(sel, w.lens)
	} else {
		err = b.DecodeTimes()
	}
	if err != nil {
		return err
	}
	var s *rangeSeries // the stream's, made at its first row kept
	series := func() error {
		if s == nil {
			w.lb.Reset(ls)
			s, _, err = w.sampleSeries(from, nil)
		}
		return err
	}
	// sample adds n rows at time t, of lines of sum bytes.
	sample := func(t int64, n, sum int) {
		if w.measures {
			w.add(s, t, float64(sum)) // integers, which a float64 adds exactly in any order
		} else {
			w.addN(s, t, n)
		}
	}
	kept := func(k int) bool { return sel == nil || sel[k>>6]>>(k&63)&1 != 0 }
	length := func(k int) int {
		if w.measures {
			return int(w.lens[k])
		}
		return 0
	}
	if lo, hi := b.TimeRange(); lo >= from && hi <= to && w.sameWindows(lo, hi) {
		// One sample of them all.
		rows, sum := 0, 0
		switch {
		case w.measures:
			for k := range b.NumRows() {
				if kept(k) {
					rows++
					sum += length(k)
				}
			}
		case sel != nil:
			rows = bitsIn(sel, 0, b.NumRows())
		default:
			rows = b.NumRows()
		}
		if rows > 0 {
			if err := series(); err != nil {
				return err
			}
			if s != nil {
				sample(hi, rows, sum)
			}
		}
		w.tally.rows += int64(rows)
		w.tally.columnar += int64(rows)
		return ev.flush(&w.tally)
	}
	if !w.measures {
		// A count: each run of rows in the same windows counted at
		// once, its rows kept by a popcount of sel.
		var err error
		w.timeRuns(b, from, to, func(k, j int, lo, hi int64) {
			c := j - k
			if sel != nil {
				c = bitsIn(sel, k, j)
			}
			if c == 0 || err != nil {
				return
			}
			if err = series(); err == nil && s != nil { // no series: the stream's labels give none
				s.addCount(lo, hi, c)
				w.tally.rows += int64(c)
				w.tally.columnar += int64(c)
			}
		})
		if err != nil {
			return err
		}
		return ev.flush(&w.tally)
	}
	for k := range b.NumRows() {
		if t := b.RowTime(k); t >= from && t <= to && kept(k) {
			if err := series(); err != nil {
				return err
			}
			if s == nil {
				return nil // the stream's labels give no series
			}
			w.tally.rows++
			w.tally.columnar++
			sample(t, 1, length(k))
		}
	}
	return ev.flush(&w.tally)
}

// bitsIn returns how many of bits lo to hi-1 of bs are set.
func bitsIn(bs []uint64, lo, hi int) int {
	if lo >= hi {
		return 0
	}
	first, last := lo>>6, (hi-1)>>6
	lm, hm := ^uint64(0)<<(lo&63), ^uint64(0)>>(63-(hi-1)&63)
	if first == last {
		return bits.OnesCount64(bs[first] & lm & hm)
	}
	n := bits.OnesCount64(bs[first]&lm) + bits.OnesCount64(bs[last]&hm)
	for _, w := range bs[first+1 : last] {
		n += bits.OnesCount64(w)
	}
	return n
}

// unwrap reads the unwrapped label's value as the sample and removes the
// label; a value that does not convert sets SampleExtractionErr. The
// filters after unwrap then decide whether the row counts.
func (w *rangeWorker) unwrap(u *logql.Unwrap, ts int64, line []byte) (float64, bool) {
	raw := w.lb.Take(u.Label) // the label is no label of the sample
	if raw == "" {
		return 0, false // as Loki: a row without the label is no sample, not an error
	}
	v, err := convert(u.Conv, raw)
	if err != nil {
		w.lb.ReplaceError(errSampleConv, err.Error())
	}
	if _, ok := w.post.Process(ts, line, w.lb); !ok {
		return 0, false
	}
	return v, true
}

// convert reads an unwrapped value as unwrap with conversion conv does.
func convert(conv, raw string) (float64, error) {
	switch conv {
	case "duration", "duration_seconds":
		d, err := stage.ParseDuration(raw)
		return d.Seconds(), err
	case "bytes":
		b, err := stage.ParseBytes(raw)
		return float64(b), err
	}
	return stage.ParseNumber(raw)
}

// errSampleConv is the error value of __error__ for an unwrapped value
// that does not convert, as Loki's.
const errSampleConv = "SampleExtractionErr"

// pipelineError is Loki's answer to a metric query whose samples carry a
// pipeline error.
func pipelineError(lb *stage.Labels) error {
	return fmt.Errorf("%w: pipeline error: '%s' for series: '%s'. Use a label filter to intentionally skip this error. (e.g | __error__!=\"%[2]s\"). To skip all potential errors you can match empty errors.(e.g __error__=\"\") The label filter can also be specified after unwrap. (e.g | unwrap latency | __error__=\"\" )",
		ErrBadRequest, lb.Get(stage.ErrorLabel), lb.Copy())
}

// group reduces the labels to a range aggregation's grouping.
func group(lb *stage.Labels, g *logql.Grouping) {
	if g == nil {
		return
	}
	lb.DeleteFunc(func(l record.Label) bool {
		return slices.Contains(g.Labels, l.Name) == g.Without
	})
}

// seriesAlloc hands out a worker's series and their windows from chunks:
// a query with millions of series makes a few hundred allocations for
// them rather than several per series, and the windows, which hold no
// pointers, are not scanned by the collector.
type seriesAlloc struct {
	structs []rangeSeries
	more    []seriesMore
	f64     []float64
	i64     []int64
	// n is the series the next chunk holds: chunks grow from 16 to
	// chunk, so that a query of a few series zeroes little memory.
	n int
}

// grow returns the series the next chunk is for.
func (a *seriesAlloc) grow() int {
	a.n = min(max(2*a.n, 16), chunk)
	return a.n
}

// chunk is how many series or windows a chunk holds at least.
const chunk = 4096

// series returns a new series of labels ls (nil: those its key says)
// for function op over steps windows, keeping only what op needs.
func (a *seriesAlloc) series(ls record.Labels, op rangeOp, steps int) *rangeSeries {
	if len(a.structs) == 0 {
		a.structs = make([]rangeSeries, a.grow())
	}
	s := &a.structs[0]
	a.structs = a.structs[1:]
	if steps == 1 {
		*s = rangeSeries{labels: ls}
		s.n, s.v = s.one[0:1:1], s.one[1:2:2]
	} else {
		*s = rangeSeries{labels: ls, n: a.floats(steps), v: a.floats(steps)}
	}
	if !op.keepsMore() {
		return s
	}
	if len(a.more) == 0 {
		a.more = make([]seriesMore, a.n)
	}
	s.seriesMore, a.more = &a.more[0], a.more[1:]
	switch op {
	case opFirst, opLast:
		if len(a.i64) < steps {
			a.i64 = make([]int64, max(steps, a.n))
		}
		s.t, a.i64 = a.i64[:steps:steps], a.i64[steps:]
	case opVar:
		s.m2 = a.floats(steps)
	case opList:
		s.lists = make([][]tv, steps)
	case opValues:
		s.vals = make([][]float64, steps)
	}
	return s
}

// keepsMore reports whether a series of op keeps a seriesMore.
func (op rangeOp) keepsMore() bool {
	switch op {
	case opFirst, opLast, opVar, opList, opValues:
		return true
	}
	return false
}

// A range series' labels are those its key in the series table says
// (keyHolds), and are made from it only when the series is read
// (labelChunks.of): a count of a million series (countSeries) makes none.
// A series whose key cannot say them (a value holds the separator) has
// them set when it is made.

// keyHolds reports whether key k, of n labels, says them (labelsOfKey).
func keyHolds(k string, n int) bool { return strings.Count(k, "\xff") == 2*n }

// labelChunks hands out the labels of series from chunks, which grow
// from 16 labels to chunk as seriesAlloc's do: an answer of two series
// zeroes two small chunks, not 128 KiB.
type labelChunks struct {
	free record.Labels
	n    int // the size of the last chunk
}

// of returns the labels of series s, whose key in its table is k.
func (c *labelChunks) of(k string, s *rangeSeries) record.Labels {
	if s.labels != nil {
		return s.labels
	}
	n := strings.Count(k, "\xff") / 2
	if len(c.free) < n {
		c.n = min(max(2*c.n, 16), chunk)
		c.free = make(record.Labels, max(n, c.n))
	}
	ls, _ := appendLabelsOfKey(c.free[:0:n], k, n)
	c.free = c.free[n:]
	return ls
}

// floats returns n zeroed floats; their capacity is n, so that nothing
// appends into the next ones.
func (a *seriesAlloc) floats(n int) []float64 {
	if len(a.f64) < n {
		a.f64 = make([]float64, max(n, 4*a.n))
	}
	f := a.f64[:n:n]
	a.f64 = a.f64[n:]
	return f
}

// compareKeys orders two keys of AppendLabelsKey as compareLabels orders
// their labels (labelsOfKey), reading them only up to where they differ.
// REQUIRES: no value of either holds the separator (a series whose does
// keeps its labels, rangeSeries.labels); false for a key cut short.
func compareKeys(a, b string) (int, bool) {
	for len(a) > 0 && len(b) > 0 {
		// A name, then a value, each ended by the separator.
		for range 2 {
			i, j := strings.IndexByte(a, 0xff), strings.IndexByte(b, 0xff)
			if i < 0 || j < 0 {
				return 0, false
			}
			if c := strings.Compare(a[:i], b[:j]); c != 0 {
				return c, true
			}
			a, b = a[i+1:], b[j+1:]
		}
	}
	return len(a) - len(b), true
}

// labelsOfKey returns the n labels a key of AppendLabelsKey holds, their
// strings viewing the key's; false if a value holds the separator 0xff
// (bytes that are no UTF-8), so that the key does not say where it ends.
func labelsOfKey(k string, n int) (record.Labels, bool) {
	return appendLabelsOfKey(make(record.Labels, 0, n), k, n)
}

// appendLabelsOfKey is labelsOfKey appending to ls.
func appendLabelsOfKey(ls record.Labels, k string, n int) (record.Labels, bool) {
	if strings.Count(k, "\xff") != 2*n {
		return nil, false
	}
	for len(k) > 0 {
		i := strings.IndexByte(k, 0xff)
		j := i + 1 + strings.IndexByte(k[i+1:], 0xff)
		ls = append(ls, record.Label{Name: k[:i], Value: k[i+1 : j]})
		k = k[j+1:]
	}
	return ls, true
}

// add adds a sample at time t to window k.
func (s *rangeSeries) add(op rangeOp, k int, t int64, v float64) {
	s.n[k]++
	first := s.n[k] == 1
	switch op {
	case opSum, opAvg, opMin, opMax:
		s.v[k] = addSample(op, s.n[k], s.v[k], v)
	case opFirst:
		if first || t < s.t[k] {
			s.v[k], s.t[k] = v, t
		}
	case opLast:
		if first || t >= s.t[k] {
			s.v[k], s.t[k] = v, t
		}
	case opVar:
		d := v - s.v[k]
		s.v[k] += d / s.n[k]
		s.m2[k] += d * (v - s.v[k])
	case opList:
		s.lists[k] = append(s.lists[k], tv{t, v})
	case opValues:
		s.vals[k] = append(s.vals[k], v)
	}
}

// size estimates the bytes a new series comes to hold, keyed by a key of
// keyLen bytes, until the query answers: its labels (in the key, copied,
// and again in the answer), its windows (here and in the matrix the
// answer is computed in), its map entries and allocation headers. A
// series of one window measured about 600 bytes (2M series of one label:
// a peak RSS of 1.4 GB, 0.2 GB of it the server's own).
func (s *rangeSeries) size(keyLen int) int64 {
	perStep := 2*8 + 2*8 // n, v; the matrix's value and presence
	if m := s.seriesMore; m != nil && (m.t != nil || m.m2 != nil) {
		perStep += 8
	}
	if m := s.seriesMore; m != nil && (m.lists != nil || m.vals != nil) {
		perStep += 24
	}
	return int64(4*keyLen + perStep*len(s.n) + 400)
}

// oneStepSize is size for a new series of one window and no seriesMore:
// what a flat table's state (flatTable) is held to, so that the query's
// budget stops the same queries whether its series are made or not.
func oneStepSize(keyLen int) int64 { return int64(4*keyLen + (2*8 + 2*8) + 400) }

// addSample is the value of a window of op (opSum, opAvg, opMin or
// opMax) that held cur once v is added as its nth sample. A minimum or
// maximum is NaN only when every value is NaN, in any order, as Loki's
// min_over_time and max_over_time give it.
func addSample(op rangeOp, n, cur, v float64) float64 {
	switch op {
	case opSum, opAvg:
		return cur + v
	case opMin:
		if n == 1 || v < cur || math.IsNaN(cur) {
			return v
		}
	case opMax:
		if n == 1 || v > cur || math.IsNaN(cur) {
			return v
		}
	}
	return cur
}

// mergeSamples is the value of two accumulations of a window of op
// (opSum, opAvg, opMin or opMax), cur and o, each of some samples.
func mergeSamples(op rangeOp, cur, o float64) float64 {
	switch op {
	case opSum, opAvg:
		return cur + o
	case opMin:
		if o < cur || math.IsNaN(cur) {
			return o
		}
	case opMax:
		if o > cur || math.IsNaN(cur) {
			return o
		}
	}
	return cur
}

// merge adds another worker's accumulation of the same series.
func (s *rangeSeries) merge(op rangeOp, o *rangeSeries) {
	for k, on := range o.n {
		if on == 0 {
			continue
		}
		n := s.n[k]
		switch {
		case n == 0:
			s.v[k] = o.v[k]
			if s.seriesMore != nil && s.t != nil {
				s.t[k] = o.t[k]
			}
			if s.seriesMore != nil && s.m2 != nil {
				s.m2[k] = o.m2[k]
			}
		case op == opSum || op == opAvg || op == opMin || op == opMax:
			s.v[k] = mergeSamples(op, s.v[k], o.v[k])
		case op == opFirst && o.t[k] < s.t[k], op == opLast && o.t[k] > s.t[k]:
			s.v[k], s.t[k] = o.v[k], o.t[k]
		case op == opVar:
			d := o.v[k] - s.v[k]
			tot := n + on
			s.v[k] += d * on / tot
			s.m2[k] += o.m2[k] + d*d*n*on/tot
		}
		switch op {
		case opList:
			s.lists[k] = append(s.lists[k], o.lists[k]...)
		case opValues:
			s.vals[k] = append(s.vals[k], o.vals[k]...)
		}
		s.n[k] += on
	}
}

// instant is the function's value at a one-step query's step (window
// 0), false when the series has none there.
func (s *rangeSeries) instant(x *logql.RangeAggregation, rng int64) (float64, bool) {
	if s.n[0] == 0 {
		return 0, false
	}
	return s.result(x, 0, s.n[0], rng)
}

// result is the function's value for window k.
func (s *rangeSeries) result(x *logql.RangeAggregation, k int, n float64, rng int64) (float64, bool) {
	secs := float64(rng) / 1e9
	switch x.Op {
	case "count_over_time":
		return n, true
	case "rate":
		if x.Range.Unwrap == nil {
			return n / secs, true
		}
		return s.v[k] / secs, true
	case "bytes_rate":
		return s.v[k] / secs, true
	case "avg_over_time":
		return s.v[k] / n, true
	case "stdvar_over_time":
		return s.m2[k] / n, true
	case "stddev_over_time":
		return math.Sqrt(s.m2[k] / n), true
	case "quantile_over_time":
		return quantile(x.Param, s.vals[k]), true
	case "rate_counter":
		return counterRate(s.lists[k], rng), true
	default: // sum, bytes, min, max, first, last
		return s.v[k], true
	}
}

// quantile is the phi-quantile of the samples, interpolated as
// Prometheus' quantile_over_time.
func quantile(phi float64, vs []float64) float64 {
	switch {
	case len(vs) == 0 || math.IsNaN(phi):
		return math.NaN()
	case phi < 0:
		return math.Inf(-1)
	case phi > 1:
		return math.Inf(1)
	}
	rank := phi * float64(len(vs)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(vs)-1)
	w := rank - float64(lo)
	// Two order statistics, not a sort: after selecting the lo-th, the
	// hi-th is the least of those after it.
	selectNth(vs, lo)
	vhi := vs[lo]
	if hi > lo {
		vhi = slices.MinFunc(vs[lo+1:], cmpFloat)
	}
	return vs[lo]*(1-w) + vhi*w
}

// cmpFloat orders floats as slices.Sort does: NaNs first.
func cmpFloat(a, b float64) int {
	switch {
	case a < b || math.IsNaN(a) && !math.IsNaN(b):
		return -1
	case b < a || math.IsNaN(b) && !math.IsNaN(a):
		return 1
	}
	return 0
}

// selectNth reorders vs so that vs[k] is the value a sort would put
// there, with no greater value before it and no smaller after it
// (quickselect, median-of-three pivots).
func selectNth(vs []float64, k int) {
	lo, hi := 0, len(vs)-1
	for hi > lo {
		mid := lo + (hi-lo)/2
		if cmpFloat(vs[mid], vs[lo]) < 0 {
			vs[mid], vs[lo] = vs[lo], vs[mid]
		}
		if cmpFloat(vs[hi], vs[lo]) < 0 {
			vs[hi], vs[lo] = vs[lo], vs[hi]
		}
		if cmpFloat(vs[hi], vs[mid]) < 0 {
			vs[hi], vs[mid] = vs[mid], vs[hi]
		}
		pivot := vs[mid]
		i, j := lo, hi
		for i <= j {
			for cmpFloat(vs[i], pivot) < 0 {
				i++
			}
			for cmpFloat(pivot, vs[j]) < 0 {
				j--
			}
			if i <= j {
				vs[i], vs[j] = vs[j], vs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// counterRate is the per-second rate of a counter over a window of rng
// nanoseconds, as Loki's rate_counter computes it (Prometheus' rate of
// before 2.x's change): the range runs from the first sample minus rng
// to the last sample, so nothing is extrapolated past the last sample.
// Fewer than two samples give 0.
func counterRate(samples []tv, rng int64) float64 {
	if len(samples) < 2 {
		return 0
	}
	slices.SortStableFunc(samples, func(a, b tv) int { return cmp.Compare(a.t, b.t) })
	first, last := samples[0], samples[len(samples)-1]
	delta := last.v - first.v
	for i := 1; i < len(samples); i++ {
		if samples[i].v < samples[i-1].v {
			delta += samples[i-1].v // a reset
		}
	}
	sampled := float64(last.t-first.t) / 1e9
	if sampled <= 0 {
		return 0
	}
	toStart := float64(rng) / 1e9
	avg := sampled / float64(len(samples)-1)
	if delta > 0 && first.v >= 0 {
		if toZero := sampled * (first.v / delta); toZero < toStart {
			toStart = toZero
		}
	}
	interval := sampled
	if toStart < avg*1.1 {
		interval += toStart
	} else {
		interval += avg / 2
	}
	return delta * (interval / sampled) / (float64(rng) / 1e9)
}

// absent is absent_over_time: 1 at each step where no series has a
// sample, labelled with the selector's equality matchers.
func absent(out *matrix, merged *seriesTable, sel logql.Selector) *matrix {
	var ls record.Labels
	for _, m := range sel {
		if m.Type == logql.MatchEqual && !slices.ContainsFunc(ls, func(l record.Label) bool { return l.Name == m.Name }) {
			ls = append(ls, record.Label{Name: m.Name, Value: m.Value})
		}
	}
	slices.SortFunc(ls, func(a, b record.Label) int { return compareLabels(record.Labels{a}, record.Labels{b}) })
	s := out.add(ls)
	for i := range s.has {
		seen := false
		for _, rs := range merged.all() {
			if rs.n[i] > 0 {
				seen = true
				break
			}
		}
		if !seen {
			s.set(i, 1)
		}
	}
	return out
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
