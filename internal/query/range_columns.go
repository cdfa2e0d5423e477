package query

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store/part"
)

// The columnar path of a range aggregation whose pipeline is `| json`
// with parameters followed by label filters only: a stored row's
// parameters are read from the columns that hold them, not from its line,
// which is then never rebuilt.
//
// A templated line is gap₀ value₀ gap₁ … gapₙ: the gaps are the same for
// every row of a template. The template's skeleton, its gaps with each
// value replaced by a placeholder (nothing inside a JSON string, 0
// outside), is searched once per block with the json stage's own code;
// a parameter found in a value, or in the gaps, or not at all, is then so
// in every row of the template whose values before it are well-formed
// JSON of their kind (string content inside a string, one JSON value
// outside), which each row's check confirms: where the search of a row's
// line would read them, they read as the placeholders did. Templates
// whose structure depends on the values (a key or a path's object in a
// value), raw lines, and rows that fail the check take the row path.

// columnarPipeline reports whether a range aggregation can take the
// columnar path: its pipeline is json with parameters, or without them
// when its parsers set only the labels observed (not nil), followed by
// label filters.
func columnarPipeline(x *logql.RangeAggregation, observed *stage.Observed) bool {
	stages := x.Range.Log.Pipeline
	if measuresLines(x.Op) && slices.ContainsFunc(stages, func(s logql.Stage) bool {
		_, ok := s.(*logql.LineFormat)
		return ok
	}) {
		return false // the length measured is the stored line's, not the one made
	}
	switch kl, ok := logfmtKeys(stages, observed); {
	case !ok:
		return false // a quiet logfmt parser that may set any label
	case kl != nil && (x.Op == "first_over_time" || x.Op == "last_over_time"):
		// The rows its keys send through the whole pipeline are added
		// before the others: of two rows of the same time, which is
		// first would change.
		return false
	}
	return columnarStages(stages[leadingFilters(stages, true).n:], observed, true)
}

// afterJSON returns the stages after the json stage of a columnar
// pipeline.
func (w *rangeWorker) afterJSON() []logql.Stage {
	n := 0
	if w.lead != nil {
		n = w.lead.lf.n
	}
	stages := w.x.Range.Log.Pipeline[n+1:]
	if w.keyLines == nil {
		return stages
	}
	// A quiet logfmt parser sets nothing on the rows read from columns
	// (logfmt_after.go).
	return withoutQuietLogfmt(stages)
}

// columnarStages reports whether a pipeline is json with parameters, or
// without them when its parsers set only the labels observed (not nil),
// followed by label filters, and perhaps drops of the error labels. With
// lineTail (a range aggregation's pipeline), other stages of labels alone
// may follow too (drop, keep, label_format from labels alone:
// stage.FormatsLabelsOnly), then a line_format of labels alone
// (stage.FromLabels), and after it parsers, line filters and label
// filters: they read the line it makes of the json
// stage's labels, never the stored line, so that they are run on the
// labels the columns give (`| json log | line_format "{{.log}}" | json
// level`), and what a row gives still depends only on its stream and
// its values.
func columnarStages(stages []logql.Stage, observed *stage.Observed, lineTail bool) bool {
	if len(stages) == 0 {
		return false
	}
	if j, ok := stages[0].(*logql.JSONParser); !ok || len(j.Params) == 0 && observed == nil {
		return false
	}
	// Drops of the error labels alone at the end (`| drop __error__,
	// __error_details__`, as Grafana's Logs Drilldown ends its queries)
	// change only the rows with errors, which the columnar path runs
	// through the whole pipeline: the stages after json run them too.
	for len(stages) > 1 {
		d, ok := stages[len(stages)-1].(*logql.Drop)
		if !ok || !dropsErrorLabelsOnly(d) {
			break
		}
		stages = stages[:len(stages)-1]
	}
	formatted := false
	for _, s := range stages[1:] {
		switch s := s.(type) {
		case *logql.LabelFilterStage:
			continue
		case *logql.Drop, *logql.Keep:
			if lineTail {
				continue
			}
		case *logql.LabelFormat:
			if lineTail && stage.FormatsLabelsOnly(s) {
				continue
			}
		case *logql.LineFormat:
			if lineTail && stage.FromLabels(s.Template) {
				formatted = true
				continue
			}
		case *logql.JSONParser, *logql.LogfmtParser, *logql.RegexpParser, *logql.PatternParser, *logql.LineFilter:
			if formatted || lineTail && quietLogfmt(s) && observed != nil {
				continue // a quiet logfmt's rows are split by its keys (logfmt_after.go)
			}
		}
		return false
	}
	return true
}

// tmplPlan is how a template's rows give the json parameters. The fields
// a row reads come first, so that its first cache line holds them (a
// block has a few hundred templates, and its rows come in any order).
type tmplPlan struct {
	ok bool // false: rebuild each row's line and take the row path
	// nothing: givesNothing said its rows give nothing (this block).
	nothing bool
	// fastIDs: a row's outcome is its parameters' packed ids' (ids,
	// idMemo), and needs no check, number filter nor unwrap: once the
	// outcome is known, block decides the row itself, without rowValues
	// and columnRow (this block). (A row of one parameter's entry is
	// decided by rowValues and columnRow from dictMemo: the sweep takes
	// such rows first.)
	fastIDs bool
	numsOK  bool     // see nums
	num0    numParam // nums[0], read by every row of a number filter on one parameter
	// one: for a template of one parameter in a constant or dictionary
	// column, where its rows' value ids are (startBlock, per block).
	one    oneParam
	checks []int // the values of [0, check) that a row's check reads (others are well-formed by their column's kind)
	// idn, idAt: for a template whose parameters (two to four, or json
	// without parameters) are each in a constant or dictionary column or
	// absent, how many they are (0: not so) and where each one's value
	// id is (colPlanner.colIDs), so that a row's outcome is remembered by
	// its ids (colPlanner.idMemo).
	idn  int
	idAt [maxIDParams]idParam

	params []paramPlan
	// names, for json without parameters (colPlanner.named), are the
	// fields of params: those of the template that may set a label the
	// query observes, in the order of its lines.
	names    []string
	check    int    // values [0, check) of a row must be well-formed
	inString []bool // per value, whether it sits inside a JSON string
	// inStrMask is inString of the first 64 values, a bit each.
	inStrMask uint64
	// nums: where the parameters a predState reads are (this block), when
	// each is in a number column or absent; numsOK false otherwise.
	nums []numParam
}

// numParam is where a parameter's number is: value cur[col]+rank of
// number column col, or absent (col < 0).
type numParam struct{ col, rank int }

// oneParam is where the value ids of a template's one parameter are: the
// value of a row is cur[col]+rank of column col, whose id is ids[value]
// (ids nil: a constant, id 0). col < 0: not so.
type oneParam struct {
	col, rank int
	ids       []byte
}

// paramPlan is where one parameter is: in value hole, or (hole < 0) the
// same in every row.
type paramPlan struct {
	hole     int
	inString bool
	value    stage.ParamValue
}

// valueCut is a value of the row at hand that rowValues read only the
// start of (colPlanner.prefix): values[idx] is a prefix of value vi of
// column col of block b.
type valueCut struct {
	on bool
	// drop: the row is dropped for sure (colPlanner.needle), nothing
	// to read.
	drop    bool
	idx     int
	b       *part.Block
	col, vi int
	t       int64
}

// prefixCut is how many bytes of a long escaped value a prefix read
// unescapes: the fields an application's JSON log leads with (time,
// level) are within it. On the k8s store, CPU per question by cut: whole
// values 2.60 s, 128 bytes 2.46, 96 2.21, 64 2.30 (fewer rows decided:
// 0.91M against 1.10M); a value's first bytes are its densest in escapes.
const prefixCut = 96

// colPlanner is a worker's state on the columnar path.
type colPlanner struct {
	json stage.JSONParams // the pipeline's json stage, with parameters
	// named: the json stage has no parameters and sets only the labels
	// the query observes (fields): a template's plan finds the fields
	// that may set one, and its parameters are those.
	named    bool
	fields   stage.JSONFields
	curNames []string // the names of the row at hand's values (named)
	// single, when the labels observed are one besides the error labels
	// (and not a suffixed one), is that label: every template's plan then
	// has the one parameter, absent where no field sets it, and blocks
	// can be swept as for json with one parameter.
	single []string
	rest   *stage.Pipeline // the stages after it (columnarStages): label filters, and what reads a line_format's line
	// weight is what the row at hand counts for: 1, or with measure
	// (bytes_over_time, bytes_rate) its line's length, from lens (the
	// block's, part.Block.LineLengths).
	weight    float64
	measure   bool
	lens      []int32
	plans     []tmplPlan
	cur       part.Cursor // where the row at hand's values are, in the columns needed
	need      []bool      // per column, whether the cursor keeps it
	plainCols []known     // per column: whether every value is plain string content
	line      []byte
	values    []stage.ParamValue
	arena     valueArena
	scan      stage.JSONScanner // scratch: planning, checks, unescaping
	scratch   []byte            // a value a check reads

	planCache map[part.Shape]*tmplPlan // by the shape of a template
	share     *planShare               // the engine's plans, behind planCache
	stageKey  string                   // what the plans depend on besides the shape (planShareKey)
	planFront *[planFrontSize]planSlot // in front of planCache: the plan last met per slot of a shape's hash
	memo      map[string]*rangeSeries  // the stream's parameters' values -> series (nil: filtered out)
	memoKey   []byte
	// One parameter from a dictionary column: the block's outcomes by
	// column*256 + entry (valueID, -1 for other rows).
	valueID int
	memoOn  bool // outcomes are remembered (no unwrap)
	// memoLooks and memoMisses count the stream's memo lookups and
	// misses (columnRow).
	memoLooks, memoMisses int
	// pastLooks and pastMisses are theirs over the streams before
	// (skipMemoTrial).
	pastLooks, pastMisses int
	unwrapParam           int // the parameter a plain unwrap (or of bytes()) reads, when no filter before it does; -1
	// unwrapIDs: the stream has no label of unwrapParam's name, so that
	// a row's outcome but for its number can be remembered by the other
	// parameters' ids (idParams).
	unwrapIDs  bool
	dictMemo   []uint8
	dictSeries []*rangeSeries
	// colIDs: per column of the block, the value ids idParams found
	// (nil for a constant column, whose every value is id 0).
	colIDs [][]byte
	// Several parameters from dictionaries (tmplPlan.idAt): the block's
	// outcomes by the row's packed ids (idKey, when idKeyed), nil for
	// rows the filters drop.
	idKey   uint64
	idKeyed bool
	idMemo  map[uint64]*rangeSeries
	// idCache holds the outcomes of the block's last keys met, by a hash
	// of the key: a block has few combinations, found here without the
	// map. idHit is the outcome rowValues found for the row at hand.
	idCache [256]idSlot
	idHit   *idSlot

	skel      []byte
	holeOff   []int
	holeInStr []bool
	valid     [][2][256]known // per column, per context, per value id: whether it is well-formed
	// wholeValid is, per column and context, whether every value is
	// well-formed.
	wholeValid [][2]known

	checked []bool     // checkRows': per column, whether a row checks it
	pred    *predState // number filters decided on columns (range_pred.go), or nil
	// filters are the stream at hand's label filters decided per value
	// (range_filters.go), or nil: byLabel's when it is on for the
	// stream, else byWhole's.
	filters, byLabel, byWhole *filterState
	// byShadow: byLabel's kin for the streams that have some labels of
	// the json stage, by those labels (nil: none can be swept);
	// filterNames, the stage's observed labels they are made from.
	byShadow    map[string]*filterState
	filterNames []string
	keys        *keyPlan // series keys from the parameters' values (range_keys.go), or nil
	batch       keyBatch // rows counted with keys, waiting for their series (range_keys.go)

	// dropsErrors: a label filter __error__="" drops the rows whose line
	// the json stage cannot parse. Then rows of a template in which no
	// parameter is found (absentPlan) give what such a row gives whether
	// or not its line is well-formed, and when that is nothing (noneMemo,
	// per stream: 0 unknown, 1 something, 2 nothing) they are skipped
	// unread and unchecked.
	dropsErrors bool
	noneMemo    known

	// prefix: the stages after the json stage make the line of one of
	// its labels and parse it as JSON (stage.PrefixRead); prefixOK: for
	// the block at hand (no unwrap, and no stream label of the name).
	// rowValues then unescapes only a prefix of a long value of that
	// label first (cut), and columnSeries the whole value only for the
	// rows the prefix does not decide.
	// needKnown: need and paramTime are worked out for the block at
	// hand (startBlock does it for a block it is told will be walked).
	needKnown bool
	// idsLater: planBlock leaves the plans' value ids and numbers (planIDs) to
	// startRows, for a block that may be counted without a walk.
	idsLater bool

	prefix   stage.PrefixRead
	prefixOn bool
	prefixOK bool
	// prefixKeeps: a row the prefix keeps for sure (stage.PrefixRead's
	// Process) counts in the series of the labels it gives, as no
	// series keeps the prefix's label and no line is measured.
	prefixKeeps bool
	cut         valueCut
	// needle: a value of the prefix label that holds neither the text
	// of needle.scan nor `\u` drops its row unless needle.label was set
	// before (stage.PrefixRead.Needle): the row is dropped unread.
	// needle.ok: for the block at hand (no stream label of the name);
	// needle.miss: the row at hand's value holds neither.
	// needle.line: the needle is a line filter's right after a
	// line_format of the label (stage.Pipeline.LineNeedle), with no
	// prefix read; needle.keeps: and the two are the whole pipeline, the
	// label is not in the series, and no line is measured, so that a
	// value that holds the text where no escape begins it keeps its row
	// read as it is stored, not unescaped (needleValue).
	needle struct {
		label                     string
		scan                      needleScan
		on, ok, miss, line, keeps bool
		at                        valueCut // the value missed: parameter idx, where it is
		// kept: the row at hand's value holds the text, and the needle
		// keeps it (needleValue); idx: the value's place in cp.values.
		kept bool
		idx  int
		// cols: the block's columns of the label looked at so far, and
		// verdicts[i] the verdict of each value of cols[i] when it is
		// stored as strings (needleScan.decideAll), else nil; whole:
		// the block's rows are all read (no leading line filter selects
		// some), so that its columns are decided whole.
		whole    bool
		cols     []int
		verdicts [][]needleVerdict
		// param[t]: for the block's template t, 1 + the place of the
		// one parameter of the label among its plan's, read from the
		// row as a string, or -1 when there is none (or another of
		// the name); 0 until worked out (needleDrops).
		param []int16
		// pre: 1 + the row at hand's verdict, as needleDrops found it
		// for needleValue; 0 when it did not.
		pre needleVerdict
	}

	num unwrapNum // rowValues: the unwrapped parameter's number, if read as one
	// paramTime: some template of the block has a parameter in a time
	// column, whose values are written from their rows' times.
	paramTime bool
}

func (w *rangeWorker) colPlanner() *colPlanner {
	if w.cols == nil {
		jp, params := w.colPipe.JSONParams() // columnarPipeline made sure of one or the other
		jf, _ := w.colPipe.JSONFields()
		w.cols = &colPlanner{json: jp, named: !params, fields: jf, rest: w.colPipe.Tail(), memoOn: w.x.Range.Unwrap == nil, unwrapParam: -1,
			dropsErrors: dropsErrors(w.x), share: w.plans, weight: 1, measure: measuresLines(w.x.Op)}
		if params {
			w.cols.stageKey = "p" + jp.PathsKey()
		} else {
			w.cols.stageKey = "n" + strings.Join(jf.Observed(), "\x00")
		}
		var names []string
		if !params {
			for _, n := range jf.Observed() {
				if n != stage.ErrorLabel && n != stage.ErrorDetailsLabel {
					names = append(names, n)
				}
			}
			if len(names) == 1 && !strings.HasSuffix(names[0], stage.ExtractedSuffix) {
				w.cols.single = names
			}
		}
		switch {
		case params:
			if names, ok := distinctParamNames(jp); ok {
				w.cols.pred = newPredState(w, names, true)
			}
		case w.cols.single != nil:
			// Every plan has the one observed label as its parameter 0.
			w.cols.pred = newPredState(w, w.cols.single, false)
		}
		if !w.cols.measure { // the sweeps count rows: a row's length is no count
			w.cols.byLabel = newFilterState(w, jp, params, names, nil)
			w.cols.filterNames = names
			w.cols.byWhole = newWholeState(w, jp, params)
		}
		if u := w.x.Range.Unwrap; u != nil && (u.Conv == "" || u.Conv == "bytes") && !filtersRead(w.afterJSON(), u.Label) {
			switch {
			case params:
				for i := range jp.Len() {
					if jp.Name(i) == u.Label {
						w.cols.unwrapParam = i
					}
				}
			case w.cols.single != nil && w.cols.single[0] == u.Label:
				// json without parameters whose one observed label is
				// the unwrapped one (`| json | unwrap latency_ms` by
				// stream labels): every plan has it as its parameter 0.
				w.cols.unwrapParam = 0
			}
		}
		switch {
		case params:
			w.cols.keys = newKeyPlan(w, jp)
		case w.cols.single != nil:
			w.cols.keys = newNamedKeyPlan(w, w.cols.single[0])
		}
		if w.x.Range.Unwrap == nil {
			w.cols.prefix, w.cols.prefixOn = w.cols.rest.PrefixRead()
			nd := &w.cols.needle
			var text string
			if w.cols.prefixOn {
				nd.label, text, nd.on = w.cols.prefix.Needle()
				w.cols.prefixKeeps = !w.cols.measure && !keepsAny([]string{w.cols.prefix.Label()}, w.x.Grouping, w.mergedBy)
			} else {
				var alone bool
				nd.label, text, alone, nd.on = w.cols.rest.LineNeedle()
				nd.line = nd.on
				nd.keeps = nd.on && alone && !w.cols.measure && !keepsAny([]string{nd.label}, w.x.Grouping, w.mergedBy)
			}
			if nd.on {
				nd.scan = newNeedleScan(text)
			}
		}
	}
	return w.cols
}

// startColumns readies the columnar path's state for the rows of stream
// ls.
func (w *rangeWorker) startColumns(ls record.Labels) {
	cp := w.colPlanner()
	clear(cp.memo) // its outcomes hold for one stream
	cp.pastLooks, cp.pastMisses = cp.pastLooks+cp.memoLooks, cp.pastMisses+cp.memoMisses
	cp.noneMemo, cp.memoLooks, cp.memoMisses = unknown, 0, 0
	if cp.unwrapIDs = cp.unwrapParam >= 0; cp.unwrapIDs {
		_, shadowed := ls.Get(w.x.Range.Unwrap.Label)
		cp.unwrapIDs = !shadowed
	}
	if cp.pred != nil {
		cp.pred.startStream(ls)
	}
	cp.startFilters(w, ls)
	if cp.keys != nil {
		cp.keys.startStream(ls)
		cp.skipMemoTrial()
	}
}

// block adds the samples of a stored block's rows in [from, to].
func (w *rangeWorker) block(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) error {
	err := w.blockRows(ev, ls, b, from, to)
	w.flushKeys() // the block's rows counted with keys
	return err
}

// blockRows is block but for the rows left in the key batch.
func (w *rangeWorker) blockRows(ev *evaluator, ls record.Labels, b *part.Block, from, to int64) error {
	cp := w.colPlanner()
	cp.cut.on = false
	sel, some, err := w.lead.of(b) // the rows the leading line filters keep (nil: every row)
	if err != nil || !some {
		return err
	}
	if w.keyLines != nil {
		// The rows whose line may give a quiet logfmt parser a label
		// go through the whole pipeline; the others are read from
		// columns.
		var lined []uint64
		if sel, lined, err = w.keyLines.split(b, sel); err != nil {
			return err
		}
		if lined != nil {
			if err := w.linedRows(ev, ls, b, lined, from, to); err != nil {
				return err
			}
		}
	}
	if cp.filters != nil {
		cp.filters.sel = sel
	}
	if cp.prefixOn {
		_, stream := ls.Get(cp.prefix.Label())
		cp.prefixOK = !stream
		_, stream = ls.Get(cp.needle.label)
		cp.needle.ok = cp.prefixOK && cp.needle.on && !stream
	} else if cp.needle.line {
		_, stream := ls.Get(cp.needle.label)
		cp.needle.ok = !stream
		cp.needle.cols, cp.needle.whole = cp.needle.cols[:0], sel == nil
		cp.needle.param = growClear(cp.needle.param, b.NumTemplates())
	}
	countable := w.countable(b, from, to)
	// A block counted without a walk needs no memo of outcomes by ids.
	cp.idsLater = countable
	if err := cp.startBlock(b, !countable, func(p *tmplPlan) (bool, error) { return w.givesNothing(ls, p) }); err != nil {
		return err
	}
	if done, err := w.filterSweep(ev, ls, b, from, to); done || err != nil {
		return err
	}
	cp.startRows(b)
	// A block whose rows all fall in the same windows gives samples whose
	// times matter not, unless the function or a parameter reads them:
	// its rows' times are read only for the lines rebuilt.
	lo, hi := b.TimeRange()
	timeless := lo >= from && hi <= to && w.sameWindows(lo, hi) && w.timeFree() && !cp.paramTime
	if cp.measure {
		if cp.lens, err = b.LineLengths(sel, cp.lens); err != nil {
			return err
		}
	}
	if !timeless {
		if err := b.DecodeTimes(); err != nil {
			return err
		}
	}
	for k := range b.NumRows() {
		t, tm := hi, b.RowTemplate(k)
		if !timeless {
			t = b.RowTime(k)
		}
		if t >= from && t <= to && (sel == nil || sel[k>>6]>>(k&63)&1 != 0) {
			if err := ev.scanned(&w.tally, nil); err != nil {
				return err
			}
			if cp.measure {
				cp.weight = float64(cp.lens[k])
			}
			p := &cp.plans[tm]
			if p.nothing { // startBlock asked givesNothing
				w.tally.columnar++
				cp.cur.Next(tm)
				continue
			}
			if p.fastIDs {
				if key, ok := cp.rowIDKey(p); ok {
					if hit := cp.idOutcome(key); hit != nil {
						w.tally.columnar++
						if hit.s != nil {
							w.add(hit.s, t, cp.weight)
						}
						cp.cur.Next(tm)
						continue
					}
				}
			}
			if done, err := w.predRow(ls, b, tm, t); err != nil {
				return err
			} else if done {
				w.tally.columnar++
				cp.cur.Next(tm)
				continue
			}
			ok, err := cp.rowValues(b, tm, t)
			if err != nil {
				return err
			}
			if ok {
				w.tally.columnar++
				if err := w.columnRow(ls, t); err != nil {
					return err
				}
			} else {
				if timeless { // a line's time columns are written from its time
					if err := b.DecodeTimes(); err != nil {
						return err
					}
					t = b.RowTime(k)
				}
				if err := w.rebuiltRow(ev, ls, b, tm, &cp.cur, t, &cp.line); err != nil {
					return err
				}
			}
		}
		cp.cur.Next(tm)
	}
	return nil
}

// rebuiltRow runs the row of template tm at cur (time t) of block b
// through the whole pipeline on its line, rebuilt into *line.
func (w *rangeWorker) rebuiltRow(ev *evaluator, ls record.Labels, b *part.Block, tm int, cur *part.Cursor, t int64, line *[]byte) error {
	var err error
	if *line, err = b.AppendLine((*line)[:0], tm, cur, t); err != nil {
		return err
	}
	return w.row(ev, ls, t, *line, nil, nil)
}

// countable reports whether block b may be counted without a walk of its
// rows (filterSweep): then the columns a walk would keep are
// worked out only if it is walked after all.
func (w *rangeWorker) countable(b *part.Block, from, to int64) bool {
	cp := w.cols
	return cp.filters != nil // filterSweep, in one window or not
}

// timeFree reports whether the range function's value over a window is
// the same whatever the times of its samples in it.
func (w *rangeWorker) timeFree() bool {
	switch w.op {
	case opFirst, opLast:
		return false
	case opList:
		return false // rate_counter
	}
	return true
}

// absentPlan reports whether a template's rows have none of the
// parameters (when their lines are well-formed).
func absentPlan(p *tmplPlan) bool {
	if !p.ok {
		return false
	}
	for _, pp := range p.params {
		if pp.hole >= 0 || pp.value.Found {
			return false
		}
	}
	return true
}

// givesNothing reports whether the rows of a template with plan p (of
// stream ls) give no sample at all: none of the parameters is found in
// them, the filters drop a row without them, and __error__="" drops one
// whose line is malformed.
func (w *rangeWorker) givesNothing(ls record.Labels, p *tmplPlan) (bool, error) {
	cp := w.cols
	if !cp.dropsErrors || !absentPlan(p) {
		return false, nil
	}
	if cp.noneMemo == unknown { // worked out once per stream
		cp.values, cp.curNames = cp.values[:0], p.names
		for _, pp := range p.params {
			cp.values = append(cp.values, pp.value)
		}
		var s *rangeSeries
		var err error
		if w.x.Range.Unwrap != nil {
			s, _, err = w.columnSample(ls, 0)
		} else {
			s, err = w.columnSeries(ls, 0)
		}
		if err != nil {
			return false, err
		}
		cp.noneMemo = knownOf(s == nil)
	}
	return cp.noneMemo == knownYes, nil
}

// knownNothing reports whether givesNothing has found that the rows of a
// template with plan p give nothing.
func (cp *colPlanner) knownNothing(p *tmplPlan) bool {
	return cp.noneMemo == knownYes && cp.dropsErrors && absentPlan(p)
}

// dropsErrors reports whether a label filter __error__="" (alone, or
// and-ed with others) follows the json stage, before or after unwrap.
func dropsErrors(x *logql.RangeAggregation) bool {
	var after []logql.LabelFilter
	if u := x.Range.Unwrap; u != nil {
		after = u.Filters
	}
	return stagesDropErrors(x.Range.Log.Pipeline, after)
}

// stagesDropErrors reports whether a label filter __error__="" (alone,
// or and-ed with others) follows the first stage, among the stages or
// the filters after them.
func stagesDropErrors(stages []logql.Stage, after []logql.LabelFilter) bool {
	for _, st := range stages[1:] {
		if lf, ok := st.(*logql.LabelFilterStage); ok && dropsErrorRows(lf.Filter) {
			return true
		}
	}
	return slices.ContainsFunc(after, dropsErrorRows)
}

// dropsErrorRows reports whether label filter f drops every row with an
// error: __error__="", alone or and-ed.
func dropsErrorRows(f logql.LabelFilter) bool {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		return f.And && (dropsErrorRows(f.Left) || dropsErrorRows(f.Right))
	case *logql.LabelFilterString:
		m := f.Matcher
		return m.Name == stage.ErrorLabel && m.Type == logql.MatchEqual && m.Value == ""
	}
	return false
}

// columnRow finishes a row whose parameters are in cp.values: the json
// stage's labels, then the label filters, then the sample. Without
// unwrap, what the filters decide and the series the row counts in
// depend only on the stream and the parameters' values: within a
// stream, rows with the values of an earlier row reuse its outcome.
func (w *rangeWorker) columnRow(ls record.Labels, t int64) error {
	cp := w.cols
	if w.x.Range.Unwrap != nil {
		return w.columnRowOnce(ls, t)
	}
	if cp.cut.on {
		// A prefix of a value is no key of its outcome.
		s, err := w.columnSeries(ls, t)
		if s != nil {
			w.add(s, t, cp.weight)
		}
		return err
	}
	if cp.valueID >= 0 {
		// One parameter from a dictionary: its entry names its value.
		switch cp.dictMemo[cp.valueID] {
		case memoDropped:
			return nil
		case memoKept:
			w.add(cp.dictSeries[cp.valueID], t, cp.weight)
			return nil
		}
		s, err := w.columnSeries(ls, t)
		if err != nil {
			return err
		}
		cp.dictMemo[cp.valueID] = memoDropped
		if s != nil {
			cp.dictMemo[cp.valueID], cp.dictSeries[cp.valueID] = memoKept, s
			w.add(s, t, cp.weight)
		}
		return nil
	}
	if cp.idKeyed {
		// Parameters from dictionaries: their ids name their values.
		if cp.idHit == nil {
			s, err := w.columnSeries(ls, t)
			if err != nil {
				return err
			}
			cp.rememberID(s)
		}
		if s := cp.idHit.s; s != nil {
			w.add(s, t, cp.weight)
		}
		return nil
	}
	if cp.memoMisses >= memoTrial && cp.memoMisses*2 > cp.memoLooks {
		// The values hardly repeat in this stream: the memo would
		// cost a key and a lookup per row, and save nothing.
		if cp.keys.fits(cp) {
			w.keyRow(t, cp.weight)
			return nil
		}
		s, err := w.columnSeries(ls, t)
		if s != nil {
			w.add(s, t, cp.weight)
		}
		return err
	}
	cp.memoKey = cp.memoKey[:0]
	for i, v := range cp.values {
		if cp.needle.kept && i == cp.needle.idx {
			// The needle keeps the row whatever else the value
			// holds, and the series lacks its label: the row's
			// outcome is the same for every value kept so.
			cp.memoKey = append(cp.memoKey, 2, 0xff)
			continue
		}
		cp.memoKey = appendParamKey(cp.memoKey, v)
	}
	if cp.named { // templates differ in the fields their values are
		for _, n := range cp.curNames {
			cp.memoKey = append(append(cp.memoKey, n...), 0xff)
		}
	}
	cp.memoLooks++
	if o, ok := cp.memoed(); ok {
		if o != nil {
			w.add(o, t, cp.weight)
		}
		return nil
	}
	cp.memoMisses++
	s, err := w.columnSeries(ls, t)
	if err != nil {
		return err
	}
	cp.remember(s)
	if s != nil {
		w.add(s, t, cp.weight)
	}
	return nil
}

// rememberID keeps s as the outcome of the row's packed ids, cp.idKey.
func (cp *colPlanner) rememberID(s *rangeSeries) {
	if cp.idMemo == nil {
		cp.idMemo = map[uint64]*rangeSeries{}
	}
	cp.idMemo[cp.idKey] = s
	cp.idCache[idSlotOf(cp.idKey)] = idSlot{key: cp.idKey, s: s, ok: true}
	cp.idHit = &cp.idCache[idSlotOf(cp.idKey)]
}

// memoTrial is the misses after which a stream whose memo misses more
// often than it hits stops using it.
const memoTrial = 256

// skipMemoTrial starts a stream with its memo off when the streams before
// found it useless and the stream's rows can take keys instead (a series
// per user id: each stream's trial made a series, its labels and a memo
// entry for each of its first hundreds of rows, 20% of
// app-distinct-users' rows over its 328 streams). Rows with keys get
// the series the memo would have given.
func (cp *colPlanner) skipMemoTrial() {
	if kp := cp.keys; kp != nil && kp.on && cp.pastMisses >= memoTrial && cp.pastMisses*2 > cp.pastLooks {
		cp.memoLooks, cp.memoMisses = memoTrial, memoTrial
	}
}

// memoed returns the series remembered for the parameters' values in
// cp.memoKey (nil: filtered out), if any is.
func (cp *colPlanner) memoed() (*rangeSeries, bool) {
	s, ok := cp.memo[unsafe.String(unsafe.SliceData(cp.memoKey), len(cp.memoKey))]
	return s, ok
}

// remember keeps s as the series of the values in cp.memoKey, while the
// memo has room.
func (cp *colPlanner) remember(s *rangeSeries) {
	if cp.memo == nil {
		cp.memo = map[string]*rangeSeries{}
	}
	if len(cp.memo) < maxMemo {
		cp.memo[string(cp.memoKey)] = s
	}
}

// Outcomes in dictMemo.
const (
	memoUnknown = iota
	memoDropped
	memoKept
)

// maxMemo bounds the outcomes remembered per stream: parameters whose
// values hardly repeat (an id) would only fill memory.
const maxMemo = 4096

// columnSeries runs the label stages on a row's parameters and returns
// the series it counts in, or nil when a filter drops it.
func (w *rangeWorker) columnSeries(ls record.Labels, t int64) (*rangeSeries, error) {
	cp := w.cols
	if cp.cut.on {
		cp.cut.on = false
		if cp.cut.drop {
			return nil, nil
		}
		w.setColumnLabels(ls)
		dropped, kept := cp.prefix.Process(t, w.lb)
		switch {
		case dropped:
			return nil, nil
		case kept && cp.prefixKeeps:
			return w.seriesOf()
		}
		// Not decided by the prefix: the whole value, and the row again.
		c := &cp.cut
		pv, ok, err := cp.holeValue(c.b, c.col, c.vi, c.t, true)
		if err != nil {
			return nil, err
		}
		if !ok {
			// checksHold made sure of every value rowValues reads.
			return nil, fmt.Errorf("columnar read: value %d of column %d is no JSON string content, though checked", c.vi, c.col)
		}
		cp.values[c.idx] = pv
	} else if cp.keys.fits(cp) {
		return w.keySeries(), nil
	}
	if !w.columnLabels(ls, t) {
		return nil, nil
	}
	return w.seriesOf()
}

// columnLabels sets w.lb to a row's labels: the stream's, the json
// stage's of the parameters in cp.values, then the label filters'. It
// reports whether the filters keep the row.
func (w *rangeWorker) columnLabels(ls record.Labels, t int64) bool {
	w.setColumnLabels(ls)
	_, ok := w.cols.rest.Process(t, nil, w.lb)
	return ok
}

// setColumnLabels sets w.lb to the stream's labels and the json stage's
// of the row's values.
func (w *rangeWorker) setColumnLabels(ls record.Labels) {
	cp := w.cols
	w.lb.Reset(ls)
	if cp.named {
		cp.fields.Apply(w.lb, cp.curNames, cp.values)
	} else {
		cp.json.Apply(w.lb, cp.values)
	}
}

// columnRowOnce is columnRow for one row alone.
//
// With a plain unwrap of a parameter that no filter before it reads,
// the series depends only on the other parameters (once the value
// converts): rows whose other parameters repeat reuse it, and only their
// value is read.
func (w *rangeWorker) columnRowOnce(ls record.Labels, t int64) error {
	cp := w.cols
	ui := cp.unwrapParam
	if _, stream := ls.Get(w.x.Range.Unwrap.Label); ui >= 0 && !stream {
		conv := w.x.Range.Unwrap.Conv
		v, err := cp.num.v, error(nil)
		switch {
		case !cp.num.ok:
			raw := cp.values[ui].Value
			if raw == "" {
				return nil // no sample, as unwrap gives
			}
			v, err = convert(conv, raw)
		case conv == "bytes":
			// A number column's text is its digits, with a sign and a
			// point: a size in bytes, the fraction truncated, if it
			// has no sign (stage.ParseBytes); a negative one fails,
			// which the whole pipeline reports.
			if v < 0 {
				err = errNegativeBytes
			} else {
				v = float64(uint64(v))
			}
		}
		if err == nil && cp.idKeyed {
			// The labels' outcome by the other parameters' packed ids.
			if cp.idHit == nil {
				if err := cp.numText(); err != nil {
					return err
				}
				s, sv, err := w.columnSample(ls, t)
				if err != nil {
					return err
				}
				cp.rememberID(s)
				v = sv
			}
			if s := cp.idHit.s; s != nil {
				w.add(s, t, v)
			}
			return nil
		}
		if err == nil && cp.keys.fits(cp) {
			w.keyRow(t, v)
			return nil
		}
		if err == nil {
			cp.memoKey = cp.memoKey[:0]
			for i, pv := range cp.values {
				if i != ui {
					cp.memoKey = appendParamKey(cp.memoKey, pv)
				}
			}
			if s, ok := cp.memoed(); ok {
				if s != nil {
					w.add(s, t, v)
				}
				return nil
			}
			if err := cp.numText(); err != nil {
				return err
			}
			s, v, err := w.columnSample(ls, t)
			if err != nil {
				return err
			}
			cp.remember(s)
			if s != nil {
				w.add(s, t, v)
			}
			return nil
		}
	}
	if err := cp.numText(); err != nil {
		return err
	}
	s, v, err := w.columnSample(ls, t)
	if s != nil {
		w.add(s, t, v)
	}
	return err
}

// errNegativeBytes: a negative number is no size in bytes.
var errNegativeBytes = errors.New("a negative size")

// columnSample runs the label stages and unwrap on a row's parameters.
func (w *rangeWorker) columnSample(ls record.Labels, t int64) (*rangeSeries, float64, error) {
	if !w.columnLabels(ls, t) {
		return nil, 0, nil
	}
	return w.sampleSeries(t, nil)
}

// filtersRead reports whether label filter stages read a label.
func filtersRead(stages []logql.Stage, name string) bool {
	var reads func(f logql.LabelFilter) bool
	reads = func(f logql.LabelFilter) bool {
		switch f := f.(type) {
		case *logql.LabelFilterBinary:
			return reads(f.Left) || reads(f.Right)
		case *logql.LabelFilterString:
			return f.Matcher.Name == name
		case *logql.LabelFilterNumber:
			return f.Name == name
		case *logql.LabelFilterDuration:
			return f.Name == name
		case *logql.LabelFilterBytes:
			return f.Name == name
		case *logql.LabelFilterIP:
			return f.Name == name
		}
		return true // unknown: assume it does
	}
	for _, s := range stages {
		if st, ok := s.(*logql.LabelFilterStage); !ok || reads(st.Filter) {
			return true
		}
	}
	return false
}

// idSlot is an outcome of the block's id memo: the series of the rows
// whose packed ids are key (nil: the filters drop them).
type idSlot struct {
	key uint64
	s   *rangeSeries
	ok  bool
}

// idSlotOf is the place of a packed key in colPlanner.idCache: the top
// byte of a Fibonacci hash, which every bit of the key moves (an XOR of
// the ids sent (1, 2), (2, 1) and (3, 0) to one slot, and the lookups of
// app-delete-orders to the map).
func idSlotOf(key uint64) int { return int(key * 0x9e3779b97f4a7c15 >> 56) }

// idOutcome returns the outcome remembered for a row's packed ids, or
// nil when none is.
func (cp *colPlanner) idOutcome(key uint64) *idSlot {
	slot := &cp.idCache[idSlotOf(key)]
	if slot.ok && slot.key == key {
		return slot
	}
	s, ok := cp.idMemo[key]
	if !ok {
		return nil
	}
	*slot = idSlot{key: key, s: s, ok: true}
	return slot
}

// maxIDParams is the most parameters a row's packed ids hold (16 bits
// each: 1 + column, and entry; 0xffff for an absent parameter, so that
// no key of fewer parameters, whose first 16 bits are 0, is one of
// more).
const maxIDParams = 4

// maxIDColumn bounds the columns whose ids are packed: 1 + column is
// below 0xff, never an absent parameter's mark.
const maxIDColumn = 0xfe

// idParam is where a parameter's value id is in a row: value
// cur.At(col)+rank of column col (col -1: the parameter is absent).
type idParam struct{ col, rank int16 }

// idParams sets p.idAt and p.idn to where the value ids of template t's
// parameters are, when each is in a constant or dictionary column (of
// index below maxIDColumn) or absent, and there are at most maxIDParams; else
// p.idn is 0. In a block, a column is one field's, so the ids, in the
// plan's order, say both the values and (json without parameters) the
// fields they are of. The columns' ids go to cp.colIDs.
//
// Parameter skip (the unwrapped one; -1: none) is left out: the outcome
// of a row's labels does not depend on it.
func (cp *colPlanner) idParams(b *part.Block, t int, p *tmplPlan, holes []int, skip int) {
	p.idn = 0
	n := len(p.params)
	if skip >= 0 && skip < n {
		n--
	}
	if n == 0 || n > maxIDParams {
		return
	}
	k := 0
	for i, pp := range p.params {
		if i == skip {
			continue
		}
		if pp.hole < 0 {
			if pp.value.Found {
				return // a value in the gaps: the ids cannot say it
			}
			p.idAt[k] = idParam{col: -1}
			k++
			continue
		}
		si := holes[pp.hole]
		col, rank := b.SlotColumn(t, si), b.SlotRank(t, si)
		ids, ok := b.ValueIDs(col)
		if !ok || col >= maxIDColumn || rank > math.MaxInt16 {
			return
		}
		cp.colIDs[col] = ids
		p.idAt[k] = idParam{col: int16(col), rank: int16(rank)}
		k++
	}
	p.idn = k
}

// rowIDKey packs the value ids of the row at hand's parameters (p.idAt,
// from idParams), or reports that one is past its column's values.
func (cp *colPlanner) rowIDKey(p *tmplPlan) (uint64, bool) {
	var key uint64
	for _, o := range p.idAt[:p.idn] {
		k := uint64(0xffff) // absent
		if o.col >= 0 {
			id := 0
			if ids := cp.colIDs[o.col]; ids != nil {
				vi := cp.cur.At(int(o.col)) + int(o.rank)
				if vi >= len(ids) {
					return 0, false
				}
				id = int(ids[vi])
			}
			k = uint64(o.col+1)<<8 | uint64(id)
		}
		key = key<<16 | k
	}
	return key, true
}

// appendParamKey appends a parameter's value to a memo key.
func appendParamKey(dst []byte, v stage.ParamValue) []byte {
	if v.Found {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = append(dst, v.Value...)
	return append(dst, 0xff)
}

// startBlock plans every template of a block and works out which
// columns' cursors the rows need: those of the values the plans read and
// check, and those of the lines the row path rebuilds. Only they advance.
// The rows of a template that gives nothing (skips) are passed over
// unread: its values are neither read nor checked.
func (cp *colPlanner) startBlock(b *part.Block, walks bool, gives func(p *tmplPlan) (nothing bool, err error)) error {
	n := b.NumTemplates()
	cp.plans = grown(cp.plans, n)
	if cap(cp.valid) < b.NumColumns() {
		cp.valid = make([][2][256]known, b.NumColumns())
	}
	cp.valid = cp.valid[:b.NumColumns()]
	clear(cp.valid)
	cp.plainCols = growClear(cp.plainCols, b.NumColumns())
	cp.wholeValid = growClear(cp.wholeValid, b.NumColumns())
	cp.dictMemo = growClear(cp.dictMemo, 256*b.NumColumns())
	// Read only where dictMemo says memoKept: not cleared (a pointer
	// slice of 256 a column, cleared per block, was 15% of a sweep's
	// profile while the collector ran: every pointer through its barrier).
	cp.dictSeries = grown(cp.dictSeries, 256*b.NumColumns())
	cp.colIDs = growClear(cp.colIDs, b.NumColumns())
	clear(cp.idMemo)
	cp.idCache = [256]idSlot{}
	if cp.pred != nil {
		cp.pred.startBlock(b.NumColumns())
	}
	cp.needKnown = false
	if walks {
		cp.startNeed(b)
	}
	for t := range n {
		cp.planCached(b, t)
		_, holes := b.TemplateLine(t)
		if err := cp.planBlock(b, t, holes, gives); err != nil {
			return err
		}
		if walks {
			// While the template is at hand: a pass over the templates
			// again (startRows) costs a cache miss each.
			cp.markNeed(b, t, holes)
		}
	}
	return nil
}

// planBlock works out template t's plan's parts that are the block's
// (planCached found the rest): its checks, and the ways its rows' values
// are found by id.
func (cp *colPlanner) planBlock(b *part.Block, t int, holes []int, gives func(p *tmplPlan) (nothing bool, err error)) error {
	p := &cp.plans[t]
	if !p.ok {
		return nil
	}
	p.checks, p.one.col, p.idn = p.checks[:0], -1, 0
	if nothing, err := gives(p); err != nil {
		return err
	} else if nothing {
		p.nothing = true
		return nil
	}
	if p.check <= 64 {
		// The values whose slots' flags do not say them
		// well-formed, a bit each, then their columns asked.
		str, val := b.HoleJSON(t)
		bad := ^(p.inStrMask&str | ^p.inStrMask&val) & (1<<p.check - 1)
		for ; bad != 0; bad &= bad - 1 {
			h := bits.TrailingZeros64(bad)
			if !cp.wellFormedColumn(b, b.SlotColumn(t, holes[h]), p.inString[h]) {
				p.checks = append(p.checks, h)
			}
		}
	} else {
		for h := range p.check {
			col := b.SlotColumn(t, holes[h])
			if str, val := b.SlotJSON(t, holes[h]); !(p.inString[h] && str || !p.inString[h] && val || cp.wellFormedColumn(b, col, p.inString[h])) {
				p.checks = append(p.checks, h)
			}
		}
	}
	if !cp.idsLater {
		cp.planIDs(b, t, p, holes)
	}
	return nil
}

// planIDs works out where the value ids of template t's parameters are,
// for a walk's memo of outcomes by ids (dictMemo, fastIDs), and where the
// numbers the number filters read are (predRow).
func (cp *colPlanner) planIDs(b *part.Block, t int, p *tmplPlan, holes []int) {
	if cp.pred != nil {
		p.nums, p.numsOK = cp.pred.numParams(b, t, p, holes, p.nums[:0])
		if p.numsOK && len(p.nums) > 0 {
			p.num0 = p.nums[0]
		}
	}
	if !cp.named && len(p.params) == 1 && p.params[0].hole >= 0 {
		si := holes[p.params[0].hole]
		col := b.SlotColumn(t, si)
		if ids, ok := b.ValueIDs(col); ok {
			p.one = oneParam{col: col, rank: b.SlotRank(t, si), ids: ids}
		}
	} else if cp.memoOn {
		cp.idParams(b, t, p, holes, -1)
		p.fastIDs = p.idn > 0 && len(p.checks) == 0 && cp.pred == nil
	} else if cp.unwrapIDs {
		cp.idParams(b, t, p, holes, cp.unwrapParam)
	}
}

// startRows places the cursor at the block's first row, keeping the
// columns the plans read: a block whose rows are walked. A sweep, which
// counts without a walk, never starts it.
func (cp *colPlanner) startRows(b *part.Block) {
	if cp.idsLater {
		cp.idsLater = false
		for t := range b.NumTemplates() {
			if p := &cp.plans[t]; p.ok && !p.nothing {
				_, holes := b.TemplateLine(t)
				cp.planIDs(b, t, p, holes)
			}
		}
	}
	if !cp.needKnown {
		cp.startNeed(b)
		for t := range b.NumTemplates() {
			_, holes := b.TemplateLine(t)
			cp.markNeed(b, t, holes)
		}
	}
	cp.cur.Start(b, cp.need)
}

// startNeed readies need (and paramTime) for block b's templates.
func (cp *colPlanner) startNeed(b *part.Block) {
	cp.need = growClear(cp.need, b.NumColumns())
	cp.paramTime, cp.needKnown = false, true
}

// markNeed marks the columns the rows of template t (planned) read, and
// whether a parameter is in a time column (paramTime).
func (cp *colPlanner) markNeed(b *part.Block, t int, holes []int) {
	p := &cp.plans[t]
	switch {
	case p.nothing:
		return
	case !p.ok && b.TemplateRaw(t):
		cp.need[b.LineColumn()] = true
	case !p.ok || len(p.checks) > 0:
		// A row whose check fails takes the row path, which rebuilds
		// its whole line; with nothing to check, no row of the
		// template can (its parameters' values, within [0, check), are
		// well-formed), and only they are read.
		for _, si := range holes {
			cp.need[b.SlotColumn(t, si)] = true
		}
	}
	if !p.ok {
		return
	}
	for _, pp := range p.params {
		if pp.hole >= 0 {
			col := b.SlotColumn(t, holes[pp.hole])
			cp.need[col] = true
			cp.paramTime = cp.paramTime || b.ColumnKind(col) == part.ColumnTime
		}
	}
}

// bitsOf returns a bit per one of the first 64 of bs that is true.
func bitsOf(bs []bool) uint64 {
	var m uint64
	for i, b := range bs[:min(len(bs), 64)] {
		if b {
			m |= 1 << i
		}
	}
	return m
}

// valueArena holds the values rowValues reads for a row. Bytes are only
// appended between two resets, so a value viewing them stays intact until
// the next reset even when the arena grows (as the stages' row arena).
type valueArena struct {
	b []byte
}

// maxValueArena is the capacity above which a reset drops the arena: one
// huge value must not pin its memory for the life of the query.
const maxValueArena = 1 << 20

func (a *valueArena) reset() {
	if cap(a.b) > maxValueArena {
		a.b = nil
	}
	a.b = a.b[:0]
}

// view returns a string that views the arena from start to its end.
func (a *valueArena) view(start int) string {
	return bytesView(a.b[start:])
}

// bytesView returns a string viewing b, which must not change while the
// string is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// growClear returns s with length n, zeroed.
func growClear[T any](s []T, n int) []T {
	if cap(s) < n {
		s = make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// grown returns s with length n, keeping its elements' buffers.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		s = append(s[:cap(s)], make([]T, n-cap(s))...)
	}
	return s[:n]
}

// rowValues sets cp.values to the parameters of the row at hand (of
// template tm, time t), or reports that the row takes the row path.
func (cp *colPlanner) rowValues(b *part.Block, tm int, t int64) (bool, error) {
	p := &cp.plans[tm]
	if !p.ok {
		return false, nil
	}
	_, holes := b.TemplateLine(tm)
	cp.arena.reset()
	if good, err := cp.checksHold(b, tm, p, t); err != nil || !good {
		return false, err
	}
	cp.values, cp.curNames = cp.values[:0], p.names
	cp.valueID = -1
	cp.cut.on = false
	if o := &p.one; o.col >= 0 {
		if id := cp.oneID(o); id >= 0 {
			cp.valueID = id
			if cp.dictMemo[cp.valueID] != memoUnknown && cp.memoOn {
				return true, nil // columnRow knows the outcome: no value needed
			}
		}
	}
	cp.idKeyed = false
	cp.num.ok = false
	cp.needle.miss, cp.needle.kept = false, false
	if p.idn > 0 {
		if cp.idKey, cp.idKeyed = cp.rowIDKey(p); cp.idKeyed {
			if cp.idHit = cp.idOutcome(cp.idKey); cp.idHit != nil {
				if cp.memoOn || cp.unwrapNumber(b, tm, p, holes, t) {
					return true, nil // columnRow knows the outcome (and the number)
				}
				cp.idHit = nil // not a number: the row is read whole
			}
		}
	}
	cp.needle.pre = 0
	if cp.needle.line && cp.needle.ok && cp.valueID < 0 && !cp.idKeyed {
		if drop, err := cp.needleDrops(b, tm, p, holes); drop || err != nil {
			cp.cut = valueCut{on: true, drop: true}
			return err == nil, err
		}
	}
	for i, pp := range p.params {
		if pp.hole < 0 {
			cp.values = append(cp.values, pp.value)
			continue
		}
		si := holes[pp.hole]
		col := b.SlotColumn(tm, si)
		vi := cp.cur.At(col) + b.SlotRank(tm, si)
		if i == cp.unwrapParam && !pp.inString {
			if f, ok := b.Number(col, vi); ok {
				// The unwrapped number, its text written only if needed.
				n := &cp.num // field by field, as unwrapNumber does
				n.ok, n.v, n.b, n.col, n.vi, n.t = true, f, b, col, vi, t
				cp.values = append(cp.values, stage.ParamValue{Found: true})
				continue
			}
		}
		var pv stage.ParamValue
		var ok, cut bool
		var err error
		if cp.prefixOK && pp.inString && cp.valueID < 0 && !cp.idKeyed && cp.paramName(i) == cp.prefix.Label() {
			if pv, ok, cut, err = cp.prefixValue(b, col, vi, t, cp.needle.ok); cp.needle.miss {
				cp.needle.at = valueCut{idx: len(cp.values), b: b, col: col, vi: vi, t: t}
			}
		} else if cp.needle.line && cp.needle.ok && pp.inString && cp.valueID < 0 && !cp.idKeyed && cp.paramName(i) == cp.needle.label {
			if pv, ok, err = cp.needleValue(b, col, vi, t); cp.needle.miss {
				cp.needle.at = valueCut{idx: len(cp.values), b: b, col: col, vi: vi, t: t}
			}
			cp.needle.idx = len(cp.values)
		} else {
			pv, ok, err = cp.holeValue(b, col, vi, t, pp.inString)
		}
		if err != nil || !ok {
			return false, err
		}
		if cut {
			cp.cut = valueCut{on: true, idx: len(cp.values), b: b, col: col, vi: vi, t: t}
		}
		cp.values = append(cp.values, pv)
	}
	if cp.needle.miss {
		if !cp.setsNeedleLabel() {
			cp.cut = valueCut{on: true, drop: true}
			return true, nil
		}
		// Another field sets the label: the value read after all.
		at := &cp.needle.at
		var pv stage.ParamValue
		var ok, cut bool
		var err error
		if cp.needle.line {
			pv, ok, err = cp.holeValue(at.b, at.col, at.vi, at.t, true)
		} else {
			pv, ok, cut, err = cp.prefixValue(at.b, at.col, at.vi, at.t, false)
		}
		if err != nil || !ok {
			return false, err
		}
		if cut {
			cp.cut = valueCut{on: true, idx: at.idx, b: at.b, col: at.col, vi: at.vi, t: at.t}
		}
		cp.values[at.idx] = pv
	}
	return true, nil
}

// needleDrops reports whether the row at hand (of template tm, planned
// p) is dropped by the line needle before any value is read: its one
// value of the needle's label is in a column of strings decided whole
// (needleVerdicts), and it holds not the text.
func (cp *colPlanner) needleDrops(b *part.Block, tm int, p *tmplPlan, holes []int) (bool, error) {
	nd := &cp.needle
	k := nd.param[tm]
	if k == 0 {
		k = -1
		for i, pp := range p.params {
			if cp.paramName(i) == nd.label {
				if k != -1 || pp.hole < 0 || !pp.inString {
					k = -1 // another of the name, or none read as a string
					break
				}
				k = int16(i + 1)
			}
		}
		nd.param[tm] = k
	}
	if k < 0 {
		return false, nil
	}
	si := holes[p.params[k-1].hole]
	col := b.SlotColumn(tm, si)
	vs, err := cp.needleVerdicts(b, col)
	if err != nil {
		return false, err
	}
	vi := cp.cur.At(col) + b.SlotRank(tm, si)
	if vi >= len(vs) {
		return false, nil
	}
	nd.pre = vs[vi] + 1
	return vs[vi] == needleMiss, nil
}

// setsNeedleLabel reports whether the row at hand's parameters set the
// needle's label (a field of its name in the line).
func (cp *colPlanner) setsNeedleLabel() bool {
	for i, v := range cp.values {
		if v.Found && cp.paramName(i) == cp.needle.label {
			return true
		}
	}
	return false
}

// paramName is the label name of the row at hand's value i.
func (cp *colPlanner) paramName(i int) string {
	if cp.named {
		return cp.curNames[i]
	}
	return cp.json.Name(i)
}

// prefixValue reads value vi of column col, a JSON string's text, as
// holeValue does, but only its first prefixCut bytes when it is longer
// and has escapes there (a value without is a view of the column, whole,
// for nothing); cut says whether it did.
func (cp *colPlanner) prefixValue(b *part.Block, col, vi int, t int64, needle bool) (pv stage.ParamValue, ok, cut bool, err error) {
	v, arena, err := b.Value(col, vi, t, cp.arena.b)
	cp.arena.b = arena
	if err != nil {
		return pv, false, false, err
	}
	if needle && !cp.needle.scan.in(v) {
		// Dropped unless another field sets the needle's label
		// (rowValues): unread for now.
		cp.needle.miss = true
		return stage.ParamValue{}, true, false, nil
	}
	if len(v) > prefixCut && bytes.IndexByte(v[:prefixCut], '\\') >= 0 {
		u := len(cp.arena.b)
		if cp.arena.b, ok = cp.scan.UnquoteAppend(cp.arena.b, v[:prefixCut]); ok {
			return stage.ParamValue{Value: cp.arena.view(u), Found: true}, true, true, nil
		}
		// Cut inside an escape: the whole value.
	}
	pv, ok = cp.parsedValue(v, true)
	return pv, ok, false, nil
}

// needleValue reads value vi of column col, a JSON string's text, as
// holeValue does, unless needleScan.decide tells it holds not the
// needle's text: then the row is dropped unless another field sets the
// needle's label (rowValues), and the value is left unread; or that it
// holds it, and the needle keeps its row: then the value is read as
// stored (needle.kept).
func (cp *colPlanner) needleValue(b *part.Block, col, vi int, t int64) (pv stage.ParamValue, ok bool, err error) {
	verdict, known := cp.needle.pre-1, cp.needle.pre > 0 // needleDrops' verdict
	if !known {
		vs, err := cp.needleVerdicts(b, col)
		if err != nil {
			return pv, false, err
		}
		if vi < len(vs) {
			verdict, known = vs[vi], true
		}
	}
	var v []byte
	switch {
	case !known:
		v, cp.arena.b, err = b.Value(col, vi, t, cp.arena.b)
		verdict = cp.needle.scan.decide(v)
	case verdict != needleMiss:
		v, _, err = b.Value(col, vi, t, nil) // a view: the column is of strings
	}
	if err != nil {
		return pv, false, err
	}
	switch verdict {
	case needleMiss:
		cp.needle.miss = true
		return stage.ParamValue{}, true, nil
	case needleHit:
		if cp.needle.keeps {
			// The line holds the text whatever the value's escapes
			// make of the rest: the row is kept, and nothing reads
			// the value.
			cp.needle.kept = true
			return stage.ParamValue{Value: bytesView(v), Found: true}, true, nil
		}
	}
	pv, ok = cp.parsedValue(v, true)
	return pv, ok, nil
}

// needleVerdicts returns the verdict of each value of column col of the
// block at hand, when it is stored as strings and every row is read:
// decided in one search of its bytes the first time a row asks (none
// otherwise).
func (cp *colPlanner) needleVerdicts(b *part.Block, col int) ([]needleVerdict, error) {
	nd := &cp.needle
	if i := slices.Index(nd.cols, col); i >= 0 {
		return nd.verdicts[i], nil
	}
	if !nd.whole {
		return nil, nil // a few rows' values, decided one by one
	}
	data, ends, ok, err := b.Strings(col)
	if err != nil {
		return nil, err
	}
	i := len(nd.cols)
	nd.cols = append(nd.cols, col)
	if i == len(nd.verdicts) {
		nd.verdicts = append(nd.verdicts, nil)
	}
	if !ok {
		nd.verdicts[i] = nd.verdicts[i][:0] // none: each value decided when read
	} else {
		nd.verdicts[i] = nd.scan.decideAll(data, ends, nd.verdicts[i])
	}
	return nd.verdicts[i], nil
}

// oneID returns the row at hand's entry of its one parameter's column, as
// column*256 + id (dictMemo's index), or -1 when the row is past the
// column's values.
func (cp *colPlanner) oneID(o *oneParam) int {
	if o.ids == nil {
		return o.col * 256 // a constant: entry 0
	}
	if vi := cp.cur.At(o.col) + o.rank; vi < len(o.ids) {
		return o.col*256 + int(o.ids[vi])
	}
	return -1
}

// unwrapNumber sets cp.num to the unwrapped parameter of the row at hand
// (of template tm, time t) and reports whether it is a number in a
// number column.
func (cp *colPlanner) unwrapNumber(b *part.Block, tm int, p *tmplPlan, holes []int, t int64) bool {
	pp := p.params[cp.unwrapParam]
	if pp.hole < 0 || pp.inString {
		return false
	}
	si := holes[pp.hole]
	col := b.SlotColumn(tm, si)
	vi := cp.cur.At(col) + b.SlotRank(tm, si)
	f, ok := b.Number(col, vi)
	if ok {
		// Field by field: a struct literal was built on the stack and
		// copied in wider moves than it was written with, whose loads
		// waited on the stores (15% of a sum by method's profile).
		n := &cp.num
		n.ok, n.v, n.b, n.col, n.vi, n.t = true, f, b, col, vi, t
	}
	return ok
}

// unwrapNum is the number of the unwrapped parameter of the row at hand
// when rowValues read it from a number column; its text in cp.values is
// written by numText.
type unwrapNum struct {
	ok  bool
	v   float64
	b   *part.Block
	col int
	vi  int
	t   int64
}

// numText writes the text of the unwrapped parameter into cp.values, if
// rowValues left it out.
func (cp *colPlanner) numText() error {
	if !cp.num.ok {
		return nil
	}
	n := cp.num
	pv, _, err := cp.holeValue(n.b, n.col, n.vi, n.t, false)
	if err != nil {
		return err
	}
	cp.values[cp.unwrapParam] = pv
	cp.num.ok = false
	return nil
}

// holeValue returns the parameter that value vi of column col gives
// (t is the row's time) in a hole inside a JSON string or outside one,
// as the json stage would read it; ok is false when the row must take the
// row path. The value views the block or cp.arena, valid until the
// arena's next reset.
func (cp *colPlanner) holeValue(b *part.Block, col, vi int, t int64, inString bool) (pv stage.ParamValue, ok bool, err error) {
	v, arena, err := b.Value(col, vi, t, cp.arena.b)
	cp.arena.b = arena
	if err != nil {
		return pv, false, err
	}
	pv, ok = cp.parsedValue(v, inString)
	return pv, ok, nil
}

// parsedValue is what json gives of a value read from a column (v): a
// string's content unescaped into the arena, null as "" (or no label
// for json without parameters), the text of anything else; false when
// a string's content is not well-formed.
func (cp *colPlanner) parsedValue(v []byte, inString bool) (pv stage.ParamValue, ok bool) {
	text := bytesView(v)
	switch {
	case inString && bytes.IndexByte(v, '\\') >= 0:
		// Unescaped as the stage unescapes a JSON string, straight into
		// the arena.
		u := len(cp.arena.b)
		if cp.arena.b, ok = cp.scan.UnquoteAppend(cp.arena.b, v); !ok {
			return pv, false
		}
		return stage.ParamValue{Value: cp.arena.view(u), Found: true}, true
	case !inString && len(text) > 0 && cp.named && (text[0] == 'n' || text[0] == '['):
		return stage.ParamValue{}, true // null or an array: json without parameters sets no label
	case !inString && len(text) > 0 && text[0] == 'n':
		return stage.ParamValue{Value: "", Found: true}, true // null
	}
	return stage.ParamValue{Value: text, Found: true}, true
}

// checksHold reports whether the row at hand (template tm, plan p, time
// t) has every value p.checks names well-formed.
func (cp *colPlanner) checksHold(b *part.Block, tm int, p *tmplPlan, t int64) (bool, error) {
	if len(p.checks) == 0 {
		return true, nil
	}
	_, holes := b.TemplateLine(tm)
	for _, h := range p.checks {
		if good, err := cp.wellFormed(b, tm, holes[h], p.inString[h], t); err != nil || !good {
			return false, err
		}
	}
	return true, nil
}

// wellFormed reports whether the value of slot si (of the row at hand)
// is well-formed JSON of its context: string content inside a string, one
// JSON value outside.
func (cp *colPlanner) wellFormed(b *part.Block, tm, si int, inString bool, t int64) (bool, error) {
	col := b.SlotColumn(tm, si)
	ctx := 0
	if inString {
		ctx = 1
	}
	if wellFormedByKind(b.ColumnKind(col), inString) {
		return true, nil
	}
	vi := cp.cur.At(col) + b.SlotRank(tm, si)
	id := b.ValueID(col, vi)
	if id >= 0 {
		if m := cp.valid[col][ctx][id]; m != unknown {
			return m == knownYes, nil
		}
	}
	v, scratch, err := b.Value(col, vi, t, cp.scratch[:0])
	cp.scratch = scratch
	if err != nil {
		return false, err
	}
	good := cp.wellFormedValue(v, inString)
	if id >= 0 {
		cp.valid[col][ctx][id] = knownOf(good)
	}
	return good, nil
}

// wellFormedValue reports whether v is string content (inString) or one
// JSON value.
func (cp *colPlanner) wellFormedValue(v []byte, inString bool) bool {
	if inString {
		return part.JSONStringContent(v)
	}
	// json without parameters names the fields of an object: a value
	// that is one sets labels the template's plan did not see.
	return cp.scan.Valid(v) && !(cp.named && v[0] == '{')
}

// wellFormedColumn reports whether every value of a column is well-formed
// in the context: by its kind, by each distinct value of a constant or
// dictionary column, or by one walk of a string column (once per block
// and column). (A slot's values may be vouched for by its writer first:
// part.Block.SlotJSON.)
func (cp *colPlanner) wellFormedColumn(b *part.Block, col int, inString bool) bool {
	if wellFormedByKind(b.ColumnKind(col), inString) {
		return true
	}
	switch b.ColumnKind(col) {
	case part.ColumnConst, part.ColumnDict, part.ColumnTime:
		return cp.distinctWellFormed(b, col, inString)
	}
	if !inString {
		return false
	}
	if cp.plainCols[col] == unknown {
		ok, err := b.Every(col, part.JSONStringContent)
		cp.plainCols[col] = knownOf(err == nil && ok)
	}
	return cp.plainCols[col] == knownYes
}

// distinctWellFormed reports whether every value of a time, constant or
// dictionary column is well-formed in the context: a time column by its
// shapes, the others by each distinct value (once per block and context;
// a value that cannot be read counts as malformed).
func (cp *colPlanner) distinctWellFormed(b *part.Block, col int, inString bool) bool {
	if b.ColumnKind(col) == part.ColumnTime {
		return inString || b.TimesAreNumbers(col)
	}
	ctx := 0
	if inString {
		ctx = 1
	}
	if m := cp.wholeValid[col][ctx]; m != unknown {
		return m == knownYes
	}
	cp.wholeValid[col][ctx] = knownNo
	vals, ok, err := b.DistinctValues(col)
	if err != nil || !ok {
		return false
	}
	for id, v := range vals {
		switch cp.valid[col][ctx][id] {
		case knownYes:
			continue
		case knownNo:
			return false
		}
		cp.valid[col][ctx][id] = knownNo
		if !cp.wellFormedValue(v, inString) {
			return false
		}
		cp.valid[col][ctx][id] = knownYes
	}
	cp.wholeValid[col][ctx] = knownYes
	return true
}

// wellFormedByKind reports whether every value of a column of this kind
// is well-formed in the context: decimal integers and fractions are JSON
// numbers (a fraction is written with a whole part without leading zeros
// and at least one digit after its point) and string content; hex and
// timestamps are made of digits, letters and - . : + space, string
// content.
func wellFormedByKind(k part.ColumnKind, inString bool) bool {
	switch k {
	case part.ColumnInt, part.ColumnDecimal:
		return true
	case part.ColumnHex, part.ColumnTime:
		return inString
	}
	return false
}

// planCached plans template tm, or takes the plan of a template with the
// same gaps met in an earlier block (a plan depends on them alone). Plans
// are shared: once made, they do not change.
func (cp *colPlanner) planCached(b *part.Block, tm int) {
	p := &cp.plans[tm]
	if b.TemplateRaw(tm) {
		*p = tmplPlan{checks: p.checks[:0], nums: p.nums[:0]}
		return
	}
	shape := b.TemplateShape(tm)
	if cp.planFront == nil {
		cp.planFront = new([planFrontSize]planSlot)
		cp.planCache = map[part.Shape]*tmplPlan{}
	}
	slot := &cp.planFront[shape[0]%planFrontSize] // a shape is a hash: its bits are spread
	c := slot.plan
	if c == nil || slot.shape != shape {
		c = cp.planCache[shape]
		if c == nil && cp.share != nil {
			// Made by an earlier query.
			if c = cp.share.get(planShareKey{cp.stageKey, shape}); c != nil && len(cp.planCache) < maxPlanCache {
				cp.planCache[shape] = c
			}
		}
		if c != nil {
			*slot = planSlot{shape: shape, plan: c}
		}
	}
	if c != nil {
		// Field by field: the whole struct's write was 6% of a sweep's
		// profile. idAt is left as it was: only idAt[:idn] is read.
		p.ok, p.check, p.params, p.names, p.inString, p.inStrMask = c.ok, c.check, c.params, c.names, c.inString, c.inStrMask
		p.nothing, p.fastIDs, p.numsOK = false, false, false
		p.num0, p.one, p.idn = numParam{}, oneParam{}, 0
		p.checks, p.nums = p.checks[:0], p.nums[:0]
		return
	}
	p.params, p.names, p.inString = nil, nil, nil // new slices: a plan cached is shared
	cp.plan(b, tm)
	c = new(tmplPlan)
	*c = *p
	c.checks, c.one, c.idn, c.nums, c.nothing, c.numsOK = nil, oneParam{}, 0, nil, false, false // of this block
	if len(cp.planCache) < maxPlanCache {
		cp.planCache[shape] = c
	}
	if cp.share != nil {
		cp.share.put(planShareKey{cp.stageKey, shape}, c)
	}
}

// maxPlanCache bounds the plans a worker keeps across blocks.
const maxPlanCache = 8192

// planFrontSize is the size of the direct-mapped table in front of the plan
// cache: a block's few hundred templates are found there without the
// map's hashing of their 16-byte shapes.
const planFrontSize = 1024

type planSlot struct {
	shape part.Shape
	plan  *tmplPlan
}

// plan finds where template tm's rows hold the parameters.
func (cp *colPlanner) plan(b *part.Block, tm int) {
	p := &cp.plans[tm]
	*p = tmplPlan{params: p.params[:0], names: p.names[:0], inString: p.inString[:0], checks: p.checks[:0]}
	if b.TemplateRaw(tm) || !cp.skeleton(b, tm) {
		return // a raw line, or a value in an escape
	}
	ps := &cp.scan
	ps.Reset(cp.skel, cp.holeOff)
	start := ps.Space(0)
	if start >= len(cp.skel) || cp.skel[start] != '{' {
		return
	}
	_, holes := b.TemplateLine(tm)
	if cp.named {
		cp.planNamed(p, len(holes), start)
		return
	}
	for i := range cp.json.Len() {
		pos := ps.Locate(start, cp.json.Path(i))
		if ps.Failed() {
			return
		}
		if pos < 0 {
			p.params = append(p.params, paramPlan{hole: -1, value: stage.ParamValue{}})
			p.check = len(holes) // the search read the objects it went through whole
			continue
		}
		end := ps.Skip(pos)
		if end < 0 {
			return
		}
		pp, ok := cp.valuePlan(pos, end)
		if !ok {
			return // the parameter's value is built of values and gaps
		}
		p.params = append(p.params, pp)
		if pp.hole >= 0 {
			p.check = max(p.check, pp.hole+1)
		} else {
			p.check = max(p.check, holesBefore(cp.holeOff, pos))
		}
	}
	p.inString = append(p.inString[:0], cp.holeInStr...)
	p.inStrMask = bitsOf(p.inString)
	p.ok = true
}

// skeleton builds the skeleton of template tm in cp.skel: its gaps with
// a placeholder for each value (cp.holeOff, and whether it sits inside a
// string, cp.holeInStr). false: a value follows a backslash, part of an
// escape.
func (cp *colPlanner) skeleton(b *part.Block, tm int) bool {
	gaps, holes := b.TemplateLine(tm)
	cp.skel, cp.holeOff, cp.holeInStr = cp.skel[:0], cp.holeOff[:0], cp.holeInStr[:0]
	inString, escaped := false, false
	for hi := range gaps.Len() {
		g := gaps.At(hi)
		for _, c := range g {
			switch {
			case escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case c == '"':
				inString = !inString
			}
		}
		cp.skel = append(cp.skel, g...)
		if hi == len(holes) {
			break
		}
		if escaped {
			return false // a value right after a backslash: it is part of an escape
		}
		cp.holeOff = append(cp.holeOff, len(cp.skel))
		cp.holeInStr = append(cp.holeInStr, inString)
		if !inString {
			cp.skel = append(cp.skel, '0')
		}
	}
	return true
}

// valuePlan returns where a value at [pos, end) of the skeleton is: a
// value of the template, inside a string or not, or (hole < 0) in the
// gaps, the same in every row; false when it is built of values and
// gaps.
func (cp *colPlanner) valuePlan(pos, end int) (paramPlan, bool) {
	h := -1 // the values in [pos, end)
	n := 0
	for i, off := range cp.holeOff {
		if off >= pos && off < end {
			h, n = i, n+1
		}
	}
	switch {
	case n == 0:
		v, found := cp.scan.ValueAt(pos)
		return paramPlan{hole: -1, value: stage.ParamValue{Value: string([]byte(v)), Found: found}}, true
	case n == 1 && cp.holeInStr[h] && cp.skel[pos] == '"' && cp.holeOff[h] == pos+1 && end == pos+2:
		return paramPlan{hole: h, inString: true}, true
	case n == 1 && !cp.holeInStr[h] && cp.holeOff[h] == pos && end == pos+1:
		return paramPlan{hole: h}, true
	}
	return paramPlan{}, false
}

// planNamed makes plan p of a template of holes values, its skeleton in
// cp.scan and an object at start, for json without parameters: the fields of the template whose names may set a label the
// query observes, and where each is. Every value of a row must be
// well-formed (the stage walks the whole line; wellFormedValue also
// refuses an object outside a string, whose fields would set labels). A
// template where a key is a value, a field the query observes is built
// of values and gaps, or two fields may set the same label (whose first
// value wins by the order of the line), takes the row path.
func (cp *colPlanner) planNamed(p *tmplPlan, holes, start int) {
	ps := &cp.scan
	type field struct {
		name       string
		start, end int
	}
	var fields []field
	if ps.Fields(start, func(name []byte, s, e int) {
		if cp.fields.Observes(name) {
			fields = append(fields, field{string(name), s, e})
		}
	}) < 0 {
		return
	}
	p.names = p.names[:0]
	for i, f := range fields {
		for _, g := range fields[:i] {
			if f.name == g.name || f.name == g.name+stage.ExtractedSuffix || g.name == f.name+stage.ExtractedSuffix {
				return
			}
		}
		pp, ok := cp.valuePlan(f.start, f.end)
		if !ok {
			return
		}
		if pp.hole < 0 && !pp.value.Found {
			continue
		}
		p.params = append(p.params, pp)
		p.names = append(p.names, f.name)
	}
	if cp.single != nil && len(p.params) == 0 {
		p.params, p.names = append(p.params, paramPlan{hole: -1}), append(p.names, cp.single[0])
	}
	p.check = holes
	p.inString = append(p.inString[:0], cp.holeInStr...)
	p.inStrMask = bitsOf(p.inString)
	p.ok = true
}

func holesBefore(offs []int, pos int) int {
	n := 0
	for _, off := range offs {
		if off < pos {
			n++
		}
	}
	return n
}
