package query

import (
	"fmt"
	"math"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store/part"
)

// A sweep counts a stored block's rows on the columnar path without
// walking them: when the range aggregation counts rows (no unwrap) of
// one json parameter, every row of the block falls in the same windows,
// every template is planned (the values its rows must have well-formed
// are checked in one walk), and the parameter's values sit in constant or
// dictionary columns that hold nothing else. The outcome of each distinct value (the series it counts
// in, or none) is then worked out once and added for as many rows as hold
// it, read from the column's value ids; a template whose rows all give
// the parameter the same way adds its row count. Rows whose lines are
// stored whole still take the row path, one by one.

// sweepState is a worker's scratch for sweeps.
type sweepState struct {
	cols   []int       // the columns that hold the parameter
	ctx    []jsonPlace // per column: where the parameter's values are, if it holds them
	param  []int       // per column: of those, the parameter's
	consts []int       // templates whose rows all give the parameter alike
	ids    []idCounts
	adds   []sweepAdd
	one    []stage.ParamValue
	index  []int  // uncountRaw: per column, 1 + its place in cols, or 0
	uses   []int  // per template and parameter column
	raw    []bool // per template
	cur    []int  // per parameter column
	tcol   []int  // per template, the column of its rows' values of the parameter, or -1
	// sweepTimed's: the runs of the block's outcomes, per column and
	// value id the run of its outcome, per template its run or column,
	// and per column its value ids.
	runs    []onesRun
	colRun  [][256]int32
	tmplRun []int32
	ids2    [][]byte
	// checkRows: per column, whether a row checks it
	checked []bool
	// each: per column of cols, whether its values have no ids (a
	// string column): each is counted by its key (batchEach).
	each    []bool
	eachVal []stage.ParamValue // batchEach's row values
}

type idCounts struct{ counts, first [256]int }

type sweepAdd struct {
	s *rangeSeries
	n int
}

// sweep adds the samples of block b (of stream ls) if it can, and
// reports whether it did; when it did not, it added nothing.
func (w *rangeWorker) sweep(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) (bool, error) {
	cp := w.cols
	if !cp.memoOn || w.op != opSum || cp.named && cp.single == nil || !cp.named && cp.json.Len() != 1 {
		return false, nil
	}
	cp.curNames = cp.single // the one parameter's name, json without parameters
	lo, hi := b.TimeRange()
	if hi < from || lo > to {
		return true, nil
	}
	// timed: the rows do not all count in the same windows (a range
	// query's steps over the block): each is added at its time.
	timed := lo < from || hi > to || !w.sameWindows(lo, hi)
	sw := &cp.sweep
	ncols := b.NumColumns()
	sw.cols, sw.consts = sw.cols[:0], sw.consts[:0]
	sw.ctx = growClear(sw.ctx, ncols)
	sw.param = growClear(sw.param, ncols)
	raws, walk := 0, false
	sw.tcol = grown(sw.tcol, b.NumTemplates())
	for t := range b.NumTemplates() {
		sw.tcol[t] = -1
		n := b.TemplateRows(t)
		if n == 0 {
			continue
		}
		p := &cp.plans[t]
		skip, err := w.givesNothing(ls, p)
		if err != nil {
			return false, err
		}
		if skip {
			continue // no row of it counts: its values are neither the parameter's nor checked
		}
		if !p.ok && b.TemplateRaw(t) {
			if timed {
				return false, nil
			}
			raws += n // lines stored whole: walked below, and their values uncounted
			continue
		}
		if !p.ok {
			return false, nil
		}
		// Values each row must check (their columns are not all
		// well-formed, startBlock found): checked row by row below.
		walk = walk || len(p.checks) > 0
		pp := &p.params[0]
		if pp.hole < 0 {
			sw.consts = append(sw.consts, t)
			continue
		}
		_, holes := b.TemplateLine(t)
		col := b.SlotColumn(t, holes[pp.hole])
		ctx := placeOutside
		if pp.inString {
			ctx = placeInString
		}
		switch sw.ctx[col] {
		case placeNone:
			sw.ctx[col] = ctx
			sw.cols = append(sw.cols, col)
		case ctx:
		default:
			return false, nil // read both inside and outside strings
		}
		sw.param[col] += n
		sw.tcol[t] = col
	}
	sw.ids = grown(sw.ids, len(sw.cols))
	sw.each = growClear(sw.each, len(sw.cols))
	keyed := !timed && cp.keys != nil && cp.keys.on
	for i, col := range sw.cols {
		// A block's rows use exactly its columns' values (the part
		// checks it as it reads them): the column holds the
		// parameter's values alone when they are all its values.
		if b.ColumnValues(col) != sw.param[col] {
			return false, nil // the column holds other values too
		}
		ic := &sw.ids[i]
		ok, err := b.CountIDs(col, &ic.counts, &ic.first)
		if err != nil {
			return false, err
		}
		if !ok {
			if !keyed {
				return false, nil
			}
			// Values without ids (a host, a user id): each counts by
			// its key, as a row's would, in the column's order.
			sw.each[i] = true
			continue
		}
	}
	if walk {
		if ok, err := w.checkRows(b, lo); err != nil || !ok {
			return false, err
		}
	}
	if raws > 0 {
		sw.uncountRaw(b)
	}

	// Every value first, so that none can send the block back to the row
	// path once a series exists; then the outcomes.
	cp.arena.reset()
	cp.values = cp.values[:0]
	for i, col := range sw.cols {
		if sw.each[i] {
			continue
		}
		ic := &sw.ids[i]
		for id, n := range ic.counts {
			if n == 0 {
				continue
			}
			pv, ok, err := cp.holeValue(b, col, ic.first[id], lo, sw.ctx[col] == placeInString)
			if err != nil || !ok {
				return false, err
			}
			cp.values = append(cp.values, pv)
		}
	}
	values := cp.values
	// The values without ids, each batched by its key, held until the
	// others are counted too.
	for i, col := range sw.cols {
		if sw.each[i] {
			if ok, err := w.batchEach(b, col, lo); err != nil || !ok {
				cp.batch.drop()
				cp.values = values
				return false, err
			}
		}
	}
	cp.values = values
	defer func() { cp.batch.hold = false }() // flushKeys counts what an error leaves
	sw.adds = sw.adds[:0]
	one := func(pv stage.ParamValue, n int) error {
		cp.values = append(sw.one[:0], pv)
		s, err := w.columnSeries(ls, lo)
		sw.one, cp.values = cp.values, values
		if s != nil {
			sw.adds = append(sw.adds, sweepAdd{s, n})
		}
		return err
	}
	if timed {
		return true, w.sweepTimed(ev, b, values, one, from, to)
	}
	k := 0
	for i := range sw.cols {
		if sw.each[i] {
			continue
		}
		for _, n := range sw.ids[i].counts {
			if n == 0 {
				continue
			}
			if err := one(values[k], n); err != nil {
				return true, err
			}
			k++
		}
	}
	for _, t := range sw.consts {
		if err := one(cp.plans[t].params[0].value, b.TemplateRows(t)); err != nil {
			return true, err
		}
	}
	if cp.batch.hold {
		cp.batch.hold = false
		w.flushKeys()
	}
	for _, a := range sw.adds {
		w.addN(a.s, lo, a.n)
	}
	swept := int64(b.NumRows() - raws)
	w.tally.rows += swept
	w.tally.columnar += swept
	w.tally.swept += swept
	if raws > 0 {
		return true, w.rawRows(ev, ls, b, lo)
	}
	return true, ev.flush(&w.tally)
}

// batchEach puts each value of column col of block b, the parameter's
// in every row that holds one, in the key batch at time t, held
// (keyRow): the sweep's rows all count in the same windows, so that
// which row holds which value matters not. It reports false when a value
// does not read as the parameter (holeValue) or cannot be batched; the
// caller then drops the batch.
func (w *rangeWorker) batchEach(b *part.Block, col int, t int64) (bool, error) {
	cp := w.cols
	sw := &cp.sweep
	inString := sw.ctx[col] == placeInString
	cp.batch.hold = true
	mark := len(cp.arena.b) // the other columns' values are before
	for vi := range b.ColumnValues(col) {
		pv, ok, err := cp.holeValue(b, col, vi, t, inString)
		if err != nil || !ok {
			return false, err
		}
		sw.eachVal = append(sw.eachVal[:0], pv)
		cp.values = sw.eachVal
		if !w.keyRow(t, 1) {
			return false, nil
		}
		cp.arena.b = cp.arena.b[:mark] // the batch copied the key
	}
	return true, nil
}

// sweepTimed is the end of sweep for a block whose rows do not all count
// in the same windows: each distinct value's outcome (one) is worked out
// once, then each row is added at its time to the series of its value,
// found by its column's value ids in row order, or of its template's
// constant. Every template with rows is planned (none raw).
func (w *rangeWorker) sweepTimed(ev *evaluator, b *part.Block, values []stage.ParamValue, one func(stage.ParamValue, int) error, from, to int64) error {
	cp := w.cols
	sw := &cp.sweep
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	// Outcomes: per column its values' (by id), then per constant
	// template its own, each the index of a run in sw.runs (-1: none).
	sw.runs = sw.runs[:0]
	outcome := func(pv stage.ParamValue) (int32, error) {
		sw.adds = sw.adds[:0]
		if err := one(pv, 0); err != nil || len(sw.adds) == 0 {
			return -1, err
		}
		sw.runs = append(sw.runs, onesRun{s: sw.adds[0].s})
		return int32(len(sw.runs) - 1), nil
	}
	sw.colRun = grown(sw.colRun, len(sw.cols))
	k := 0
	for i := range sw.cols {
		for id, n := range sw.ids[i].counts {
			sw.colRun[i][id] = -1
			if n == 0 {
				continue
			}
			r, err := outcome(values[k])
			if err != nil {
				return err
			}
			sw.colRun[i][id] = r
			k++
		}
	}
	// Per template: the run of its constant, or 1 + the index in
	// sw.cols of the column of its value (negative), or none.
	nt := b.NumTemplates()
	sw.tmplRun = grown(sw.tmplRun, nt)
	for t := range nt {
		sw.tmplRun[t] = -1
	}
	for _, t := range sw.consts {
		r, err := outcome(cp.plans[t].params[0].value)
		if err != nil {
			return err
		}
		sw.tmplRun[t] = r
	}
	slot := growClear(sw.index, b.NumColumns())
	sw.index = slot
	for i, col := range sw.cols {
		slot[col] = i + 1
	}
	for t, col := range sw.tcol[:nt] {
		if col >= 0 {
			sw.tmplRun[t] = int32(-1 - slot[col])
		}
	}
	sw.ids2 = grown(sw.ids2, len(sw.cols))
	for i, col := range sw.cols {
		ids, ok := b.ValueIDs(col)
		if !ok {
			return fmt.Errorf("columnar read: column %d of a sweep has no value ids", col)
		}
		sw.ids2[i] = ids
	}
	cur := growClear(sw.cur, len(sw.cols))
	sw.cur = cur
	rows := int64(0)
	for k := range b.NumRows() {
		r := sw.tmplRun[b.RowTemplate(k)]
		if r < -1 { // a value of column -2-r
			i := -2 - r
			id := 0
			if ids := sw.ids2[i]; ids != nil {
				id = int(ids[cur[i]])
			}
			cur[i]++
			r = sw.colRun[i][id]
		}
		t := b.RowTime(k)
		if t < from || t > to {
			continue
		}
		rows++
		if r >= 0 {
			w.one(&sw.runs[r], t)
		}
	}
	for i := range sw.runs {
		w.flushOnes(&sw.runs[i])
	}
	w.tally.rows += rows
	w.tally.columnar += rows
	w.tally.swept += rows
	return ev.flush(&w.tally)
}

// checkRows checks the values that the rows of a block must have
// well-formed (tmplPlan.check) in one walk of the rows with a cursor that
// keeps only the columns checked.
func (w *rangeWorker) checkRows(b *part.Block, t int64) (bool, error) {
	cp := w.cols
	nt := b.NumTemplates()
	sw := &cp.sweep
	checked := growClear(sw.checked, b.NumColumns())
	sw.checked = checked
	for tm := range nt {
		if p := &cp.plans[tm]; p.ok && len(p.checks) > 0 && !cp.knownNothing(p) {
			_, holes := b.TemplateLine(tm)
			for _, h := range p.checks {
				checked[b.SlotColumn(tm, holes[h])] = true
			}
		}
	}
	cp.cur.Start(b, checked)
	for k := range b.NumRows() {
		tm := b.RowTemplate(k)
		if !cp.cur.Moves(tm) {
			continue // it uses no checked column: it has no check
		}
		if p := &cp.plans[tm]; p.ok && !cp.knownNothing(p) {
			if good, err := cp.checksHold(b, tm, p, t); err != nil || !good {
				return false, err
			}
		}
		cp.cur.Next(tm)
	}
	return true, nil
}

// uncountRaw takes the values of raw rows (which take the row path) out
// of the parameter columns' id counts: a walk over the rows that keeps a
// cursor per parameter column.
func (sw *sweepState) uncountRaw(b *part.Block) {
	nc, nt := len(sw.cols), b.NumTemplates()
	index := growClear(sw.index, b.NumColumns())
	for i, col := range sw.cols {
		index[col] = i + 1
	}
	sw.index = index
	uses := growClear(sw.uses, nt*nc) // per template and parameter column: the values a row takes
	sw.raw = growClear(sw.raw, nt)
	for t := range nt {
		sw.raw[t] = b.TemplateRaw(t)
		for s := range b.TemplateSlots(t) {
			if i := index[b.SlotColumn(t, s)]; i > 0 {
				uses[t*nc+i-1]++
			}
		}
	}
	sw.uses = uses
	cur := growClear(sw.cur, nc)
	sw.cur = cur
	for k := range b.NumRows() {
		t := b.RowTemplate(k)
		u := uses[t*nc : (t+1)*nc]
		if sw.raw[t] {
			for i, n := range u {
				for j := range n {
					sw.ids[i].counts[b.ValueID(sw.cols[i], cur[i]+j)]--
				}
			}
		}
		for i, n := range u {
			cur[i] += n
		}
	}
}

// rawRows runs the rows of a block's raw templates, whose lines are
// stored whole, on the row path. The block's rows all count in the same
// windows, and the stages of a columnar pipeline (json, label filters)
// never read a row's time: each row is given time t, and the block's
// times are never decoded.
func (w *rangeWorker) rawRows(ev *evaluator, ls record.Labels, b *part.Block, t int64) error {
	cp := w.cols
	lci, vi := b.LineColumn(), 0
	for k := range b.NumRows() {
		if !b.TemplateRaw(b.RowTemplate(k)) {
			continue
		}
		line, out, err := b.Value(lci, vi, t, cp.line[:0])
		cp.line = out
		if err != nil {
			return err
		}
		vi++
		if err := ev.scanned(&w.tally, nil); err != nil {
			return err
		}
		if err := w.row(ev, ls, t, line, nil, nil); err != nil {
			return err
		}
	}
	return ev.flush(&w.tally)
}

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
		n := float64(r.n)
		for k := r.lo; k <= r.hi; k++ {
			r.s.n[k] += n
			r.s.v[k] += n
		}
		r.n = 0
	}
}

// addN adds n samples of value 1 at time t: n rows counted (opSum).
func (w *rangeWorker) addN(s *rangeSeries, t int64, n int) {
	lo, hi := w.windows(t)
	for k := lo; k <= hi; k++ {
		s.n[k] += float64(n)
		s.v[k] += float64(n)
	}
}

// jsonPlace is where a column's values sit in the lines of a json
// parameter's rows.
type jsonPlace int8

const (
	placeNone     jsonPlace = iota // it holds none of the parameter's values
	placeOutside                   // outside a JSON string: whole JSON values
	placeInString                  // inside a JSON string: string content
)
