package logql

import (
	"fmt"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of parentheses and sub-expressions, so
// that a hostile query cannot exhaust the stack.
const maxDepth = 256

// Parse parses a LogQL query: a log query (a *LogExpr) or a metric query
// (a SampleExpr). Errors are *ParseError.
func Parse(src string) (Expr, error) {
	p := newParser(src)
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return e, nil
}

// ParseLogExpr parses a log query.
func ParseLogExpr(src string) (*LogExpr, error) {
	e, err := Parse(src)
	if err != nil {
		return nil, err
	}
	le, ok := e.(*LogExpr)
	if !ok {
		return nil, &ParseError{Line: 1, Col: 1, Msg: "only log selector is supported"}
	}
	return le, nil
}

// ParseSampleExpr parses a metric query.
func ParseSampleExpr(src string) (SampleExpr, error) {
	e, err := Parse(src)
	if err != nil {
		return nil, err
	}
	se, ok := e.(SampleExpr)
	if !ok {
		return nil, &ParseError{Line: 1, Col: 1, Msg: "only sample expression supported"}
	}
	return se, nil
}

// ParseSelector parses a stream selector such as {app="api", env=~"p.*"}.
// As in Loki, at least one matcher must not match the empty string.
func ParseSelector(src string) (Selector, error) {
	p := newParser(src)
	sel, err := p.selector()
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return sel, nil
}

// parser is a recursive descent parser over the tokens of one query,
// lexed as it goes: it looks at most three tokens ahead.
type parser struct {
	src   string
	lx    lexer
	ahead []token // lexed, not yet consumed
	depth int
}

func newParser(src string) *parser {
	return &parser{src: src, lx: lexer{src: src}, ahead: make([]token, 0, 4)}
}

// peek returns the next token. INVARIANT: the last token is a tEOF or a
// tErr, and the parser never moves past it.
func (p *parser) peek() token { return p.peekAt(0) }

// peekAt returns the token n places after the next one.
func (p *parser) peekAt(n int) token {
	for len(p.ahead) <= n {
		if k := len(p.ahead); k > 0 && (p.ahead[k-1].kind == tEOF || p.ahead[k-1].kind == tErr) {
			return p.ahead[k-1]
		}
		p.ahead = append(p.ahead, p.lx.next())
	}
	return p.ahead[n]
}

func (p *parser) next() token {
	t := p.peek()
	if t.kind != tEOF && t.kind != tErr {
		copy(p.ahead, p.ahead[1:])
		p.ahead = p.ahead[:len(p.ahead)-1]
	}
	return t
}

// isWord reports whether t is the identifier w.
func isWord(t token, w string) bool { return t.kind == tIdent && t.text == w }

// expect consumes a token of kind k or fails naming what was expected.
func (p *parser) expect(k tokKind, want string) (token, error) {
	t := p.peek()
	if t.kind != k {
		return t, p.unexpected(t, want)
	}
	return p.next(), nil
}

// end fails unless every token was consumed.
func (p *parser) end() error {
	if t := p.peek(); t.kind != tEOF {
		return p.unexpected(t)
	}
	return nil
}

// unexpected is the error for token t: its lexical error if it is one,
// else a syntax error worded as Loki's.
func (p *parser) unexpected(t token, expecting ...string) error {
	if t.kind == tErr {
		return p.errAt(t.pos, "%s", t.text)
	}
	msg := "syntax error: unexpected " + t.desc()
	if len(expecting) > 0 {
		msg += ", expecting " + strings.Join(expecting, " or ")
	}
	return p.errAt(t.pos, "%s", msg)
}

// errAt is an error at byte offset pos of the source.
func (p *parser) errAt(pos int, format string, args ...any) *ParseError {
	line, col := 1, 1
	for _, c := range p.src[:min(pos, len(p.src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &ParseError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// enter counts one level of nesting; leave must follow.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(p.peek().pos, "syntax error: expression nested more than %d deep", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

const emptyCompatibleMsg = `queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~".*" does not meet this requirement, but app=~".+" will`

// selector parses {name op "value", ...}.
func (p *parser) selector() (Selector, error) {
	open := p.peek()
	if open.kind != tLBrace {
		return nil, p.unexpected(open)
	}
	p.next()
	var sel Selector
	if p.peek().kind == tRBrace {
		p.next()
	} else {
		for {
			m, err := p.matcher()
			if err != nil {
				return nil, err
			}
			sel = append(sel, m)
			t := p.peek()
			if t.kind == tRBrace {
				p.next()
				break
			}
			if t.kind != tComma {
				return nil, p.unexpected(t, "}", ",")
			}
			p.next()
		}
	}
	for _, m := range sel {
		if !m.Matches("") {
			return sel, nil
		}
	}
	return nil, p.errAt(open.pos, "%s", emptyCompatibleMsg)
}

// matcher parses name op "value" with any of = != =~ !~.
func (p *parser) matcher() (*Matcher, error) {
	name, err := p.expect(tIdent, "IDENTIFIER")
	if err != nil {
		return nil, err
	}
	op := p.peek()
	mt, ok := matchTypeOf(op.kind)
	if !ok {
		return nil, p.unexpected(op, "=", "=~", "!~", "!=")
	}
	p.next()
	return p.matcherValue(name.text, mt)
}

func matchTypeOf(k tokKind) (MatchType, bool) {
	switch k {
	case tEq:
		return MatchEqual, true
	case tNeq:
		return MatchNotEqual, true
	case tRe:
		return MatchRegexp, true
	case tNre:
		return MatchNotRegexp, true
	}
	return 0, false
}

// matcherValue parses the quoted value of a matcher whose name and
// operator were read.
func (p *parser) matcherValue(name string, mt MatchType) (*Matcher, error) {
	v, err := p.expect(tString, "STRING")
	if err != nil {
		return nil, err
	}
	m, err := newMatcher(name, mt, v.str)
	if err != nil {
		return nil, p.errAt(v.pos, "%v", err)
	}
	return m, nil
}

// logExpr parses a selector and its pipeline; unwrap is not allowed.
func (p *parser) logExpr() (*LogExpr, error) {
	sel, err := p.selector()
	if err != nil {
		return nil, err
	}
	e := &LogExpr{Selector: sel}
	e.Pipeline, _, err = p.pipeline(nil, false)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// pipeline parses stages for as long as the next token starts one,
// appending them to stages. With allowUnwrap (in a range aggregation)
// it ends at `| unwrap`, which it parses with the label filters after
// it.
func (p *parser) pipeline(stages []Stage, allowUnwrap bool) ([]Stage, *Unwrap, error) {
	for {
		t := p.peek()
		switch t.kind {
		case tPipeEq, tNeq, tPipeRe, tNre, tPipePat, tNpa:
			lf, err := p.lineFilter()
			if err != nil {
				return nil, nil, err
			}
			stages = append(stages, lf)
		case tPipe:
			p.next()
			if kw := p.peek(); isWord(kw, "unwrap") {
				if !allowUnwrap {
					return nil, nil, p.unexpected(kw)
				}
				p.next()
				u, err := p.unwrap()
				return stages, u, err
			}
			s, err := p.stage()
			if err != nil {
				return nil, nil, err
			}
			stages = append(stages, s)
		default:
			return stages, nil, nil
		}
	}
}

// stage parses what follows a `|` of a pipeline.
func (p *parser) stage() (Stage, error) {
	t := p.peek()
	if t.kind == tIdent {
		switch t.text {
		case "json":
			p.next()
			params, err := p.extractions()
			return &JSONParser{Params: params}, err
		case "logfmt":
			return p.logfmt()
		case "regexp":
			return p.regexpParser()
		case "pattern":
			return p.patternParser()
		case "unpack":
			p.next()
			return &Unpack{}, nil
		case "line_format":
			p.next()
			s, err := p.expect(tString, "STRING")
			return &LineFormat{Template: s.str}, err
		case "label_format":
			return p.labelFormat()
		case "drop":
			p.next()
			items, err := p.labelItems()
			return &Drop{Items: items}, err
		case "keep":
			p.next()
			items, err := p.labelItems()
			return &Keep{Items: items}, err
		case "decolorize":
			p.next()
			return &Decolorize{}, nil
		}
	}
	if t.kind == tIdent || t.kind == tLParen {
		f, err := p.labelFilter()
		if err != nil {
			return nil, err
		}
		return &LabelFilterStage{Filter: f}, nil
	}
	return nil, p.unexpected(t)
}

// stageWords are the words that start a stage after `|`; a label filter
// cannot name such a label, as in Loki where they are keywords.
var stageWords = map[string]bool{
	"json": true, "logfmt": true, "regexp": true, "pattern": true, "unpack": true,
	"line_format": true, "label_format": true, "drop": true, "keep": true,
	"decolorize": true, "unwrap": true,
}

// quote prints s as a double-quoted string the lexer reads back.
func quote(s string) string { return strconv.Quote(s) }
