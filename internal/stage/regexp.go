package stage

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/regexscan"
)

// regexpStage is `| regexp "..."`: when the (unanchored) expression
// matches, each named group becomes a label, "" for a group that took no
// part in the match; when it does not match nothing is extracted and no
// error is set, as in Loki. Names follow the _extracted and first-wins
// rules of every parser.
type regexpStage struct {
	p        *logql.RegexpParser
	names    []string // by group index; "" for unnamed groups
	buf      rowBuf
	observed *Observed // the labels set; nil: all
	// none: no group's label is observed, so that a match could change
	// nothing the query answers and is not tried.
	none bool
	// scan matches the expression when it is a chain regexscan knows
	// (nil otherwise), with Re the fallback; idx is its result's room.
	scan *regexscan.Matcher
	idx  []int
}

func newRegexpStage(r *logql.RegexpParser) (stage, error) {
	if r.Re == nil {
		return nil, fmt.Errorf("regexp: no expression")
	}
	s := &regexpStage{p: r, names: r.Re.SubexpNames()}
	if m, ok := regexscan.Compile(r.Re.String()); ok {
		s.scan, s.idx = m, make([]int, 2*(m.Groups()+1))
	}
	named := 0
	seen := map[string]bool{}
	for _, n := range s.names {
		if n == "" {
			continue
		}
		if !validLabelName(n) {
			return nil, fmt.Errorf("regexp %q: invalid label name %q", r.Re, n)
		}
		if seen[n] {
			return nil, fmt.Errorf("regexp %q: duplicate group name %q", r.Re, n)
		}
		seen[n] = true
		named++
	}
	if named == 0 {
		return nil, fmt.Errorf("regexp %q: at least one named group is required", r.Re)
	}
	return s, nil
}

// observe makes s set only the labels o observes.
func (s *regexpStage) observe(o *Observed) {
	s.observed, s.none = o, !slices.ContainsFunc(s.names, func(n string) bool { return n != "" && observesParsed(o, n) })
}

// observesParsed reports whether o observes the label a parser sets for
// name: name, or name with ExtractedSuffix when a stream label has it.
func observesParsed(o *Observed, name string) bool {
	return o.observes(name) || o.observes(name+ExtractedSuffix)
}

func (s *regexpStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	if s.none {
		return line, true
	}
	s.buf.reset()
	idx := s.match(line)
	if idx == nil {
		return line, true
	}
	for g, name := range s.names {
		if name != "" {
			setParsed(lb, &s.buf, s.observed, name, groupValue(line, idx, g))
		}
	}
	return line, true
}

// match returns the submatch indexes of the expression in line, nil when
// it does not match.
func (s *regexpStage) match(line []byte) []int {
	if s.scan != nil {
		if idx, ok := s.scan.FindSubmatchIndex(s.idx, line); ok {
			return idx
		}
	}
	// FindSubmatchIndex allocates its result; regexp has no variant that
	// reuses a slice.
	return s.p.Re.FindSubmatchIndex(line)
}

// groupValue returns group g's text in line, "" when it took no part in
// the match.
func groupValue(line []byte, idx []int, g int) string {
	if lo, hi := idx[2*g], idx[2*g+1]; lo >= 0 {
		return bytesView(line[lo:hi])
	}
	return ""
}

// patternStage is `| pattern "..."`: see pattern.extract for how a line
// matches. When the pattern's leading literal does not start the line
// nothing is extracted; no error is set.
type patternStage struct {
	p        *pattern
	buf      rowBuf
	lb       *Labels
	set      func(part int, value []byte)
	spans    []patternSpan // match's
	observed *Observed     // the labels set; nil: all
	// plain says, by part, whether a capture's label is set under its
	// own name and observed for the rows of the stream last seen
	// (plainOf: its labels): no stream label has the name. A row of it
	// without structured metadata then sets the label after a lookup for
	// the first-wins rule alone, not setParsed's checks of the stream's
	// labels, the metadata and the labels observed.
	plain   []bool
	plainOf record.Labels
}

func newPatternStage(p *logql.PatternParser) (stage, error) {
	if p.Pattern == nil {
		return nil, fmt.Errorf("pattern: no expression")
	}
	c, err := compilePattern(p.Pattern, true)
	if err != nil {
		return nil, err
	}
	s := &patternStage{p: c}
	// One closure for the life of the stage: a new one per line would
	// allocate.
	s.set = func(part int, value []byte) {
		lb, name := s.lb, s.p.parts[part].Name
		if s.plain[part] && len(lb.meta) == 0 {
			if _, ok := lb.lookup(name); !ok {
				lb.cur = append(lb.cur, record.Label{Name: name, Value: bytesView(value)})
			}
			return
		}
		setParsed(lb, &s.buf, s.observed, name, bytesView(value))
	}
	return s, nil
}

// plainFor works out s.plain for the rows of stream ls.
func (s *patternStage) plainFor(ls record.Labels) {
	if cap(s.plain) < len(s.p.parts) {
		s.plain = make([]bool, len(s.p.parts))
	}
	s.plain = s.plain[:len(s.p.parts)]
	for i, part := range s.p.parts {
		_, stream := ls.Get(part.Name)
		s.plain[i] = part.Capture && part.Name != "" && !stream && s.observed.observes(part.Name)
	}
	s.plainOf = ls
}

// observe makes s set only the labels o observes, and stop matching at
// the literal that ends the last capture whose label o observes: a
// capture ends where the first literal after it starts, so the captures
// before are what they are without the rest. The captures whose label
// o does not observe lose their names: a line's match passes over them
// as over <_>, without a call to set.
func (s *patternStage) observe(o *Observed) {
	s.observed = o
	end := 0
	for i, part := range s.p.parts {
		if part.Capture && part.Name != "" && observesParsed(o, part.Name) {
			end = min(i+2, len(s.p.parts))
		}
	}
	parts := slices.Clone(s.p.parts[:end])
	for i := range parts {
		if parts[i].Capture && parts[i].Name != "" && !observesParsed(o, parts[i].Name) {
			parts[i].Name = ""
		}
	}
	s.p = newPattern(parts, s.p.names)
	s.plain, s.plainOf = nil, nil
}

func (s *patternStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	s.buf.reset()
	s.lb = lb
	if st := lb.stream; s.plain == nil || len(st) != len(s.plainOf) || len(st) > 0 && &st[0] != &s.plainOf[0] {
		s.plainFor(st)
	}
	s.spans = s.p.match(line, s.spans[:0])
	for i, sp := range s.spans {
		if st := &s.p.steps[i]; st.named {
			s.set(st.part, line[sp.from:sp.to])
		}
	}
	s.lb = nil
	return line, true
}

// pattern is a compiled pattern expression of Loki's syntax: literals
// and captures (<name>, or <_> that captures nothing).
type pattern struct {
	parts []logql.PatternPart
	names []string // one per named capture, in order
	// lead and steps are parts as extract walks them: the leading
	// literal ("" for none), then each capture with the literal after it
	// (nil when the capture ends the pattern).
	lead  []byte
	steps []patternStep
}

type patternStep struct {
	lit   []byte
	part  int  // the capture's index in parts
	named bool // the capture has a name
}

// newPattern returns the pattern of parts: literals and captures in turn.
func newPattern(parts []logql.PatternPart, names []string) *pattern {
	p := &pattern{parts: parts, names: names}
	for i := 0; i < len(parts); i++ {
		if !parts[i].Capture {
			p.lead = []byte(parts[i].Literal)
			continue
		}
		st := patternStep{part: i, named: parts[i].Name != ""}
		if i+1 < len(parts) {
			st.lit = []byte(parts[i+1].Literal)
			i++
		}
		p.steps = append(p.steps, st)
	}
	return p
}

// compilePattern checks a pattern: no two captures next to each other
// and capture names valid. For the parser (parser set) the names must be
// distinct and there must be at least one; a filter treats every
// capture as a wildcard.
func compilePattern(p *logql.Pattern, parser bool) (*pattern, error) {
	c := &pattern{}
	seen := map[string]bool{}
	for i, part := range p.Parts {
		if !part.Capture {
			if part.Literal == "" {
				continue
			}
			if n := len(c.parts); n > 0 && !c.parts[n-1].Capture {
				c.parts[n-1].Literal += part.Literal
				continue
			}
			c.parts = append(c.parts, part)
			continue
		}
		if n := len(c.parts); n > 0 && c.parts[n-1].Capture {
			return nil, fmt.Errorf("pattern %q: captures at part %d are not separated by a literal", p.Source, i)
		}
		if part.Name == "_" {
			part.Name = ""
		}
		if part.Name != "" && parser {
			if !validLabelName(part.Name) {
				return nil, fmt.Errorf("pattern %q: invalid capture name %q", p.Source, part.Name)
			}
			if seen[part.Name] {
				return nil, fmt.Errorf("pattern %q: duplicate capture name %q", p.Source, part.Name)
			}
			seen[part.Name] = true
			c.names = append(c.names, part.Name)
		}
		c.parts = append(c.parts, part)
	}
	if parser && len(c.names) == 0 {
		return nil, fmt.Errorf("pattern %q: at least one named capture is required", p.Source)
	}
	return newPattern(c.parts, c.names), nil
}

// matchWhole reports whether the whole line matches the pattern, each
// capture taking at least one byte (the |> filter). A leading literal
// must start the line and a trailing one end it.
func (p *pattern) matchWhole(line []byte) bool {
	parts := p.parts
	if len(parts) == 0 {
		return len(line) == 0 // an empty pattern matches an empty line
	}
	pos := 0
	if !parts[0].Capture {
		if !bytes.HasPrefix(line, stringBytes(parts[0].Literal)) {
			return false
		}
		pos = len(parts[0].Literal)
		parts = parts[1:]
	}
	// parts now alternate capture, literal, capture...
	for len(parts) > 0 {
		if len(parts) == 1 {
			return pos < len(line) // a trailing capture takes the rest
		}
		lit := stringBytes(parts[1].Literal)
		if len(parts) == 2 {
			// The last literal ends the line; the capture before it takes
			// at least one byte.
			return len(line)-len(lit) > pos && bytes.HasSuffix(line, lit)
		}
		// The earliest occurrence is the best: it leaves the most line to
		// what follows.
		if pos >= len(line) {
			return false
		}
		j := indexNear(line[pos+1:], lit)
		if j < 0 {
			return false
		}
		pos += 1 + j + len(lit)
		parts = parts[2:]
	}
	return pos == len(line)
}

// match matches line as Loki's pattern parser does: a leading literal
// must start the line; a capture runs to the first occurrence of the
// literal after it (or to the end of the line); when that literal is
// missing the capture takes the rest of the line and matching stops
// there. It appends to dst where each step's capture is, for the steps
// matched (none when the leading literal does not match).
func (p *pattern) match(line []byte, dst []patternSpan) []patternSpan {
	if len(p.parts) == 0 || !bytes.HasPrefix(line, p.lead) { // no parts: patternStage.observe observed no capture
		return dst
	}
	pos := len(p.lead)
	for i := range p.steps {
		lit := p.steps[i].lit
		j := -1
		if lit != nil { // else the capture ends the pattern
			j = indexNear(line[pos:], lit)
		}
		if j < 0 {
			return append(dst, patternSpan{int32(pos), int32(len(line))})
		}
		dst = append(dst, patternSpan{int32(pos), int32(pos + j)})
		pos += j + len(lit)
	}
	return dst
}

// extract is match for a table of values (LineCaptures.Extract): the
// capture of each step that want marks sets vals[its part] to a view of
// line, up to step last, after which no step's capture is wanted.
func (p *pattern) extract(line []byte, vals []Value, want []bool, last int) {
	if last < 0 || !bytes.HasPrefix(line, p.lead) {
		return
	}
	pos := len(p.lead)
	for i, st := range p.steps[:last+1] {
		j := -1
		if st.lit != nil { // else the capture ends the pattern
			j = indexNear(line[pos:], st.lit)
		}
		if j < 0 {
			if want[i] {
				vals[st.part] = Value{V: bytesView(line[pos:]), Set: true}
			}
			return
		}
		if want[i] {
			vals[st.part] = Value{V: bytesView(line[pos : pos+j]), Set: true}
		}
		pos += j + len(st.lit)
	}
}

// patternSpan is where a capture is in a line: [from, to).
type patternSpan struct{ from, to int32 }
