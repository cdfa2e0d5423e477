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

// A vecNode is the filters over one parameter's number in the form they
// are decided in a column at a time: a pass bit per value of the column
// that holds the parameter (a selection vector), worked out in a tight
// loop per comparison, so that a row then costs a bit test.
type vecNode struct {
	kind vecKind
	op   logql.CmpOp
	want float64
	l, r *vecNode
}

type vecKind uint8

const (
	vecAll vecKind = iota // every value passes (__error__="", which this path never sets)
	vecCmp                // the value compared with want
	vecAnd
	vecOr
)

// eval sets dst's bits (one per value of nums, dst long enough and
// cleared) of the values that pass n; tmp lends bitmaps to and/or.
func (n *vecNode) eval(nums []float64, dst []uint64, tmp *[][]uint64) {
	switch n.kind {
	case vecAll:
		for i := range dst {
			dst[i] = ^uint64(0)
		}
	case vecCmp:
		cmpBits(n.op, nums, n.want, dst)
	default:
		n.l.eval(nums, dst, tmp)
		var r []uint64
		if k := len(*tmp); k > 0 {
			r, *tmp = (*tmp)[k-1], (*tmp)[:k-1]
		}
		r = growClear(r, len(dst))
		n.r.eval(nums, r, tmp)
		if n.kind == vecAnd {
			for i := range dst {
				dst[i] &= r[i]
			}
		} else {
			for i := range dst {
				dst[i] |= r[i]
			}
		}
		*tmp = append(*tmp, r)
	}
}

// cmpBits sets the bit of each number that compares with want as op
// says, with the operators stage.CompareNumbers uses (NaN included).
func cmpBits(op logql.CmpOp, nums []float64, want float64, dst []uint64) {
	set := func(i int, ok bool) {
		if ok {
			dst[i>>6] |= 1 << (i & 63)
		}
	}
	switch op {
	case logql.CmpEq:
		for i, f := range nums {
			set(i, f == want)
		}
	case logql.CmpNe:
		for i, f := range nums {
			set(i, f != want)
		}
	case logql.CmpGt:
		for i, f := range nums {
			set(i, f > want)
		}
	case logql.CmpGe:
		for i, f := range nums {
			set(i, f >= want)
		}
	case logql.CmpLt:
		for i, f := range nums {
			set(i, f < want)
		}
	case logql.CmpLe:
		for i, f := range nums {
			set(i, f <= want)
		}
	}
}

// compileNumPred returns the filters after the json stage (the label
// filter stages, then after, the filters after unwrap) as a numPred, and
// the parameters they read; ok false when they are not all number
// filters on parameters and __error__="".
//
// The filters are also returned as a vecNode, decided a column at a time,
// which holds for rows that have the one parameter they read (when they
// read more than one, the vecNode is of no use).
func compileNumPred(stages []logql.Stage, after []logql.LabelFilter, names []string) (numPred, *vecNode, []int, bool) {
	var reads []int
	var leaf func(f logql.LabelFilter) (numPred, *vecNode, bool)
	leaf = func(f logql.LabelFilter) (numPred, *vecNode, bool) {
		switch f := f.(type) {
		case *logql.LabelFilterBinary:
			l, lv, ok := leaf(f.Left)
			if !ok {
				return nil, nil, false
			}
			r, rv, ok := leaf(f.Right)
			if !ok {
				return nil, nil, false
			}
			if f.And {
				return func(n []float64, h []bool) bool { return l(n, h) && r(n, h) }, &vecNode{kind: vecAnd, l: lv, r: rv}, true
			}
			return func(n []float64, h []bool) bool { return l(n, h) || r(n, h) }, &vecNode{kind: vecOr, l: lv, r: rv}, true
		case *logql.LabelFilterString:
			m := f.Matcher
			if m.Name == stage.ErrorLabel && m.Type == logql.MatchEqual && m.Value == "" {
				return func([]float64, []bool) bool { return true }, &vecNode{kind: vecAll}, true // no error on this path
			}
		case *logql.LabelFilterNumber:
			i := slices.Index(names, f.Name)
			if i < 0 {
				return nil, nil, false
			}
			if !slices.Contains(reads, i) {
				reads = append(reads, i)
			}
			op, want := f.Op, f.Value
			// A row without the label is dropped, as the filter does.
			return func(n []float64, h []bool) bool { return h[i] && stage.CompareNumbers(op, n[i], want) }, &vecNode{kind: vecCmp, op: op, want: want}, true
		}
		return nil, nil, false
	}
	filters := slices.Clone(after)
	for _, s := range stages {
		lf, ok := s.(*logql.LabelFilterStage)
		if !ok {
			return nil, nil, nil, false
		}
		filters = append(filters, lf.Filter)
	}
	var preds []numPred
	vec := &vecNode{kind: vecAll}
	for _, f := range filters {
		p, v, ok := leaf(f)
		if !ok {
			return nil, nil, nil, false
		}
		preds = append(preds, p)
		vec = &vecNode{kind: vecAnd, l: vec, r: v}
	}
	return func(n []float64, h []bool) bool {
		for _, p := range preds {
			if !p(n, h) {
				return false
			}
		}
		return true
	}, vec, reads, true
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
	// params: names are a json stage's parameters, which set a label ""
	// where their path is not found (a number filter or an unwrap of it
	// errs), not no label.
	params bool
	on     bool // for the stream at hand: no parameter is one of its labels
	series *rangeSeries
	nums   []float64
	has    []bool
	// vec, when the filters and the unwrap read one parameter: the
	// filters decided a column at a time (selection vectors), and
	// whether a row without the parameter passes; cols, per column of
	// the block at hand, its numbers and pass bits once worked out.
	vec       *vecNode
	vecAbsent bool
	cols      []vecColumn
	tmp       [][]uint64
}

// vecColumn is a block's column of numbers with a pass bit per value.
type vecColumn struct {
	state known // knownYes: nums and bits hold; knownNo: not a column of numbers
	nums  []float64
	bits  []uint64
}

// newPredState returns the state when a range aggregation's filters can
// be decided on numbers and its grouping keeps no parameter (names: the
// json stage's parameters, or its one observed label); else nil.
func newPredState(w *rangeWorker, names []string, params bool) *predState {
	if w.x.Grouping == nil && w.mergedBy == nil || keepsAny(names, w.x.Grouping, w.mergedBy) {
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
		// Unwrap removes the label it reads (as Loki's does): a filter
		// after it that reads the label sees it absent, which the
		// parameter's number would not say. The general path decides.
		for _, f := range after {
			if filtersRead([]logql.Stage{&logql.LabelFilterStage{Filter: f}}, u.Label) {
				return nil
			}
		}
	}
	return compilePredState(w.afterJSON(), after, names, unwrap, params)
}

// newLogPredState returns the state for a log query whose filters after
// its json stage (jp) can be decided on numbers, to drop the rows they
// fail without reading them; else nil.
func newLogPredState(stages []logql.Stage, jp stage.JSONParams) *predState {
	names, ok := distinctParamNames(jp)
	if !ok {
		return nil
	}
	return compilePredState(stages, nil, names, -1, true)
}

// distinctParamNames returns the label names of jp's parameters, and
// false when two are the same (the first value found would win, which
// the columns' numbers cannot say).
func distinctParamNames(jp stage.JSONParams) ([]string, bool) {
	names := make([]string, jp.Len())
	for i := range names {
		names[i] = jp.Name(i)
		if slices.Contains(names[:i], names[i]) {
			return nil, false
		}
	}
	return names, true
}

// compilePredState compiles the filters of stages and after on the
// parameters names, unwrapping parameter unwrap (or none, -1); params:
// they are a json stage's parameters.
func compilePredState(stages []logql.Stage, after []logql.LabelFilter, names []string, unwrap int, params bool) *predState {
	pred, vec, reads, ok := compileNumPred(stages, after, names)
	if !ok {
		return nil
	}
	if unwrap >= 0 && !slices.Contains(reads, unwrap) {
		reads = append(reads, unwrap)
	}
	ps := &predState{pred: pred, unwrap: unwrap, reads: reads, names: names, nums: make([]float64, len(names)), has: make([]bool, len(names)), params: params}
	if len(reads) == 1 {
		ps.vec, ps.vecAbsent = vec, pred(ps.nums, ps.has) // has all false: the parameter absent
	}
	return ps
}

// startBlock forgets the columns of the block before.
func (ps *predState) startBlock(ncols int) {
	if cap(ps.cols) < ncols {
		ps.cols = append(ps.cols[:cap(ps.cols)], make([]vecColumn, ncols-cap(ps.cols))...)
	}
	ps.cols = ps.cols[:ncols]
	for i := range ps.cols {
		ps.cols[i].state = unknown
	}
}

// column returns column col of block b with its pass bits, working them
// out at its first use in the block; nil when it is not a column of
// numbers Number can give.
func (ps *predState) column(b *part.Block, col int) *vecColumn {
	c := &ps.cols[col]
	switch c.state {
	case knownYes:
		return c
	case knownNo:
		return nil
	}
	var ok bool
	c.nums, ok = b.Numbers(col, c.nums[:0])
	c.state = knownOf(ok)
	if !ok {
		return nil
	}
	c.bits = growClear(c.bits, (len(c.nums)+63)/64)
	ps.vec.eval(c.nums, c.bits, &ps.tmp)
	return c
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
			if pp.value.Found || ps.params {
				return dst, false // a value in the gaps, or "": its text is what it is
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
	if cp.pred == nil {
		return false, nil // no call per row of a query without number filters
	}
	decided, pass, v, has, err := cp.numVerdict(b, tm, t)
	if err != nil || !decided {
		return false, err
	}
	if !pass || cp.pred.unwrap >= 0 && !has {
		return true, nil // filtered out, or no value to unwrap: no sample
	}
	return true, w.addPassed(ls, t, v*cp.weight) // v is 1 but for unwrap, whose weight is 1
}

// numVerdict decides the row at hand (template tm, time t) on its
// numbers: whether the filters pass it, and the number unwrapped (1
// without unwrap) if it has one. decided false: the general path
// decides (a value not a number of a column, or not well-formed).
func (cp *colPlanner) numVerdict(b *part.Block, tm int, t int64) (decided, pass bool, v float64, has bool, err error) {
	ps := cp.pred
	p := &cp.plans[tm]
	if ps == nil || !ps.on || !p.ok || !p.numsOK {
		return false, false, 0, false, nil
	}
	if ps.vec != nil {
		if decided, ok, pass, v, has, err := cp.vecVerdict(b, tm, t); ok {
			return decided, pass, v, has, err
		}
	}
	for j, i := range ps.reads {
		np := p.nums[j]
		if np.col < 0 {
			ps.has[i] = false
			continue
		}
		f, ok := b.Number(np.col, cp.cur.At(np.col)+np.rank)
		if !ok {
			return false, false, 0, false, nil
		}
		ps.nums[i], ps.has[i] = f, true
	}
	if good, err := cp.checksHold(b, tm, p, t); err != nil || !good {
		return false, false, 0, false, err // the row path decides
	}
	v = 1.0
	if ps.unwrap >= 0 {
		v, has = ps.nums[ps.unwrap], ps.has[ps.unwrap]
	}
	return true, ps.pred(ps.nums, ps.has), v, has, nil
}

// vecVerdict is numVerdict on the filters' selection vector, for a row
// whose one parameter read is absent or in a column of numbers; ok false
// when it is in another column, and numVerdict decides row by row.
func (cp *colPlanner) vecVerdict(b *part.Block, tm int, t int64) (decided, ok, pass bool, v float64, has bool, err error) {
	ps := cp.pred
	p := &cp.plans[tm]
	np := p.num0
	pass, v = ps.vecAbsent, 1.0
	if np.col >= 0 {
		c := ps.column(b, np.col)
		if c == nil {
			return false, false, false, 0, false, nil
		}
		vi := cp.cur.At(np.col) + np.rank
		if vi >= len(c.nums) {
			return false, true, false, 0, false, nil // the row path reports it
		}
		pass, has = c.bits[vi>>6]&(1<<(vi&63)) != 0, true
		if ps.unwrap >= 0 {
			v = c.nums[vi]
		}
	}
	if good, err := cp.checksHold(b, tm, p, t); err != nil || !good {
		return false, true, false, 0, false, err // the row path decides
	}
	return true, true, pass, v, has, nil
}

// addPassed adds sample v at t to the one series of the stream's labels
// (the grouping keeps no parameter).
func (w *rangeWorker) addPassed(ls record.Labels, t int64, v float64) error {
	s, err := w.passedSeries(ls)
	if err != nil {
		return err
	}
	w.add(s, t, v)
	return nil
}

// passedSeries returns the one series of the stream's labels that the
// rows the filters pass count in, made at the stream's first.
func (w *rangeWorker) passedSeries(ls record.Labels) (*rangeSeries, error) {
	return w.streamSeries(ls, &w.cols.pred.series)
}

// streamSeries returns *kept, the series of the stream's labels alone,
// making it into *kept if it is nil.
func (w *rangeWorker) streamSeries(ls record.Labels, kept **rangeSeries) (*rangeSeries, error) {
	if *kept == nil {
		w.lb.Reset(ls)
		s, err := w.seriesOf()
		if err != nil {
			return nil, err
		}
		*kept = s
	}
	return *kept, nil
}
