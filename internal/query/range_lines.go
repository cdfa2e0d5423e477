package query

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// The lean path of a range aggregation whose pipeline is line filters,
// then a pattern or regexp parser of the stored line, then label filters,
// with or without an unwrap of one of the parser's captures
// (`| pattern "<_> <status> <size>" | status >= 500 | unwrap size`): a
// row's captures are read into a table of values, the filters decided on
// it and the row's series found by the values of the captures its series
// keeps, without setting labels, unwrapping them out of labels or
// building the series' key. The stages' own code extracts the captures
// and decides the filters (stage.LineCaptures, stage.ValueFilter).
//
// It holds for rows without structured metadata, of streams that have
// no label a capture names (the _extracted rule), while every value
// converts: a row with metadata, one whose value fails to convert (the
// stages would set __error__) and the first row of each series go
// through the pipeline as on the row path.
type lineEval struct {
	caps *stage.LineCaptures
	pre  *stage.Pipeline // the line filters before the parser; nil: none
	// vals is a row's table: its captures, then the other labels the
	// filters read (consts: the stream's, set per stream), then one label
	// never set (the unwrapped one, as the filters after unwrap see it).
	vals    []stage.Value
	consts  []string // the names of the labels after the captures, in vals order
	filters []stage.ValueFilter
	post    []stage.ValueFilter // unwrap's filters
	unwrap  int                 // the unwrapped capture; -1: no unwrap
	conv    string
	bytes   bool  // the sample is the line's length (bytes_over_time, bytes_rate)
	keyed   []int // the captures the series keeps
	memo    map[string]*rangeSeries
	only    *rangeSeries // memo's one series when the series keeps no capture
	key     []byte
	preLb   stage.Labels
	on      bool // the stream's rows may take the path (startStream)
	cur     part.Cursor
	line    []byte    // a row's line, when rebuilt
	_       workerPad // see workerPad
}

// maxLineMemo bounds the series remembered by their captures' values: a
// stream of more is forgotten and learnt again.
const maxLineMemo = 1 << 16

// linePipeline reports whether a range aggregation's pipeline is line
// filters, a pattern or regexp parser, then label filters, and returns
// the parser's index.
func linePipeline(x *logql.RangeAggregation) (int, bool) {
	stages := x.Range.Log.Pipeline
	k := 0
	for k < len(stages) {
		if _, ok := stages[k].(*logql.LineFilter); !ok {
			break
		}
		k++
	}
	if k == len(stages) {
		return 0, false
	}
	switch stages[k].(type) {
	case *logql.PatternParser, *logql.RegexpParser:
	default:
		return 0, false
	}
	for _, s := range stages[k+1:] {
		if _, ok := s.(*logql.LabelFilterStage); !ok {
			return 0, false
		}
	}
	return k, true
}

// newLineEval returns the lean path of w's range aggregation, or nil
// when its pipeline is not one it takes.
func newLineEval(w *rangeWorker) (*lineEval, error) {
	x := w.x
	k, ok := linePipeline(x)
	if !ok {
		return nil, nil
	}
	caps, ok := w.pipe.LineCaptures(k)
	if !ok {
		return nil, nil
	}
	le := &lineEval{caps: caps, unwrap: -1}
	if k > 0 {
		le.pre = w.pipe.Head(k)
	}
	n := caps.Len()
	capture := func(name string) int {
		for i := range n {
			if caps.Name(i) == name {
				return i
			}
		}
		return -1
	}
	for i := range n {
		if strings.HasPrefix(caps.Named(i), "__") {
			return nil, nil // the error labels' names, or close to them
		}
	}
	unwrapped := ""
	if u := x.Range.Unwrap; u != nil {
		if le.unwrap = capture(u.Label); le.unwrap < 0 {
			return nil, nil
		}
		unwrapped, le.conv = u.Label, u.Conv
	}
	le.bytes = x.Op == "bytes_over_time" || x.Op == "bytes_rate"
	slot := func(name string) int {
		if i := capture(name); i >= 0 {
			return i
		}
		if i := slices.Index(le.consts, name); i >= 0 {
			return n + i
		}
		le.consts = append(le.consts, name)
		return n + len(le.consts) - 1
	}
	for _, s := range x.Range.Log.Pipeline[k+1:] {
		f, err := stage.CompileValueFilter(s.(*logql.LabelFilterStage).Filter, slot)
		if err != nil {
			return nil, err
		}
		le.filters = append(le.filters, f)
	}
	if u := x.Range.Unwrap; u != nil {
		gone := -1 // the unwrapped label, which the filters after unwrap see absent
		for _, f := range u.Filters {
			vf, err := stage.CompileValueFilter(f, func(name string) int {
				if name != unwrapped {
					return slot(name)
				}
				if gone < 0 {
					le.consts = append(le.consts, "")
					gone = n + len(le.consts) - 1
				}
				return gone
			})
			if err != nil {
				return nil, err
			}
			le.post = append(le.post, vf)
		}
	}
	le.vals = make([]stage.Value, n+len(le.consts))
	for i := range n {
		name := caps.Name(i)
		if name == "" || i == le.unwrap || w.byOn && !slices.Contains(w.by, name) {
			continue
		}
		le.keyed = append(le.keyed, i)
	}
	le.memo = map[string]*rangeSeries{}
	return le, nil
}

// startStream readies the path for the rows of stream ls.
func (le *lineEval) startStream(ls record.Labels) {
	clear(le.memo) // the series are the stream's
	le.only = nil
	le.on = true
	n := le.caps.Len()
	for i := range n {
		if name := le.caps.Named(i); name != "" {
			if _, ok := ls.Get(name); ok {
				le.on = false // the capture's label is name_extracted
				return
			}
		}
	}
	for i, name := range le.consts {
		v, ok := ls.Get(name)
		le.vals[n+i] = stage.Value{V: v, Set: ok && name != ""}
	}
	le.preLb.Reset(ls)
}

// takes reports whether row r of the stream started takes the path: it
// has no structured metadata.
func (le *lineEval) takes(r *rows.Row) bool {
	return le.on && r.Line != nil && !hasMeta(r)
}

// unpruned reports whether a scan with options o would read every block
// of a stream: then the path reads the stored blocks itself (block), and
// else the rows the scan yields.
func unpruned(o store.ScanOptions) bool {
	return len(o.Tokens) == 0 && len(o.Needles) == 0 && len(o.Any) == 0 && len(o.LineAny) == 0 && len(o.Contains) == 0
}

// block adds the samples of the rows of a stored block of stream ls in
// [from, to], without metadata that the query reads: a line stored whole
// is read where its column holds it, another is rebuilt.
func (le *lineEval) block(ev *evaluator, w *rangeWorker, ls record.Labels, b *part.Block, from, to int64) error {
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	le.cur.Start(b, nil)
	for k := range b.NumRows() {
		tm, t := b.RowTemplate(k), b.RowTime(k)
		if t >= from && t <= to {
			line, out, err := b.LineAt(tm, &le.cur, t, le.line)
			le.line = out
			if err == nil {
				err = ev.scanned(&w.tally, line)
			}
			if err == nil {
				err = le.row(ev, w, ls, t, line)
			}
			if err != nil {
				return err
			}
		}
		le.cur.Next(tm)
	}
	return nil
}

// row adds the sample of a row of stream ls at time t, of line.
func (le *lineEval) row(ev *evaluator, w *rangeWorker, ls record.Labels, t int64, line []byte) error {
	if le.pre != nil {
		if _, ok := le.pre.Process(t, line, &le.preLb); !ok {
			return nil
		}
	}
	vals := le.vals
	le.caps.Extract(line, vals)
	for _, f := range le.filters {
		pass, ok := f(vals)
		if !ok {
			return w.row(ev, ls, t, line, nil, nil) // the stage sets an error
		}
		if !pass {
			return nil
		}
	}
	v := 1.0
	switch {
	case le.unwrap >= 0:
		u := vals[le.unwrap]
		if u.V == "" {
			return nil // no sample, as unwrap of an absent label
		}
		var err error
		if v, err = convert(le.conv, u.V); err != nil {
			return w.row(ev, ls, t, line, nil, nil) // the sample's error
		}
		for _, f := range le.post {
			pass, ok := f(vals)
			if !ok {
				return w.row(ev, ls, t, line, nil, nil)
			}
			if !pass {
				return nil
			}
		}
	case le.bytes:
		v = float64(len(line))
	}
	// Each value with its length (0 when unset): no two tables of values
	// have one key, whatever bytes the values hold.
	if len(le.keyed) == 0 && le.only != nil {
		w.add(le.only, t, v) // the stream's one series, without a key
		return nil
	}
	le.key = le.key[:0]
	for _, i := range le.keyed {
		if c := vals[i]; c.Set {
			le.key = binary.AppendUvarint(le.key, uint64(len(c.V))+1)
			le.key = append(le.key, c.V...)
		} else {
			le.key = append(le.key, 0)
		}
	}
	if s := le.memo[string(le.key)]; s != nil {
		w.add(s, t, v)
		return nil
	}
	// The series' first row: its labels found the plain way.
	s, v, err := w.rowSeries(ls, t, line, nil, nil)
	if s != nil {
		if len(le.memo) >= maxLineMemo {
			clear(le.memo)
		}
		le.memo[string(le.key)] = s
		if len(le.keyed) == 0 {
			le.only = s
		}
		w.add(s, t, v)
	}
	return err
}
