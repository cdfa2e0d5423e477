package query

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/logql"
)

// regexpStage is `| regexp "..."`: when the (unanchored) expression
// matches, each named group becomes a label, "" for a group that took no
// part in the match; when it does not match nothing is extracted and no
// error is set, as in Loki. Names follow the _extracted and first-wins
// rules of every parser.
type regexpStage struct {
	p     *logql.RegexpParser
	names []string // by group index; "" for unnamed groups
	buf   rowBuf
}

func newRegexpStage(r *logql.RegexpParser) (stage, error) {
	if r.Re == nil {
		return nil, fmt.Errorf("regexp: no expression")
	}
	s := &regexpStage{p: r, names: r.Re.SubexpNames()}
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

func (s *regexpStage) process(_ int64, line []byte, lb *labelsBuilder) ([]byte, bool) {
	s.buf.reset()
	// FindSubmatchIndex allocates its result; regexp has no variant that
	// reuses a slice.
	idx := s.p.Re.FindSubmatchIndex(line)
	if idx == nil {
		return line, true
	}
	for g, name := range s.names {
		if name == "" {
			continue
		}
		v := ""
		if lo, hi := idx[2*g], idx[2*g+1]; lo >= 0 {
			v = bytesView(line[lo:hi])
		}
		setParsed(lb, &s.buf, name, v)
	}
	return line, true
}

// patternStage is `| pattern "..."`: see pattern.extract for how a line
// matches. When the pattern's leading literal does not start the line
// nothing is extracted; no error is set.
type patternStage struct {
	p   *pattern
	buf rowBuf
	lb  *labelsBuilder
	set func(name string, value []byte)
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
	s.set = func(name string, value []byte) { setParsed(s.lb, &s.buf, name, bytesView(value)) }
	return s, nil
}

func (s *patternStage) process(_ int64, line []byte, lb *labelsBuilder) ([]byte, bool) {
	s.buf.reset()
	s.lb = lb
	s.p.extract(line, s.set)
	s.lb = nil
	return line, true
}
