package stage

// This file is what the query engine's lean path of a line parser
// (range_lines.go in package query) uses: a pattern or regexp stage's
// captures read into a table of the caller's, and label filters decided
// on such a table, as the stages decide them for a row that has no
// structured metadata, no error yet and no stream label of a capture's
// name. The engine checks those conditions; any row outside them, and any
// row whose value does not convert (where a stage would set an error),
// goes through the stages themselves.

import "github.com/sluicelog/sluice/internal/logql"

// Value is a label's value in a caller's table: Set false when the row
// has no such label.
type Value struct {
	V   string
	Set bool
}

// LineCaptures is a pattern or regexp stage of a pipeline, read into a
// table of values by capture rather than into Labels. It is the
// pipeline's: the same goroutine uses both.
type LineCaptures struct {
	pat   *patternStage
	re    *regexpStage
	names []string // by capture; "" for one that sets no label
	named []string // by capture, its name in the expression; "" for <_> or a group without
	// want says, per step of a pattern, whether its capture sets a label;
	// last is the last step that does (-1: none), after which no step
	// changes what Extract reads.
	want []bool
	last int
}

// LineCaptures returns stage k of the pipeline when it is a pattern or a
// regexp stage.
func (p *Pipeline) LineCaptures(k int) (*LineCaptures, bool) {
	if k >= len(p.stages) {
		return nil, false
	}
	c := &LineCaptures{}
	switch s := p.stages[k].(type) {
	case *patternStage:
		c.pat = s
		for _, part := range s.p.parts {
			// observe() took the names of the captures it does not
			// observe; one observed only with ExtractedSuffix sets none
			// for a stream without a label of its name.
			name := ""
			if part.Capture && s.observed.observes(part.Name) {
				name = part.Name
			}
			c.names = append(c.names, name)
			c.named = append(c.named, part.Name)
		}
		c.last = -1
		for i, st := range s.p.steps {
			want := c.names[st.part] != ""
			c.want = append(c.want, want)
			if want {
				c.last = i
			}
		}
	case *regexpStage:
		c.re = s
		c.named = s.names
		for _, n := range s.names {
			if s.none || !s.observed.observes(n) {
				n = ""
			}
			c.names = append(c.names, n)
		}
	default:
		return nil, false
	}
	return c, true
}

// Head returns the pipeline of its first k stages. It shares them with
// p: the same goroutine uses both.
func (p *Pipeline) Head(k int) *Pipeline { return &Pipeline{stages: p.stages[:min(k, len(p.stages))]} }

// Len returns the number of captures.
func (c *LineCaptures) Len() int { return len(c.names) }

// Name returns the label capture i sets, "" when it sets none.
func (c *LineCaptures) Name(i int) string { return c.names[i] }

// Named returns capture i's name in the expression, whether it sets a
// label or not: a stream with a label of that name has the capture set
// name_extracted, which Name does not say.
func (c *LineCaptures) Named(i int) string { return c.named[i] }

// Extract reads line's captures into vals[:Len()]: vals[i] is what
// capture i sets (the values view line).
func (c *LineCaptures) Extract(line []byte, vals []Value) {
	vals = vals[:len(c.names)]
	clear(vals)
	if c.pat != nil {
		c.pat.p.extract(line, vals, c.want, c.last)
		return
	}
	if c.re.none {
		return
	}
	idx := c.re.match(line)
	if idx == nil {
		return
	}
	for g, name := range c.names {
		if name != "" {
			vals[g] = Value{V: groupValue(line, idx, g), Set: true}
		}
	}
}

// ValueFilter decides a label filter for a row whose labels are a table
// of values, as its stage decides it for a row without an error: ok false
// when a value the filter reads does not convert (the stage would set
// __error__ and keep the row), and the row must go through the stage.
type ValueFilter func(vals []Value) (pass, ok bool)

// CompileValueFilter compiles f to read label name from vals[slot(name)].
func CompileValueFilter(f logql.LabelFilter, slot func(name string) int) (ValueFilter, error) {
	if b, ok := f.(*logql.LabelFilterBinary); ok {
		l, err := CompileValueFilter(b.Left, slot)
		if err != nil {
			return nil, err
		}
		r, err := CompileValueFilter(b.Right, slot)
		if err != nil {
			return nil, err
		}
		// Left to right, stopping as the stage's predicate stops.
		if b.And {
			return func(vals []Value) (bool, bool) {
				if pass, ok := l(vals); !pass || !ok {
					return pass, ok
				}
				return r(vals)
			}, nil
		}
		return func(vals []Value) (bool, bool) {
			if pass, ok := l(vals); pass || !ok {
				return pass, ok
			}
			return r(vals)
		}, nil
	}
	leaf, err := compileLeaf(f)
	if err != nil {
		return nil, err
	}
	at := slot(leaf.name)
	if leaf.match != nil {
		match := leaf.match
		return func(vals []Value) (bool, bool) { return match(vals[at].V), true }, nil
	}
	test := leaf.test
	return func(vals []Value) (bool, bool) {
		v := vals[at]
		if !v.Set {
			return false, true
		}
		pass, err := test(v.V)
		return pass, err == nil
	}, nil
}
