package query

import (
	"bytes"
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// Line filters at the start of a pipeline (`{...} |= "timeout" != "debug"
// | json | ...`) whose literals the store's search decides exactly, as it
// decides them for a read of lines: the columnar paths select a stored
// block's rows with them (part.Block.MatchingRows) before they read the
// rows' values, and run the rest of the pipeline on the rows selected.

// leadFilters are a pipeline's first stages that are line filters the
// store decides exactly: n of them, whose lines hold every clause of
// must and no clause of not (each a != or !~ filter's).
type leadFilters struct {
	n    int
	must []store.Clause
	not  []store.Clause
}

// leadingFilters returns the leading line filters of stages: those of
// |= and |~ (exactClauses), and with negations those of != and !~ whose
// positive form is one such clause (a line kept holds none of its
// literals).
func leadingFilters(stages []logql.Stage, negations bool) leadFilters {
	var lf leadFilters
	for _, s := range stages {
		f, ok := s.(*logql.LineFilter)
		if !ok {
			return lf
		}
		switch pos, negated := positiveOf(f); {
		case !negated:
			cs, ok := exactClauses(f)
			if !ok {
				return lf
			}
			lf.must = append(lf.must, cs...)
		case negations:
			cs, ok := exactClauses(pos)
			if !ok || len(cs) != 1 {
				return lf
			}
			lf.not = append(lf.not, cs[0])
		default:
			return lf
		}
		lf.n++
	}
	return lf
}

// positiveOf returns the filter that keeps the lines a negated filter (!=,
// !~, !>) drops, and whether f is negated.
func positiveOf(f *logql.LineFilter) (*logql.LineFilter, bool) {
	pos := *f
	switch f.Op {
	case logql.FilterNotContains:
		pos.Op = logql.FilterContains
	case logql.FilterNotRegexp:
		pos.Op = logql.FilterRegexp
	case logql.FilterNotPattern:
		pos.Op = logql.FilterPattern
	default:
		return f, false
	}
	return &pos, true
}

// exactClauses returns the clauses of a |= or |~ filter (lineClauses)
// when they hold in exactly the lines it keeps, as the store finds them.
// (A folding literal with a k or an s, unless ASCII, does not: the
// store's folding search also keeps lines with a non-ASCII byte, where
// Unicode may fold a rune to it.)
func exactClauses(f *logql.LineFilter) ([]store.Clause, bool) {
	req := lineClauses(f)
	if !req.exact {
		return nil, false
	}
	for _, c := range req.clauses {
		for _, l := range c {
			if l.Fold && !l.ASCII && bytes.ContainsAny(l.Text, "ks") {
				return nil, false
			}
		}
	}
	return req.clauses, true
}

// rowSelection is a worker's selection of a block's rows by its
// pipeline's leading filters.
type rowSelection struct {
	lf       leadFilters
	sel, not []uint64
}

// of returns a bit per row of block b (read as columns), set when the
// row's line passes the leading filters, and whether any is set; nil
// and true for a pipeline without leading filters (rs nil): every row.
func (rs *rowSelection) of(b *part.Block) ([]uint64, bool, error) {
	if rs == nil {
		return nil, true, nil
	}
	var err error
	n := b.NumRows()
	if len(rs.lf.must) > 0 {
		if rs.sel, err = b.MatchingRows(rs.lf.must, rs.sel); err != nil {
			return nil, false, err
		}
	} else {
		rs.sel = grown(rs.sel, (n+63)/64)
		setBits(rs.sel, n)
	}
	for _, c := range rs.lf.not {
		if rs.not, err = b.MatchingRows([]store.Clause{c}, rs.not); err != nil {
			return nil, false, err
		}
		for i := range rs.sel {
			rs.sel[i] &^= rs.not[i]
		}
	}
	return rs.sel, slices.ContainsFunc(rs.sel, func(w uint64) bool { return w != 0 }), nil
}
