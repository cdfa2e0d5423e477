package query

import (
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// The columnar path of a log query, newest first or oldest first, whose
// pipeline is `| json` (after line filters the store decides, which
// select a block's rows first) followed by label filters and perhaps
// other stages: each stored block is walked from the scan's start (its
// newest row, or its oldest), a row's parameters (json without
// parameters: the fields whose labels the filters read) are read from
// the columns that hold them (colPlanner, as for range aggregations),
// the filters decide on them, and only the lines kept are rebuilt (json
// without parameters, or stages after the filters: and run through the
// whole pipeline). A block's walk ends at the first row beyond the
// cutoff (the limit nearest lines kept so far across every stream), so a
// query for the newest lines with a selective filter reads the newest
// blocks' few columns, not every line of them.

// logCols is a log worker's state on the columnar path.
type logCols struct {
	cp          *colPlanner
	dropsErrors bool
	// whole: the lines kept run through the whole pipeline, for the
	// labels json without parameters sets, and the stages after those
	// the columns decide.
	whole bool
	// lead selects a block's rows by the line filters before json
	// (lead_filters.go) before their values are read; nil: none.
	// implied selects them by those and the clauses the label filters
	// imply (impliedClauses) for the stream at hand; nil: none. It is
	// taken once the rows walked show the filters rare (rareRows): a
	// selection costs its block whole, where a walk for the newest lines
	// of a common value stops early (app-newest-errors-plain: 12.9 ->
	// 15.3 ms with it), and a rare one saves the walk of every row (a
	// trace id's lines: 158 -> 68 ms).
	lead, implied *rowSelection
	leads         leadFilters
	// walked and kept count the rows walked and kept by the pipeline,
	// over the worker's streams.
	walked, kept int
	// none, per stream: whether rows without any parameter are all
	// dropped, as colPlanner.noneMemo.
	none known
	line []byte
	// The swept path's (log_sweep.go): the query, its probe (nil: none)
	// once made (probeMade), whether the probe is started for the
	// stream at hand (probeOn), and a block's rows to make, a bit each.
	x                  *logql.LogExpr
	probe              *rangeWorker
	probeMade, probeOn bool
	rows               []uint64
}

// logColumnar reports whether a log query's pipeline can take the
// columnar path: after its leading line filters, json, then any stages
// (logPrefix).
func logColumnar(x *logql.LogExpr) bool {
	stages := x.Pipeline[leadingFilters(x.Pipeline, true).n:]
	if len(stages) == 0 {
		return false
	}
	j, ok := stages[0].(*logql.JSONParser)
	return ok && (len(j.Params) > 0 || stage.ObservedBy(stages[:logPrefix(stages)], nil) != nil)
}

// logPrefix returns how many of the stages of a columnar log query
// (json first) the columns decide: json, and the label filters and drops
// of the error labels after it. A row they drop is dropped whatever the
// stages after them; those run on the lines of the rows kept (logCols.whole).
func logPrefix(stages []logql.Stage) int {
	for k, s := range stages[1:] {
		switch s := s.(type) {
		case *logql.LabelFilterStage:
			continue
		case *logql.Drop:
			if dropsErrorLabelsOnly(s) {
				continue
			}
		}
		return 1 + k
	}
	return len(stages)
}

// columns returns the worker's columnar state.
func (w *logWorker) columns(x *logql.LogExpr) (*logCols, error) {
	if w.cols == nil {
		// The pipeline after the line filters before json, if any, to
		// its stages the columns decide (logPrefix).
		lf := leadingFilters(x.Pipeline, true)
		stages := x.Pipeline[lf.n:]
		stages = stages[:logPrefix(stages)]
		pipe := w.pipe
		if len(stages) != len(x.Pipeline) {
			var err error
			if pipe, err = stage.Compile(stages); err != nil {
				return nil, err
			}
		}
		jp, params := pipe.JSONParams() // logColumnar made sure of it, or of json without them
		w.cols = &logCols{
			cp:          &colPlanner{json: jp, rest: pipe.Tail(), unwrapParam: -1},
			dropsErrors: stagesDropErrors(stages, nil),
			whole:       !params || len(stages) != len(x.Pipeline)-lf.n,
			x:           x,
		}
		w.cols.leads = lf
		if lf.n > 0 {
			w.cols.lead = &rowSelection{lf: lf}
		}
		if !params {
			// The filters' labels read from the columns by a pipeline
			// that observes only them.
			pipe, err := stage.CompileObserving(stages, stage.ObservedBy(stages, nil))
			if err != nil {
				return nil, err
			}
			jf, _ := pipe.JSONFields()
			w.cols.cp = &colPlanner{named: true, fields: jf, rest: pipe.Tail(), unwrapParam: -1}
			return w.cols, nil
		}
		// Number filters decided on the columns' numbers drop the rows
		// they fail unread (range_pred.go); a row they pass is read. A
		// number filter keeps a row whose label does not convert (an
		// absent path gives ""), with an error: the errors must be
		// dropped after the last of them, as the numbers cannot say.
		if errorsDroppedLast(stages[1:]) {
			w.cols.cp.pred = newLogPredState(stages[1:], jp)
		}
	}
	return w.cols, nil
}

// startStream readies the state for a stream's blocks, whose rows also
// hold the clauses implied (the label filters' for the stream: a block
// read by columns holds no field out of its lines, whose value a filter
// could read instead).
func (lc *logCols) startStream(implied []store.Clause) {
	lc.none = unknown // its outcome holds for one stream
	lc.probeOn = false
	switch {
	case len(implied) == 0:
		lc.implied = nil
	case lc.implied == nil:
		lc.implied = &rowSelection{}
	}
	if lc.implied != nil {
		lc.implied.lf = lc.leads // its buffers kept
		lc.implied.lf.must = append(slices.Clip(lc.leads.must), implied...)
	}
}

// Rows the pipeline keeps are rare once rareRows rows are walked and
// fewer than one in rareShare of them is kept.
const (
	rareRows  = 4096
	rareShare = 64
)

// impliedAlways takes the implied clauses from a walk's first block: for
// the tests, whose walks are short.
var impliedAlways = false

// selection returns the selection of the block at hand's rows.
func (lc *logCols) selection() *rowSelection {
	if lc.implied != nil && (impliedAlways || lc.walked >= rareRows && lc.kept*rareShare < lc.walked) {
		return lc.implied
	}
	return lc.lead
}

// givesNothing reports whether the rows of a template with plan p (of
// stream ls) are all dropped: none of the parameters is found in them,
// the filters drop a row without them, and __error__="" drops one whose
// line is malformed.
func (lc *logCols) givesNothing(w *logWorker, ls record.Labels, p *tmplPlan) bool {
	if !lc.dropsErrors || !absentPlan(p) {
		return false
	}
	if lc.none == unknown {
		cp := lc.cp
		cp.values, cp.curNames = cp.values[:0], p.names
		for _, pp := range p.params {
			cp.values = append(cp.values, pp.value)
		}
		lc.none = knownOf(!lc.labels(w, ls, 0))
	}
	return lc.none == knownYes
}

// labels sets w.lb to a row's labels, from the parameters in cp.values,
// and reports whether the filters keep the row.
func (lc *logCols) labels(w *logWorker, ls record.Labels, t int64) bool {
	w.lb.Reset(ls)
	if cp := lc.cp; cp.named {
		cp.fields.Apply(w.lb, cp.curNames, cp.values)
	} else {
		cp.json.Apply(w.lb, cp.values)
	}
	_, ok := lc.cp.rest.Process(t, nil, w.lb)
	return ok
}

// block keeps the lines of a stored block's rows in [from, to] that the
// pipeline keeps, from the scan's start, until a row beyond the cutoff;
// keep takes a row's time and line, with its labels in w.lb.
func (w *logWorker) block(ev *evaluator, ls record.Labels, b *part.Block, from, to int64, cut *cutoff, keep func(t int64, line []byte) error) error {
	if cut.blockBeyond(b, from, to) {
		return errEnough
	}
	lc := w.cols
	swept, err := lc.sweeps(ev, from, to)
	if err != nil {
		return err
	}
	rs := lc.selection()
	if rs != nil || swept {
		// Rows selected or swept: when the lines kept leave only a few
		// rows to read, they are read one by one.
		if done, err := w.fewNewest(ev, ls, b, from, to, cut, keep); done || err != nil {
			return err
		}
	}
	if swept {
		if done, err := w.sweptBlock(ev, ls, b, from, to, cut, keep); done || err != nil {
			return err
		}
	}
	cp := lc.cp
	sel, some, err := rs.of(b) // the rows the line filters before json keep (nil: every row)
	if err != nil || !some {
		return err
	}
	// The walk keeps every column (StartAtEnd below).
	if err := cp.startBlock(b, false, func(p *tmplPlan) (bool, error) { return lc.givesNothing(w, ls, p), nil }); err != nil {
		return err
	}
	if cp.pred != nil {
		cp.pred.startStream(ls)
	}
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	// From the scan's start (newest first, or oldest), every column
	// kept (each line kept is rebuilt). The rows walked without the
	// implied clauses count towards taking them (once taken, the rows
	// they select are no sample of the rest).
	count := rs == nil || rs != lc.implied
	cur := &cp.cur
	var rw rowWalk
	for rw.start(b, cur, cut.backward); rw.next(); {
		k, tm := rw.k, rw.tm
		t := b.RowTime(k)
		if t < from || t > to {
			continue
		}
		if cut.beyond(t) {
			return nil // the block's farther rows come too late too
		}
		if sel != nil && sel[k>>6]>>(k&63)&1 == 0 {
			continue
		}
		if err := ev.scanned(&w.tally, nil); err != nil {
			return err
		}
		if count {
			lc.walked++
		}
		p := &cp.plans[tm]
		if lc.givesNothing(w, ls, p) {
			continue
		}
		if cp.pred != nil {
			if decided, pass, _, _, err := cp.numVerdict(b, tm, t); err != nil {
				return err
			} else if decided && !pass {
				continue
			}
		}
		ok, err := cp.rowValues(b, tm, t)
		if err != nil {
			return err
		}
		if ok && !lc.labels(w, ls, t) {
			continue
		}
		if lc.line, err = b.AppendLine(lc.line[:0], tm, cur, t); err != nil {
			return err
		}
		line := lc.line
		if !ok || lc.whole { // the row path: the whole pipeline on the line
			w.lb.Reset(ls)
			var kept bool
			if line, kept = w.pipe.Process(t, line, w.lb); !kept {
				continue
			}
		}
		if count {
			lc.kept++
		}
		if err := keep(t, line); err != nil {
			return err
		}
	}
	return nil
}

// maxFewNewest is the most rows of a block nearer than the cutoff that
// fewNewest reads one by one: each costs its line made and the whole
// pipeline (a few microseconds), where the block's selection and plans
// cost its hundreds of templates and thousands of rows once.
const maxFewNewest = 128

// fewNewest keeps the lines of a stored block's rows in [from, to] that
// the pipeline keeps, from the scan's start (newest first, or oldest), as
// the row path makes them (the line rebuilt, the whole pipeline run), when
// the lines already kept leave at most maxFewNewest of its rows near
// enough to be kept: a log query across many streams has its lines after
// the first blocks, and each later block only its few nearest rows to
// offer, which selecting and planning the whole block for cost far more
// (app-newest-timeout-errors: a block of 6,000 rows for each of 328
// streams, a dozen of them newer than the 100th line kept). done says
// whether it did.
func (w *logWorker) fewNewest(ev *evaluator, ls record.Labels, b *part.Block, from, to int64, cut *cutoff, keep func(t int64, line []byte) error) (done bool, err error) {
	if cut == nil || !cut.full.Load() {
		return false, nil
	}
	if err := b.DecodeTimes(); err != nil {
		return true, err
	}
	// A block's rows are in time order: those nearer than the bound and
	// in [from, to] are [lo, hi).
	lo, hi := cut.nearRows(b, from, to)
	if hi-lo > maxFewNewest {
		return false, nil
	}
	var rw rowWalk
	for rw.start(b, &w.cur, cut.backward); rw.next(); {
		k := rw.k
		if k < lo || k >= hi {
			if cut.backward == (k < lo) {
				return true, nil // past the near rows
			}
			continue
		}
		t := b.RowTime(k)
		if cut.beyond(t) {
			return true, nil // the block's farther rows come too late too
		}
		if err := ev.scanned(&w.tally, nil); err != nil {
			return true, err
		}
		if err := w.wholeRow(ls, b, rw.tm, t, keep); err != nil {
			return true, err
		}
	}
	return true, nil
}

// rowWalk walks a block's rows from a scan's start, newest first
// (backward) or oldest first, with its cursor at each row's values.
type rowWalk struct {
	b        *part.Block
	cur      *part.Cursor
	backward bool
	k, tm    int // the row at hand and its template
}

// start readies the walk of block b's rows with cursor cur, before the
// first row.
func (rw *rowWalk) start(b *part.Block, cur *part.Cursor, backward bool) {
	*rw = rowWalk{b: b, cur: cur, backward: backward, k: -1, tm: -1}
	if backward {
		cur.StartAtEnd(b, nil)
		rw.k = b.NumRows()
	} else {
		cur.Start(b, nil)
	}
}

// next moves to the next row (k, tm), the cursor at its values; false
// past the last.
func (rw *rowWalk) next() bool {
	if rw.backward {
		if rw.k == 0 {
			return false
		}
		rw.k--
		rw.tm = rw.b.RowTemplate(rw.k)
		rw.cur.Back(rw.tm)
		return true
	}
	if rw.tm >= 0 {
		rw.cur.Next(rw.tm)
	}
	if rw.k+1 >= rw.b.NumRows() {
		return false
	}
	rw.k++
	rw.tm = rw.b.RowTemplate(rw.k)
	return true
}

// wholeRow runs the row of template tm at w.cur (time t) of block b
// through the whole pipeline on its line, rebuilt, as the row path
// runs it, and keeps its line if the pipeline does.
func (w *logWorker) wholeRow(ls record.Labels, b *part.Block, tm int, t int64, keep func(t int64, line []byte) error) error {
	var err error
	if w.line, err = b.AppendLine(w.line[:0], tm, &w.cur, t); err != nil {
		return err
	}
	w.lb.Reset(ls)
	line, kept := w.pipe.Process(t, w.line, w.lb)
	if !kept {
		return nil
	}
	return keep(t, line)
}

// selectedBlock keeps the lines of a stored block's rows in [from, to]
// that the line filters keep (w.sel, the whole pipeline), from the
// scan's start, until a row beyond the cutoff: the rows are selected in
// the block's columns, and only the lines kept are made.
func (w *logWorker) selectedBlock(ev *evaluator, ls record.Labels, b *part.Block, from, to int64, cut *cutoff, keep func(t int64, line []byte) error) error {
	if cut.blockBeyond(b, from, to) {
		return errEnough
	}
	if done, err := w.fewNewest(ev, ls, b, from, to, cut, keep); done || err != nil {
		return err
	}
	sel, some, err := w.sel.of(b)
	if err != nil || !some {
		return err
	}
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	var rw rowWalk
	for rw.start(b, &w.cur, cut.backward); rw.next(); {
		k, tm := rw.k, rw.tm
		if t := b.RowTime(k); t >= from && t <= to && sel[k>>6]>>(k&63)&1 != 0 {
			if cut.beyond(t) {
				return nil // the block's farther rows come too late too
			}
			if err := ev.scanned(&w.tally, nil); err != nil {
				return err
			}
			if w.line, err = b.AppendLine(w.line[:0], tm, &w.cur, t); err != nil {
				return err
			}
			w.lb.Reset(ls)
			if err := keep(t, w.line); err != nil {
				return err
			}
		}
	}
	return nil
}

// errorsDroppedLast reports whether a stage after the last that holds a
// number filter drops every row with an error (`| __error__=""`).
func errorsDroppedLast(stages []logql.Stage) bool {
	drops := false
	for _, st := range stages {
		if lf, ok := st.(*logql.LabelFilterStage); ok {
			switch {
			case holdsNumberFilter(lf.Filter):
				drops = false
			case dropsErrorRows(lf.Filter):
				drops = true
			}
		}
	}
	return drops
}

// holdsNumberFilter reports whether f is or holds a number filter.
func holdsNumberFilter(f logql.LabelFilter) bool {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		return holdsNumberFilter(f.Left) || holdsNumberFilter(f.Right)
	case *logql.LabelFilterNumber:
		return true
	}
	return false
}
