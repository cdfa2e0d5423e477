package query

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store/part"
)

// Label filters on json labels, decided a dictionary entry at a time:
// `sum by (host) (count_over_time({...} | json m="http.method",
// p="http.path" | m="DELETE" | p="/api/v1/orders" [1h]))`, or the same
// with json without parameters. When the filters after the json stage
// are and-ed comparisons (of strings; of numbers when a filter
// __error__="" follows the last, so that a value that is no number
// fails), each of one label the stage sets, a row
// passes exactly when each of those labels' values passes its own
// comparisons; and when the grouping keeps none of the stage's labels, a
// passing row counts in its stream's one series. Each label's verdict is
// then worked out once per distinct value of the columns that hold it (a
// dictionary entry, a constant), and a block's rows are counted in one
// pass over their template ids and the columns' value ids: no cursor, no
// row's key, no memo (filterSweep).

// strState is a range worker's state for string filters decided per
// value; nil when the query's filters are not of that form.
type strState struct {
	labels []string          // the labels the filters read, distinct
	pipes  []*stage.Pipeline // per label, its filters
	params []int             // json with parameters: per label, its parameter
	nparam int               // json with parameters: how many there are

	on     bool         // the stream at hand has no label of those names
	series *rangeSeries // the stream's series, once made

	// Per block.
	colSlot []int // per column, 1 + its place in slots, or 0
	slots   []strSlot
	verds   []strVerdict
	tmpls   []strTmpl
	uses    []strUse  // the templates' uses, each template's a run
	moves   []strMove // the templates' moves, each template's a run
	vi      []int     // per slot, the next row's first value
	vals    []stage.ParamValue
	one     [1]stage.ParamValue
	oneName [1]string
	counts  [256]int
	first   [256]int
	fast    []uint64        // countTwo's templates, packed (twoCount)
	pads    [2][]byte       // countTwo's slots' ids, padded
	hits    []int32         // passing's rows
	marks   []uint64        // countTwo's rows that pass, a bit each
	flat    *[1 << 16]uint8 // countTwo's table: 256 a row, one every value passes, one none does, then the verdicts
}

// strSlot is a column that holds a label the filters read.
type strSlot struct {
	col int
	ids []byte // per value, its id; nil for a constant column
}

// strVerdict is whether each value id of a slot's column passes one
// label's filters, read in or out of a JSON string.
type strVerdict struct {
	slot, label int
	inString    bool
	pass        [256]bool
}

// strTmpl is a template's part of a sweep.
type strTmpl struct {
	alive      bool // its rows may pass: no label it lacks fails
	uses       [2]int32
	movesStart int32
	movesEnd   int32
}

// strUse is a label of a template read from a column: value vi+rank of
// the slot's column, tested by verds[verdict].
type strUse struct{ slot, rank, verdict int }

// strMove is how many values of a slot's column a row of a template has.
type strMove struct{ slot, n int }

// newStrState returns the state for the query of w when its filters
// after the json stage (jp with parameters, or json without them, whose
// observed labels are observed) are and-ed string comparisons of labels
// the stage sets, and its grouping keeps none of them; else nil.
func newStrState(w *rangeWorker, jp stage.JSONParams, params bool, observed []string) *strState {
	if w.x.Grouping == nil && w.sumBy == nil || w.x.Range.Unwrap != nil {
		return nil
	}
	set := observed
	if params {
		names, ok := distinctParamNames(jp)
		if !ok {
			return nil
		}
		set = names
	}
	if keepsAny(set, w.x.Grouping, w.sumBy) {
		return nil
	}
	byLabel := map[string][]logql.LabelFilter{}
	var labels []string
	leaf := func(n string, f logql.LabelFilter) bool {
		if !slices.Contains(set, n) || strings.HasSuffix(n, stage.ExtractedSuffix) {
			return false
		}
		if _, ok := byLabel[n]; !ok {
			labels = append(labels, n)
		}
		byLabel[n] = append(byLabel[n], f)
		return true
	}
	// A number filter sets an error on a value that is no number: the
	// row is dropped when a filter __error__="" comes after the last
	// number filter, and the verdicts count an error as a failure.
	stages := w.x.Range.Log.Pipeline[1:]
	numbers := errorsDroppedLast(stages)
	var leaves func(f logql.LabelFilter) bool
	leaves = func(f logql.LabelFilter) bool {
		switch f := f.(type) {
		case *logql.LabelFilterBinary:
			return f.And && leaves(f.Left) && leaves(f.Right)
		case *logql.LabelFilterString:
			n := f.Matcher.Name
			if n == stage.ErrorLabel && f.Matcher.Type == logql.MatchEqual && f.Matcher.Value == "" {
				return true // the templates swept have no errors but the number filters'
			}
			return leaf(n, f)
		case *logql.LabelFilterNumber:
			return numbers && leaf(f.Name, f)
		}
		return false
	}
	for _, s := range stages {
		f, ok := s.(*logql.LabelFilterStage)
		if !ok || !leaves(f.Filter) {
			return nil
		}
	}
	if len(labels) == 0 {
		return nil
	}
	ss := &strState{labels: labels}
	for _, l := range labels {
		p, err := stage.CompileFilters(byLabel[l])
		if err != nil {
			return nil
		}
		ss.pipes = append(ss.pipes, p)
		if params {
			ss.params = append(ss.params, slices.Index(set, l))
		}
	}
	if params {
		ss.nparam = jp.Len()
	}
	return ss
}

// startStream readies the state for a stream's rows.
func (ss *strState) startStream(ls record.Labels) {
	ss.series = nil
	ss.on = !slices.ContainsFunc(ss.labels, func(n string) bool { _, ok := ls.Get(n); return ok })
}

// filterSweep adds the samples of block b's rows that pass the string
// filters without walking them with a cursor, and reports whether it
// did; when it did not, it added nothing. Every template with rows is
// planned with no value to check, each label the filters read either
// absent or in a constant or dictionary column. When every row counts in
// the same windows the rows that pass are counted; otherwise (a range
// query's steps over a block) each passing row is added at its time.
func (w *rangeWorker) filterSweep(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) (bool, error) {
	cp := w.cols
	ss := cp.strs
	if ss == nil || !ss.on || w.op != opSum {
		return false, nil
	}
	lo, hi := b.TimeRange()
	if hi < from || lo > to {
		return true, nil
	}
	timed := lo < from || hi > to || !w.sameWindows(lo, hi)
	ok, err := ss.plan(w, ls, b, hi)
	if err != nil || !ok {
		return false, err
	}
	if _, err := w.streamSeries(ls, &ss.series); err != nil {
		return true, err
	}
	rows := int64(b.NumRows())
	if timed {
		if err := b.DecodeTimes(); err != nil {
			return true, err
		}
		rows = 0
		r := onesRun{s: ss.series}
		add := func(k int) {
			if t := b.RowTime(k); t >= from && t <= to {
				w.one(&r, t)
			}
		}
		if _, ok := ss.countTwo(b, true); ok {
			for i, word := range ss.marks {
				for ; word != 0; word &= word - 1 {
					add(i*64 + bits.TrailingZeros64(word))
				}
			}
		} else {
			ss.hits = ss.passing(b, ss.hits[:0])
			for _, k := range ss.hits {
				add(int(k))
			}
		}
		w.flushOnes(&r)
		if lo >= from && hi <= to {
			rows = int64(b.NumRows())
		} else {
			for k := range b.NumRows() {
				if t := b.RowTime(k); t >= from && t <= to {
					rows++
				}
			}
		}
	} else if passed := ss.count(b); passed > 0 {
		w.addN(ss.series, hi, passed)
	}
	w.tally.rows += rows
	w.tally.columnar += rows
	w.tally.swept += rows
	return true, ev.flush(&w.tally)
}

// plan works out, for block b of stream ls (its rows at time t), each
// template's uses and moves and each column's verdicts; false when a
// template with rows cannot be swept.
func (ss *strState) plan(w *rangeWorker, ls record.Labels, b *part.Block, t int64) (bool, error) {
	cp := w.cols
	ss.colSlot = growClear(ss.colSlot, b.NumColumns())
	ss.slots, ss.verds, ss.uses, ss.moves = ss.slots[:0], ss.verds[:0], ss.uses[:0], ss.moves[:0]
	ss.tmpls = grown(ss.tmpls, b.NumTemplates())
	// The labels' verdicts when absent, the same for every template.
	var absent [8]bool
	if len(ss.labels) > len(absent) {
		return false, nil
	}
	for li := range ss.labels {
		absent[li] = ss.passes(w, ls, li, "", stage.ParamValue{})
	}
	for ti := range b.NumTemplates() {
		tm := &ss.tmpls[ti]
		*tm = strTmpl{}
		if b.TemplateRows(ti) == 0 {
			continue
		}
		p := &cp.plans[ti]
		tm.alive = !p.nothing
		if tm.alive {
			if !p.ok || len(p.checks) > 0 || b.TemplateRaw(ti) || !cp.named && len(p.params) != ss.nparam {
				return false, nil
			}
			_, holes := b.TemplateLine(ti)
			tm.uses[0] = int32(len(ss.uses))
			for li := range ss.labels {
				j := -1
				name := ss.labels[li]
				if cp.named {
					j = slices.Index(p.names, name)
				} else {
					j = ss.params[li]
				}
				if j < 0 || j >= len(p.params) {
					tm.alive = tm.alive && absent[li]
					continue
				}
				pp := &p.params[j]
				if pp.hole < 0 {
					if pp.value.Found {
						return false, nil // a value in the gaps
					}
					tm.alive = tm.alive && absent[li]
					continue
				}
				si := holes[pp.hole]
				col := b.SlotColumn(ti, si)
				slot, ok := ss.slot(b, col)
				if !ok {
					return false, nil
				}
				v, err := ss.verdict(w, ls, b, slot, li, name, pp.inString, t)
				if err != nil || v < 0 {
					return false, err
				}
				ss.uses = append(ss.uses, strUse{slot: slot, rank: b.SlotRank(ti, si), verdict: v})
			}
			tm.uses[1] = int32(len(ss.uses))
		}
	}
	// Every template's moves in the slots' columns: a template that
	// fails still moves past its values. Each use's rank must fall
	// within its template's values of the column, and the columns'
	// values must be the rows' (the part checks it; a sweep trusts
	// nothing it did not count).
	ss.vi = growClear(ss.vi, len(ss.slots))
	for ti := range b.NumTemplates() {
		tm := &ss.tmpls[ti]
		tm.movesStart = int32(len(ss.moves))
		rows := b.TemplateRows(ti)
		if rows > 0 && len(ss.slots) > 0 {
			for _, col := range b.SlotColumns(ti) {
				slot := ss.colSlot[col] - 1
				if slot < 0 {
					continue
				}
				k := int(tm.movesStart)
				for k < len(ss.moves) && ss.moves[k].slot != slot {
					k++
				}
				if k == len(ss.moves) {
					ss.moves = append(ss.moves, strMove{slot: slot})
				}
				ss.moves[k].n++
			}
		}
		tm.movesEnd = int32(len(ss.moves))
		for _, m := range ss.moves[tm.movesStart:tm.movesEnd] {
			ss.vi[m.slot] += m.n * rows
		}
		for _, u := range ss.uses[tm.uses[0]:tm.uses[1]] {
			if n := ss.moveOf(tm, u.slot); u.rank >= n {
				return false, nil
			}
		}
	}
	for s, sl := range ss.slots {
		if ss.vi[s] != b.ColumnValues(sl.col) || sl.ids != nil && len(sl.ids) != ss.vi[s] {
			return false, nil
		}
	}
	return true, nil
}

// moveOf returns how many values of slot's column a row of template tm has.
func (ss *strState) moveOf(tm *strTmpl, slot int) int {
	for _, m := range ss.moves[tm.movesStart:tm.movesEnd] {
		if m.slot == slot {
			return m.n
		}
	}
	return 0
}

// slot returns the slot of column col, made at its first use: false
// when the column is neither a constant nor a dictionary.
func (ss *strState) slot(b *part.Block, col int) (int, bool) {
	if s := ss.colSlot[col]; s > 0 {
		return s - 1, true
	}
	ids, ok := b.ValueIDs(col)
	if !ok {
		return 0, false
	}
	ss.slots = append(ss.slots, strSlot{col: col, ids: ids})
	ss.colSlot[col] = len(ss.slots)
	return len(ss.slots) - 1, true
}

// verdict returns the index in verds of whether each value id of slot's
// column passes label li's filters, read in or out of a string (worked
// out once per block); -1 when a value is not what json reads as a
// label.
func (ss *strState) verdict(w *rangeWorker, ls record.Labels, b *part.Block, slot, li int, name string, inString bool, t int64) (int, error) {
	for i := range ss.verds {
		if v := &ss.verds[i]; v.slot == slot && v.label == li && v.inString == inString {
			return i, nil
		}
	}
	sl := ss.slots[slot]
	ss.verds = append(ss.verds, strVerdict{slot: slot, label: li, inString: inString})
	v := &ss.verds[len(ss.verds)-1]
	cp := w.cols
	if ok, err := b.CountIDs(sl.col, &ss.counts, &ss.first); err != nil || !ok {
		return -1, err
	}
	for id, n := range ss.counts {
		if n == 0 {
			continue
		}
		pv, ok, err := cp.holeValue(b, sl.col, ss.first[id], t, inString)
		if err != nil || !ok {
			return -1, err
		}
		v.pass[id] = ss.passes(w, ls, li, name, pv)
	}
	return len(ss.verds) - 1, nil
}

// passes reports whether value pv of label li (set by the json field
// name, for json without parameters) passes the label's filters, for a
// row of stream ls.
func (ss *strState) passes(w *rangeWorker, ls record.Labels, li int, name string, pv stage.ParamValue) bool {
	cp := w.cols
	w.lb.Reset(ls)
	if cp.named {
		ss.oneName[0], ss.one[0] = name, pv
		cp.fields.Apply(w.lb, ss.oneName[:], ss.one[:])
	} else {
		ss.vals = growClear(ss.vals, ss.nparam)
		ss.vals[ss.params[li]] = pv
		cp.json.Apply(w.lb, ss.vals)
	}
	_, ok := ss.pipes[li].Process(0, nil, w.lb)
	return ok && !w.lb.HasError()
}

// count returns how many of block b's rows pass, planned by plan.
func (ss *strState) count(b *part.Block) int {
	if n, ok := ss.countAligned(b); ok {
		return n
	}
	if n, ok := ss.countTwo(b, false); ok {
		return n
	}
	ss.hits = ss.passing(b, ss.hits[:0])
	return len(ss.hits)
}

// countTwo is passing's count without a branch per row, for blocks of
// at most two slots whose templates read each at most once. A template's
// part is packed in a word (twoCount); a template that reads no value of a
// slot tests value 0 of its run with the table row every value passes,
// and one whose rows cannot pass with the row none does, so that every
// row does the same loads. The slots' ids are copied with 256 zeros
// after them (a rank is at most 255), so no read needs clamping.
//
// With mark, it also sets a bit per row that passes in ss.marks.
func (ss *strState) countTwo(b *part.Block, mark bool) (int, bool) {
	if len(ss.slots) > 2 || len(ss.verds) > 254 {
		return 0, false
	}
	ss.fast = grown(ss.fast, b.NumTemplates())
	if ss.flat == nil {
		ss.flat = new([1 << 16]uint8)
		for i := range ss.flat[:256] {
			ss.flat[i] = 1 // row 0: every value passes; row 1: none does
		}
	}
	for vi := range ss.verds {
		for id, ok := range ss.verds[vi].pass {
			ss.flat[256*(vi+2)+id] = b2u(ok)
		}
	}
	for ti := range b.NumTemplates() {
		tm := &ss.tmpls[ti]
		var f [2]struct{ r, v, n int }
		for _, m := range ss.moves[tm.movesStart:tm.movesEnd] {
			if m.n > 255 {
				return 0, false
			}
			if ss.slots[m.slot].ids != nil { // a constant's run stays at its one value
				f[m.slot].n = m.n
			}
		}
		for _, u := range ss.uses[tm.uses[0]:tm.uses[1]] {
			switch {
			case u.rank > 255:
				return 0, false
			case f[u.slot].v != 0:
				return 0, false // a slot read twice
			}
			f[u.slot].r, f[u.slot].v = u.rank, u.verdict+2
		}
		if !tm.alive {
			f[0].r, f[0].v = 0, 1
		}
		ss.fast[ti] = uint64(f[0].r) | uint64(f[1].r)<<8 | uint64(f[0].v)<<24 | uint64(f[1].v)<<40 |
			uint64(f[0].n)<<48 | uint64(f[1].n)<<56
	}
	var ids [2][]byte
	for s := range ids {
		ss.pads[s] = ss.pads[s][:0]
		if s < len(ss.slots) && ss.slots[s].ids != nil {
			ss.pads[s] = append(ss.pads[s], ss.slots[s].ids...)
		}
		ss.pads[s] = append(ss.pads[s], zeros256[:]...)
		ids[s] = ss.pads[s]
	}
	if !mark {
		return twoCount(b.RowTemplates(), ss.fast, ids[0], ids[1], ss.flat), true
	}
	ss.marks = growClear(ss.marks, (b.NumRows()+63)/64)
	return twoMark(b.RowTemplates(), ss.fast, ids[0], ids[1], ss.flat, ss.marks), true
}

var zeros256 [256]byte

// twoCount counts the rows of templates tids that pass, each template's
// part packed by countTwo: bits 0-7 and 8-15 the ranks of its values in
// the two slots, 16-31 and 32-47 its table rows there (times 256), 48-55
// and 56-63 how many values a row has in each.
func twoCount(tids []int32, fast []uint64, ids0, ids1 []byte, flat *[1 << 16]uint8) int {
	vi0, vi1, passed := 0, 0, 0
	for _, t := range tids {
		f := fast[t]
		id0, id1 := ids0[vi0+int(uint8(f))], ids1[vi1+int(uint8(f>>8))]
		passed += int(flat[uint16(f>>16)|uint16(id0)] & flat[uint16(f>>32)|uint16(id1)])
		vi0 += int(uint8(f >> 48))
		vi1 += int(uint8(f >> 56))
	}
	return passed
}

// twoMark is twoCount that also sets a bit per row that passes in marks.
func twoMark(tids []int32, fast []uint64, ids0, ids1 []byte, flat *[1 << 16]uint8, marks []uint64) int {
	vi0, vi1, passed := 0, 0, 0
	for k, t := range tids {
		f := fast[t]
		id0, id1 := ids0[vi0+int(uint8(f))], ids1[vi1+int(uint8(f>>8))]
		p := flat[uint16(f>>16)|uint16(id0)] & flat[uint16(f>>32)|uint16(id1)]
		passed += int(p)
		marks[k>>6] |= uint64(p) << (k & 63)
		vi0 += int(uint8(f >> 48))
		vi1 += int(uint8(f >> 56))
	}
	return passed
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// countAligned counts the rows when every template with rows that has a
// value in the slots' columns has one in each, is alive and reads each
// the same way: then value i of every slot is one row's, and a row
// passes when each slot's value i passes. The other templates' rows pass
// or fail alike.
func (ss *strState) countAligned(b *part.Block) (int, bool) {
	var canon []strUse
	passed := 0
	for ti := range b.NumTemplates() {
		n := b.TemplateRows(ti)
		if n == 0 {
			continue
		}
		tm := &ss.tmpls[ti]
		ms, us := ss.moves[tm.movesStart:tm.movesEnd], ss.uses[tm.uses[0]:tm.uses[1]]
		if len(ms) == 0 {
			if tm.alive {
				passed += n
			}
			continue
		}
		if !tm.alive || len(ms) != len(ss.slots) || len(us) != len(ss.slots) {
			return 0, false
		}
		for _, m := range ms {
			if m.n != 1 {
				return 0, false
			}
		}
		if canon == nil {
			canon = us
			continue
		}
		for i, u := range us {
			if u != canon[i] {
				return 0, false
			}
		}
	}
	if canon == nil {
		return passed, true
	}
	for _, u := range canon {
		if u.rank != 0 {
			return 0, false
		}
	}
	// The values of the first use decide the bits of the rest.
	ids0, v0 := ss.slots[canon[0].slot].ids, &ss.verds[canon[0].verdict].pass
	nv := b.ColumnValues(ss.slots[canon[0].slot].col)
	switch {
	case len(canon) == 1 && ids0 != nil:
		for _, id := range ids0[:nv] {
			if v0[id] {
				passed++
			}
		}
	case len(canon) == 2 && ids0 != nil && ss.slots[canon[1].slot].ids != nil:
		ids1, v1 := ss.slots[canon[1].slot].ids[:nv], &ss.verds[canon[1].verdict].pass
		for i, id := range ids0[:nv] {
			if v0[id] && v1[ids1[i]] {
				passed++
			}
		}
	default:
		for i := range nv {
			ok := true
			for _, u := range canon {
				id := 0
				if ids := ss.slots[u.slot].ids; ids != nil {
					id = int(ids[i])
				}
				if !ss.verds[u.verdict].pass[id] {
					ok = false
					break
				}
			}
			if ok {
				passed++
			}
		}
	}
	return passed, true
}

// passing appends the rows of block b that pass to dst, in one pass over
// their templates, each row's values found by the moves of the rows
// before it.
func (ss *strState) passing(b *part.Block, dst []int32) []int32 {
	vi := ss.vi
	clear(vi)
	tmpls, uses, moves, slots, verds := ss.tmpls, ss.uses, ss.moves, ss.slots, ss.verds
	for k := range b.NumRows() {
		tm := &tmpls[b.RowTemplate(k)]
		if tm.alive {
			ok := true
			for _, u := range uses[tm.uses[0]:tm.uses[1]] {
				id := 0
				if ids := slots[u.slot].ids; ids != nil {
					id = int(ids[vi[u.slot]+u.rank])
				}
				if !verds[u.verdict].pass[id] {
					ok = false
					break
				}
			}
			if ok {
				dst = append(dst, int32(k))
			}
		}
		for _, m := range moves[tm.movesStart:tm.movesEnd] {
			vi[m.slot] += m.n
		}
	}
	return dst
}
