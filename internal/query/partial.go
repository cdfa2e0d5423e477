package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
)

// Partial results let a query run where its data are: each node
// evaluates the query on the data it holds (Engine.Partial), the parts
// are merged (Merge), and the merge is finished into the result that
// evaluating the whole data gives (Partial.Finish).
//
// A metric query's part is the state of each of its range aggregations,
// per series and per step, before anything combines series: counts and
// sums add, minimums and maximums take the least and the greatest, the
// first and last values keep their times, averages are sums and counts,
// standard deviations are Welford's mean and squared deviations (merged
// by Chan's formula), quantile_over_time and rate_counter keep every
// sample. Vector aggregations, binary operations, label_replace and the
// rest run in Finish on the merged series, as Eval runs them on its own.
// (A part of quantile_over_time or rate_counter holds what Eval holds:
// every sample in every window; each part's MaxBytesScanned bounds it,
// and Finish checks the parts' bytes added against its own.)
// A log query's part is its newest (or oldest) Limit lines with their
// labels; merging keeps the newest (oldest) Limit of all the parts'.
//
// The parts may split the data any way (by stream, by time, both): each
// row must be in exactly one part. The merge is exact but for the order
// of floating-point additions (sum_over_time, avg_over_time and the
// deviations of values that are not small integers may differ in the
// last bits, as Eval's own workers already do for a series that spans
// streams), and for ties that Eval does not break either: the order of
// lines of the same time and the same labels, and which of two samples
// of one series at the same time first_over_time, last_over_time and
// rate_counter see first. A log query with an interval
// (Params.Interval) cannot be split: its thinning runs through each
// stream's lines in order, and a part cannot know the line another part
// kept last. Engine.Partial refuses it with ErrNotSplittable.

// ErrNotSplittable is the error of a query that cannot be evaluated in
// parts: the caller evaluates it whole instead.
var ErrNotSplittable = errors.New("query cannot be evaluated in parts")

// Partial is one part of a query's evaluation, or the merge of several.
// It holds plain data only, none of a store's memory, so that it can be
// encoded and sent to the node that merges.
//
// Concurrency: a Partial is not modified by Merge or Finish; they may
// read it concurrently.
type Partial struct {
	// Params are the query's; every part of a merge has the same.
	Params Params
	// Ranges are a metric query's range aggregations, in the order a
	// depth-first walk of the query meets them (a binary operation's left
	// side first): each one's series sorted by labels.
	Ranges [][]PartialSeries
	// Lines are a log query's lines in the order the query returns them,
	// at most Limit of them.
	Lines []PartialLine
	// Limit is the most lines a log query returns, as the part's engine
	// bounds it (Params.Limit and Limits.MaxLines).
	Limit int
	// Stats are the work of every part, added.
	Stats Stats
	// Warnings are every part's.
	Warnings []string
}

// PartialSeries is one series of a range aggregation, before the range
// function's value is computed: per step of the query, what the
// samples in the step's window add up to.
type PartialSeries struct {
	Labels record.Labels
	// Count is the number of samples in each step's window: a step
	// without samples has no value.
	Count []float64
	// Value is the sum (count_over_time, rate, bytes_over_time,
	// bytes_rate, sum_over_time, avg_over_time, absent_over_time), the
	// minimum, the maximum, the first or last value, or the mean
	// (stddev_over_time, stdvar_over_time).
	Value []float64
	// Time is the time of Value for first_over_time and last_over_time;
	// nil for the others.
	Time []int64
	// M2 is the sum of squared deviations from the mean for
	// stddev_over_time and stdvar_over_time; nil for the others.
	M2 []float64
	// Samples are every sample of each window for rate_counter, and
	// every sample's value (Time 0, in no order) for quantile_over_time;
	// nil for the others.
	Samples [][]Point
}

// PartialLine is one line of a log query, with the labels of the stream
// it is returned in.
type PartialLine struct {
	Labels       record.Labels
	Time         int64
	Line         string
	Meta, Parsed record.Labels // Params.Categorize
}

// Partial evaluates a query on the data of src, which holds part of the
// data the query reads, into a part to merge with the others.
func (e *Engine) Partial(ctx context.Context, src Source, p Params) (*Partial, error) {
	began := time.Now()
	expr, err := logql.Parse(p.Query)
	if err != nil {
		return nil, err
	}
	if err := check(expr, p); err != nil {
		return nil, err
	}
	if _, ok := expr.(*logql.LogExpr); ok && p.Interval > 0 {
		return nil, fmt.Errorf("%w: a log query with an interval thins each stream's lines in order, which parts cannot do apart", ErrNotSplittable)
	}
	if e.limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.limits.Timeout)
		defer cancel()
	}
	if len(p.Tenants) > 1 {
		src = newMultiSource(src, p.Tenants)
	}
	ev := &evaluator{e: e, src: src, p: p}
	out := &Partial{Params: p}
	switch x := expr.(type) {
	case *logql.LogExpr:
		err = ev.partialLog(ctx, x, out)
	case logql.SampleExpr:
		err = ev.partialMetric(ctx, x, out)
	}
	if err = e.timedOut(err); err != nil {
		return nil, err
	}
	if w, ok := src.(Warner); ok {
		out.Warnings = w.Warnings()
	}
	out.Stats = ev.stats.snapshot()
	out.Stats.ExecDuration = time.Since(began)
	return out, nil
}

// partialMetric reads the states of a metric query's range aggregations.
func (ev *evaluator) partialMetric(ctx context.Context, x logql.SampleExpr, out *Partial) error {
	shape, err := ev.shape()
	if err != nil {
		return err
	}
	ev.hints = queryHints(x)
	for _, ra := range rangeAggs(x, nil) {
		states, err := ev.rangeStates(ctx, ra, shape, false)
		if err != nil {
			return err
		}
		out.Ranges = append(out.Ranges, exportSeries(states))
	}
	return nil
}

// partialLog reads the lines of a log query.
func (ev *evaluator) partialLog(ctx context.Context, x *logql.LogExpr, out *Partial) error {
	lines, labels, err := ev.logLines(ctx, x)
	if err != nil {
		return err
	}
	out.Limit = ev.e.logLimit(ev.p)
	out.Lines = make([]PartialLine, len(lines))
	for i, l := range lines {
		out.Lines[i] = PartialLine{Labels: labels[l.key], Time: l.time, Line: l.line, Meta: l.meta, Parsed: l.parsed}
	}
	return nil
}

// Merge merges parts of the same query, each evaluated on its own part
// of the data, into one part: what one part holding all their data
// would give. It modifies none of them.
func Merge(parts ...*Partial) (*Partial, error) {
	if len(parts) == 0 {
		return nil, errors.New("merge partial results: no parts")
	}
	p := parts[0].Params
	expr, err := mergeable(parts)
	if err != nil {
		return nil, err
	}
	out := &Partial{Params: p}
	for _, part := range parts {
		out.Stats = addStats(out.Stats, part.Stats)
		out.Warnings = append(out.Warnings, part.Warnings...)
	}
	switch x := expr.(type) {
	case *logql.LogExpr:
		lines, labels, limit := mergeLines(parts)
		out.Limit = limit
		out.Lines = make([]PartialLine, len(lines))
		for i, l := range lines {
			out.Lines[i] = PartialLine{Labels: labels[l.key], Time: l.time, Line: l.line, Meta: l.meta, Parsed: l.parsed}
		}
	case logql.SampleExpr:
		ranges, err := mergeRanges(x, parts)
		if err != nil {
			return nil, err
		}
		for _, states := range ranges {
			out.Ranges = append(out.Ranges, exportSeries(states))
		}
	}
	return out, nil
}

// Finish evaluates the rest of the query on the merged part, as e would
// evaluate it on the whole data: the range functions' values, then what
// combines series; the newest (oldest) lines of a log query, in
// streams. e's limits apply: the series, the lines, the points per
// series and the bytes all the parts read.
func (p *Partial) Finish(e *Engine) (*Result, error) {
	expr, err := mergeable([]*Partial{p})
	if err != nil {
		return nil, err
	}
	if max := e.limits.MaxBytesScanned; max > 0 && p.Stats.Bytes > max {
		return nil, fmt.Errorf("%w: the query would read more than %d bytes", ErrLimit, max)
	}
	ev := &evaluator{e: e, p: p.Params}
	var res *Result
	switch x := expr.(type) {
	case *logql.LogExpr:
		lines, labels, limit := mergeLines([]*Partial{p})
		lines = lines[:min(len(lines), limit, e.logLimit(p.Params))]
		res = ev.streamsOf(lines, labels)
	case logql.SampleExpr:
		ranges, err := mergeRanges(x, []*Partial{p})
		if err != nil {
			return nil, err
		}
		ev.merged = map[*logql.RangeAggregation]*seriesTable{}
		for i, ra := range rangeAggs(x, nil) {
			ev.merged[ra] = ranges[i]
		}
		// Every range aggregation is merged: nothing is read, nothing
		// waits.
		if res, err = ev.metricQuery(context.Background(), x); err != nil {
			return nil, err
		}
	}
	res.Warnings = slices.Clone(p.Warnings)
	res.Stats = p.Stats
	res.Stats.LinesOut = ev.stats.linesOut.Load()
	return res, nil
}

// mergeable parses the query of parts and checks that they are parts of
// the same query.
func mergeable(parts []*Partial) (logql.Expr, error) {
	p := parts[0].Params
	for i, part := range parts[1:] {
		if !sameParams(p, part.Params) {
			return nil, fmt.Errorf("merge partial results: part %d is of another query or other parameters than part 0", i+1)
		}
	}
	expr, err := logql.Parse(p.Query)
	if err != nil {
		return nil, fmt.Errorf("merge partial results: %w", err)
	}
	if err := check(expr, p); err != nil {
		return nil, fmt.Errorf("merge partial results: %w", err)
	}
	return expr, nil
}

// sameParams reports whether two parts' parameters are the same query's.
func sameParams(a, b Params) bool {
	return a.Tenant == b.Tenant && a.Query == b.Query && a.Start == b.Start && a.End == b.End &&
		a.Step == b.Step && a.Interval == b.Interval && a.Limit == b.Limit && a.Direction == b.Direction &&
		a.Instant == b.Instant && a.Categorize == b.Categorize && slices.Equal(a.Tenants, b.Tenants)
}

func addStats(a, b Stats) Stats {
	return Stats{Streams: a.Streams + b.Streams, Rows: a.Rows + b.Rows, RowsColumnar: a.RowsColumnar + b.RowsColumnar,
		RowsSwept: a.RowsSwept + b.RowsSwept, Bytes: a.Bytes + b.Bytes, LinesOut: a.LinesOut + b.LinesOut,
		ExecDuration: a.ExecDuration + b.ExecDuration}
}

// rangeAggs appends the range aggregations of x, depth first, a binary
// operation's left side before its right: the order of Partial.Ranges.
func rangeAggs(x logql.SampleExpr, out []*logql.RangeAggregation) []*logql.RangeAggregation {
	switch x := x.(type) {
	case *logql.RangeAggregation:
		return append(out, x)
	case *logql.VectorAggregation:
		return rangeAggs(x.Expr, out)
	case *logql.BinaryExpr:
		return rangeAggs(x.RHS, rangeAggs(x.LHS, out))
	case *logql.LabelReplace:
		return rangeAggs(x.Expr, out)
	}
	return out
}

// steps is the number of steps a metric query is evaluated at.
func steps(p Params) int {
	if p.Instant || p.Step <= 0 {
		return 1
	}
	return int((p.End-p.Start)/int64(p.Step)) + 1
}

// mergeRanges merges the parts' states of each range aggregation of x,
// checking that each part's are whole: a part decoded from elsewhere
// may be damaged.
func mergeRanges(x logql.SampleExpr, parts []*Partial) ([]*seriesTable, error) {
	ras := rangeAggs(x, nil)
	n := steps(parts[0].Params)
	out := make([]*seriesTable, len(ras))
	for i, ra := range ras {
		op, ok := rangeOps[ra.Op]
		if !ok {
			return nil, fmt.Errorf("merge partial results: %w: unknown range aggregation %s", ErrBadRequest, ra.Op)
		}
		out[i] = &seriesTable{}
		for j, part := range parts {
			if len(part.Ranges) != len(ras) {
				return nil, fmt.Errorf("merge partial results: part %d has %d range aggregations, the query %d", j, len(part.Ranges), len(ras))
			}
			for _, ps := range part.Ranges[i] {
				if err := ps.check(op, n); err != nil {
					return nil, fmt.Errorf("merge partial results: part %d, range aggregation %d (%s): %w", j, i, ra.Op, err)
				}
				key := labelsKey(ps.Labels)
				if s := out[i].getString(key); s != nil {
					s.merge(op, importSeries(ps, op, false))
				} else {
					out[i].addString(key, importSeries(ps, op, true))
				}
			}
		}
	}
	return out, nil
}

// check reports what a series lacks that its function's state needs at
// each of n steps.
func (ps *PartialSeries) check(op rangeOp, n int) error {
	if !slices.IsSortedFunc(ps.Labels, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) }) {
		return fmt.Errorf("series %s: labels not sorted by name", ps.Labels)
	}
	bad := func(what string, l int) error {
		return fmt.Errorf("series %s: %d %s for %d steps", ps.Labels, l, what, n)
	}
	switch {
	case len(ps.Count) != n:
		return bad("counts", len(ps.Count))
	case len(ps.Value) != n:
		return bad("values", len(ps.Value))
	case (op == opFirst || op == opLast) && len(ps.Time) != n:
		return bad("times", len(ps.Time))
	case op == opVar && len(ps.M2) != n:
		return bad("squared deviations", len(ps.M2))
	case (op == opList || op == opValues) && len(ps.Samples) != n:
		return bad("sample lists", len(ps.Samples))
	}
	return nil
}

// importSeries returns the state of a series for function op, sharing
// its memory unless copying (merge reads the other series and writes its
// own). What op does not use is left out, as seriesAlloc.series leaves it.
func importSeries(ps PartialSeries, op rangeOp, copying bool) *rangeSeries {
	s := &rangeSeries{labels: ps.Labels, n: ps.Count, v: ps.Value}
	if op.keepsMore() {
		s.seriesMore = &seriesMore{}
	}
	switch op {
	case opFirst, opLast:
		s.t = ps.Time
	case opVar:
		s.m2 = ps.M2
	}
	if copying {
		s.n, s.v = slices.Clone(s.n), slices.Clone(s.v)
		if s.seriesMore != nil {
			s.t, s.m2 = slices.Clone(s.t), slices.Clone(s.m2)
		}
	}
	switch op {
	case opValues:
		s.vals = convertLists(ps.Samples, func(pt Point) float64 { return pt.Value })
	case opList:
		s.lists = convertLists(ps.Samples, func(pt Point) tv { return tv{pt.Time, pt.Value} })
	}
	return s
}

// convertLists returns each window's samples of lists converted by f
// (nil for a window without).
func convertLists[F, T any](lists [][]F, f func(F) T) [][]T {
	out := make([][]T, len(lists))
	for k, l := range lists {
		if len(l) == 0 {
			continue
		}
		out[k] = make([]T, len(l))
		for j, x := range l {
			out[k][j] = f(x)
		}
	}
	return out
}

// exportSeries returns the series of a range aggregation, sorted by
// labels, taking their memory.
func exportSeries(states *seriesTable) []PartialSeries {
	out := make([]PartialSeries, 0, states.len())
	var labels labelChunks
	states.each(func(k string, s *rangeSeries) {
		ps := PartialSeries{Labels: labels.of(k, s), Count: s.n, Value: s.v}
		switch m := s.seriesMore; {
		case m == nil:
		case m.lists != nil:
			ps.Samples = convertLists(m.lists, func(x tv) Point { return Point{Time: x.t, Value: x.v} })
		case m.vals != nil: // a quantile's values: no times
			ps.Samples = convertLists(m.vals, func(v float64) Point { return Point{Value: v} })
		default:
			ps.Time, ps.M2 = m.t, m.m2
		}
		out = append(out, ps)
	})
	slices.SortFunc(out, func(a, b PartialSeries) int { return compareLabels(a.Labels, b.Labels) })
	return out
}

// mergeLines returns the lines of the parts in a log query's order, at
// most the least of their limits, and their labels by key.
func mergeLines(parts []*Partial) ([]logLine, map[string]record.Labels, int) {
	var all []logLine
	labels := map[string]record.Labels{}
	limit := 0
	for _, part := range parts {
		if limit == 0 || part.Limit > 0 && part.Limit < limit {
			limit = part.Limit
		}
		for _, l := range part.Lines {
			key := labelsKey(l.Labels)
			if _, ok := labels[key]; !ok {
				labels[key] = l.Labels
			}
			all = append(all, logLine{time: l.Time, line: l.Line, key: key, meta: l.Meta, parsed: l.Parsed})
		}
	}
	sortLines(all, parts[0].Params.Direction)
	if limit <= 0 {
		limit = len(all)
	}
	return all[:min(len(all), limit)], labels, limit
}

// labelsKey is the key of a sorted label set, as the label builder
// encodes it: lines of the same time are ordered by it.
func labelsKey(ls record.Labels) string { return string(stage.AppendLabelsKey(nil, ls)) }
