package query

import (
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

// Label filters as line literals.
//
// A label a parser sets takes its value from the line: pattern's and
// regexp's captures are bytes of it, and so are logfmt's and json's
// values but for a quoted string with an escape, which holds a
// backslash. So every row that `| logfmt | path="/login"` keeps holds
// "/login" or a backslash in its line, unless its value of path comes
// from elsewhere: a stream label of that name (then the parser sets
// path_extracted, and the filter reads the stream's value) or structured
// metadata (the same). impliedClauses finds such clauses; the store rules
// out blocks and rows with them as it does with line filters' (pruning),
// before a line is rebuilt or parsed. Streams with one of the labels a
// clause derives from go without it (withImplied); structured metadata
// need nothing more, since a block whose metadata the query observes is
// read whole, without clauses (store.ScanOptions.Meta, metaUnseen), and
// a label filter observes its label.

// impliedClause is a clause every row kept holds in its line when its
// stream has none of labels.
type impliedClause struct {
	labels []string
	clause store.Clause
}

// backslash is the literal of a line with an escape: a value unescaped
// from it may hold what the line does not.
var backslash = store.Literal{Text: []byte{'\\'}}

// impliedClauses returns the clauses the label filters of a pipeline
// imply of the lines they keep: filters that come after a parser and
// after nothing but parsers of the unchanged line, line filters, label
// filters and drops or keeps of labels.
func impliedClauses(stages []logql.Stage) []impliedClause {
	var out []impliedClause
	parsed, escapes := false, false
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFilter, *logql.Drop, *logql.Keep:
		case *logql.JSONParser, *logql.LogfmtParser:
			parsed, escapes = true, true
		case *logql.PatternParser, *logql.RegexpParser:
			parsed = true
		case *logql.LabelFilterStage:
			if !parsed {
				continue
			}
			for _, ic := range filterClauses(s.Filter) {
				if escapes && !slices.ContainsFunc(ic.clause, func(l store.Literal) bool { return string(l.Text) == `\` }) {
					if len(ic.clause) == maxClause {
						continue
					}
					ic.clause = append(ic.clause, backslash)
				}
				out = append(out, ic)
			}
		default:
			// The line changes (line_format, unpack, decolorize), or a
			// label takes a value from elsewhere (label_format).
			return out
		}
	}
	return out
}

// filterClauses returns the clauses of literals that the value of each
// label f keeps a row by holds: an equality's value, what a regexp
// requires (regexpClauses; an unanchored regexp's literals are required
// of an anchored match too). An "and" gives both sides' clauses; an "or"
// one clause of the alternatives of a clause of each side.
func filterClauses(f logql.LabelFilter) []impliedClause {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		l, r := filterClauses(f.Left), filterClauses(f.Right)
		if f.And {
			return append(l, r...)
		}
		if len(l) == 0 || len(r) == 0 || len(l[0].clause)+len(r[0].clause) > maxClause {
			return nil
		}
		return []impliedClause{{
			labels: append(slices.Clip(l[0].labels), r[0].labels...),
			clause: append(slices.Clip(l[0].clause), r[0].clause...),
		}}
	case *logql.LabelFilterString:
		m := f.Matcher
		if strings.HasPrefix(m.Name, "__") {
			return nil
		}
		switch m.Type {
		case logql.MatchEqual:
			if m.Value == "" {
				return nil
			}
			return []impliedClause{{labels: []string{m.Name}, clause: store.Clause{{Text: []byte(m.Value)}}}}
		case logql.MatchRegexp:
			var out []impliedClause
			for _, c := range regexpClauses(m.Value).clauses {
				out = append(out, impliedClause{labels: []string{m.Name}, clause: c})
			}
			return out
		}
	}
	return nil
}

// impliedOptions are the scan options of a pipeline for each stream:
// with every implied clause for a stream that has none of their labels,
// else with those whose labels it lacks.
type impliedOptions struct {
	base, all store.ScanOptions
	implied   []impliedClause
}

func newImpliedOptions(o store.ScanOptions, implied []impliedClause) *impliedOptions {
	io := &impliedOptions{base: o, implied: implied}
	io.all = io.with(nil)
	return io
}

// of returns the options for a stream of labels ls.
func (io *impliedOptions) of(ls record.Labels) store.ScanOptions {
	for _, ic := range io.implied {
		if streamHasAny(ls, ic.labels) {
			return io.with(ls)
		}
	}
	return io.all
}

func (io *impliedOptions) with(ls record.Labels) store.ScanOptions {
	o := io.base
	if len(io.implied) == 0 {
		return o
	}
	// The base's slices are shared by every stream's options.
	o.Contains, o.Tokens, o.Needles, o.Any = slices.Clip(o.Contains), slices.Clip(o.Tokens), slices.Clip(o.Needles), slices.Clip(o.Any)
	for _, ic := range io.implied {
		if !streamHasAny(ls, ic.labels) {
			o = requireClause(o, ic.clause)
		}
	}
	return o
}

func streamHasAny(ls record.Labels, names []string) bool {
	for _, n := range names {
		if _, ok := ls.Get(n); ok {
			return true
		}
	}
	return false
}
