package query

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

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
	// lineOnly: the clause holds in the line the parser matched, not in
	// a value structured metadata give the label instead (captureSource).
	lineOnly bool
}

// backslash is the literal of a line with an escape: a value unescaped
// from it may hold what the line does not.
var backslash = store.Literal{Text: []byte{'\\'}}

// unicodeEscape is the literal of a line with a JSON \u escape.
var unicodeEscape = store.Literal{Text: []byte(`\u`)}

// escapeOf returns the literal a line holds when a value unescaped from
// it holds one of clause's literals but the line does not: a backslash;
// or for json alone, whose other escapes (\" \\ \/ \b \f \n \r \t) write
// none of the bytes of literals of printable ASCII without " \ and /, a
// \u escape, which far fewer lines hold (a trace id's clause is its
// text or \u: 2% of an application's JSON lines, where 36% hold a
// backslash).
func escapeOf(clause store.Clause, logfmt bool) store.Literal {
	if logfmt || !unicodeEscapesOnly(clause) {
		return backslash
	}
	return unicodeEscape
}

// unicodeEscapesOnly reports whether only a JSON \u escape writes a
// byte of clause's literals: printable ASCII without " \ and /.
func unicodeEscapesOnly(clause store.Clause) bool {
	for _, l := range clause {
		for _, c := range l.Text {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '/' {
				return false
			}
		}
	}
	return true
}

// impliedClauses returns the clauses the label filters of a pipeline
// imply of the lines they keep: filters that come after a parser and
// after nothing but parsers of the unchanged line, line filters, label
// filters and drops or keeps of labels.
func impliedClauses(stages []logql.Stage) []impliedClause {
	var out []impliedClause
	parsers, escapes, logfmt := 0, false, false
	var caps captureSource // the one parser's, when it is a regexp or a pattern
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFilter, *logql.Drop, *logql.Keep:
		case *logql.JSONParser:
			parsers, escapes = parsers+1, true
		case *logql.LogfmtParser:
			parsers, escapes, logfmt = parsers+1, true, true
		case *logql.PatternParser:
			parsers++
			caps = captureSource{pat: s.Pattern}
		case *logql.RegexpParser:
			parsers++
			caps = captureSource{re: s.Re}
		case *logql.LabelFilterStage:
			if parsers == 0 {
				continue
			}
			if parsers > 1 {
				// A label of the last parser's may hold an earlier one's
				// value when the last does not match.
				caps = captureSource{}
			}
			for _, ic := range filterClauses(s.Filter, &caps) {
				if escapes {
					esc := escapeOf(ic.clause, logfmt)
					if !slices.ContainsFunc(ic.clause, func(l store.Literal) bool { return string(l.Text) == string(esc.Text) }) {
						if len(ic.clause) == maxClause {
							continue
						}
						ic.clause = append(ic.clause, esc)
					}
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
func filterClauses(f logql.LabelFilter, caps *captureSource) []impliedClause {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		l, r := filterClauses(f.Left, caps), filterClauses(f.Right, caps)
		if f.And {
			return append(l, r...)
		}
		if len(l) == 0 || len(r) == 0 || len(l[0].clause)+len(r[0].clause) > maxClause {
			return nil
		}
		return []impliedClause{{
			labels:   append(slices.Clip(l[0].labels), r[0].labels...),
			clause:   append(slices.Clip(l[0].clause), r[0].clause...),
			lineOnly: l[0].lineOnly || r[0].lineOnly,
		}}
	case *logql.LabelFilterString:
		m := f.Matcher
		if strings.HasPrefix(m.Name, "__") {
			return nil
		}
		var out []impliedClause
		switch m.Type {
		case logql.MatchEqual:
			if m.Value == "" {
				return nil
			}
			// The value in the text around it, which finds fewer rows.
			for _, c := range caps.clauses(m.Name, m.Value) {
				out = append(out, impliedClause{labels: []string{m.Name}, clause: c, lineOnly: true})
			}
			if len(out) == 0 {
				out = append(out, impliedClause{labels: []string{m.Name}, clause: store.Clause{{Text: []byte(m.Value)}}})
			}
		case logql.MatchRegexp:
			for _, c := range regexpClauses(m.Value).clauses {
				out = append(out, impliedClause{labels: []string{m.Name}, clause: c})
			}
		}
		return out
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
	o.Contains, o.Tokens, o.Needles, o.Any, o.LineAny = slices.Clip(o.Contains), slices.Clip(o.Tokens), slices.Clip(o.Needles), slices.Clip(o.Any), slices.Clip(o.LineAny)
	for _, ic := range io.implied {
		switch {
		case streamHasAny(ls, ic.labels):
		case ic.lineOnly:
			// The rows of a block with metadata the query sees are read
			// whole, without Contains; its blocks are kept (LineAny).
			o.Contains = append(o.Contains, ic.clause)
			if probes, ok := clauseProbes(ic.clause); ok {
				o.LineAny = append(o.LineAny, probes)
			}
		default:
			o = requireClause(o, ic.clause)
		}
	}
	return o
}

// clauses returns the implied clauses for a stream of labels ls: those
// whose labels it has not.
func (io *impliedOptions) clauses(ls record.Labels) []store.Clause {
	var out []store.Clause
	for _, ic := range io.implied {
		if !streamHasAny(ls, ic.labels) {
			out = append(out, ic.clause)
		}
	}
	return out
}

func streamHasAny(ls record.Labels, names []string) bool {
	for _, n := range names {
		if _, ok := ls.Get(n); ok {
			return true
		}
	}
	return false
}

// captureSource is the regexp or pattern parser that alone sets the
// labels a filter reads, or neither. A capture's label is set only when
// the parser matches the line, and then holds bytes of the line where
// the expression puts them: so a label equal to a value implies the
// text around the value in the expression (`| regexp
// "\"status\":(?P<status>\d+)" | status="500"`: the line holds
// `"status":500`, which the store's filters find in far fewer rows than
// 500), unless structured metadata set the label instead
// (impliedClause.lineOnly).
type captureSource struct {
	re  *regexp.Regexp
	pat *logql.Pattern
}

// clauses returns the clauses of literals, each holding value, that a
// line holds when the parser sets label name to value (not "").
func (c *captureSource) clauses(name, value string) []store.Clause {
	var all []store.Clause
	switch {
	case c.re != nil:
		tree, err := syntax.Parse(c.re.String(), syntax.Perl)
		if err != nil || captureCount(tree, name, false) != 1 || !utf8.ValidString(value) {
			return nil
		}
		all = regexpClauses(withLiteral(tree, name, value).String()).clauses
	case c.pat != nil:
		all = patternCaptureClauses(c.pat.Parts, name, value)
	}
	// Those that hold the value: the others, the literals the parser
	// needs, are in most lines it was written for, and cost more
	// searches than the rows they rule out.
	return slices.DeleteFunc(all, func(c store.Clause) bool {
		return slices.ContainsFunc(c, func(l store.Literal) bool { return l.Fold || !bytes.Contains(l.Text, []byte(value)) })
	})
}

// captureCount returns how many groups of re are named name, or -1
// when one is repeated (in x(?P<a>\d)+, a holds the last digit, which
// need not follow x).
func captureCount(re *syntax.Regexp, name string, repeated bool) int {
	n := 0
	if re.Op == syntax.OpCapture && re.Name == name {
		if repeated {
			return -1
		}
		n++
	}
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus:
		repeated = true
	case syntax.OpRepeat:
		repeated = repeated || re.Max != 1
	}
	for _, sub := range re.Sub {
		k := captureCount(sub, name, repeated)
		if k < 0 {
			return -1
		}
		n += k
	}
	return n
}

// withLiteral returns a copy of re whose group named name is the
// literal value (as it matched: case and all), re left as it is.
func withLiteral(re *syntax.Regexp, name, value string) *syntax.Regexp {
	if re.Op == syntax.OpCapture && re.Name == name {
		return &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune(value)}
	}
	if len(re.Sub) == 0 {
		return re
	}
	cp := *re
	cp.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, sub := range re.Sub {
		cp.Sub[i] = withLiteral(sub, name, value)
	}
	return &cp
}

// patternCaptureClauses returns the clause of a line on which pattern
// parts set capture name to value (stage's pattern.match): the literal
// just before the capture followed by the value. (The literal after it
// may be missing: the value is then the rest of the line.)
func patternCaptureClauses(parts []logql.PatternPart, name, value string) []store.Clause {
	at := slices.IndexFunc(parts, func(p logql.PatternPart) bool { return p.Capture && p.Name == name })
	if at < 0 {
		return nil
	}
	before := ""
	if at > 0 && !parts[at-1].Capture {
		before = parts[at-1].Literal
	}
	return []store.Clause{{{Text: []byte(before + value)}}}
}
