package logql

import (
	"net/netip"
	"regexp"
	"strings"
)

// lineFilter parses a line filter: its operator and one or more values
// joined by "or".
func (p *parser) lineFilter() (*LineFilter, error) {
	lf := &LineFilter{Op: filterOps[p.next().kind]}
	for {
		v, err := p.filterValue(lf.Op)
		if err != nil {
			return nil, err
		}
		lf.Values = append(lf.Values, v)
		// "or" continues the chain only when a value follows it.
		if !isWord(p.peek(), "or") {
			return lf, nil
		}
		if nt := p.peekAt(1); nt.kind != tString && !(isWord(nt, "ip") && p.peekAt(2).kind == tLParen) {
			return lf, nil
		}
		p.next()
	}
}

var filterOps = map[tokKind]FilterOp{
	tPipeEq: FilterContains, tNeq: FilterNotContains,
	tPipeRe: FilterRegexp, tNre: FilterNotRegexp,
	tPipePat: FilterPattern, tNpa: FilterNotPattern,
}

// filterValue parses one operand of a line filter of operator op and
// compiles it.
func (p *parser) filterValue(op FilterOp) (FilterValue, error) {
	t := p.peek()
	if isWord(t, "ip") && p.peekAt(1).kind == tLParen {
		if op != FilterContains && op != FilterNotContains {
			return FilterValue{}, p.errAt(t.pos, "ip line filter only supports |= and != operations")
		}
		v, err := p.ipArg()
		return FilterValue{Value: v, IP: true}, err
	}
	s, err := p.expect(tString, "STRING")
	if err != nil {
		return FilterValue{}, err
	}
	fv := FilterValue{Value: s.str}
	switch op {
	case FilterRegexp, FilterNotRegexp:
		// Unanchored, and "." matches newlines too: Loki documents
		// line filters so, unlike label matchers. A leading (?s) sets a
		// flag and leaves the parser as it was, so the regexp compiles
		// with it exactly when it compiles alone; alone is compiled only
		// for the message of one that does not (once per regexp: a
		// rules file of 2,000 compiled each twice).
		re, err := regexp.Compile("(?s)" + s.str)
		if err != nil {
			if _, err2 := regexp.Compile(s.str); err2 != nil {
				err = err2
			}
			return FilterValue{}, p.errAt(s.pos, "invalid regexp %q: %v", s.str, err)
		}
		fv.Re = re
	case FilterPattern, FilterNotPattern:
		pat, err := compilePattern(s.str, false)
		if err != nil {
			return FilterValue{}, p.errAt(s.pos, "invalid pattern %q: %v", s.str, err)
		}
		fv.Pattern = pat
	}
	return fv, nil
}

// ipArg parses ip("...") and checks its argument: an address, a range
// a-b or a CIDR prefix.
func (p *parser) ipArg() (string, error) {
	p.next() // ip
	if _, err := p.expect(tLParen, "("); err != nil {
		return "", err
	}
	s, err := p.expect(tString, "STRING")
	if err != nil {
		return "", err
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return "", err
	}
	if !validIPFilter(s.str) {
		return "", p.errAt(s.pos, "invalid ip filter %q: want an address, a range or a CIDR", s.str)
	}
	return s.str, nil
}

func validIPFilter(s string) bool {
	if strings.Contains(s, "/") {
		_, err := netip.ParsePrefix(s)
		return err == nil
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := netip.ParseAddr(strings.TrimSpace(lo))
		b, err2 := netip.ParseAddr(strings.TrimSpace(hi))
		return err1 == nil && err2 == nil && a.Is4() == b.Is4() && a.Compare(b) <= 0
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

// extractions parses the optional parameters of json and logfmt:
// name="expr" or a bare name, comma-separated.
func (p *parser) extractions() ([]LabelExtraction, error) {
	if p.peek().kind != tIdent {
		return nil, nil
	}
	var out []LabelExtraction
	for {
		name, err := p.expect(tIdent, "IDENTIFIER")
		if err != nil {
			return nil, err
		}
		e := LabelExtraction{Name: name.text, Expr: name.text}
		if p.peek().kind == tEq {
			p.next()
			s, err := p.expect(tString, "STRING")
			if err != nil {
				return nil, err
			}
			e.Expr = s.str
		}
		out = append(out, e)
		if p.peek().kind != tComma {
			return out, nil
		}
		p.next()
	}
}

// logfmt parses `logfmt [--strict] [--keep-empty] [params]`.
func (p *parser) logfmt() (Stage, error) {
	p.next()
	lp := &LogfmtParser{}
	for p.peek().kind == tFlag {
		f := p.next()
		switch f.text {
		case "--strict":
			lp.Strict = true
		case "--keep-empty":
			lp.KeepEmpty = true
		default:
			return nil, p.errAt(f.pos, "invalid logfmt flag %s", f.text)
		}
	}
	var err error
	lp.Params, err = p.extractions()
	return lp, err
}

// regexpParser parses `regexp "re"`; the regexp needs a named group.
func (p *parser) regexpParser() (Stage, error) {
	p.next()
	s, err := p.expect(tString, "STRING")
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(s.str)
	if err != nil {
		return nil, p.errAt(s.pos, "invalid regexp %q: %v", s.str, err)
	}
	seen := map[string]bool{}
	for _, n := range re.SubexpNames() {
		if n == "" {
			continue
		}
		if !isLabelName(n) {
			return nil, p.errAt(s.pos, "invalid extracted label name '%s'", n)
		}
		if seen[n] {
			return nil, p.errAt(s.pos, "duplicate extracted label name '%s'", n)
		}
		seen[n] = true
	}
	if len(seen) == 0 {
		return nil, p.errAt(s.pos, "at least one named capture must be supplied")
	}
	return &RegexpParser{Re: re}, nil
}

// patternParser parses `pattern "<a> <_>"`.
func (p *parser) patternParser() (Stage, error) {
	p.next()
	s, err := p.expect(tString, "STRING")
	if err != nil {
		return nil, err
	}
	pat, err := compilePattern(s.str, true)
	if err != nil {
		return nil, p.errAt(s.pos, "invalid pattern %q: %v", s.str, err)
	}
	return &PatternParser{Pattern: pat}, nil
}

// labelFormat parses `label_format dst=src, dst="template", ...`.
func (p *parser) labelFormat() (Stage, error) {
	p.next()
	lf := &LabelFormat{}
	seen := map[string]bool{}
	for {
		dst, err := p.expect(tIdent, "IDENTIFIER")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tEq, "="); err != nil {
			return nil, err
		}
		item := LabelFormatItem{Dst: dst.text}
		switch v := p.peek(); v.kind {
		case tString:
			item.Template = v.str
		case tIdent:
			item.Src = v.text
		default:
			return nil, p.unexpected(v, "IDENTIFIER", "STRING")
		}
		p.next()
		if seen[dst.text] {
			return nil, p.errAt(dst.pos, "multiple label name '%s' not allowed in a single format operation", dst.text)
		}
		seen[dst.text] = true
		lf.Items = append(lf.Items, item)
		if p.peek().kind != tComma {
			return lf, nil
		}
		p.next()
	}
}

// labelItems parses the operands of drop and keep: names or matchers,
// comma-separated.
func (p *parser) labelItems() ([]LabelItem, error) {
	var items []LabelItem
	for {
		name, err := p.expect(tIdent, "IDENTIFIER")
		if err != nil {
			return nil, err
		}
		item := LabelItem{Name: name.text}
		if mt, ok := matchTypeOf(p.peek().kind); ok {
			p.next()
			if item.Matcher, err = p.matcherValue(name.text, mt); err != nil {
				return nil, err
			}
		}
		items = append(items, item)
		if p.peek().kind != tComma {
			return items, nil
		}
		p.next()
	}
}

// labelFilter parses a label filter expression: predicates joined by
// "or", "and", "," or nothing, "and" binding tighter than "or".
func (p *parser) labelFilter() (LabelFilter, error) {
	l, err := p.labelFilterAnd()
	if err != nil {
		return nil, err
	}
	for isWord(p.peek(), "or") {
		p.next()
		r, err := p.labelFilterAnd()
		if err != nil {
			return nil, err
		}
		l = &LabelFilterBinary{Left: l, Right: r}
	}
	return l, nil
}

func (p *parser) labelFilterAnd() (LabelFilter, error) {
	l, err := p.labelFilterPrimary()
	if err != nil {
		return nil, err
	}
	for {
		switch t := p.peek(); {
		case isWord(t, "and") || t.kind == tComma:
			p.next()
		case t.kind == tLParen || t.kind == tIdent && isFilterName(t.text):
			// Two predicates in a row are joined by "and".
		default:
			return l, nil
		}
		r, err := p.labelFilterPrimary()
		if err != nil {
			return nil, err
		}
		l = &LabelFilterBinary{And: true, Left: l, Right: r}
	}
}

// isFilterName reports whether a label filter may name label s.
func isFilterName(s string) bool { return s != "and" && s != "or" && !stageWords[s] }

func (p *parser) labelFilterPrimary() (LabelFilter, error) {
	t := p.peek()
	if t.kind == tLParen {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		p.next()
		f, err := p.labelFilter()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return f, nil
	}
	if t.kind != tIdent || !isFilterName(t.text) {
		return nil, p.unexpected(t)
	}
	p.next()
	name := t.text
	op := p.peek()
	switch op.kind {
	case tRe, tNre:
		p.next()
		mt, _ := matchTypeOf(op.kind)
		m, err := p.matcherValue(name, mt)
		if err != nil {
			return nil, err
		}
		return &LabelFilterString{Matcher: m}, nil
	case tEq, tNeq:
		p.next()
		v := p.peek()
		if v.kind == tString {
			mt, _ := matchTypeOf(op.kind)
			m, err := p.matcherValue(name, mt)
			if err != nil {
				return nil, err
			}
			return &LabelFilterString{Matcher: m}, nil
		}
		if isWord(v, "ip") && p.peekAt(1).kind == tLParen {
			s, err := p.ipArg()
			if err != nil {
				return nil, err
			}
			return &LabelFilterIP{Name: name, Negate: op.kind == tNeq, Value: s}, nil
		}
		if op.kind == tEq {
			return p.cmpValue(name, CmpEq)
		}
		return p.cmpValue(name, CmpNe)
	case tCmpEq, tGt, tGte, tLt, tLte:
		p.next()
		return p.cmpValue(name, cmpOps[op.kind])
	}
	return nil, p.unexpected(op)
}

var cmpOps = map[tokKind]CmpOp{tCmpEq: CmpEq, tGt: CmpGt, tGte: CmpGe, tLt: CmpLt, tLte: CmpLe}

// cmpValue parses the number, duration or byte size a label is
// compared with.
func (p *parser) cmpValue(name string, op CmpOp) (LabelFilter, error) {
	switch t := p.peek(); t.kind {
	case tDuration:
		p.next()
		return &LabelFilterDuration{Name: name, Op: op, Value: t.dur}, nil
	case tBytes:
		p.next()
		return &LabelFilterBytes{Name: name, Op: op, Value: t.bytes}, nil
	case tNumber, tAdd, tSub:
		v, err := p.signedNumber()
		if err != nil {
			return nil, err
		}
		return &LabelFilterNumber{Name: name, Op: op, Value: v.num}, nil
	default:
		return nil, p.unexpected(t)
	}
}

// signedNumber parses a number with an optional sign; the token it
// returns holds the signed value and the text as written.
func (p *parser) signedNumber() (token, error) {
	t := p.peek()
	if t.kind == tAdd || t.kind == tSub {
		p.next()
		n, err := p.expect(tNumber, "NUMBER")
		if err != nil {
			return n, err
		}
		if t.kind == tSub {
			n.num = -n.num
		}
		n.text = t.text + n.text
		n.pos = t.pos
		return n, nil
	}
	return p.expect(tNumber, "NUMBER")
}
