package logql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MatchType is the operator of a label matcher.
type MatchType uint8

const (
	MatchEqual     MatchType = iota // =
	MatchNotEqual                   // !=
	MatchRegexp                     // =~
	MatchNotRegexp                  // !~
)

var matchOps = [...]string{"=", "!=", "=~", "!~"}

func (t MatchType) String() string { return matchOps[t] }

// Matcher is one label matcher of a stream selector.
type Matcher struct {
	Name  string
	Type  MatchType
	Value string
	re    *regexp.Regexp // anchored, for the regexp types
}

// Matches reports whether a label value (empty when the label is absent,
// as in Prometheus and Loki) satisfies m.
func (m *Matcher) Matches(v string) bool {
	switch m.Type {
	case MatchEqual:
		return v == m.Value
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp:
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

func (m *Matcher) String() string {
	return m.Name + m.Type.String() + strconv.Quote(m.Value)
}

// Selector is a stream selector: every matcher must match.
type Selector []*Matcher

// Matches reports whether the labels that get returns satisfy every
// matcher.
func (s Selector) Matches(get func(name string) string) bool {
	for _, m := range s {
		if !m.Matches(get(m.Name)) {
			return false
		}
	}
	return true
}

func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, m := range s {
		parts[i] = m.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// ParseError is a syntax error at a line and column (1-based), reported
// as Loki does.
type ParseError struct {
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("parse error at line %d, col %d: %s", e.Line, e.Col, e.Msg)
}

// ParseSelector parses a stream selector such as {app="api", env=~"p.*"}.
// As in Loki, at least one matcher must not match the empty string.
func ParseSelector(src string) (Selector, error) {
	p := &parser{src: src}
	sel := p.selector()
	p.space()
	if p.err == nil && p.pos < len(p.src) {
		p.fail("unexpected %q after the selector", p.src[p.pos:])
	}
	if p.err != nil {
		return nil, p.err
	}
	return sel, nil
}

type parser struct {
	src string
	pos int
	err *ParseError
}

func (p *parser) fail(format string, args ...any) {
	if p.err != nil {
		return
	}
	line, col := 1, 1
	for _, c := range p.src[:p.pos] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	p.err = &ParseError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) space() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
}

func (p *parser) eat(s string) bool {
	p.space()
	if strings.HasPrefix(p.src[p.pos:], s) {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *parser) selector() Selector {
	if !p.eat("{") {
		p.fail("a stream selector starts with '{'")
		return nil
	}
	var sel Selector
	for p.err == nil {
		if p.eat("}") {
			break
		}
		if len(sel) > 0 && !p.eat(",") {
			p.fail("expected ',' or '}'")
			break
		}
		sel = append(sel, p.matcher())
	}
	if p.err != nil {
		return nil
	}
	for _, m := range sel {
		if !m.Matches("") {
			return sel
		}
	}
	p.fail("queries require at least one regexp or equality matcher that does not have an empty-compatible value")
	return nil
}

func (p *parser) matcher() *Matcher {
	p.space()
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos], p.pos == start) {
		p.pos++
	}
	if p.pos == start {
		p.fail("expected a label name")
		return nil
	}
	m := &Matcher{Name: p.src[start:p.pos]}
	switch {
	case p.eat("=~"):
		m.Type = MatchRegexp
	case p.eat("!~"):
		m.Type = MatchNotRegexp
	case p.eat("!="):
		m.Type = MatchNotEqual
	case p.eat("="):
		m.Type = MatchEqual
	default:
		p.fail("expected one of = != =~ !~ after %s", m.Name)
		return nil
	}
	p.space()
	m.Value = p.str()
	if p.err != nil {
		return nil
	}
	if m.Type == MatchRegexp || m.Type == MatchNotRegexp {
		re, err := regexp.Compile("^(?:" + m.Value + ")$")
		if err != nil {
			p.fail("invalid regexp %q: %v", m.Value, err)
			return nil
		}
		m.re = re
	}
	return m
}

// str reads a double-quoted (Go escapes) or backquoted string.
func (p *parser) str() string {
	if p.pos >= len(p.src) || (p.src[p.pos] != '"' && p.src[p.pos] != '`') {
		p.fail("expected a quoted string")
		return ""
	}
	q := p.src[p.pos]
	end := p.pos + 1
	for end < len(p.src) && p.src[end] != q {
		if q == '"' && p.src[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(p.src) {
		p.fail("unterminated string")
		return ""
	}
	raw := p.src[p.pos : end+1]
	if q == '`' {
		p.pos = end + 1
		return raw[1 : len(raw)-1]
	}
	s, err := strconv.Unquote(raw)
	if err != nil {
		p.fail("invalid string %s: %v", raw, err)
		return ""
	}
	p.pos = end + 1
	return s
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (!first && c >= '0' && c <= '9')
}
