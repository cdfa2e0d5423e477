package logql

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
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
	// fast, for the regexps selectors use most, matches without the
	// regexp: .* and .+ (a line break is not a "."), and alternations of
	// literals (api|web), which one is in alts.
	fast fastRegexp
	alts []string
}

type fastRegexp uint8

const (
	slowRegexp fastRegexp = iota
	anyRegexp             // .*
	someRegexp            // .+
	altsRegexp            // literals, one of alts
)

// Matches reports whether a label value (empty when the label is absent,
// as in Prometheus and Loki) satisfies m.
func (m *Matcher) Matches(v string) bool {
	switch m.Type {
	case MatchEqual:
		return v == m.Value
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp:
		return m.regexpMatches(v)
	default:
		return !m.regexpMatches(v)
	}
}

func (m *Matcher) regexpMatches(v string) bool {
	switch m.fast {
	case anyRegexp:
		return strings.IndexByte(v, '\n') < 0
	case someRegexp:
		return v != "" && strings.IndexByte(v, '\n') < 0
	case altsRegexp:
		for _, a := range m.alts {
			if v == a {
				return true
			}
		}
		return false
	}
	return m.re.MatchString(v)
}

// fastOf returns how a selector's regexp matches without running it.
func fastOf(value string) (fastRegexp, []string) {
	switch value {
	case ".*":
		return anyRegexp, nil
	case ".+":
		return someRegexp, nil
	}
	alts := strings.Split(value, "|")
	if len(alts) > 16 {
		return slowRegexp, nil
	}
	for _, a := range alts {
		// (A regexp takes a byte of broken UTF-8 for U+FFFD: an
		// alternative holding U+FFFD matches more than itself.)
		if regexp.QuoteMeta(a) != a || strings.ContainsRune(a, utf8.RuneError) {
			return slowRegexp, nil
		}
	}
	return altsRegexp, alts
}

func (m *Matcher) String() string {
	return m.Name + m.Type.String() + quote(m.Value)
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

// newMatcher makes a matcher, compiling the regexp of the regexp types
// anchored at both ends, as Prometheus and Loki match labels.
func newMatcher(name string, t MatchType, value string) (*Matcher, error) {
	m := &Matcher{Name: name, Type: t, Value: value}
	if t == MatchRegexp || t == MatchNotRegexp {
		// The forms fastOf knows are regexps by construction (any text,
		// some text, literals of valid UTF-8 without a metacharacter),
		// matched without one: only the others are compiled.
		if m.fast, m.alts = fastOf(value); m.fast == slowRegexp {
			re, err := anchored(value)
			if err != nil {
				return nil, err
			}
			m.re = re
		}
	}
	return m, nil
}

// anchored compiles a selector's regexp, which matches a whole value.
func anchored(value string) (*regexp.Regexp, error) {
	re, err := regexp.Compile("^(?:" + value + ")$")
	if err != nil {
		return nil, fmt.Errorf("invalid regexp %q: %w", value, err)
	}
	return re, nil
}
