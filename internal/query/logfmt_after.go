package query

import (
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// A logfmt parser after json, as Grafana's Logs Drilldown writes for a
// service whose lines come in either format (`| json | logfmt | drop
// __error__, __error_details__`), on the columnar path of a range
// aggregation. Without parameters, --strict or --keep-empty, logfmt sets
// a label only from a pair key=value with a value, never an error, and
// never a label set before it (the first value of a name wins); and it
// sets only the labels the query observes. A key whose label is named n
// ends with the letters of n after its last '_' (a key's other bytes
// become '_'), followed by '='. So a row whose line holds none of those
// literals, one per label observed, gets nothing from it: the columnar
// path reads it as if the stage were not there, and the few rows that
// hold one (`WHERE id=42` in a message) go through the whole pipeline
// on their lines.

// quietLogfmt reports whether s is such a logfmt parser.
func quietLogfmt(s logql.Stage) bool {
	l, ok := s.(*logql.LogfmtParser)
	return ok && len(l.Params) == 0 && !l.Strict && !l.KeepEmpty
}

// logfmtKeys returns the rows' selection by the literals a line must
// hold for a quiet logfmt parser to set a label observed, or nil when
// stages have no such parser; false when observed is every label.
func logfmtKeys(stages []logql.Stage, observed *stage.Observed) (*keyLines, bool) {
	has := false
	for _, s := range unformatted(stages) {
		has = has || quietLogfmt(s)
	}
	if !has {
		return nil, true
	}
	if observed == nil {
		return nil, false
	}
	var clause store.Clause
	add := func(name string) {
		lit := name[strings.LastIndexByte(name, '_')+1:] + "="
		for _, l := range clause {
			if string(l.Text) == lit {
				return
			}
		}
		clause = append(clause, store.Literal{Text: []byte(lit)})
	}
	for _, n := range observed.Names() {
		if n == stage.ErrorLabel || n == stage.ErrorDetailsLabel {
			continue
		}
		add(n)
		// A key named as a stream's label or a row's metadata is set
		// as name_extracted.
		if base, ok := strings.CutSuffix(n, stage.ExtractedSuffix); ok && base != "" {
			add(base)
		}
	}
	if len(clause) == 0 {
		return &keyLines{}, true // nothing observed it can set
	}
	return &keyLines{clause: []store.Clause{clause}}, true
}

// unformatted returns the stages before the first line_format: a
// parser after it reads the line it makes, not the stored one.
func unformatted(stages []logql.Stage) []logql.Stage {
	for i, s := range stages {
		if _, ok := s.(*logql.LineFormat); ok {
			return stages[:i]
		}
	}
	return stages
}

// withoutQuietLogfmt returns stages without the quiet logfmt parsers
// before the first line_format.
func withoutQuietLogfmt(stages []logql.Stage) []logql.Stage {
	head := unformatted(stages)
	out := slices.DeleteFunc(slices.Clone(head), quietLogfmt)
	return append(out, stages[len(head):]...)
}

// keyLines splits a block's rows into those read from columns and those
// whose line may give a quiet logfmt parser a label (logfmtKeys).
type keyLines struct {
	clause    []store.Clause // one clause of the literals; nil: no row's line gives one
	held, sel []uint64
	cur       part.Cursor
	line      []byte
}

// split returns the rows of sel (every row when nil) whose line holds
// none of the literals, and those that hold one (nil when none does).
func (kl *keyLines) split(b *part.Block, sel []uint64) (cols, lined []uint64, err error) {
	if kl.clause == nil {
		return sel, nil, nil
	}
	if kl.held, err = b.MatchingRows(kl.clause, kl.held); err != nil {
		return nil, nil, err
	}
	if sel == nil {
		kl.sel = grown(kl.sel, len(kl.held))
		setBits(kl.sel, b.NumRows())
	} else {
		kl.sel = append(kl.sel[:0], sel...)
	}
	some := false
	for i := range kl.held {
		kl.held[i] &= kl.sel[i]
		kl.sel[i] &^= kl.held[i]
		some = some || kl.held[i] != 0
	}
	if !some {
		return sel, nil, nil
	}
	return kl.sel, kl.held, nil
}

// linedRows runs the rows of block b in [from, to] that lined holds
// through the whole pipeline on their lines, rebuilt.
func (w *rangeWorker) linedRows(ev *evaluator, ls record.Labels, b *part.Block, lined []uint64, from, to int64) error {
	kl := w.keyLines
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	kl.cur.Start(b, nil)
	for k := range b.NumRows() {
		tm := b.RowTemplate(k)
		if t := b.RowTime(k); lined[k>>6]>>(k&63)&1 != 0 && t >= from && t <= to {
			if err := ev.scanned(&w.tally, nil); err != nil {
				return err
			}
			if err := w.rebuiltRow(ev, ls, b, tm, &kl.cur, t, &kl.line); err != nil {
				return err
			}
		}
		kl.cur.Next(tm)
	}
	return nil
}
