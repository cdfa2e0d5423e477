package stage

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/sluicelog/sluice/internal/literal"
	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/regexlit"
	"github.com/sluicelog/sluice/internal/regexscan"
)

// lineFilter is a line filter stage: |= != |~ !~ |> !> with one value
// or several joined by "or". A positive operator keeps a line that
// matches any value, a negative one a line that matches none.
type lineFilter struct {
	negate  bool
	matches []func(line []byte) bool
	// needle: the literal of a `|=` of one exact literal ("" for any
	// other filter): a line that holds it not is dropped.
	needle string
}

func newLineFilter(f *logql.LineFilter) (stage, error) {
	if len(f.Values) == 0 {
		return nil, fmt.Errorf("line filter without a value")
	}
	s := &lineFilter{}
	if lit, fold, ok := filterLiteral(f.Op, f.Values[0]); ok && !fold && f.Op == logql.FilterContains && len(f.Values) == 1 {
		s.needle = string(lit)
	}
	switch f.Op {
	case logql.FilterNotContains, logql.FilterNotRegexp, logql.FilterNotPattern:
		s.negate = true
	}
	// The values of an "or" chain that are literals, exact or folding
	// ASCII case, are searched for all at once: one pass over the line
	// instead of one per value (20,000 of them took 20 s, 15 times one
	// regexp of them).
	var exact, folded [][]byte
	for _, v := range f.Values {
		if lit, fold, ok := filterLiteral(f.Op, v); ok && len(f.Values) > 1 {
			if fold {
				folded = append(folded, lit)
			} else {
				exact = append(exact, lit)
			}
			continue
		}
		m, err := lineMatcher(f.Op, v)
		if err != nil {
			return nil, err
		}
		s.matches = append(s.matches, m)
	}
	if len(exact) > 0 {
		s.matches = append(s.matches, literal.NewSet(exact, false).Match)
	}
	if len(folded) > 0 {
		s.matches = append(s.matches, literal.NewSet(folded, true).Match)
	}
	return s, nil
}

// filterLiteral returns the literal a line filter's value matches: an
// exact one for |= and != and for a regexp that is a literal, one that
// folds ASCII case for a case-insensitive ASCII literal regexp (but not
// one with k or s, which Unicode folds from non-ASCII letters too).
func filterLiteral(op logql.FilterOp, v logql.FilterValue) (lit []byte, fold, ok bool) {
	switch op {
	case logql.FilterContains, logql.FilterNotContains:
		return []byte(v.Value), false, !v.IP
	case logql.FilterRegexp, logql.FilterNotRegexp:
		if v.Re == nil {
			return nil, false, false
		}
		if l, complete := v.Re.LiteralPrefix(); complete {
			return []byte(l), false, true
		}
		if l, ok := FoldedLiteral(v.Re.String()); ok && !bytes.ContainsAny(l, "ks") {
			return l, true, true
		}
	}
	return nil, false, false
}

// lineMatcher compiles one value of a line filter.
func lineMatcher(op logql.FilterOp, v logql.FilterValue) (func([]byte) bool, error) {
	if v.IP {
		if op != logql.FilterContains && op != logql.FilterNotContains {
			return nil, fmt.Errorf("ip(%q): only |= and != can match an address", v.Value)
		}
		m, err := newIPMatcher(v.Value)
		if err != nil {
			return nil, err
		}
		return m.matchText, nil
	}
	switch op {
	case logql.FilterContains, logql.FilterNotContains:
		lit := []byte(v.Value)
		return func(line []byte) bool { return bytes.Contains(line, lit) }, nil
	case logql.FilterRegexp, logql.FilterNotRegexp:
		re := v.Re
		if re == nil {
			var err error
			if re, err = regexp.Compile(v.Value); err != nil {
				return nil, fmt.Errorf("invalid regexp %q: %w", v.Value, err)
			}
		}
		// A regexp that is only a literal (common: |~ "error") is a
		// substring search, much faster than running the automaton.
		if lit, complete := re.LiteralPrefix(); complete {
			b := []byte(lit)
			return func(line []byte) bool { return bytes.Contains(line, b) }, nil
		}
		// So is a case-insensitive ASCII literal (|~ "(?i)error"), on the
		// line lowercased.
		// (Unicode folds the Kelvin sign to k and the long s to s: when the
		// literal has either, a line with non-ASCII bytes where the
		// lowercased search fails is left to the regexp.)
		if lit, ok := FoldedLiteral(re.String()); ok {
			var buf []byte
			unicode := bytes.ContainsAny(lit, "ks")
			return func(line []byte) bool {
				var high bool
				buf, high = appendLowerASCII(buf[:0], line)
				return bytes.Contains(buf, lit) || high && unicode && re.Match(line)
			}, nil
		}
		return regexpMatcher(re, re.String(), false), nil
	case logql.FilterPattern, logql.FilterNotPattern:
		if v.Pattern == nil {
			return nil, fmt.Errorf("pattern filter %q is not compiled", v.Value)
		}
		p, err := compilePattern(v.Pattern, false)
		if err != nil {
			return nil, err
		}
		return p.matchWhole, nil
	}
	return nil, fmt.Errorf("unknown line filter operator %d", op)
}

// minPrefilterLen is the shortest literal worth a search before a
// regexp: a group with a shorter one is in most lines and rules little
// out, while its search costs a pass over the line.
const minPrefilterLen = 3

// regexpMatcher returns a matcher equivalent to re, compiled from src:
// unanchored (a line filter's), or with anchored, compiled from
// ^(?:src)$ (a label matcher's).
// When the regexp is exactly "contains one of these literals" (error|
// fatal|panic, (?i)timeout) or, anchored, "is one of these strings"
// (info|warn), the literals are searched and the regexp never runs;
// otherwise the literals every match contains are searched first
// (regexlit), and the regexp runs only on the texts that hold them.
func regexpMatcher(re *regexp.Regexp, src string, anchored bool) func([]byte) bool {
	p, err := regexlit.Parse(src, anchored)
	if err != nil {
		return re.Match
	}
	match := chainMatch(re)
	if eq := p.Equals(); eq != nil {
		return func(b []byte) bool { return eq(bytesView(b)) }
	}
	if p.Exact {
		m := p.Matcher(0)
		switch {
		case m == nil:
			if p.NoNewline {
				return func(b []byte) bool { return bytes.IndexByte(b, '\n') < 0 || re.Match(b) }
			}
			return func([]byte) bool { return true }
		case p.NoNewline:
			return func(b []byte) bool {
				if bytes.IndexByte(b, '\n') >= 0 {
					return re.Match(b)
				}
				return m.Match(b)
			}
		}
		return m.Match
	}
	// Anchored at a literal prefix (api-.*), the regexp fails at the
	// first byte that differs, before a search would find the literal
	// (BenchmarkRegexpFilter/re=label-prefix: 1.2 ms against 1.7).
	// Unanchored, it searches for its literal prefix itself, as fast
	// as a prefilter would (re=required: 3.0 ms against 2.1, noise).
	if anchored && literalStart(src) {
		return match
	}
	if prefix, _ := re.LiteralPrefix(); !anchored && len(prefix) >= minPrefilterLen {
		return match
	}
	if m := p.Matcher(minPrefilterLen); m != nil {
		return func(b []byte) bool { return m.Match(b) && match(b) }
	}
	return match
}

// chainMatch returns re.Match, or, when re is a chain of literals and
// class runs (regexscan), a one-pass scan with re.Match its fallback.
func chainMatch(re *regexp.Regexp) func([]byte) bool {
	m, ok := regexscan.Compile(re.String())
	if !ok {
		return re.Match
	}
	return func(b []byte) bool {
		if matched, ok := m.Match(b); ok {
			return matched
		}
		return re.Match(b)
	}
}

// literalStart reports whether a regexp starts with an exact literal.
func literalStart(src string) bool {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return false
	}
	for re.Op == syntax.OpCapture || re.Op == syntax.OpConcat && len(re.Sub) > 0 {
		re = re.Sub[0]
	}
	return re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase == 0
}

// FoldedLiteral returns, lowercased, the literal a regexp is when it is
// one case-insensitive ASCII literal and nothing else.
func FoldedLiteral(src string) ([]byte, bool) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, false
	}
	re = re.Simplify()
	if re.Op != syntax.OpLiteral || re.Flags&syntax.FoldCase == 0 || !ascii(re.Rune) {
		return nil, false
	}
	lit, _ := appendLowerASCII(nil, []byte(string(re.Rune)))
	return lit, true
}

// ascii reports whether every rune is ASCII.
func ascii(rs []rune) bool {
	for _, r := range rs {
		if r >= 0x80 {
			return false
		}
	}
	return true
}

// appendLowerASCII appends b with ASCII letters lowercased, and reports
// whether b has a byte that is not ASCII.
func appendLowerASCII(dst, b []byte) ([]byte, bool) {
	n := len(dst)
	dst = append(dst, b...)
	var high byte
	for i, c := range dst[n:] {
		high |= c
		if c-'A' < 26 {
			dst[n+i] = c | 0x20
		}
	}
	return dst, high >= 0x80
}

func (s *lineFilter) process(_ int64, line []byte, _ *Labels) ([]byte, bool) {
	for _, m := range s.matches {
		if m(line) {
			return line, !s.negate
		}
	}
	return line, s.negate
}

// ipMatcher matches addresses against an ip("...") argument: a single
// address, a range a-b (inclusive, both of one family) or a CIDR prefix.
type ipMatcher struct {
	prefix netip.Prefix // valid for a CIDR
	lo, hi netip.Addr   // otherwise
}

func newIPMatcher(pattern string) (*ipMatcher, error) {
	p := strings.TrimSpace(pattern)
	switch {
	case strings.Contains(p, "/"):
		pr, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("ip(%q): invalid CIDR: %w", pattern, err)
		}
		return &ipMatcher{prefix: pr.Masked()}, nil
	case strings.Contains(p, "-"):
		a, b, _ := strings.Cut(p, "-")
		lo, err := netip.ParseAddr(strings.TrimSpace(a))
		if err != nil {
			return nil, fmt.Errorf("ip(%q): invalid range start: %w", pattern, err)
		}
		hi, err := netip.ParseAddr(strings.TrimSpace(b))
		if err != nil {
			return nil, fmt.Errorf("ip(%q): invalid range end: %w", pattern, err)
		}
		lo, hi = lo.Unmap().WithZone(""), hi.Unmap().WithZone("")
		if lo.Is4() != hi.Is4() {
			return nil, fmt.Errorf("ip(%q): the range mixes IPv4 and IPv6", pattern)
		}
		if hi.Less(lo) {
			return nil, fmt.Errorf("ip(%q): the range ends before it starts", pattern)
		}
		return &ipMatcher{lo: lo, hi: hi}, nil
	default:
		a, err := netip.ParseAddr(p)
		if err != nil {
			return nil, fmt.Errorf("ip(%q): invalid address: %w", pattern, err)
		}
		a = a.Unmap().WithZone("")
		return &ipMatcher{lo: a, hi: a}, nil
	}
}

func (m *ipMatcher) contains(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if m.prefix.IsValid() {
		return m.prefix.Contains(a)
	}
	return a.Is4() == m.lo.Is4() && !a.Less(m.lo) && !m.hi.Less(a)
}

// matchText reports whether text holds an address that m matches. An
// address is a run of hex digits, '.' and ':' that parses as IPv4 or
// IPv6; for a run that does not (1.2.3.4:8080, host:10.0.0.1) the pieces
// between ':' that hold a '.' are tried as IPv4.
func (m *ipMatcher) matchText(text []byte) bool {
	for i := 0; i < len(text); {
		if !isIPByte(text[i]) {
			i++
			continue
		}
		j := i
		sep := false
		for j < len(text) && isIPByte(text[j]) {
			sep = sep || text[j] == '.' || text[j] == ':'
			j++
		}
		// The shortest address is "::".
		if sep && j-i >= 2 && m.matchRun(text[i:j]) {
			return true
		}
		i = j
	}
	return false
}

func (m *ipMatcher) matchRun(run []byte) bool {
	t := bytes.TrimRight(run, ".:")
	if !bytes.HasPrefix(t, []byte("::")) {
		t = bytes.TrimLeft(t, ":")
	}
	dots := bytes.Count(t, []byte{'.'})
	colons := bytes.Count(t, []byte{':'})
	if plausibleIP(t) {
		if a, err := netip.ParseAddr(bytesView(t)); err == nil && m.contains(a) {
			return true
		}
	}
	if dots < 3 || colons == 0 {
		return false
	}
	for piece := range bytes.SplitSeq(run, []byte{':'}) {
		piece = bytes.TrimRight(piece, ".")
		if !plausibleIP(piece) {
			continue
		}
		if a, err := netip.ParseAddr(bytesView(piece)); err == nil && m.contains(a) {
			return true
		}
	}
	return false
}

// plausibleIP reports whether b has the shape of an address: four
// groups of 1-3 digits separated by '.', or groups of at most 4 hex
// digits separated by ':' (at least two), optionally ending with an IPv4
// address. It lets matchText skip netip.ParseAddr, whose error allocates,
// for the times and versions that fill log lines.
func plausibleIP(b []byte) bool {
	colons := bytes.Count(b, []byte{':'})
	if colons == 0 {
		return plausibleIPv4(b)
	}
	if colons < 2 {
		return false
	}
	last := bytes.LastIndexByte(b, ':')
	if bytes.IndexByte(b, '.') >= 0 {
		if !plausibleIPv4(b[last+1:]) {
			return false
		}
		b = b[:last]
	}
	for g := range bytes.SplitSeq(b, []byte{':'}) {
		if len(g) > 4 || bytes.IndexByte(g, '.') >= 0 {
			return false
		}
	}
	return true
}

func plausibleIPv4(b []byte) bool {
	groups, n := 0, 0
	for _, c := range b {
		switch {
		case c == '.':
			if n == 0 {
				return false
			}
			groups, n = groups+1, 0
		case c >= '0' && c <= '9' && n < 3:
			n++
		default:
			return false
		}
	}
	return groups == 3 && n > 0
}

func isIPByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '.' || c == ':'
}
