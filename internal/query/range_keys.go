package query

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
)

// Series keys written from a row's parameter values, without its labels.
//
// On the columnar path a row's series is found by building its labels
// (the stream's, then the json parameters', as the stage sets them),
// running the label filters, reducing the labels to the groupings and
// encoding what is left as a key. When the parameters do not clash with
// the stream's labels and the stages after the json stage are string
// label filters (=, !=, =~, !~, combined with and/or), every step of that
// is known per stream but for the parameters' values: a filter on a
// parameter tests its value, one on any other label has the same outcome
// for every row of the stream, and the key is the surviving labels in
// name order, the stream's values fixed and the parameters' read from
// the row. keyPlan writes that key directly: for high-cardinality
// groupings (a series per user id), where the values hardly repeat and
// no memo helps, the labels were most of a row's cost.
//
// It must give the key, and so the series, that columnLabels and
// seriesOf give the same row: FuzzColumnarSameAsRows and
// TestHintsSameAsReference hold it to the row path.

// keyPlan is a range worker's plan for keys from values (nil when the
// query is not of that form).
type keyPlan struct {
	names  []string // the parameters' label names, distinct
	set    []bool   // per parameter: the json stage sets its label (observed)
	skip   int      // the parameter a plain unwrap takes (its label is gone before grouping), or -1
	pred   keyPred  // the label filters
	leaves []*logql.Matcher
	gs     []*logql.Grouping
	// named: json without parameters, whose one label (names[0]) is set
	// only where its field is found (stage.ParamValue.Found).
	named bool

	// For the stream at hand (startStream):
	on     bool
	consts []bool // per leaf: its outcome, when it reads no parameter
	params []int  // per leaf: the parameter it reads, or -1
	items  []keyItem
	// fixedSep: a name, or a stream label's value, of items holds the
	// separator.
	fixedSep bool
}

// keyItem is one label of a key: a stream label (param < 0, value fixed)
// or parameter param's.
type keyItem struct {
	name  string
	value string
	param int
}

// keyPred decides a row on its parameters' values.
type keyPred func(kp *keyPlan, values []stage.ParamValue) bool

// newKeyPlan returns the plan when w's range aggregation is of the form
// keys can be written for, else nil. jp is its pipeline's json stage
// with parameters.
func newKeyPlan(w *rangeWorker, jp stage.JSONParams) *keyPlan {
	kp := &keyPlan{skip: -1, gs: []*logql.Grouping{w.x.Grouping, w.mergedBy}}
	for i := range jp.Len() {
		n := jp.Name(i)
		if slices.Contains(kp.names, n) || n == stage.ErrorLabel || n == stage.ErrorDetailsLabel {
			return nil // the first value found would win
		}
		kp.names = append(kp.names, n)
		kp.set = append(kp.set, jp.Observes(i))
	}
	return kp.withFilters(w)
}

// newNamedKeyPlan returns the plan for json without parameters that
// sets one label the query observes (colPlanner.single), name: a row
// whose plan has that one field takes keys (keyPlan.fits), with the
// label only where the field was found.
func newNamedKeyPlan(w *rangeWorker, name string) *keyPlan {
	kp := &keyPlan{skip: -1, gs: []*logql.Grouping{w.x.Grouping, w.mergedBy}, named: true}
	kp.names, kp.set = []string{name}, []bool{true}
	return kp.withFilters(w)
}

// withFilters completes the plan with w's unwrap and label filters, or
// returns nil when they are not of the form keys can be written for.
func (kp *keyPlan) withFilters(w *rangeWorker) *keyPlan {
	if u := w.x.Range.Unwrap; u != nil {
		// A plain unwrap of a parameter no filter reads, whose filters
		// after it are at most __error__="" (a row that converts has no
		// error): the unwrapped label is gone before the grouping.
		if u.Conv != "" || w.cols.unwrapParam < 0 {
			return nil
		}
		for _, f := range u.Filters {
			if !noErrorFilter(f) {
				return nil
			}
		}
		kp.skip = w.cols.unwrapParam
	}
	var leaf func(f logql.LabelFilter) keyPred
	leaf = func(f logql.LabelFilter) keyPred {
		switch f := f.(type) {
		case *logql.LabelFilterBinary:
			l, r := leaf(f.Left), leaf(f.Right)
			if l == nil || r == nil {
				return nil
			}
			if f.And {
				return func(kp *keyPlan, v []stage.ParamValue) bool { return l(kp, v) && r(kp, v) }
			}
			return func(kp *keyPlan, v []stage.ParamValue) bool { return l(kp, v) || r(kp, v) }
		case *logql.LabelFilterString:
			m := f.Matcher
			if m == nil {
				return nil
			}
			match, err := stage.StringMatch(m) // the stage's test, not the regexp on every value
			if err != nil {
				return nil
			}
			j := len(kp.leaves)
			kp.leaves = append(kp.leaves, m)
			return func(kp *keyPlan, v []stage.ParamValue) bool {
				if i := kp.params[j]; i >= 0 {
					return match(v[i].Value)
				}
				return kp.consts[j]
			}
		}
		return nil
	}
	var preds []keyPred
	for _, s := range w.afterJSON() {
		lf, ok := s.(*logql.LabelFilterStage)
		if !ok {
			return nil
		}
		p := leaf(lf.Filter)
		if p == nil {
			return nil
		}
		preds = append(preds, p)
	}
	kp.pred = func(kp *keyPlan, v []stage.ParamValue) bool {
		for _, p := range preds {
			if !p(kp, v) {
				return false
			}
		}
		return true
	}
	kp.consts, kp.params = make([]bool, len(kp.leaves)), make([]int, len(kp.leaves))
	return kp
}

// noErrorFilter reports whether f is `__error__=""`.
func noErrorFilter(f logql.LabelFilter) bool {
	s, ok := f.(*logql.LabelFilterString)
	return ok && s.Matcher != nil && s.Matcher.Name == stage.ErrorLabel && s.Matcher.Type == logql.MatchEqual && s.Matcher.Value == ""
}

// startStream readies the plan for the rows of stream ls: off when a
// parameter's name is one of its labels (the stage then renames it).
func (kp *keyPlan) startStream(ls record.Labels) {
	kp.on, kp.items = true, kp.items[:0]
	for _, n := range kp.names {
		if _, ok := ls.Get(n); ok {
			kp.on = false
			return
		}
	}
	// The label a name has on this stream's rows: the parameter's, the
	// stream's, or none ("").
	param := func(n string) int {
		if i := slices.Index(kp.names, n); i >= 0 && kp.set[i] {
			return i
		}
		return -1
	}
	for j, m := range kp.leaves {
		if kp.params[j] = param(m.Name); kp.params[j] < 0 {
			v, _ := ls.Get(m.Name)
			kp.consts[j] = m.Matches(v)
		}
	}
	kept := func(n string) bool {
		for _, g := range kp.gs {
			if g != nil && slices.Contains(g.Labels, n) == g.Without {
				return false
			}
		}
		return true
	}
	for _, l := range ls {
		if kept(l.Name) {
			kp.items = append(kp.items, keyItem{name: l.Name, value: l.Value, param: -1})
		}
	}
	for i, n := range kp.names {
		if kp.set[i] && i != kp.skip && kept(n) {
			kp.items = append(kp.items, keyItem{name: n, param: i})
		}
	}
	slices.SortStableFunc(kp.items, func(a, b keyItem) int { return strings.Compare(a.name, b.name) })
	kp.fixedSep = false
	for _, it := range kp.items {
		if strings.IndexByte(it.name, 0xff) >= 0 || it.param < 0 && strings.IndexByte(it.value, 0xff) >= 0 {
			kp.fixedSep = true
		}
	}
}

// holdsSep reports whether the key of the row whose parameters' values
// are values holds the separator in a name or value, so that it cannot
// say its labels (keyHolds). The values are asked, not the key just
// written: loads over the bytes of stores not yet done wait for them
// (strings.Count of the key was 16% of a count by host's profile).
func (kp *keyPlan) holdsSep(values []stage.ParamValue) bool {
	if kp.fixedSep {
		return true
	}
	for _, it := range kp.items {
		if it.param >= 0 && strings.IndexByte(values[it.param].Value, 0xff) >= 0 {
			return true
		}
	}
	return false
}

// fits reports whether the row at hand of colPlanner cp takes keys: the
// plan is on for its stream and, without parameters, the row's plan has
// the one field of the label (two fields of one name: the first found
// wins, which the key cannot say).
func (kp *keyPlan) fits(cp *colPlanner) bool {
	return kp != nil && kp.on && (!kp.named || len(cp.values) == 1 && len(cp.curNames) == 1 && cp.curNames[0] == kp.names[0])
}

// absent reports whether item it of the key is a label the row has not.
func (kp *keyPlan) absent(it keyItem, values []stage.ParamValue) bool {
	return kp.named && it.param >= 0 && !values[it.param].Found
}

// appendKey appends the key of the row whose parameters' values are
// values.
func (kp *keyPlan) appendKey(dst []byte, values []stage.ParamValue) []byte {
	for _, it := range kp.items {
		v := it.value
		if it.param >= 0 {
			if kp.absent(it, values) {
				continue
			}
			v = values[it.param].Value
		}
		dst = append(append(append(append(dst, it.name...), 0xff), v...), 0xff)
	}
	return dst
}

// keySeries returns the series of the row whose parameters' values are
// cp.values, or nil when the filters drop it; for a plan that is on.
func (w *rangeWorker) keySeries() *rangeSeries {
	kp, values := w.cols.keys, w.cols.values
	if !kp.pred(kp, values) {
		return nil
	}
	w.key = kp.appendKey(w.key[:0], values)
	s := w.series.get(w.key)
	if s == nil {
		s = w.alloc.series(nil, w.op, w.shape.steps)
		w.series.add(w.key, s)
		if kp.holdsSep(values) { // the key cannot say the labels
			s.labels = make(record.Labels, 0, len(kp.items))
			for _, it := range kp.items {
				v := it.value
				if it.param >= 0 {
					if kp.absent(it, values) {
						continue
					}
					v = values[it.param].Value
				}
				s.labels = append(s.labels, record.Label{Name: it.name, Value: strings.Clone(v)})
			}
		}
		w.tally.held += s.size(len(w.key))
	}
	return s
}

// Rows counted in series of many (a series per user among millions of
// rows) each find their series in a table far larger than the caches:
// a miss for the slot, another for the series. Looked up one row at a
// time, between a row's reading and filtering, no two misses overlap.
// Such rows are instead kept in a batch, their keys and samples written
// (keyRow), and their series found and their samples added together
// (flushKeys): the lookups of consecutive rows then do not wait on one
// another. A count's rows may be added in any order; a sample of unwrap
// may not (a sum of floats, the first or last value): while the batch
// holds one (rangeWorker.batched), every other add flushes it first, so
// that each series takes its samples in the rows' order.

// keyBatch is the rows of a block waiting for their series.
type keyBatch struct {
	keys   []byte    // their keys, one after the other
	ends   []int     // where each ends in keys
	times  []int64   // their times
	vals   []float64 // their samples
	h1, h2 []uint64
	series []*rangeSeries
	// hold: the batch is not counted when full, only by flushKeys (the
	// values of a block counted by histogram, which may yet go back to
	// the row path: drop).
	hold bool
}

// keyBatchRows is how many rows a batch holds before it is counted.
const keyBatchRows = 256

// keyRow adds sample v at time t of the row whose parameters' values
// are cp.values to its series (none when the filters drop it), now or
// with the batch; for a plan that is on. While the batch holds
// (keyBatch.hold, a count's) it adds nothing before flushKeys, and
// reports false, adding nothing, for a row it cannot batch.
func (w *rangeWorker) keyRow(t int64, v float64) bool {
	kp, values, kb := w.cols.keys, w.cols.values, &w.cols.batch
	if !kp.pred(kp, values) {
		return true
	}
	// A count of distinct keys of one label reads only their hashes,
	// and one label's keys differ as its values do, separator or not.
	hashOnly := w.distinct && len(kp.items) == 1
	if !hashOnly && kp.holdsSep(values) {
		// A value holds the separator: keySeries sets the series'
		// labels from the values, which the batch does not keep.
		if kb.hold {
			return false
		}
		w.add(w.keySeries(), t, v)
		return true
	}
	kb.keys = kp.appendKey(kb.keys, values)
	kb.ends, kb.times, kb.vals = append(kb.ends, len(kb.keys)), append(kb.times, t), append(kb.vals, v)
	w.batched = w.batched || w.x.Range.Unwrap != nil
	if len(kb.ends) == keyBatchRows && !kb.hold {
		w.flushKeys()
	}
	return true
}

// drop empties the batch, counting none of its rows.
func (kb *keyBatch) drop() {
	kb.keys, kb.ends, kb.times, kb.vals, kb.hold = kb.keys[:0], kb.ends[:0], kb.times[:0], kb.vals[:0], false
}

// flushKeys adds the samples of the batch to their series, making those
// that are new.
func (w *rangeWorker) flushKeys() {
	if w.cols == nil {
		return
	}
	w.batched = false
	kb := &w.cols.batch
	n := len(kb.ends)
	if n == 0 {
		return
	}
	kb.h1, kb.h2 = grown(kb.h1, n), grown(kb.h2, n)
	kb.series = grown(kb.series, n)
	start, longest := 0, 0
	for i, end := range kb.ends {
		kb.h1[i], kb.h2[i] = w.series.hash(kb.keys[start:end])
		longest = max(longest, end-start)
		start = end
	}
	if !w.distinct && w.flatKeys(longest) {
		w.flushFlat()
		return
	}
	if w.distinct {
		// Only the keys count: no series, and no second miss for one.
		// The batch's slots are loaded first, their misses overlapping
		// (keySet.touch).
		w.touched += w.series.marks.touch(kb.h1[:n])
		for i, t := range kb.times {
			if lo, hi := w.windows(t); lo <= hi {
				w.tally.held += w.series.marks.add(kb.h1[i], kb.h2[i])
			}
		}
		kb.keys, kb.ends, kb.times, kb.vals = kb.keys[:0], kb.ends[:0], kb.times[:0], kb.vals[:0]
		return
	}
	w.touched += w.series.touch(kb.h1[:n])
	start = 0
	for i, end := range kb.ends {
		s := w.series.getHashed(kb.h1[i], kb.h2[i])
		if s == nil {
			key := kb.keys[start:end]
			s = w.alloc.series(nil, w.op, w.shape.steps)
			w.series.addHashed(key, kb.h1[i], kb.h2[i], s)
			w.tally.held += s.size(len(key))
		}
		kb.series[i] = s
		start = end
	}
	for _, s := range kb.series[:n] {
		w.touched += uint64(s.one[0]) // the series' first line, for all of them at once
	}
	for i, s := range kb.series[:n] {
		w.add(s, kb.times[i], kb.vals[i])
	}
	clear(kb.series[:n])
	kb.keys, kb.ends, kb.times, kb.vals = kb.keys[:0], kb.ends[:0], kb.times[:0], kb.vals[:0]
}

// flatKeys reports whether the batch's rows, whose longest key is of
// longest bytes, go to the series table's flat table (flatTable),
// making it if need be: for a range function at one step whose state is
// a count and a value. A batch with a key too long for a flat table's
// refs, or too many keys, finds series.
func (w *rangeWorker) flatKeys(longest int) bool {
	t := &w.series
	if longest > maxFlatKey || t.flat != nil && len(t.flat.keys) > maxFlatKeys-keyBatchRows {
		// Series from now on, found as flushKeys finds them: the flat
		// states made series first.
		t.unflat()
		w.noFlat = true
		return false
	}
	if t.flat == nil && !w.noFlat && !t.sealed && w.shape.steps == 1 && flatOp(w.op) {
		t.flat = &flatTable{op: w.op}
		// The keys of the series rows taken alone made before it are
		// marked moved: their rows find those.
		for _, s := range t.order {
			h1, h2 := t.hashString(s.key)
			sl, _ := t.flat.find(unsafe.Slice(unsafe.StringData(s.key), len(s.key)), h1, h2)
			sl.move()
		}
	}
	return t.flat != nil
}

// flushFlat is flushKeys for a flat table: the batch's slots are loaded
// first (flatTable.touch), then each row's state found or made and its
// sample added.
func (w *rangeWorker) flushFlat() {
	kb, f := &w.cols.batch, w.series.flat
	w.touched += f.touch(kb.h1[:len(kb.ends)], kb.h2[:len(kb.ends)])
	start := 0
	for i, end := range kb.ends {
		key := kb.keys[start:end]
		start = end
		sl, added := f.find(key, kb.h1[i], kb.h2[i])
		switch {
		case sl.moved(): // a row taken alone made its series
			w.add(w.series.getHashed(kb.h1[i], kb.h2[i]), kb.times[i], kb.vals[i])
			continue
		case added:
			w.tally.held += oneStepSize(len(key))
		}
		if lo, hi := w.windows(kb.times[i]); lo <= hi {
			f.add(sl, kb.vals[i])
		}
	}
	kb.keys, kb.ends, kb.times, kb.vals = kb.keys[:0], kb.ends[:0], kb.times[:0], kb.vals[:0]
}
