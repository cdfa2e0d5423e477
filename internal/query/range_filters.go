package query

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/literal"
	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// Label filters on json labels, decided a column at a time (selection
// vectors): `sum by (host) (count_over_time({...} | json m="http.method",
// s="http.status" | m="DELETE" | s >= 500 [1h]))`, the same with json
// without parameters, or with an unwrap of a parameter (`| unwrap lat`
// by stream labels).
//
// When the filters after the json stage are and-ed conditions each of
// which reads one label the stage sets (any and/or of comparisons of that
// label, and __error__=""), a row passes exactly when each label's value
// passes its own conditions; and when the grouping keeps none of the
// stage's labels, a passing row counts in its stream's one series. Each
// label's verdict is then worked out for every value of each column that
// holds it, a bit per value: from the verdict of each distinct value of
// a dictionary or constant column, or by comparing a column of numbers
// with the label's number comparisons a column at a time (vecNode). A
// block's rows pass when, for each label, the bit of the row's value is
// set, found by the template's place of the value in the column and the
// values of the rows before (filterSweep): no cursor, no row's labels,
// key or memo. An unwrapped label is one more label, whose rows must
// have a number from a column of numbers; its values are the samples of
// the rows that pass. The grouping may keep one of the labels (`sum by
// (http_method) (sum_over_time(... | json m="http.method", b="http.bytes"
// | unwrap b [1h]))`): its values must come from constant or dictionary
// columns, and the series of each of their entries (or none, when the
// label's own filters fail it) is worked out once per block, so that a
// passing row counts in the series of its entry's id.
//
// A query that counts rows and observes one label of the json stage (its
// one parameter, or json without parameters and one label read) is
// swept whatever its stages after json (whole): the outcome of each
// value, the series it counts in or none, is what the whole pipeline
// makes of it, worked out once per dictionary entry. When the templates
// read one label from columns that hold nothing else, a block is counted
// from the columns' counts of entry ids (histogram), without a bit per
// value; a whole state's label in a column of strings without ids (a
// user id) is counted there by each value's series key (keyRow).
//
// A number filter sets an error on a value that is no number: the row is
// dropped when a filter __error__="" comes after the last number filter,
// and the verdicts count an error as a failure; otherwise a value that
// errs sends its block down the general path (a column of numbers never
// errs).

// filterState is a range worker's state for label filters decided per
// value; nil when the query's filters are not of that form.
type filterState struct {
	labels []string          // the labels the filters, the unwrap and the grouping read, distinct
	pipes  []*stage.Pipeline // per label, its filters
	// vecs, per label: its filters as number comparisons decided a
	// column of numbers at a time; nil when some filter of the label is
	// not a number comparison.
	vecs []*vecNode
	// strs, per label: its filters as one test of a value's string, so
	// that a column of strings without ids is decided a value at a time
	// (stage.StringFilter); nil when a filter of the label is not a string
	// matcher of it.
	strs []func(string) bool
	// rawMisses, per label: a test of a JSON string's escaped content
	// that says its value fails strs without unescaping it
	// (rawMiss); nil when the filters need no literal of it. Made from
	// rawFilters, the label's filters, when a column first needs it
	// (rawMade).
	rawMisses  []func(raw []byte) bool
	rawFilters [][]logql.LabelFilter
	rawMade    []bool
	// prefixes, per label: its filter as a prefix its values start with
	// (`trace_id=~"7ce4.*"`, stage.PrefixFilter) or the value they equal
	// (`trace_id="7ce4…"`), for a column of hex values, compared as their
	// bytes (part.Block.HexPrefixBits).
	prefixes []labelPrefix
	params   []int    // json with parameters: per label, its parameter
	nparam   int      // json with parameters: how many there are
	names    []string // every label the json stage may set
	// shadow: those of names the state's streams have (newFilterState);
	// shadowPipe, the filters on them, decided per stream (nil: none).
	shadow     []string
	shadowPipe *stage.Pipeline
	// dropsErrors: a filter __error__="" comes after the last number
	// filter, so that a value a number filter fails on fails its row.
	dropsErrors bool
	unwrap      int // the label (index in labels) whose number is the sample, or -1
	group       int // the label (index in labels) the grouping keeps, or -1
	// kept: the labels (indices in labels) the grouping keeps when it
	// keeps two or more (group is then -1). Each value of each is a
	// class (its verdicts' outIDs and a template's gcls say which, -1
	// when the label's filters fail it); a passing row's outcome is first
	// its classes' combination (rowOut), then the series of that
	// combination (combos).
	kept      []int
	keptNames []string

	// whole: the query observes one label of the json stage (labels[0],
	// the group label) and no unwrap: a value's outcome is what the
	// whole pipeline after the stage makes of it (columnSeries), with
	// any stages, for any stream.
	whole bool

	// on: the stream at hand has no label the json stage may set but
	// shadow (or whole); none: shadowPipe fails the stream, so no row of
	// it passes.
	on, none bool
	series   *rangeSeries // the stream's series, once made

	// outs are the series the block's passing rows count in: the
	// stream's alone (outs[0]) without a group label; with one, the
	// series of each value the block's rows give it, and outIDs, per
	// verdict of the group label, the index in outs of each entry id's
	// (-1: its filters fail it).
	outs   []*rangeSeries
	outIDs []int32
	// absentOut: the outcome of a row without the group label (-2:
	// not yet worked out for the block).
	absentOut int32
	houts     []int32 // with a group label, the outcome of each of hits
	rowOuts   []int32 // per row, its outcome or -1 (groupRows)
	// keyedRows': per template, the slot and rank of its sample; per
	// row that passes, its group label's value and its sample's.
	samp         [][2]int32
	gvals, svals []int32
	raws         int   // rows of the block's templates walked (fTmpl.walked; rawRows)
	counts       []int // per outcome, the rows that pass (countGroups)
	// used, per slot, the values of its column that alive templates'
	// rows read as the one label histLabel (-1: none yet; -2: more than
	// one, or a template that fails whole reads one).
	used      []int
	histLabel int
	free      []int // per outcome, the rows of alive templates that read no value from a column
	runs      []onesRun
	// With kept labels, per block: each kept label's classes, by value
	// and in order; and per combination of classes, the index in outs
	// of its series (-1: not yet made).
	classOf [maxKept]map[string]int32
	classes [maxKept][]string // "\x01"+value, or "\x00" for a row without the label
	combos  []int32
	key     []byte             // class's
	kvals   []stage.ParamValue // keptOutcomes' values of the kept labels

	// Per block.
	colSlot []int // per column, 1 + its place in slots, or 0
	slots   []fSlot
	verds   []fVerdict
	tmpls   []fTmpl
	uses    []fUse             // the templates' uses, each template's a run
	moves   []fMove            // the templates' moves, each template's a run
	vi      []int              // per slot, the next row's first value
	absent  []absentVerdict    // per label, what a row without it gives
	vals    []stage.ParamValue // one row's parameter values (passes, keyValue)
	one     [1]stage.ParamValue
	oneName [1]string
	first   [256]int
	dicts   []fDict // the dictionary verdicts' per entry id counts and verdicts
	// pass holds a bit per value of each verdict's column (1: passes),
	// each verdict's from a word of its own, after two words: every bit
	// set (passOne) and none (passZero), which the two-slot kernel reads
	// for a template that reads no value of a slot, or whose rows all
	// fail. Bits past a column's values are 0.
	pass  []uint64
	two   []fTwo      // countTwo's, per template
	gtwo  []fGroup    // groupTwo's, per template
	gpair [][2]fGroup // the two kept labels' (pairCount, pairRows), per template
	zeros []byte      // groupTwo's ids of a column without
	tmp   [][]uint64  // vecNode.eval's scratch
	and   []uint64    // addSamples' bits of the values every use passes
	hits  []int32     // the rows that pass (passing)
	samps []float64   // their samples, with an unwrap
	// sel, when not nil, holds a bit per row of the block: a row whose
	// bit is 0 passes not, whatever its values (the leading line filters
	// drop it). Only passing reads it: the other kernels are not used.
	sel []uint64
	// rows: the rows that pass are asked for (a log query's probe,
	// passed), so that plan keeps every template's uses (not planOne).
	rows   bool
	seen   []bool // anyPass's, per verdict
	before []int  // passingFrom's rows per template before its first
}

const (
	passOne  = 0  // the bit of every value passes
	passZero = 64 // the bit of no value does
)

// fSlot is a column that holds a label the filters read: a constant or
// dictionary column (ids, nil for a constant) or a column of numbers
// (nums, once read).
type fSlot struct {
	col    int
	ids    []byte
	dict   bool // a constant or dictionary column
	nums   []float64
	numsOK bool
	// keyed: a column of strings without ids, of the group label when
	// the filters read no other: its values are counted each by its
	// series key (keyRow), in one window.
	keyed bool
}

// fDict is a dictionary column's verdict per entry id, and its rows
// per id.
type fDict struct {
	count [256]int
	pass  [256]byte
}

// fVerdict is whether each value of a slot's column passes one label's
// filters, read in or out of a JSON string: bits at*64 on of pass.
type fVerdict struct {
	slot, label int
	inString    bool
	at          int
	outAt       int // the group label's: its ids' outcomes are outIDs[outAt : outAt+256]
	// one, for a whole state's label in a column without ids (outAt
	// -1): the outcome of every value that passes, or -1 when none does.
	one int32
	// dict: a dictionary column's, the index of its fDict (-1: none);
	// lazy: its bits are not yet set from it (bitsReady), as a count
	// from the ids' counts (histogram) never reads them.
	dict int
	lazy bool
}

// fTmpl is a template's part of a sweep.
type fTmpl struct {
	alive bool // its rows may pass: no label it lacks fails
	// walked: its rows are left to the row path (stored whole, or, for
	// a probe, not planned).
	walked     bool
	uses       [2]int32
	movesStart int32
	movesEnd   int32
	// samp: with an unwrap, the use that reads the sample (index in
	// uses); group: the use that reads the group label, or (-1) gout is
	// the outcome of every row of the template.
	samp, group int32
	gout        int32
	// With kept labels (filterState.kept), per kept label: the use that
	// reads it, or (-1) gcls is its class in every row.
	guse, gcls [maxKept]int32
}

// maxKept is the most labels a sweep's grouping keeps, and maxCombos the
// most combinations of their classes a block may have: past either, the
// rows are walked.
const (
	maxKept   = 4
	maxCombos = 1 << 14
)

// fUse is a label of a template read from a column: value vi+rank of the
// slot's column, tested by verds[verdict].
type fUse struct{ slot, rank, verdict int }

// labelPrefix is a prefix a label's filter passes the values of, or
// with exact the one value it passes (ok: the filter is one).
type labelPrefix struct {
	text      string
	exact, ok bool
}

// fMove is how many values of a slot's column a row of a template has.
type fMove struct{ slot, n int }

// newFilterState returns the state for the query of w when its filters
// after the json stage (jp with parameters, or json without them, whose
// observed labels are observed) are and-ed conditions each on one label
// the stage sets, and its grouping keeps at most one of those labels;
// else nil.
//
// shadow are labels of the stage that the streams the state is for have
// (startStream takes a stream whose labels among the stage's are exactly
// those): there the stage names a field of the line name_extracted, and
// a filter, grouping or unwrap of the name reads the stream's label, the
// same in every row. The state leaves them to the stream: their filters
// are decided once per stream (shadowPipe), a grouping keeps the
// stream's value, and an unwrap of one is not swept.
func newFilterState(w *rangeWorker, jp stage.JSONParams, params bool, observed, shadow []string) *filterState {
	all := observed
	if params {
		names, ok := distinctParamNames(jp)
		if !ok {
			return nil
		}
		all = names
	}
	set := all
	if len(shadow) > 0 {
		for _, n := range shadow {
			if keepsAny([]string{n + stage.ExtractedSuffix}, w.x.Grouping, w.mergedBy) {
				return nil // the field's label, name_extracted, is in the series
			}
		}
		set = slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(shadow, n) })
	}
	var kept []string
	for _, n := range set {
		if keepsAny([]string{n}, w.x.Grouping, w.mergedBy) {
			kept = append(kept, n)
		}
	}
	if len(kept) > maxKept {
		return nil
	}
	stages := w.afterJSON()
	var conds []logql.LabelFilter
	for _, s := range stages {
		f, ok := s.(*logql.LabelFilterStage)
		if !ok {
			return nil
		}
		conds = appendConjuncts(conds, f.Filter)
	}
	fs := &filterState{names: all, shadow: shadow, unwrap: -1, group: -1}
	var streamConds []logql.LabelFilter
	byLabel := map[string][]logql.LabelFilter{}
	label := func(n string) int {
		if i := slices.Index(fs.labels, n); i >= 0 {
			return i
		}
		fs.labels = append(fs.labels, n)
		return len(fs.labels) - 1
	}
	if u := w.x.Range.Unwrap; u != nil {
		// A plain unwrap of a parameter, in a sum, an average, a
		// minimum, a maximum or a quantile, whose filters after it do
		// not read it (unwrap takes the label away).
		switch w.op {
		case opSum, opAvg, opMin, opMax, opValues:
		default:
			return nil
		}
		if u.Conv != "" || !slices.Contains(set, u.Label) || strings.HasSuffix(u.Label, stage.ExtractedSuffix) {
			return nil
		}
		for _, f := range u.Filters {
			if filtersRead([]logql.Stage{&logql.LabelFilterStage{Filter: f}}, u.Label) {
				return nil
			}
			conds = appendConjuncts(conds, f)
		}
		fs.unwrap = label(u.Label)
		byLabel[u.Label] = nil
		for _, f := range u.Filters {
			stages = append(slices.Clip(stages), &logql.LabelFilterStage{Filter: f})
		}
	} else if w.op != opSum {
		return nil
	}
	fs.dropsErrors = errorsDroppedLast(stages)
	for _, k := range kept {
		// The labels the grouping keeps, read from constant or
		// dictionary columns, never unwrapped (unwrap takes them away).
		if u := w.x.Range.Unwrap; u != nil && u.Label == k || strings.HasSuffix(k, stage.ExtractedSuffix) {
			return nil
		}
		fs.kept = append(fs.kept, label(k))
		byLabel[k] = nil
	}
	if len(fs.kept) == 1 {
		fs.group, fs.kept = fs.kept[0], nil
	}
	for _, li := range fs.kept {
		fs.keptNames = append(fs.keptNames, fs.labels[li])
	}
	for _, f := range conds {
		n, ok := conditionLabel(f)
		switch {
		case !ok:
			return nil
		case n == "":
			continue // __error__="": no row swept has an error but a number filter's
		case slices.Contains(shadow, n):
			if _, ok := f.(*logql.LabelFilterNumber); ok {
				return nil // it may err, on the stream's value, in every row
			}
			streamConds = append(streamConds, f)
			continue
		case !slices.Contains(set, n) || strings.HasSuffix(n, stage.ExtractedSuffix):
			return nil
		}
		byLabel[n] = append(byLabel[n], f)
		label(n)
	}
	if len(fs.labels) == 0 {
		return nil
	}
	if len(streamConds) > 0 {
		var err error
		if fs.shadowPipe, err = stage.CompileFilters(streamConds); err != nil {
			return nil
		}
	}
	for _, l := range fs.labels {
		p, err := stage.CompileFilters(byLabel[l])
		if err != nil {
			return nil
		}
		fs.pipes = append(fs.pipes, p)
		var vec *vecNode
		if _, v, _, ok := compileNumPred(nil, byLabel[l], []string{l}); ok {
			vec = v
		}
		fs.vecs = append(fs.vecs, vec)
		str, _ := stage.StringFilter(byLabel[l], l)
		fs.strs = append(fs.strs, str)
		fs.rawMisses, fs.rawFilters, fs.rawMade = append(fs.rawMisses, nil), append(fs.rawFilters, byLabel[l]), append(fs.rawMade, false)
		var lp labelPrefix
		lp.text, lp.exact, lp.ok = stage.PrefixFilter(byLabel[l], l)
		fs.prefixes = append(fs.prefixes, lp)
		if params {
			fs.params = append(fs.params, slices.Index(all, l))
		}
	}
	if params {
		fs.nparam = jp.Len()
	}
	return fs
}

// appendConjuncts appends the conditions of f's top-level and to dst.
func appendConjuncts(dst []logql.LabelFilter, f logql.LabelFilter) []logql.LabelFilter {
	if b, ok := f.(*logql.LabelFilterBinary); ok && b.And {
		return appendConjuncts(appendConjuncts(dst, b.Left), b.Right)
	}
	return append(dst, f)
}

// conditionLabel returns the one label condition f reads besides
// __error__="" ("" when none), or false when it reads more than one, or
// another matcher of an error label.
func conditionLabel(f logql.LabelFilter) (string, bool) {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		l, ok := conditionLabel(f.Left)
		if !ok {
			return "", false
		}
		r, ok := conditionLabel(f.Right)
		if !ok || l != "" && r != "" && l != r {
			return "", false
		}
		if l == "" {
			return r, true
		}
		return l, true
	case *logql.LabelFilterString:
		m := f.Matcher
		if m.Name == stage.ErrorLabel && m.Type == logql.MatchEqual && m.Value == "" {
			return "", true
		}
		if m.Name == stage.ErrorLabel || m.Name == stage.ErrorDetailsLabel {
			return "", false
		}
		return m.Name, true
	case *logql.LabelFilterNumber:
		return f.Name, true
	}
	return "", false
}

// newWholeState returns the state for the query of w when it counts
// rows (no unwrap) and observes one label of its json stage (jp with
// parameters, or json without them): each value's outcome is what the
// whole pipeline after the stage makes of it; else nil.
func newWholeState(w *rangeWorker, jp stage.JSONParams, params bool) *filterState {
	cp := w.cols
	if w.x.Range.Unwrap != nil || w.op != opSum || !params && cp.single == nil || params && jp.Len() != 1 {
		return nil
	}
	name := ""
	if params {
		name = jp.Name(0)
	} else {
		name = cp.single[0]
	}
	fs := &filterState{whole: true, names: []string{name}, labels: []string{name}, pipes: []*stage.Pipeline{nil}, vecs: []*vecNode{nil}, strs: []func(string) bool{nil}, rawMisses: []func([]byte) bool{nil}, rawFilters: [][]logql.LabelFilter{nil}, rawMade: []bool{true}, prefixes: []labelPrefix{{}}, unwrap: -1, group: 0}
	if params {
		fs.params, fs.nparam = []int{0}, 1
	}
	return fs
}

// startFilters picks the stream ls's filter state (colPlanner.filters):
// byLabel's, or the one for the labels of the json stage the stream has
// (byShadow, made at its first stream), or byWhole's.
func (cp *colPlanner) startFilters(w *rangeWorker, ls record.Labels) {
	cp.filters = nil
	if fs := cp.byLabel; fs != nil {
		if fs.startStream(w, ls); fs.on {
			cp.filters = fs
			return
		}
		var key string
		for _, n := range fs.names {
			if _, ok := ls.Get(n); ok {
				key += n + "\x00"
			}
		}
		sh, made := cp.byShadow[key]
		if !made {
			jp, params := w.colPipe.JSONParams()
			sh = newFilterState(w, jp, params, cp.filterNames, strings.Split(strings.TrimSuffix(key, "\x00"), "\x00"))
			if cp.byShadow == nil {
				cp.byShadow = map[string]*filterState{}
			}
			cp.byShadow[key] = sh
		}
		if sh != nil {
			if sh.startStream(w, ls); sh.on {
				cp.filters = sh
				return
			}
		}
	}
	if fs := cp.byWhole; fs != nil {
		fs.startStream(w, ls)
		cp.filters = fs
	}
}

// startStream readies the state for a stream's rows.
func (fs *filterState) startStream(w *rangeWorker, ls record.Labels) {
	fs.series, fs.none = nil, false
	fs.on = fs.whole || !slices.ContainsFunc(fs.names, func(n string) bool {
		_, ok := ls.Get(n)
		return ok != slices.Contains(fs.shadow, n)
	})
	if fs.on && fs.shadowPipe != nil {
		w.lb.Reset(ls)
		_, kept := fs.shadowPipe.Process(0, nil, w.lb)
		fs.none = !kept
	}
}

// filterSweep adds the samples of block b's rows that pass the filters
// without walking them with a cursor, and reports whether it did; when
// it did not, it added nothing. Every template with rows is planned with
// no value to check, each label the filters read either absent, the same
// in every row, or in a constant, dictionary or number column; or its
// lines are stored whole, and its rows take the row path after the
// others. When every row counts in the same windows the rows that pass
// are counted (or their samples added); otherwise (a range query's steps
// over a block, where no line may be stored whole) each passing row is
// added at its time.
func (w *rangeWorker) filterSweep(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) (bool, error) {
	cp := w.cols
	fs := cp.filters
	if fs == nil {
		return false, nil
	}
	if fs.none {
		return true, nil // the stream's labels fail the filters
	}
	lo, hi := b.TimeRange()
	if hi < from || lo > to {
		return true, nil
	}
	timed := lo < from || hi > to || !w.sameWindows(lo, hi)
	ok, err := fs.plan(w, ls, b, hi, timed)
	if err != nil || !ok {
		return false, err
	}
	rows := int64(b.NumRows() - fs.raws)
	hist := !timed && fs.unwrap < 0 && fs.kept == nil && fs.sel == nil && fs.histOK()
	keyed := false
	if !hist {
		for _, sl := range fs.slots {
			keyed = keyed || sl.keyed
		}
		if keyed && (fs.unwrap < 0 || fs.sel != nil) {
			return false, nil
		}
		fs.bitsReady()
	}
	switch {
	case hist:
		if ok, err := w.histogram(b, hi); err != nil || !ok {
			return false, err
		}
	case keyed:
		if ok, err := w.keyedSamples(fs, b, hi); err != nil || !ok {
			return false, err
		}
	case fs.kept != nil || fs.sel != nil && (timed || fs.unwrap >= 0 || fs.group >= 0):
		if timed {
			if rows, err = timedRows(b, from, to); err != nil {
				return true, err
			}
		}
		if err := w.passingRows(fs, ls, b, from, to, timed); err != nil {
			return true, err
		}
	case timed:
		if rows, err = timedRows(b, from, to); err != nil {
			return true, err
		}
		if fs.unwrap >= 0 {
			w.timedSamples(fs, b, from, to)
			break
		}
		w.timedCounts(fs, b, from, to)
	case fs.unwrap >= 0:
		w.addSamples(fs, b, hi)
	case fs.group >= 0:
		fs.countGroups(b)
		for o, n := range fs.counts {
			if n > 0 {
				w.addN(fs.outs[o], hi, n)
			}
		}
	default:
		if passed := fs.count(b); passed > 0 {
			w.addN(fs.outs[0], hi, passed)
		}
	}
	w.tally.rows += rows
	w.tally.columnar += rows
	w.tally.swept += rows
	if fs.raws > 0 {
		return true, w.rawRows(ev, ls, b, hi)
	}
	return true, ev.flush(&w.tally)
}

// passed finds the rows of block b of stream ls from row lo on that
// pass the filters, of those sel selects (nil: every row), by the
// sweep's plan and bits, for a log query's probe (log_sweep.go):
// fs.hits, the rows of the templates swept; the rows of templates
// walked (stored whole, or not planned: fTmpl.walked, fs.raws of them)
// are left out, for the row path. ok false: the block is not swept, and
// its rows must be walked.
func (w *rangeWorker) passed(ls record.Labels, b *part.Block, sel []uint64, lo int) (fs *filterState, ok bool, err error) {
	cp := w.cols
	if fs = cp.filters; fs == nil {
		return nil, false, nil
	}
	if fs.none { // the stream's labels fail the filters: no row passes
		fs.hits, fs.raws = fs.hits[:0], 0
		return fs, true, nil
	}
	cp.idsLater = true // the sweep needs no memo of outcomes by ids
	if err := cp.startBlock(b, false, func(p *tmplPlan) (bool, error) { return w.givesNothing(ls, p) }); err != nil {
		return nil, false, err
	}
	fs.sel, fs.rows = sel, true
	_, hi := b.TimeRange()
	if ok, err := fs.plan(w, ls, b, hi, false); err != nil || !ok {
		return nil, false, err
	}
	fs.bitsReady()
	if fs.anyPass(b) {
		fs.passingFrom(b, lo)
	} else {
		fs.hits = fs.hits[:0]
	}
	return fs, true, nil
}

// anyPass reports whether a row of block b may pass, after its plan and
// bits: a template alive reads no value from a column, or some value
// passes the verdict of the first use of an alive template. False:
// passing would find no row, and need not walk the rows' templates (a
// trace id's rows: in one block of hundreds).
func (fs *filterState) anyPass(b *part.Block) bool {
	seen := growClear(fs.seen, len(fs.verds))
	fs.seen = seen
	for ti := range b.NumTemplates() {
		tm := &fs.tmpls[ti]
		if !tm.alive {
			continue
		}
		if tm.uses[0] == tm.uses[1] {
			return true
		}
		v := fs.uses[tm.uses[0]].verdict
		if seen[v] {
			continue
		}
		seen[v] = true
		vd := &fs.verds[v]
		n := b.ColumnValues(fs.slots[vd.slot].col)
		for _, word := range fs.pass[vd.at:][:(n+63)/64] {
			if word != 0 {
				return true
			}
		}
	}
	return false
}

// timedRows decodes block b's times and returns how many of its rows
// have a time in [from, to].
func timedRows(b *part.Block, from, to int64) (int64, error) {
	if err := b.DecodeTimes(); err != nil {
		return 0, err
	}
	if lo, hi := b.TimeRange(); lo >= from && hi <= to {
		return int64(b.NumRows()), nil
	}
	n := int64(0)
	for k := range b.NumRows() {
		if t := b.RowTime(k); t >= from && t <= to {
			n++
		}
	}
	return n, nil
}

// passingRows adds block b's rows that pass to their outcomes' series
// (of their kept labels' values, or their group label's, or the
// stream's): counts, or an unwrap's samples; timed, each at its time in
// [from, to] (times decoded); else all in the windows of the block's
// last time. It takes the rows one by one (passing), for kept labels
// (unless pairRows can) and a selection of rows (fs.sel).
func (w *rangeWorker) passingRows(fs *filterState, ls record.Labels, b *part.Block, from, to int64, timed bool) error {
	if fs.unwrap < 0 && fs.sel == nil {
		if ids, ok := fs.planPair(b); ok {
			return w.pairRows(fs, ls, b, ids, from, to, timed)
		}
	}
	fs.passing(b)
	if fs.kept != nil {
		if err := w.keptOutcomes(fs, ls); err != nil {
			return err
		}
	}
	w.addPassing(fs, b, from, to, timed)
	return nil
}

// addPassing adds the rows passing found (fs.hits, each to its
// outcome's series, hitOut, with its sample for an unwrap): timed, each
// at its time in [from, to] (times decoded); else all in the windows of
// the block's last time.
func (w *rangeWorker) addPassing(fs *filterState, b *part.Block, from, to int64, timed bool) {
	switch {
	case timed && fs.unwrap >= 0:
		for i, k := range fs.hits {
			if t := b.RowTime(int(k)); t >= from && t <= to {
				w.add(fs.outs[fs.hitOut(i)], t, fs.samps[i])
			}
		}
	case timed:
		fs.runs = fs.runs[:0]
		for i, k := range fs.hits {
			if t := b.RowTime(int(k)); t >= from && t <= to {
				w.one(fs.run(fs.hitOut(i)), t)
			}
		}
		w.flushRuns(fs)
	case fs.unwrap >= 0:
		_, last := b.TimeRange()
		lo, hi := w.windows(last)
		for k := lo; k <= hi; k++ {
			for i, v := range fs.samps {
				fs.outs[fs.hitOut(i)].add(w.op, int(k), last, v)
			}
		}
	default:
		_, last := b.TimeRange()
		fs.counts = growClear(fs.counts, len(fs.outs))
		for i := range fs.hits {
			fs.counts[fs.hitOut(i)]++
		}
		for o, n := range fs.counts {
			if n > 0 {
				w.addN(fs.outs[o], last, n)
			}
		}
	}
}

// keptOutcomes turns the outcomes passing gave (with kept labels, the
// combinations of the rows' classes) into the indices in outs of their
// series, each made at its first row: the stream's labels and the kept
// labels' values, grouped.
func (w *rangeWorker) keptOutcomes(fs *filterState, ls record.Labels) error {
	for i, c := range fs.houts {
		o, err := w.comboOut(fs, ls, c)
		if err != nil {
			return err
		}
		fs.houts[i] = o
	}
	return nil
}

// comboOut returns the index in outs of the series of combination c of
// the kept labels' classes, made at its first row.
func (w *rangeWorker) comboOut(fs *filterState, ls record.Labels, c int32) (int32, error) {
	if o := fs.combos[c]; o >= 0 {
		return o, nil
	}
	cp := w.cols
	w.lb.Reset(ls)
	if cp.named {
		fs.kvals = fs.kvals[:0]
		for g := range fs.kept {
			fs.kvals = append(fs.kvals, fs.classValue(g, c))
		}
		cp.fields.Apply(w.lb, fs.keptNames, fs.kvals)
	} else {
		fs.vals = growClear(fs.vals, fs.nparam)
		for g, li := range fs.kept {
			fs.vals[fs.params[li]] = fs.classValue(g, c)
		}
		cp.json.Apply(w.lb, fs.vals)
	}
	s, err := w.seriesOf()
	if err != nil {
		return -1, err
	}
	fs.outs = append(fs.outs, s)
	fs.combos[c] = int32(len(fs.outs) - 1)
	return fs.combos[c], nil
}

// pairRows is passingRows for counts by two kept labels, each row's
// combination of classes found without a branch (planPair).
func (w *rangeWorker) pairRows(fs *filterState, ls record.Labels, b *part.Block, ids [2][]byte, from, to int64, timed bool) error {
	n1 := int32(max(len(fs.classes[1]), 1))
	if timed {
		fs.rowOuts = grown(fs.rowOuts, b.NumRows())
		pairOuts(b.RowTemplates(), fs.two, fs.gpair, fs.pass, ids, fs.outIDs, n1, fs.rowOuts)
		fs.runs = fs.runs[:0]
		for k, c := range fs.rowOuts {
			if c < 0 {
				continue
			}
			if t := b.RowTime(k); t >= from && t <= to {
				o, err := w.comboOut(fs, ls, c)
				if err != nil {
					return err
				}
				w.one(fs.run(o), t)
			}
		}
		w.flushRuns(fs)
		return nil
	}
	_, last := b.TimeRange()
	fs.counts = growClear(fs.counts, len(fs.combos)+1)
	pairCount(b.RowTemplates(), fs.two, fs.gpair, fs.pass, ids, fs.outIDs, n1, fs.counts)
	for c, n := range fs.counts[:len(fs.combos)] {
		if n > 0 {
			o, err := w.comboOut(fs, ls, int32(c))
			if err != nil {
				return err
			}
			w.addN(fs.outs[o], last, n)
		}
	}
	return nil
}

// run returns the run of rows of outcome o (outs[o]'s), made for the
// outcomes up to o as they come.
func (fs *filterState) run(o int32) *onesRun {
	for int(o) >= len(fs.runs) {
		fs.runs = append(fs.runs, onesRun{s: fs.outs[len(fs.runs)]})
	}
	return &fs.runs[o]
}

// flushRuns adds the runs of rows of every outcome to their windows.
func (w *rangeWorker) flushRuns(fs *filterState) {
	for i := range fs.runs {
		w.flushOnes(&fs.runs[i])
	}
}

// classValue returns the value of kept label g in combination c.
func (fs *filterState) classValue(g int, c int32) stage.ParamValue {
	for h := len(fs.kept) - 1; h > g; h-- {
		c /= int32(len(fs.classes[h]))
	}
	v := fs.classes[g][c%int32(len(fs.classes[g]))]
	return stage.ParamValue{Value: v[1:], Found: v[0] == 1}
}

// class returns the class of value pv (not Found: a row without the
// label) of kept label g (label li, set by the json field name for json
// without parameters): -1 when the label's filters fail it; ok false
// when they leave an error no later filter drops.
func (fs *filterState) class(w *rangeWorker, ls record.Labels, g, li int, name string, pv stage.ParamValue) (int32, bool) {
	var pass, ok bool
	if pv.Found {
		pass, ok = fs.passes(w, ls, li, name, pv)
	} else {
		pass, ok = fs.absentPasses(w, ls, li)
	}
	if !pass || !ok {
		return -1, ok
	}
	m := fs.classOf[g]
	if m == nil {
		m = map[string]int32{}
		fs.classOf[g] = m
	}
	fs.key = append(append(fs.key[:0], b2u(pv.Found)), pv.Value...)
	if c, ok := m[string(fs.key)]; ok {
		return c, true
	}
	k := string(fs.key)
	m[k] = int32(len(fs.classes[g]))
	fs.classes[g] = append(fs.classes[g], k)
	return m[k], true
}

// startCombos readies the table of the block's combinations of classes
// (combos); false when they are more than maxCombos.
func (fs *filterState) startCombos() bool {
	n := 1
	for g := range fs.kept {
		if n *= max(len(fs.classes[g]), 1); n > maxCombos {
			return false
		}
	}
	fs.combos = grown(fs.combos, n)
	for i := range fs.combos {
		fs.combos[i] = -1
	}
	return true
}

// timedCounts adds each of block b's rows that pass with a time in
// [from, to] at its time (a count, times decoded), a run of rows at a
// time.
func (w *rangeWorker) timedCounts(fs *filterState, b *part.Block, from, to int64) {
	fs.runs = growClear(fs.runs, len(fs.outs))
	for o := range fs.runs {
		fs.runs[o].s = fs.outs[o]
	}
	var ids [2][]byte
	var grouped bool
	if fs.group >= 0 {
		ids, grouped = fs.planGroupTwo(b)
	}
	switch {
	case grouped:
		// Each row's outcome without a branch, then its time.
		fs.rowOuts = grown(fs.rowOuts, b.NumRows())
		groupRows(b.RowTemplates(), fs.two, fs.gtwo, fs.pass, ids, fs.outIDs, fs.rowOuts)
		for k, o := range fs.rowOuts {
			if o >= 0 {
				if t := b.RowTime(k); t >= from && t <= to {
					w.one(&fs.runs[o], t)
				}
			}
		}
	case fs.group < 0 && fs.planTwo(b):
		// The rows that pass listed without a branch, then their times.
		fs.hits = grown(fs.hits, b.NumRows())
		for _, k := range fs.hits[:twoHits(b.RowTemplates(), fs.two, fs.pass, fs.hits)] {
			if t := b.RowTime(int(k)); t >= from && t <= to {
				w.one(&fs.runs[0], t)
			}
		}
	default:
		fs.passing(b)
		w.addPassing(fs, b, from, to, true)
		return
	}
	for i := range fs.runs {
		w.flushOnes(&fs.runs[i])
	}
}

// keyedSamples adds at time t the samples of block b's rows that pass
// (an unwrap), those whose group label is in a keyed column by their
// values' keys (held in the batch until every row is read: false, adding
// nothing, when one cannot be batched, or when two verdicts are keyed),
// the others to their outcome's series.
func (w *rangeWorker) keyedSamples(fs *filterState, b *part.Block, t int64) (bool, error) {
	cp := w.cols
	var kv *fVerdict
	for i := range fs.verds {
		if fs.slots[fs.verds[i].slot].keyed {
			if kv != nil {
				return false, nil
			}
			kv = &fs.verds[i]
		}
	}
	col := fs.slots[kv.slot].col
	cp.batch.hold = true
	row := func(vi int, v float64) (bool, error) { return w.keyValue(b, col, vi, kv.inString, t, v) }
	if canon, others, ok := fs.aligned(b); ok && others == 0 && canon != nil {
		// Value i of each slot is one row's: the values that pass.
		nums := fs.slots[fs.canonUse(canon, fs.unwrap).slot].nums
		for wi := range (b.ColumnValues(col) + 63) / 64 {
			for word := fs.alignedWord(canon, wi); word != 0; word &= word - 1 {
				i := wi*64 + bits.TrailingZeros64(word)
				if ok, err := row(i, nums[i]); !ok {
					return false, err
				}
			}
		}
		cp.batch.hold = false
		w.flushKeys()
		return true, nil
	}
	if _, ok := fs.planGroupTwo(b); ok {
		tids := b.RowTemplates()
		n := fs.sampleRows(b)
		fs.samps, fs.houts = fs.samps[:0], fs.houts[:0]
		for h, k := range fs.hits[:n] {
			tid := tids[k]
			v := fs.slots[fs.samp[tid][0]].nums[fs.svals[h]]
			if fs.gtwo[tid].m == 0 {
				// The template's group label is the same in every row.
				fs.samps, fs.houts = append(fs.samps, v), append(fs.houts, fs.tmpls[tid].gout)
				continue
			}
			if ok, err := row(int(fs.gvals[h]), v); !ok {
				return false, err
			}
		}
	} else {
		fs.passing(b)
		houts, samps := fs.houts[:0], fs.samps[:0]
		for i, o := range fs.houts {
			if o >= 0 {
				houts, samps = append(houts, o), append(samps, fs.samps[i])
			} else if ok, err := row(int(-2-o), fs.samps[i]); !ok {
				return false, err
			}
		}
		fs.houts, fs.samps = houts, samps
	}
	lo, hi := w.windows(t)
	for k := lo; k <= hi; k++ {
		for i, o := range fs.houts {
			if o >= 0 {
				fs.outs[o].add(w.op, int(k), t, fs.samps[i])
			}
		}
	}
	cp.batch.hold = false
	w.flushKeys()
	return true, nil
}

// keyValue puts value vi of block b's keyed column col (read in or out
// of a JSON string), the group label's, in the key batch with sample v
// at time t; false when it cannot be batched, the batch then dropped.
func (w *rangeWorker) keyValue(b *part.Block, col, vi int, inString bool, t int64, v float64) (bool, error) {
	cp, fs := w.cols, w.cols.filters
	mark := len(cp.arena.b)
	pv, ok, err := cp.holeValue(b, col, vi, t, inString)
	if err == nil && ok {
		fs.vals = growClear(fs.vals, fs.nparam)
		fs.vals[fs.params[fs.group]] = pv
		cp.values = fs.vals
		ok = w.keyRow(t, v)
	}
	cp.arena.b = cp.arena.b[:mark] // the batch copied the key
	if err != nil || !ok {
		cp.batch.drop()
		return false, err
	}
	return true, nil
}

// sampleRows lists the rows of block b that pass, each with its group
// label's value and its sample's, without a branch (keyedRows, after
// planGroupTwo), and returns how many pass.
func (fs *filterState) sampleRows(b *part.Block) int {
	nt, nr := b.NumTemplates(), b.NumRows()
	fs.samp = grown(fs.samp, nt)
	for ti := range nt {
		fs.samp[ti] = [2]int32{}
		if tm := &fs.tmpls[ti]; tm.samp >= 0 {
			u := fs.uses[tm.samp]
			fs.samp[ti] = [2]int32{int32(u.slot), int32(u.rank)}
		}
	}
	fs.hits, fs.gvals, fs.svals = grown(fs.hits, nr), grown(fs.gvals, nr), grown(fs.svals, nr)
	return keyedRows(b.RowTemplates(), fs.two, fs.gtwo, fs.samp, fs.pass, fs.hits, fs.gvals, fs.svals)
}

// timedSamples adds the samples (an unwrap) of block b's rows that pass
// with a time in [from, to] at their times (times decoded).
func (w *rangeWorker) timedSamples(fs *filterState, b *part.Block, from, to int64) {
	ids, ok := fs.planGroupTwo(b)
	if !ok {
		fs.passing(b)
		w.addPassing(fs, b, from, to, true)
		return
	}
	tids := b.RowTemplates()
	for h, k := range fs.hits[:fs.sampleRows(b)] {
		t := b.RowTime(int(k))
		if t < from || t > to {
			continue
		}
		tid := tids[k]
		g := &fs.gtwo[tid]
		id := int32(0) // a template whose rows' group outcome is one: outIDs[g.base]
		if g.m != 0 {
			id = int32(ids[g.s][fs.gvals[h]])
		}
		w.add(fs.outs[fs.outIDs[g.base+id]], t, fs.slots[fs.samp[tid][0]].nums[fs.svals[h]])
	}
}

// histOK reports whether block b's rows may be counted from its
// columns' counts of entry ids (histogram): the templates read one label
// from columns (the group label, if any), each of its columns holds only
// the values that label of alive templates' rows takes (plan counted
// them), and is read one way.
func (fs *filterState) histOK() bool {
	if fs.histLabel < -1 {
		return false
	}
	for s := range fs.slots {
		if fs.used[s] != fs.vi[s] {
			return false
		}
	}
	for i, v := range fs.verds {
		if v.dict < 0 && !fs.slots[v.slot].keyed {
			return false // numbers, decided by bits
		}
		for _, o := range fs.verds[:i] {
			if o.slot == v.slot {
				return false // read in and out of strings
			}
		}
	}
	return true
}

// histogram counts block b's rows (of histOK) at time t: a template's
// rows in its outcome, a dictionary column's in its entries' outcomes,
// by their counts of ids, and each value of a keyed column by its key
// (held in the batch until every value is read: false, adding nothing,
// when one cannot be batched).
func (w *rangeWorker) histogram(b *part.Block, t int64) (bool, error) {
	cp, fs := w.cols, w.cols.filters
	for _, v := range fs.verds {
		sl := &fs.slots[v.slot]
		if !sl.keyed {
			continue
		}
		cp.batch.hold = true
		for vi := range b.ColumnValues(sl.col) {
			if ok, err := w.keyValue(b, sl.col, vi, v.inString, t, 1); !ok {
				return false, err
			}
		}
	}
	// The templates that read no value pass or fail whole (plan counted
	// them).
	fs.counts = append(fs.counts[:0], fs.free...)
	for _, v := range fs.verds {
		if v.dict < 0 {
			continue
		}
		d := &fs.dicts[v.dict]
		for id, n := range d.count {
			if n == 0 {
				continue
			}
			o := int32(0) // without a group label, a row that passes counts in the stream's series
			if v.outAt >= 0 {
				o = fs.outIDs[v.outAt+id]
			} else if d.pass[id] == 0 {
				o = -1
			}
			if o >= 0 {
				fs.counts[o] += n
			}
		}
	}
	for o, n := range fs.counts {
		if n > 0 {
			w.addN(fs.outs[o], t, n)
		}
	}
	if cp.batch.hold {
		cp.batch.hold = false
		w.flushKeys()
	}
	return true, nil
}

// plan works out, for block b of stream ls (its rows at time t), each
// template's uses and moves and each column's verdicts; false when a
// template with rows cannot be swept.
func (fs *filterState) plan(w *rangeWorker, ls record.Labels, b *part.Block, t int64, timed bool) (bool, error) {
	if len(fs.labels) == 1 && fs.unwrap < 0 && fs.vecs[0] == nil && !timed && fs.sel == nil && !fs.rows {
		if ok, decided, err := fs.planOne(w, ls, b, t); err != nil || decided {
			return ok, err
		}
	}
	if err := fs.start(w, ls, b); err != nil {
		return false, err
	}
	cp := w.cols
	checks := false
	for ti := range b.NumTemplates() {
		tm := &fs.tmpls[ti]
		*tm = fTmpl{samp: -1, group: -1, guse: [maxKept]int32{-1, -1, -1, -1}, movesStart: int32(len(fs.moves)), movesEnd: int32(len(fs.moves))}
		rows := b.TemplateRows(ti)
		if rows == 0 {
			continue
		}
		p := &cp.plans[ti]
		if b.TemplateRaw(ti) || fs.rows && !p.ok {
			// Lines stored whole take the row path after the sweep,
			// in one window: no row of theirs counts here. So do a
			// probe's rows of templates not planned (malformed json,
			// say): its log query runs them whole.
			if timed {
				return false, nil
			}
			tm.walked = true
			fs.raws += rows
			continue
		}
		tm.alive = !p.nothing
		if !tm.alive {
			continue
		}
		if !p.ok || !cp.named && len(p.params) != fs.nparam {
			return false, nil
		}
		// Values its rows must have well-formed: checked below.
		checks = checks || len(p.checks) > 0
		_, holes := b.TemplateLine(ti)
		tm.uses[0] = int32(len(fs.uses))
		for li, name := range fs.labels {
			pp := fs.param(cp, p, li, name)
			if pp == nil || pp.hole < 0 {
				// Absent, or the same value in every row: decided once.
				var pv stage.ParamValue
				if pp != nil {
					if li == fs.unwrap {
						return false, nil // a sample in the gaps
					}
					pv = pp.value
				}
				o, ok, err := fs.constOutcome(w, ls, li, name, pv, t)
				if err != nil || !ok {
					return false, err
				}
				if li == fs.group {
					tm.gout = o
				} else if g := fs.keptIndex(li); g >= 0 {
					tm.gcls[g] = o
				}
				tm.alive = tm.alive && o >= 0
				continue
			}
			si := holes[pp.hole]
			col := b.SlotColumn(ti, si)
			// The group label alone (and an unwrapped one), in one
			// window, with keys from the parameters' values (keyRow):
			// a column of strings without ids is counted by its
			// values' keys.
			keyed := !timed && cp.keys != nil && cp.keys.on && li == fs.group && fs.nparam == len(fs.labels) &&
				(len(fs.labels) == 1 || len(fs.labels) == 2 && fs.unwrap >= 0)
			slot, ok := fs.slot(b, col, keyed)
			if !ok {
				return false, nil
			}
			v, err := fs.verdict(w, ls, b, slot, li, name, pp.inString, t)
			if err != nil || v < 0 {
				return false, err
			}
			switch li {
			case fs.unwrap:
				tm.samp = int32(len(fs.uses))
			case fs.group:
				if vd := &fs.verds[v]; vd.outAt < 0 && !fs.slots[slot].keyed {
					// A whole state's label in a column without ids:
					// the values that pass count in one series, the
					// template's (wholeBits).
					tm.gout, tm.alive = vd.one, tm.alive && vd.one >= 0
					break
				}
				tm.group = int32(len(fs.uses))
			default:
				if g := fs.keptIndex(li); g >= 0 {
					tm.guse[g] = int32(len(fs.uses))
				}
			}
			fs.uses = append(fs.uses, fUse{slot: slot, rank: b.SlotRank(ti, si), verdict: v})
		}
		tm.uses[1] = int32(len(fs.uses))
		if !fs.planMoves(b, ti, tm, rows) {
			return false, nil
		}
		// What a count from the columns' ids needs (histOK, histogram):
		// the rows of the templates that read no value, per outcome;
		// else the values of each slot read as the one label.
		switch nu := tm.uses[1] - tm.uses[0]; {
		case nu == 0:
			if tm.alive && fs.kept == nil {
				fs.free[tm.gout] += rows
			}
		case fs.histLabel >= -1:
			u := &fs.uses[tm.uses[0]]
			l := fs.verds[u.verdict].label
			if !tm.alive || nu != 1 || fs.group >= 0 && l != fs.group || fs.histLabel >= 0 && l != fs.histLabel {
				fs.histLabel = -2
				break
			}
			fs.histLabel = l
			fs.used[u.slot] += rows
		}
	}
	if fs.raws > 0 {
		// The raw rows' values in the slots' columns, now that every
		// slot is known.
		for ti := range b.NumTemplates() {
			if tm := &fs.tmpls[ti]; tm.walked {
				rows := b.TemplateRows(ti)
				tm.movesStart = int32(len(fs.moves))
				fs.slotMoves(b, ti, tm)
				fs.countMoves(tm, rows)
			}
		}
	}
	// The columns' values must be the rows' (the part checks it; a sweep
	// trusts nothing it did not count).
	for s, sl := range fs.slots {
		n := b.ColumnValues(sl.col)
		if fs.vi[s] != n || sl.ids != nil && len(sl.ids) != n || sl.numsOK && len(sl.nums) != n {
			return false, nil
		}
	}
	if fs.kept != nil && !fs.startCombos() {
		return false, nil
	}
	if checks {
		return w.checkRows(b, t)
	}
	return true, nil
}

// start readies the state for the plan of block b of stream ls.
func (fs *filterState) start(w *rangeWorker, ls record.Labels, b *part.Block) error {
	fs.colSlot = growClear(fs.colSlot, b.NumColumns())
	fs.slots, fs.verds, fs.uses, fs.moves, fs.vi = fs.slots[:0], fs.verds[:0], fs.uses[:0], fs.moves[:0], fs.vi[:0]
	fs.tmpls = grown(fs.tmpls, b.NumTemplates())
	fs.pass = append(fs.pass[:0], ^uint64(0), 0) // passOne, passZero
	fs.outs, fs.outIDs, fs.absentOut, fs.dicts = fs.outs[:0], fs.outIDs[:0], -2, fs.dicts[:0]
	fs.used, fs.free = fs.used[:0], fs.free[:0]
	for g := range fs.kept {
		clear(fs.classOf[g])
		fs.classes[g] = fs.classes[g][:0]
	}
	if fs.group < 0 && fs.kept == nil {
		s, err := w.streamSeries(ls, &fs.series)
		if err != nil {
			return err
		}
		fs.outs, fs.free = append(fs.outs, s), append(fs.free, 0)
	}
	// The labels' verdicts when absent, the same for every template,
	// worked out when a template lacks one.
	fs.absent = growClear(fs.absent, len(fs.labels))
	fs.raws, fs.histLabel = 0, -1
	return nil
}

// planOne is plan for a query of one label whose block is counted from
// its columns' counts of entry ids (histOK, histogram): it keeps no
// template's uses or moves, which only the other kernels read. decided
// false: the block needs the whole plan (a template that reads a column
// twice, holds values it does not read, fails whole or is stored whole,
// a column of numbers).
func (fs *filterState) planOne(w *rangeWorker, ls record.Labels, b *part.Block, t int64) (ok, decided bool, err error) {
	if err := fs.start(w, ls, b); err != nil {
		return false, true, err
	}
	cp := w.cols
	name := fs.labels[0]
	checks := false
	for ti := range b.NumTemplates() {
		rows := b.TemplateRows(ti)
		if rows == 0 {
			continue
		}
		p := &cp.plans[ti]
		if b.TemplateRaw(ti) || p.nothing || !p.ok || !cp.named && len(p.params) != fs.nparam {
			return false, false, nil
		}
		checks = checks || len(p.checks) > 0
		pp := fs.param(cp, p, 0, name)
		if pp != nil && pp.hole >= 0 {
			_, holes := b.TemplateLine(ti)
			si := holes[pp.hole]
			if b.TemplateDup(ti) {
				return false, false, nil
			}
			keyed := cp.keys != nil && cp.keys.on && fs.nparam == 1 && fs.group == 0
			slot, ok := fs.slot(b, b.SlotColumn(ti, si), keyed)
			if !ok {
				return false, true, nil
			}
			if sl := &fs.slots[slot]; !sl.dict && !sl.keyed {
				// Values decided one by one, which histOK refuses:
				// decided once, by the whole plan.
				return false, false, nil
			}
			v, err := fs.verdict(w, ls, b, slot, 0, name, pp.inString, t)
			if err != nil || v < 0 {
				return false, true, err
			}
			fs.used[slot] += rows
			fs.histLabel = 0
			continue
		}
		var pv stage.ParamValue // absent
		if pp != nil {
			pv = pp.value // the same value in every row
		}
		o, ok, err := fs.constOutcome(w, ls, 0, name, pv, t)
		if err != nil || !ok {
			return false, true, err
		}
		if o >= 0 {
			fs.free[o] += rows
		}
	}
	// Every value of each column is a row's (the part checks it; a
	// sweep trusts nothing it did not count), read one way.
	fs.vi = append(fs.vi[:0], fs.used...)
	for _, sl := range fs.slots {
		if n := b.ColumnValues(sl.col); fs.used[fs.colSlot[sl.col]-1] != n || sl.ids != nil && len(sl.ids) != n {
			return false, false, nil
		}
	}
	if !fs.histOK() {
		return false, false, nil
	}
	if checks {
		ok, err := w.checkRows(b, t)
		return ok, true, err
	}
	return true, true, nil
}

// planMoves works out the moves of template ti (tm, of rows rows) in the
// slots' columns, and adds them to the columns' counts of values; false
// when a use's rank falls beyond the template's values of its column. A
// template that fails still moves past its values. Only a template that
// reads a label from a column is looked at, and only the slots made so
// far: a template that holds values of a slot's column without reading
// them leaves the column's count of values short, and the block takes
// the general path.
func (fs *filterState) planMoves(b *part.Block, ti int, tm *fTmpl, rows int) bool {
	uses := fs.uses[tm.uses[0]:tm.uses[1]]
	switch {
	case len(uses) == 0:
	case !b.TemplateDup(ti):
		// A value in each column of its slots: one in each used, each
		// use's the first (rank 0).
		for i, u := range uses {
			if i == 0 || !slices.Contains(fs.moves[tm.movesStart:], fMove{slot: u.slot, n: 1}) {
				fs.moves = append(fs.moves, fMove{slot: u.slot, n: 1})
				fs.vi[u.slot] += rows
			}
		}
		tm.movesEnd = int32(len(fs.moves))
		return true
	default:
		fs.slotMoves(b, ti, tm)
	}
	fs.countMoves(tm, rows)
	for _, u := range uses {
		if n := fs.moveOf(tm, u.slot); u.rank >= n {
			return false
		}
	}
	return true
}

// param returns the parameter of template plan p that sets label li
// (named name), nil when its rows lack the label.
func (fs *filterState) param(cp *colPlanner, p *tmplPlan, li int, name string) *paramPlan {
	j := 0 // json without parameters and one label observed: every plan has it first
	switch {
	case !cp.named:
		j = fs.params[li]
	case cp.single == nil:
		j = slices.Index(p.names, name)
	}
	if j < 0 || j >= len(p.params) || p.params[j].hole < 0 && !p.params[j].value.Found {
		return nil
	}
	return &p.params[j]
}

// constOutcome returns what the rows whose label li has value pv in
// every row give (pv not Found: rows without the label): the group
// label's outcome (outcome), another label's verdict (0 passes, -1
// fails); ok false when the filters leave an error no later filter
// drops.
func (fs *filterState) constOutcome(w *rangeWorker, ls record.Labels, li int, name string, pv stage.ParamValue, t int64) (int32, bool, error) {
	if li == fs.group || fs.keptIndex(li) >= 0 {
		return fs.groupOutcome(w, ls, li, name, pv, t)
	}
	var pass, ok bool
	if pv.Found {
		pass, ok = fs.passes(w, ls, li, name, pv)
	} else {
		pass, ok = fs.absentPasses(w, ls, li)
	}
	if !pass {
		return -1, ok, nil
	}
	return 0, ok, nil
}

// groupOutcome returns the outcome of value pv (not Found: a row without
// the label) of label li, which the grouping keeps: its series'
// (outcome), or with kept labels its class; -1 when the label's filters
// fail it; ok false when they leave an error no later filter drops.
func (fs *filterState) groupOutcome(w *rangeWorker, ls record.Labels, li int, name string, pv stage.ParamValue, t int64) (int32, bool, error) {
	if g := fs.keptIndex(li); g >= 0 {
		o, ok := fs.class(w, ls, g, li, name, pv)
		return o, ok, nil
	}
	if !pv.Found {
		return fs.absentOutcome(w, ls, li, name, t)
	}
	return fs.outcome(w, ls, li, name, pv, t)
}

// keptIndex returns the place of label li among the kept labels, or -1.
func (fs *filterState) keptIndex(li int) int {
	return slices.Index(fs.kept, li)
}

// outcome returns the index in outs of the series a row whose group
// label li (set by the json field name, for json without parameters)
// has value pv counts in when the other labels pass, -1 when the label's
// filters fail it; ok false when they leave an error no later filter
// drops.
func (fs *filterState) outcome(w *rangeWorker, ls record.Labels, li int, name string, pv stage.ParamValue, t int64) (int32, bool, error) {
	s, ok, err := fs.outcomeSeries(w, ls, li, name, pv, t)
	if s == nil {
		return -1, ok, err
	}
	fs.outs, fs.free = append(fs.outs, s), append(fs.free, 0)
	return int32(len(fs.outs) - 1), true, nil
}

// outcomeSeries is outcome's series, nil when the row counts in none.
func (fs *filterState) outcomeSeries(w *rangeWorker, ls record.Labels, li int, name string, pv stage.ParamValue, t int64) (s *rangeSeries, ok bool, err error) {
	if fs.whole {
		// The whole pipeline after the json stage, on the one value.
		cp := w.cols
		fs.one[0] = pv
		cp.values, cp.curNames = fs.one[:], cp.single
		s, err = w.columnSeries(ls, t)
		return s, err == nil, err
	}
	if pass, ok := fs.passes(w, ls, li, name, pv); !ok || !pass {
		return nil, ok, nil
	}
	s, err = w.seriesOf() // the labels the filters kept: the stream's and the group label
	return s, err == nil, err
}

// absentOutcome is outcome for a row without the group label, worked
// out once per block.
func (fs *filterState) absentOutcome(w *rangeWorker, ls record.Labels, li int, name string, t int64) (int32, bool, error) {
	if fs.absentOut == -2 {
		o, ok, err := fs.outcome(w, ls, li, name, stage.ParamValue{}, t)
		if err != nil || !ok {
			return -1, false, err
		}
		fs.absentOut = o
	}
	return fs.absentOut, true, nil
}

// absentPasses reports whether a row without label li passes its
// filters: false for an unwrapped label, which gives no sample (as
// Loki's, a row without the label is none, with or without an error);
// ok false when the filters leave an error no later filter drops.
func (fs *filterState) absentPasses(w *rangeWorker, ls record.Labels, li int) (pass, ok bool) {
	if fs.absent[li] == absentUnknown {
		fs.absent[li] = absentFails
		if li == fs.unwrap {
			return false, true
		}
		switch pass, ok := fs.passes(w, ls, li, "", stage.ParamValue{}); {
		case !ok:
			fs.absent[li] = absentErrs
		case pass:
			fs.absent[li] = absentPasses
		}
	}
	return fs.absent[li] == absentPasses, fs.absent[li] != absentErrs
}

// absentVerdict is what a row without a label gives (absentPasses).
type absentVerdict uint8

const (
	absentUnknown absentVerdict = iota // not yet worked out for the block
	absentFails
	absentPasses
	absentErrs // the label's filters leave an error that no filter drops
)

// slotMoves appends the moves of template ti (tm) in the columns of the
// slots made so far, from its slots' columns (countMoves ends its run).
func (fs *filterState) slotMoves(b *part.Block, ti int, tm *fTmpl) {
	for _, col := range b.SlotColumns(ti) {
		slot := fs.colSlot[col] - 1
		if slot < 0 {
			continue
		}
		k := int(tm.movesStart)
		for k < len(fs.moves) && fs.moves[k].slot != slot {
			k++
		}
		if k == len(fs.moves) {
			fs.moves = append(fs.moves, fMove{slot: slot})
		}
		fs.moves[k].n++
	}
}

// countMoves adds the values of template tm's rows rows to its slots'
// columns' counts.
func (fs *filterState) countMoves(tm *fTmpl, rows int) {
	tm.movesEnd = int32(len(fs.moves))
	for _, m := range fs.moves[tm.movesStart:tm.movesEnd] {
		fs.vi[m.slot] += m.n * rows
	}
}

// moveOf returns how many values of slot's column a row of template tm has.
func (fs *filterState) moveOf(tm *fTmpl, slot int) int {
	for _, m := range fs.moves[tm.movesStart:tm.movesEnd] {
		if m.slot == slot {
			return m.n
		}
	}
	return 0
}

// slot returns the slot of column col, made at its first use: false
// when the column is neither a constant, a dictionary nor of numbers,
// nor may be keyed (fSlot.keyed).
func (fs *filterState) slot(b *part.Block, col int, keyed bool) (int, bool) {
	if s := fs.colSlot[col]; s > 0 {
		return s - 1, true
	}
	sl := fSlot{col: col}
	if n := len(fs.slots); n < cap(fs.slots) {
		sl.nums = fs.slots[:n+1][n].nums[:0] // the buffer of the block before's slot
	}
	if ids, ok := b.ValueIDs(col); ok {
		sl.ids, sl.dict = ids, true
	} else if keyed {
		sl.keyed = true
	}
	fs.slots, fs.used = append(fs.slots, sl), append(fs.used, 0)
	fs.vi = append(fs.vi, 0)
	fs.colSlot[col] = len(fs.slots)
	return len(fs.slots) - 1, true
}

// verdict returns the index in verds of whether each value of slot's
// column passes label li's filters, read in or out of a string (worked
// out once per block); -1 when a value is not what json reads as a
// label, errs where the error is not dropped, or the column cannot say
// (numbers the label's filters do not only compare, a sample not from
// a column of numbers).
func (fs *filterState) verdict(w *rangeWorker, ls record.Labels, b *part.Block, slot, li int, name string, inString bool, t int64) (int, error) {
	for i := range fs.verds {
		if v := &fs.verds[i]; v.slot == slot && v.label == li && v.inString == inString {
			return i, nil
		}
	}
	sl := &fs.slots[slot]
	n := b.ColumnValues(sl.col)
	outAt, one := -1, int32(-1)
	at, nw := len(fs.pass), (n+63)/64
	fs.pass = slices.Grow(fs.pass, nw)[:at+nw]
	dst := fs.pass[at:]
	clear(dst)
	dict := -1
	switch {
	case sl.keyed:
		// Each value passes here, counted by its key, which the key's
		// filters decide (keyRow).
		setBits(dst, n)
	case sl.dict && li != fs.unwrap:
		cp := w.cols
		dict = len(fs.dicts)
		fs.dicts = slices.Grow(fs.dicts, 1)[:dict+1]
		d := &fs.dicts[dict]
		if ok, err := b.CountIDs(sl.col, &d.count, &fs.first); err != nil || !ok {
			return -1, err
		}
		if li == fs.group || fs.keptIndex(li) >= 0 {
			outAt = len(fs.outIDs)
			fs.outIDs = slices.Grow(fs.outIDs, 256)[:outAt+256]
		}
		for id, c := range d.count {
			d.pass[id] = 0
			if c == 0 {
				continue
			}
			pv, ok, err := cp.holeValue(b, sl.col, fs.first[id], t, inString)
			if err != nil || !ok {
				return -1, err
			}
			if outAt >= 0 {
				o, ok, err := fs.groupOutcome(w, ls, li, name, pv, t)
				if err != nil || !ok {
					return -1, err
				}
				fs.outIDs[outAt+id] = o
				d.pass[id] = b2u(o >= 0)
				continue
			}
			pass, ok := fs.passes(w, ls, li, name, pv)
			if !ok {
				return -1, nil
			}
			d.pass[id] = b2u(pass)
		}
	case !sl.dict && fs.vecs[li] != nil && li != fs.group && fs.keptIndex(li) < 0: // an unwrapped label's without filters passes every number
		if !sl.numsOK {
			var ok bool
			if sl.nums, ok = b.Numbers(sl.col, sl.nums[:0]); !ok {
				return -1, nil
			}
			sl.numsOK = true
		}
		fs.vecs[li].eval(sl.nums, dst, &fs.tmp)
		if r := n % 64; r > 0 {
			dst[n/64] &= 1<<r - 1 // vecAll sets a word whole
		}
	case !sl.dict && fs.strs[li] != nil && li != fs.unwrap && li != fs.group && fs.keptIndex(li) < 0:
		// A column without ids (strings, the long tail a dictionary
		// did not take, numbers a string filter reads): each value
		// decided by the label's filters alone, as json gives it.
		// A dictionary-and-rest column's entries are decided once each.
		if lp := fs.prefixes[li]; lp.ok {
			hex, err := b.HexPrefixBits(sl.col, lp.text, lp.exact, dst)
			if err != nil {
				return -1, err
			}
			if hex {
				break // hex values hold no newline, escape nor null
			}
		}
		if inString && !fs.rawMade[li] {
			fs.rawMisses[li], fs.rawMade[li] = rawMiss(fs.rawFilters[li]), true
		}
		match, miss := fs.strs[li], fs.rawMisses[li]
		if !inString {
			miss = nil // no escapes
		}
		ids, _ := b.EntryIDs(sl.col)
		var entry [part.RestID]known // each entry's verdict, once decided
		cp := w.cols
		for vi := range n {
			id := part.RestID
			if ids != nil {
				if id = int(ids[vi]); id != part.RestID && entry[id] != unknown {
					if entry[id] == knownYes {
						dst[vi/64] |= 1 << (vi % 64)
					}
					continue
				}
			}
			mark := len(cp.arena.b)
			v, arena, err := b.Value(sl.col, vi, t, cp.arena.b)
			cp.arena.b = arena
			if err != nil {
				return -1, err
			}
			// An escaped value that cannot hold what the filters need
			// fails unescaped (were it malformed, json would set no
			// label, which fails them too).
			pass := false
			if miss == nil || bytes.IndexByte(v, '\\') < 0 || !miss(v) {
				pv, ok := cp.parsedValue(v, inString)
				if !ok {
					return -1, nil
				}
				pass = match(pv.Value)
			}
			cp.arena.b = cp.arena.b[:mark] // the value is not kept: its unescaped copy need not be
			if pass {
				dst[vi/64] |= 1 << (vi % 64)
			}
			if id != part.RestID {
				entry[id] = knownOf(pass)
			}
		}
	case !sl.dict && fs.whole:
		var ok bool
		var err error
		if one, ok, err = fs.wholeBits(w, ls, b, sl.col, name, inString, t, dst); err != nil || !ok {
			return -1, err
		}
	default:
		return -1, nil
	}
	fs.verds = append(fs.verds, fVerdict{slot: slot, label: li, inString: inString, at: at, outAt: outAt, one: one, dict: dict, lazy: dict >= 0})
	return len(fs.verds) - 1, nil
}

// rawMiss returns a test of a JSON string's content as the line holds it
// (escaped) that is true when its unescaped value cannot pass fs, the
// filters of one label: it lacks a literal one of them requires
// (filterClauses), and holds no \u escape, the only one that could write
// a literal of printable ASCII without " \ and / (unicodeEscapesOnly).
// nil when fs require no such literal. k8s' log field, a JSON line escaped whole,
// was unescaped for each row to be searched for ERROR (74% of the
// question).
func rawMiss(fs []logql.LabelFilter) func(raw []byte) bool {
	var sets []*literal.Set
	for _, f := range fs {
		for _, ic := range filterClauses(f, &captureSource{}) {
			c := ic.clause
			if !unicodeEscapesOnly(c) || slices.ContainsFunc(c, func(l store.Literal) bool { return l.Fold != c[0].Fold }) {
				continue
			}
			lits := make([][]byte, len(c))
			for i, l := range c {
				lits[i] = l.Text
			}
			sets = append(sets, literal.NewSet(lits, c[0].Fold))
		}
	}
	if len(sets) == 0 {
		return nil
	}
	return func(raw []byte) bool {
		if bytes.Contains(raw, unicodeEscape.Text) {
			return false
		}
		for _, s := range sets {
			if !s.Match(raw) {
				return true
			}
		}
		return false
	}
}

// wholeBits sets in dst the bits of the values of column col (a
// dictionary and the rest) that a whole state's label passes with (name,
// read in or out of a string), each value's series worked out, an
// entry's once. It returns the outcome of the values that pass, -1 when
// none does; false when they count in more than one series, or a value
// is not what json reads as a label: the column cannot say. A column of
// strings alone (each value another) is left to the rows, whose reads
// of a value's prefix or needle this would lose (k8s-inner-errors: 650
// ms against 1,000).
func (fs *filterState) wholeBits(w *rangeWorker, ls record.Labels, b *part.Block, col int, name string, inString bool, t int64, dst []uint64) (int32, bool, error) {
	ids, ok := b.EntryIDs(col)
	if !ok {
		return -1, false, nil
	}
	var entry [part.RestID]known // each entry's verdict, once decided
	var only *rangeSeries
	for vi := range b.ColumnValues(col) {
		id := int(ids[vi])
		if id != part.RestID && entry[id] != unknown {
			if entry[id] == knownYes {
				dst[vi/64] |= 1 << (vi % 64)
			}
			continue
		}
		mark := len(w.cols.arena.b)
		pv, ok, err := w.cols.holeValue(b, col, vi, t, inString)
		if err != nil || !ok {
			return -1, false, err
		}
		s, ok, err := fs.outcomeSeries(w, ls, 0, name, pv, t)
		w.cols.arena.b = w.cols.arena.b[:mark] // a new series copied what it keeps
		if err != nil || !ok {
			return -1, false, err
		}
		if s != nil {
			if only != nil && s != only {
				return -1, false, nil
			}
			only = s
			dst[vi/64] |= 1 << (vi % 64)
		}
		if id != part.RestID {
			entry[id] = knownOf(s != nil)
		}
	}
	if only == nil {
		return -1, true, nil
	}
	fs.outs, fs.free = append(fs.outs, only), append(fs.free, 0)
	return int32(len(fs.outs) - 1), true, nil
}

// bitsReady sets the bits of the verdicts whose bits are not yet set
// from their entries' verdicts.
func (fs *filterState) bitsReady() {
	for i := range fs.verds {
		v := &fs.verds[i]
		if !v.lazy {
			continue
		}
		v.lazy = false
		d, sl := &fs.dicts[v.dict], &fs.slots[v.slot]
		n := len(sl.ids)
		if sl.ids == nil { // a constant: every value is id 0
			n = fs.vi[v.slot]
		}
		dst := fs.pass[v.at:][:(n+63)/64]
		if sl.ids == nil {
			if d.pass[0] != 0 {
				setBits(dst, n)
			}
			continue
		}
		// One entry passes (an equality), or one fails: each value
		// compared with it, eight at a time; else looked up.
		var one, last [2]int
		for id, c := range d.count {
			if c > 0 {
				p := d.pass[id]
				one[p]++
				last[p] = id
			}
		}
		switch {
		case one[1] == 1:
			equalBits(dst, sl.ids, byte(last[1]), false)
		case one[0] == 1:
			equalBits(dst, sl.ids, byte(last[0]), true)
		default:
			gatherBits(dst, sl.ids, &d.pass)
		}
	}
}

// setBits sets the first n bits of dst, whose words past them are clear.
func setBits(dst []uint64, n int) {
	for i := range n / 64 {
		dst[i] = ^uint64(0)
	}
	if r := n % 64; r > 0 {
		dst[n/64] = 1<<r - 1
	}
}

// gatherBits sets bit i of dst to pass[ids[i]] (0 or 1), a word at a
// time in a register.
func gatherBits(dst []uint64, ids []byte, pass *[256]byte) {
	for w := range len(ids) / 64 {
		var x uint64
		for j, id := range ids[w*64 : w*64+64] {
			x |= uint64(pass[id]) << j
		}
		dst[w] = x
	}
	if r := len(ids) % 64; r > 0 {
		var x uint64
		for j, id := range ids[len(ids)-r:] {
			x |= uint64(pass[id]) << j
		}
		dst[len(ids)/64] = x
	}
}

// equalBits sets bit i of dst to whether ids[i] is id (not, with
// negate), eight ids a step: a byte of the difference is zero exactly
// when its top bit and the top bit of it plus 0x7f are both clear.
func equalBits(dst []uint64, ids []byte, id byte, negate bool) {
	const lows, highs = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	want := uint64(id) * 0x0101010101010101
	n := len(ids)
	for w := range (n + 63) / 64 {
		var x uint64
		end := min(w*64+64, n)
		i := w * 64
		for ; i+8 <= end; i += 8 {
			v := binary.LittleEndian.Uint64(ids[i:]) ^ want
			nonzero := ((v & lows) + lows | v) & highs // the top bit of each byte that differs
			zero := ^nonzero & highs
			// The top bits gathered into a byte, byte k's at bit k.
			x |= (zero >> 7 * 0x0102040810204080 >> 56) << (i - w*64)
		}
		for ; i < end; i++ {
			if ids[i] == id {
				x |= 1 << (i - w*64)
			}
		}
		if negate {
			x = ^x
			if r := end - w*64; r < 64 {
				x &= 1<<r - 1
			}
		}
		dst[w] = x
	}
}

// passes reports whether value pv of label li (set by the json field
// name, for json without parameters) passes the label's filters, for a
// row of stream ls; ok false when the filters leave an error that no
// later filter drops (the row would keep it as a label).
func (fs *filterState) passes(w *rangeWorker, ls record.Labels, li int, name string, pv stage.ParamValue) (pass, ok bool) {
	cp := w.cols
	w.lb.Reset(ls)
	if cp.named {
		fs.oneName[0], fs.one[0] = name, pv
		cp.fields.Apply(w.lb, fs.oneName[:], fs.one[:])
	} else {
		fs.vals = growClear(fs.vals, fs.nparam)
		fs.vals[fs.params[li]] = pv
		cp.json.Apply(w.lb, fs.vals)
	}
	_, kept := fs.pipes[li].Process(0, nil, w.lb)
	if w.lb.HasError() {
		return false, fs.dropsErrors
	}
	return kept, true
}

// count returns how many of block b's rows pass, planned by plan.
func (fs *filterState) count(b *part.Block) int {
	if fs.sel == nil {
		if canon, others, ok := fs.aligned(b); ok {
			return others + fs.countAligned(b, canon)
		}
	}
	if n, ok := fs.countTwo(b); ok {
		return n
	}
	fs.passing(b)
	return len(fs.hits)
}

// addSamples adds at time t the samples of block b's rows that pass (an
// unwrap) to their series, in the rows' order.
func (w *rangeWorker) addSamples(fs *filterState, b *part.Block, t int64) {
	lo, hi := w.windows(t)
	canon, _, ok := fs.aligned(b)
	g := fs.groupUse(canon)
	if !ok || fs.group >= 0 && g == nil {
		fs.passing(b)
		w.addPassing(fs, b, 0, 0, false) // t is the block's last time
		return
	}
	if canon == nil {
		return
	}
	// Value i of every slot is one row's; rows without the values give
	// no sample (their templates lack the unwrapped label).
	nums := fs.slots[fs.canonUse(canon, fs.unwrap).slot].nums
	nw := (b.ColumnValues(fs.slots[canon[0].slot].col) + 63) / 64
	set := fs.pass[fs.verds[canon[0].verdict].at:][:nw]
	if len(canon) > 1 {
		fs.and = grown(fs.and, nw)
		for wi := range nw {
			fs.and[wi] = fs.alignedWord(canon, wi)
		}
		set = fs.and
	}
	if g != nil {
		// Each passing value's series by its group label's entry.
		ids, outs := fs.slots[g.slot].ids, fs.outIDs[fs.verds[g.verdict].outAt:][:256]
		for k := lo; k <= hi; k++ {
			for wi, word := range set {
				for ; word != 0; word &= word - 1 {
					i, id := wi*64+bits.TrailingZeros64(word), 0
					if ids != nil {
						id = int(ids[i])
					}
					fs.outs[outs[id]].add(w.op, int(k), t, nums[i])
				}
			}
		}
		return
	}
	s := fs.outs[0]
	for k := lo; k <= hi; k++ {
		for wi, word := range set {
			for ; word != 0; word &= word - 1 {
				s.add(w.op, int(k), t, nums[wi*64+bits.TrailingZeros64(word)])
			}
		}
	}
}

// canonUse returns the use of label li (-1: none) among the aligned uses
// canon, nil when none reads it.
func (fs *filterState) canonUse(canon []fUse, li int) *fUse {
	if li < 0 {
		return nil
	}
	for i := range canon {
		if fs.verds[canon[i].verdict].label == li {
			return &canon[i]
		}
	}
	return nil
}

// groupUse is the use of canon that reads the group label and gives
// each value its own outcome; nil when none does (each row's outcome is
// its template's: the label is absent or the same in every row, or all
// the values that pass count in one series, wholeBits).
func (fs *filterState) groupUse(canon []fUse) *fUse {
	u := fs.canonUse(canon, fs.group)
	if u != nil && fs.verds[u.verdict].outAt < 0 && !fs.slots[u.slot].keyed {
		return nil
	}
	return u
}

// alignedWord returns word wi of the bits of the values that pass every
// use of canon.
func (fs *filterState) alignedWord(canon []fUse, wi int) uint64 {
	word := ^uint64(0)
	for _, u := range canon {
		word &= fs.pass[fs.verds[u.verdict].at+wi]
	}
	return word
}

// fTwo is a template's part in countTwo: bit base[s] + (vi[s]+r[s])&m[s]
// of pass decides slot s (a mask of 0 reads bit base[s] alone: passOne
// for a slot the template reads no value of, passZero for a template
// whose rows cannot pass), and a row has n[s] values of slot s's column.
type fTwo struct {
	base, r, m, n [2]int32
}

// passBit returns 1 when a row of template part f whose values of the
// two slots' columns start at vi0 and vi1 passes, else 0.
func (f *fTwo) passBit(vi0, vi1 int32, pass []uint64) int32 {
	i0, i1 := f.base[0]+(vi0+f.r[0])&f.m[0], f.base[1]+(vi1+f.r[1])&f.m[1]
	return int32((pass[i0>>6] >> (i0 & 63)) & (pass[i1>>6] >> (i1 & 63)) & 1)
}

// countTwo is passing's count without a branch per row, for blocks of
// at most two slots whose templates read each at most once; of the rows
// fs.sel selects, when it is set.
func (fs *filterState) countTwo(b *part.Block) (int, bool) {
	if !fs.planTwo(b) {
		return 0, false
	}
	if fs.sel != nil {
		return twoCountSel(b.RowTemplates(), fs.two, fs.pass, fs.sel), true
	}
	return twoCount(b.RowTemplates(), fs.two, fs.pass), true
}

// planTwo works out the templates' parts in the two-slot kernels (fTwo);
// false when the block has more than two slots or a template reads one
// twice.
func (fs *filterState) planTwo(b *part.Block) bool {
	if len(fs.slots) > 2 {
		return false
	}
	fs.two = grown(fs.two, b.NumTemplates())
	for ti := range b.NumTemplates() {
		tm := &fs.tmpls[ti]
		f := fTwo{base: [2]int32{passOne, passOne}}
		for _, m := range fs.moves[tm.movesStart:tm.movesEnd] {
			f.n[m.slot] = int32(m.n)
		}
		for _, u := range fs.uses[tm.uses[0]:tm.uses[1]] {
			if f.m[u.slot] != 0 {
				return false // a slot read twice
			}
			f.base[u.slot], f.r[u.slot], f.m[u.slot] = int32(64*fs.verds[u.verdict].at), int32(u.rank), -1
		}
		if !tm.alive {
			f.base[0], f.m[0] = passZero, 0
		}
		fs.two[ti] = f
	}
	return true
}

// fGroup is a template's group part in groupTwo: its rows' outcome is
// outIDs[base + id], id the value id (vi[s]+r)&m of slot s's column,
// masked by m (a mask of 0: every row's outcome is outIDs[base]).
type fGroup struct {
	base, r, m int32
	s          int32
}

// groupTwo is countGroups without a branch per row, for blocks of at
// most two slots whose templates read each at most once: per row, the
// two pass bits and the outcome of its group label's value id, counted
// in fs.counts (a row that fails, in a last entry not kept).
func (fs *filterState) groupTwo(b *part.Block) bool {
	ids, ok := fs.planGroupTwo(b)
	if !ok {
		return false
	}
	fs.counts = growClear(fs.counts, len(fs.outs)+1)
	groupCount(b.RowTemplates(), fs.two, fs.gtwo, fs.pass, ids, fs.outIDs, fs.counts)
	fs.counts = fs.counts[:len(fs.outs)]
	return true
}

// planGroupTwo works out the templates' parts in the branch-free
// grouped kernels (groupCount, groupRows), and returns each slot's ids;
// false when the block has more than two slots or a template reads one
// twice. Without a group label, every template's rows that pass count in
// outcome 0, the stream's series.
func (fs *filterState) planGroupTwo(b *part.Block) ([2][]byte, bool) {
	if !fs.planTwo(b) {
		return [2][]byte{}, false
	}
	nt := b.NumTemplates()
	fs.gtwo = grown(fs.gtwo, nt)
	for ti := range nt {
		tm := &fs.tmpls[ti]
		if tm.group >= 0 {
			u := fs.uses[tm.group]
			fs.gtwo[ti] = fGroup{base: int32(fs.verds[u.verdict].outAt), r: int32(u.rank), m: -1, s: int32(u.slot)}
			continue
		}
		fs.gtwo[ti] = fGroup{base: int32(len(fs.outIDs))}
		fs.outIDs = append(fs.outIDs, max(tm.gout, 0)) // a dead template's rows fail
	}
	return fs.twoIDs(b), true
}

// planPair works out the templates' parts in the branch-free kernels of
// two kept labels (pairCount, pairRows), and returns each slot's ids;
// false when the grouping keeps not two labels, the block has more than
// two slots or a template reads one twice.
func (fs *filterState) planPair(b *part.Block) ([2][]byte, bool) {
	if len(fs.kept) != 2 || !fs.planTwo(b) {
		return [2][]byte{}, false
	}
	nt := b.NumTemplates()
	fs.gpair = grown(fs.gpair, nt)
	for ti := range nt {
		tm := &fs.tmpls[ti]
		for g := range 2 {
			if ui := tm.guse[g]; ui >= 0 {
				u := fs.uses[ui]
				fs.gpair[ti][g] = fGroup{base: int32(fs.verds[u.verdict].outAt), r: int32(u.rank), m: -1, s: int32(u.slot)}
				continue
			}
			fs.gpair[ti][g] = fGroup{base: int32(len(fs.outIDs))}
			fs.outIDs = append(fs.outIDs, max(tm.gcls[g], 0)) // a dead template's rows fail
		}
	}
	return fs.twoIDs(b), true
}

// twoIDs returns the ids of the two-slot kernels' slots: each slot's
// ids, or zeros (a constant, a column of numbers, no slot).
func (fs *filterState) twoIDs(b *part.Block) [2][]byte {
	var ids [2][]byte
	for s := range ids {
		if s < len(fs.slots) && fs.slots[s].ids != nil {
			ids[s] = fs.slots[s].ids
			continue
		}
		n := 1
		if s < len(fs.slots) {
			n = max(n, b.ColumnValues(fs.slots[s].col))
		}
		if len(fs.zeros) < n {
			fs.zeros = make([]byte, n)
		}
		ids[s] = fs.zeros
	}
	return ids
}

// groupCount counts the rows of templates tids in counts by outcome
// (groupTwo).
func groupCount(tids []int32, two []fTwo, gtwo []fGroup, pass []uint64, ids [2][]byte, outIDs []int32, counts []int) {
	dummy := int32(len(counts) - 1)
	var vi [2]int32
	for _, t := range tids {
		f, g := &two[t], &gtwo[t]
		p := f.passBit(vi[0], vi[1], pass)
		id := int32(ids[g.s][(vi[g.s]+g.r)&g.m]) & g.m
		o := outIDs[g.base+id]
		counts[dummy+(o-dummy)*p]++
		vi[0] += f.n[0]
		vi[1] += f.n[1]
	}
}

// groupRows sets dst[k] to the outcome of row k of templates tids, -1
// when it fails (planGroupTwo).
func groupRows(tids []int32, two []fTwo, gtwo []fGroup, pass []uint64, ids [2][]byte, outIDs []int32, dst []int32) {
	var vi [2]int32
	for k, t := range tids {
		f, g := &two[t], &gtwo[t]
		p := f.passBit(vi[0], vi[1], pass)
		id := int32(ids[g.s][(vi[g.s]+g.r)&g.m]) & g.m
		dst[k] = (outIDs[g.base+id]+1)*p - 1
		vi[0] += f.n[0]
		vi[1] += f.n[1]
	}
}

// pairCount counts the rows of templates tids in counts by combination
// of their two kept labels' classes (n1: the second label's classes; a
// row that fails, in a last entry not kept).
func pairCount(tids []int32, two []fTwo, gp [][2]fGroup, pass []uint64, ids [2][]byte, outIDs []int32, n1 int32, counts []int) {
	dummy := int32(len(counts) - 1)
	var vi [2]int32
	for _, t := range tids {
		f, g := &two[t], &gp[t]
		p := f.passBit(vi[0], vi[1], pass)
		c := g[0].class(vi, ids, outIDs)*n1 + g[1].class(vi, ids, outIDs)
		counts[dummy+(c-dummy)*p]++
		vi[0] += f.n[0]
		vi[1] += f.n[1]
	}
}

// pairOuts sets dst[k] to the combination of the classes of row k of
// templates tids, -1 when it fails (pairCount).
func pairOuts(tids []int32, two []fTwo, gp [][2]fGroup, pass []uint64, ids [2][]byte, outIDs []int32, n1 int32, dst []int32) {
	var vi [2]int32
	for k, t := range tids {
		f, g := &two[t], &gp[t]
		p := f.passBit(vi[0], vi[1], pass)
		c := g[0].class(vi, ids, outIDs)*n1 + g[1].class(vi, ids, outIDs)
		dst[k] = (c+1)*p - 1
		vi[0] += f.n[0]
		vi[1] += f.n[1]
	}
}

// class returns outIDs' entry of the row whose values of the two slots'
// columns start at vi.
func (g *fGroup) class(vi [2]int32, ids [2][]byte, outIDs []int32) int32 {
	return outIDs[g.base+int32(ids[g.s][(vi[g.s]+g.r)&g.m])&g.m]
}

// keyedRows lists in hits (as long as tids) the rows of templates tids
// that pass, and for each its group label's value in gvals (0 for a
// template whose rows all give it alike) and its sample's in svals (samp:
// per template, the slot and rank of its sample); it returns how many
// pass (planGroupTwo).
func keyedRows(tids []int32, two []fTwo, gtwo []fGroup, samp [][2]int32, pass []uint64, hits, gvals, svals []int32) int {
	var vi [2]int32
	n := 0
	for k, t := range tids {
		f, g, sp := &two[t], &gtwo[t], &samp[t]
		hits[n] = int32(k)
		gvals[n] = (vi[g.s] + g.r) & g.m
		svals[n] = vi[sp[0]] + sp[1]
		n += int(f.passBit(vi[0], vi[1], pass))
		vi[0] += f.n[0]
		vi[1] += f.n[1]
	}
	return n
}

// twoHits sets the first entries of hits (as long as tids) to the rows
// of templates tids that pass, and returns how many pass (planTwo).
func twoHits(tids []int32, two []fTwo, pass []uint64, hits []int32) int {
	vi0, vi1, n := int32(0), int32(0), 0
	for k, t := range tids {
		f := &two[t]
		hits[n] = int32(k)
		n += int(f.passBit(vi0, vi1, pass))
		vi0 += f.n[0]
		vi1 += f.n[1]
	}
	return n
}

// twoCount counts the rows of templates tids that pass (countTwo).
func twoCount(tids []int32, two []fTwo, pass []uint64) int {
	vi0, vi1, passed := int32(0), int32(0), 0
	for _, t := range tids {
		f := &two[t]
		passed += int(f.passBit(vi0, vi1, pass))
		vi0 += f.n[0]
		vi1 += f.n[1]
	}
	return passed
}

// twoCountSel is twoCount of the rows whose bit sel holds.
func twoCountSel(tids []int32, two []fTwo, pass, sel []uint64) int {
	vi0, vi1, passed := int32(0), int32(0), 0
	for k, t := range tids {
		f := &two[t]
		passed += int(f.passBit(vi0, vi1, pass) & int32(sel[k>>6]>>(k&63)))
		vi0 += f.n[0]
		vi1 += f.n[1]
	}
	return passed
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// aligned reports whether every template with rows that has a value in
// the slots' columns has one in each, is alive and reads each the same
// way (canon, nil when no template has values): then value i of every
// slot is one row's, and a row passes when each slot's value i passes.
// The other templates' rows pass or fail alike: others of them pass.
func (fs *filterState) aligned(b *part.Block) (canon []fUse, others int, ok bool) {
	for ti := range b.NumTemplates() {
		n := b.TemplateRows(ti)
		if n == 0 {
			continue
		}
		tm := &fs.tmpls[ti]
		ms, us := fs.moves[tm.movesStart:tm.movesEnd], fs.uses[tm.uses[0]:tm.uses[1]]
		if len(ms) == 0 {
			if tm.alive {
				others += n
			}
			continue
		}
		if !tm.alive || len(ms) != len(fs.slots) || len(us) != len(fs.slots) {
			return nil, 0, false
		}
		for _, m := range ms {
			if m.n != 1 {
				return nil, 0, false
			}
		}
		if canon == nil {
			canon = us
			continue
		}
		if !slices.Equal(us, canon) {
			return nil, 0, false
		}
	}
	for _, u := range canon {
		if u.rank != 0 {
			return nil, 0, false
		}
	}
	return canon, others, true
}

// countAligned counts the rows of the aligned uses canon that pass.
func (fs *filterState) countAligned(b *part.Block, canon []fUse) int {
	if canon == nil {
		return 0
	}
	passed := 0
	nw := (b.ColumnValues(fs.slots[canon[0].slot].col) + 63) / 64
	switch p0 := fs.pass[fs.verds[canon[0].verdict].at:][:nw]; len(canon) {
	case 1:
		for _, word := range p0 {
			passed += bits.OnesCount64(word)
		}
	case 2:
		p1 := fs.pass[fs.verds[canon[1].verdict].at:][:nw]
		for i, word := range p0 {
			passed += bits.OnesCount64(word & p1[i])
		}
	default:
		for wi := range nw {
			passed += bits.OnesCount64(fs.alignedWord(canon, wi))
		}
	}
	return passed
}

// hitOut returns the outcome of hit i of passing: the index in outs of
// its series.
func (fs *filterState) hitOut(i int) int32 {
	if fs.group < 0 && fs.kept == nil {
		return 0
	}
	return fs.houts[i]
}

// rowOut returns the outcome of a passing row of template tm whose
// slots' values start at vi: its group label's entry's, or the
// template's; for a group label in a keyed column, -2 - the index of
// the row's value (keyedSamples).
func (fs *filterState) rowOut(tm *fTmpl, vi []int) int32 {
	if fs.kept != nil {
		// The combination of the kept labels' classes (keptOutcomes).
		c := int32(0)
		for g := range fs.kept {
			k := tm.gcls[g]
			if ui := tm.guse[g]; ui >= 0 {
				u := fs.uses[ui]
				id := 0
				if ids := fs.slots[u.slot].ids; ids != nil {
					id = int(ids[vi[u.slot]+u.rank])
				}
				k = fs.outIDs[fs.verds[u.verdict].outAt+id]
			}
			c = c*int32(len(fs.classes[g])) + k
		}
		return c
	}
	if tm.group < 0 {
		return tm.gout
	}
	u := fs.uses[tm.group]
	if fs.slots[u.slot].keyed {
		return int32(-2 - (vi[u.slot] + u.rank))
	}
	id := 0
	if ids := fs.slots[u.slot].ids; ids != nil {
		id = int(ids[vi[u.slot]+u.rank])
	}
	return fs.outIDs[fs.verds[u.verdict].outAt+id]
}

// countGroups sets fs.counts to the number of block b's rows that pass
// in each outcome.
func (fs *filterState) countGroups(b *part.Block) {
	fs.counts = growClear(fs.counts, len(fs.outs))
	canon, _, ok := fs.aligned(b)
	g := fs.groupUse(canon)
	one := int32(-1)
	if ok && g == nil && canon != nil {
		one = fs.valuesOutcome(b)
	}
	if !ok || g == nil && one < 0 {
		// The templates read the columns unlike, or none reads the
		// group label from one (each row's outcome is its template's).
		if fs.groupTwo(b) {
			return
		}
		fs.passing(b)
		for _, o := range fs.houts {
			fs.counts[o]++
		}
		return
	}
	// The templates without values: each passes or fails whole.
	for ti := range b.NumTemplates() {
		if tm := &fs.tmpls[ti]; tm.alive && tm.movesEnd == tm.movesStart {
			fs.counts[tm.gout] += b.TemplateRows(ti)
		}
	}
	if g == nil {
		// The rows with values count in one outcome (wholeBits).
		fs.counts[one] += fs.countAligned(b, canon)
		return
	}
	ids, outs := fs.slots[g.slot].ids, fs.outIDs[fs.verds[g.verdict].outAt:][:256]
	nw := (b.ColumnValues(fs.slots[g.slot].col) + 63) / 64
	for wi := range nw {
		word := fs.alignedWord(canon, wi)
		for ; word != 0; word &= word - 1 {
			id := 0
			if ids != nil {
				id = int(ids[wi*64+bits.TrailingZeros64(word)])
			}
			fs.counts[outs[id]]++
		}
	}
}

// valuesOutcome returns the outcome of the rows of block b's templates
// with values when it is one, the same for each template; else -1.
func (fs *filterState) valuesOutcome(b *part.Block) int32 {
	o := int32(-1)
	for ti := range b.NumTemplates() {
		tm := &fs.tmpls[ti]
		if b.TemplateRows(ti) == 0 || tm.movesEnd == tm.movesStart {
			continue
		}
		if tm.group >= 0 || o >= 0 && tm.gout != o {
			return -1
		}
		o = tm.gout
	}
	return o
}

// passing sets fs.hits to the rows of block b that pass and, with an
// unwrap, fs.samps to their samples, in one pass over their templates,
// each row's values found by the moves of the rows before it.
func (fs *filterState) passing(b *part.Block) { fs.passingFrom(b, 0) }

// passingFrom is passing for the rows from row lo on: the moves of the
// rows before it are counted per template, not made row by row.
func (fs *filterState) passingFrom(b *part.Block, lo int) {
	vi := fs.vi
	clear(vi)
	fs.hits, fs.samps, fs.houts = fs.hits[:0], fs.samps[:0], fs.houts[:0]
	tmpls, uses, moves, verds, pass := fs.tmpls, fs.uses, fs.moves, fs.verds, fs.pass
	tids := b.RowTemplates()
	if lo > 0 {
		counts := growClear(fs.before, b.NumTemplates())
		fs.before = counts
		for _, t := range tids[:lo] {
			counts[t]++
		}
		for t, c := range counts {
			tm := &tmpls[t]
			for _, m := range moves[tm.movesStart:tm.movesEnd] {
				vi[m.slot] += m.n * c
			}
		}
	}
	sel := fs.sel
	for k := lo; k < len(tids); k++ {
		t := tids[k]
		tm := &tmpls[t]
		if tm.alive && (sel == nil || sel[k>>6]>>(k&63)&1 != 0) {
			ok := true
			for _, u := range uses[tm.uses[0]:tm.uses[1]] {
				if i := 64*verds[u.verdict].at + vi[u.slot] + u.rank; pass[i>>6]>>(i&63)&1 == 0 {
					ok = false
					break
				}
			}
			if ok {
				fs.hits = append(fs.hits, int32(k))
				if tm.samp >= 0 {
					u := uses[tm.samp]
					fs.samps = append(fs.samps, fs.slots[u.slot].nums[vi[u.slot]+u.rank])
				}
				if fs.group >= 0 || fs.kept != nil {
					fs.houts = append(fs.houts, fs.rowOut(tm, vi))
				}
			}
		}
		for _, m := range moves[tm.movesStart:tm.movesEnd] {
			vi[m.slot] += m.n
		}
	}
}

// checkRows checks the values that the rows of a block must have
// well-formed (tmplPlan.check) in one walk of the rows with a cursor that
// keeps only the columns checked.
func (w *rangeWorker) checkRows(b *part.Block, t int64) (bool, error) {
	cp := w.cols
	nt := b.NumTemplates()
	checked := growClear(cp.checked, b.NumColumns())
	cp.checked = checked
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

// rawRows runs the rows of a block's raw templates, whose lines are
// stored whole, on the row path. The block's rows all count in the same
// windows, and the stages of a columnar pipeline (json, label filters)
// never read a row's time: each row is given time t, and the block's
// times are never decoded.
func (w *rangeWorker) rawRows(ev *evaluator, ls record.Labels, b *part.Block, t int64) error {
	cp := w.cols
	lci, vi := b.LineColumn(), 0
	sel := cp.filters.sel
	for k := range b.NumRows() {
		if !b.TemplateRaw(b.RowTemplate(k)) {
			continue
		}
		if sel != nil && sel[k>>6]>>(k&63)&1 == 0 {
			vi++ // the leading line filters drop it
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
