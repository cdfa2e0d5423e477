package query

import (
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store/part"
)

// Number filters on json parameters, decided on the numbers of the
// columns that hold them: `sum by (service) (count_over_time({...} | json
// lat="http.latency_ms" | lat > 200 and lat <= 500 | __error__=""
// [1m]))` needs, per row, only whether its latency passes, not the text
// of the value, its labels or its series, which the grouping makes the
// stream's alone.
//
// It applies when the label filters after the json stage (and after a
// plain unwrap of a parameter, whose number is then the sample) are
// number filters on its parameters and `__error__=""`, combined with
// and/or, and the grouping keeps no parameter: then a passing row counts
// in the one series of its stream's labels. On a row whose values are all in number
// columns (or absent) the filters cannot fail to convert, so the row has
// no error label, and a number filter compares the column's number (what
// strconv.ParseFloat gives for the value's text, as the filter does).

// numPred is the filters compiled over the parameters' numbers: nums[i]
// is parameter i's number when has[i].
type numPred func(nums []float64, has []bool) bool

// compileNumPred returns the filters after the json stage (the label
// filter stages, then after, the filters after unwrap) as a numPred, and
// the parameters they read; ok false when they are not all number
// filters on parameters and __error__="".
func compileNumPred(stages []logql.Stage, after []logql.LabelFilter, names []string) (numPred, []int, bool) {
	var reads []int
	var leaf func(f logql.LabelFilter) (numPred, bool)
	leaf = func(f logql.LabelFilter) (numPred, bool) {
		switch f := f.(type) {
		case *logql.LabelFilterBinary:
			l, ok := leaf(f.Left)
			if !ok {
				return nil, false
			}
			r, ok := leaf(f.Right)
			if !ok {
				return nil, false
			}
			if f.And {
				return func(n []float64, h []bool) bool { return l(n, h) && r(n, h) }, true
			}
			return func(n []float64, h []bool) bool { return l(n, h) || r(n, h) }, true
		case *logql.LabelFilterString:
			m := f.Matcher
			if m.Name == stage.ErrorLabel && m.Type == logql.MatchEqual && m.Value == "" {
				return func([]float64, []bool) bool { return true }, true // no error on this path
			}
		case *logql.LabelFilterNumber:
			i := slices.Index(names, f.Name)
			if i < 0 {
				return nil, false
			}
			if !slices.Contains(reads, i) {
				reads = append(reads, i)
			}
			op, want := f.Op, f.Value
			// A row without the label is dropped, as the filter does.
			return func(n []float64, h []bool) bool { return h[i] && stage.CompareNumbers(op, n[i], want) }, true
		}
		return nil, false
	}
	filters := slices.Clone(after)
	for _, s := range stages {
		lf, ok := s.(*logql.LabelFilterStage)
		if !ok {
			return nil, nil, false
		}
		filters = append(filters, lf.Filter)
	}
	var preds []numPred
	for _, f := range filters {
		p, ok := leaf(f)
		if !ok {
			return nil, nil, false
		}
		preds = append(preds, p)
	}
	return func(n []float64, h []bool) bool {
		for _, p := range preds {
			if !p(n, h) {
				return false
			}
		}
		return true
	}, reads, true
}

// keepsAny reports whether a label named one of names survives the
// groupings (nil: no grouping).
func keepsAny(names []string, gs ...*logql.Grouping) bool {
	for _, n := range names {
		kept := true
		for _, g := range gs {
			if g != nil && slices.Contains(g.Labels, n) == g.Without {
				kept = false
			}
		}
		if kept {
			return true
		}
	}
	return false
}

// predState is a range worker's state for number filters decided on
// columns (colPlanner.pred).
type predState struct {
	pred   numPred
	unwrap int      // the parameter whose number is the sample (plain unwrap), or -1
	reads  []int    // the parameters it reads, the unwrapped one among them
	names  []string // every parameter's label name
	on     bool     // for the stream at hand: no parameter is one of its labels
	series *rangeSeries
	nums   []float64
	has    []bool
}

// newPredState returns the state when a range aggregation's filters can
// be decided on numbers and its grouping keeps no parameter; else nil.
func newPredState(w *rangeWorker, jp stage.JSONParams) *predState {
	if w.x.Grouping == nil && w.sumBy == nil {
		return nil
	}
	names := make([]string, jp.Len())
	for i := range names {
		names[i] = jp.Name(i)
	}
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return nil // the first value found would win
		}
	}
	if keepsAny(names, w.x.Grouping, w.sumBy) {
		return nil
	}
	unwrap := -1
	var after []logql.LabelFilter
	if u := w.x.Range.Unwrap; u != nil {
		// A plain unwrap of a parameter: the sample is its number.
		if unwrap = slices.Index(names, u.Label); u.Conv != "" || unwrap < 0 {
			return nil
		}
		after = u.Filters
	}
	pred, reads, ok := compileNumPred(w.x.Range.Log.Pipeline[1:], after, names)
	if !ok {
		return nil
	}
	if unwrap >= 0 && !slices.Contains(reads, unwrap) {
		reads = append(reads, unwrap)
	}
	return &predState{pred: pred, unwrap: unwrap, reads: reads, names: names, nums: make([]float64, len(names)), has: make([]bool, len(names))}
}

// startStream readies the state for a stream's rows.
func (ps *predState) startStream(ls record.Labels) {
	ps.series = nil
	ps.on = !slices.ContainsFunc(ps.names, func(n string) bool { _, ok := ls.Get(n); return ok })
}

// numParams returns, for a template's plan p in block b, where the
// parameters the filters read have their numbers, appended to dst; false
// when one is not in a number column nor absent.
func (ps *predState) numParams(b *part.Block, t int, p *tmplPlan, holes []int, dst []numParam) ([]numParam, bool) {
	for _, i := range ps.reads {
		pp := &p.params[i]
		if pp.hole < 0 {
			if pp.value.Found {
				return dst, false // a value in the gaps: its text is what it is
			}
			dst = append(dst, numParam{col: -1})
			continue
		}
		si := holes[pp.hole]
		col := b.SlotColumn(t, si)
		if k := b.ColumnKind(col); k != part.ColumnInt && k != part.ColumnDecimal {
			return dst, false
		}
		dst = append(dst, numParam{col: col, rank: b.SlotRank(t, si)})
	}
	return dst, true
}

// predRow decides the row at hand (template tm, time t) on its numbers
// and counts it, and reports whether it did; false sends it down the
// general path.
func (w *rangeWorker) predRow(ls record.Labels, b *part.Block, tm int, t int64) (bool, error) {
	cp := w.cols
	ps := cp.pred
	p := &cp.plans[tm]
	if ps == nil || !ps.on || !p.ok || !p.numsOK {
		return false, nil
	}
	for j, i := range ps.reads {
		np := p.nums[j]
		if np.col < 0 {
			ps.has[i] = false
			continue
		}
		f, ok := b.Number(np.col, cp.cur.At(np.col)+np.rank)
		if !ok {
			return false, nil
		}
		ps.nums[i], ps.has[i] = f, true
	}
	if len(p.checks) > 0 {
		_, holes := b.TemplateLine(tm)
		for _, h := range p.checks {
			if good, err := cp.wellFormed(b, tm, holes[h], p.inString[h], t); err != nil || !good {
				return false, err // the row path decides
			}
		}
	}
	if !ps.pred(ps.nums, ps.has) {
		return true, nil
	}
	v := 1.0
	if ps.unwrap >= 0 {
		if !ps.has[ps.unwrap] {
			return true, nil // no value to unwrap: no sample
		}
		v = ps.nums[ps.unwrap]
	}
	if ps.series == nil {
		// The grouping keeps no parameter: the stream's labels alone.
		w.lb.Reset(ls)
		s, err := w.seriesOf()
		if err != nil {
			return false, err
		}
		ps.series = s
	}
	w.add(ps.series, t, v)
	return true, nil
}
