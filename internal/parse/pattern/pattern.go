package pattern

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Options change how a pattern matches.
type Options struct {
	// ExactSpaces matches the spaces of literals byte for byte, as Loki's
	// pattern stage does, instead of letting a run of spaces match one or
	// more spaces.
	ExactSpaces bool
	// TimeLayout is the timestamp format a time capture looks for first
	// (see the package doc); timestamp.Auto, the zero value, is any that
	// timestamp.ParsePrefix detects.
	TimeLayout timestamp.Layout
}

// Parser parses lines with a compiled pattern. It implements lines.Parser.
//
// Concurrency: immutable after Compile; safe for concurrent use.
type Parser struct {
	expr  string
	lead  literal // must start the line; valid when hasLead
	steps []step  // one per capture, in order
	names [][]byte
	// hasLead is false when the pattern starts with a capture.
	hasLead bool
	// hasTime is true when a step has isTime.
	hasTime bool
	layout  timestamp.Layout // what a time capture looks for first
}

// step is a capture and the literal that ends it.
type step struct {
	name   []byte  // nil for <_>
	lit    literal // valid unless last
	last   bool    // no literal follows: the capture takes the rest of the line
	isTime bool    // named as a time, with a literal after it that may occur in a timestamp
}

// timeNames are the captures that first take a whole timestamp.
var timeNames = []string{"time", "_time", "timestamp", "ts"}

// inline is how many captured spans a line keeps on the stack; a pattern
// with more named captures matches again for each further group of this
// many, which costs time but never an allocation.
const inline = 16

// Compile compiles a pattern expression with the default options.
func Compile(expr string) (*Parser, error) {
	return CompileOptions(expr, Options{})
}

// MustCompile is like Compile but panics on an error; for patterns fixed
// in the program.
func MustCompile(expr string) *Parser {
	p, err := Compile(expr)
	if err != nil {
		panic(err)
	}
	return p
}

// token is a piece of an expression: a capture or a literal.
type token struct {
	capture bool
	text    string // the capture's name, or the literal's text
	off     int    // byte offset in the expression
}

// CompileOptions compiles a pattern expression.
func CompileOptions(expr string, o Options) (*Parser, error) {
	if expr == "" {
		return nil, errors.New("pattern: empty expression")
	}
	toks := tokenize(expr)
	p := &Parser{expr: expr, layout: o.TimeLayout}
	seen := make(map[string]bool)
	for i, t := range toks {
		if !t.capture {
			continue
		}
		if i > 0 && toks[i-1].capture {
			return nil, fmt.Errorf("pattern: adjacent captures <%s><%s> at byte %d: a literal must separate them", toks[i-1].text, t.text, t.off+1)
		}
		if t.text == "_" {
			continue
		}
		if seen[t.text] {
			return nil, fmt.Errorf("pattern: duplicate capture <%s> at byte %d", t.text, t.off+1)
		}
		seen[t.text] = true
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("pattern: no named capture in %q: at least one <name> is required", expr)
	}
	if !toks[0].capture {
		p.lead = newLiteral([]byte(toks[0].text), o.ExactSpaces)
		p.hasLead = true
		toks = toks[1:]
	}
	for i := 0; i < len(toks); i += 2 {
		// INVARIANT: toks alternates capture, literal from here on.
		st := step{isTime: isTimeName(toks[i].text)}
		if toks[i].text != "_" {
			st.name = []byte(toks[i].text)
			p.names = append(p.names, st.name)
		}
		if i+1 < len(toks) {
			st.lit = newLiteral([]byte(toks[i+1].text), o.ExactSpaces)
			// A literal that cannot occur inside a timestamp is found
			// right after it anyway: no need to read the timestamp.
			st.isTime = st.isTime && !notInTimestamp(toks[i+1].text[0])
		} else {
			st.last = true
			st.isTime = false
		}
		p.hasTime = p.hasTime || st.isTime
		p.steps = append(p.steps, st)
	}
	return p, nil
}

// notInTimestamp reports whether c occurs in no timestamp format that
// package timestamp reads. REQUIRES: that package's formats keep to
// letters, digits, spaces and the punctuation " ,.:+-/".
func notInTimestamp(c byte) bool {
	return strings.IndexByte(`"'()[]{}<>|;=`+"\t", c) >= 0
}

func isTimeName(name string) bool {
	for _, n := range timeNames {
		if n == name {
			return true
		}
	}
	return false
}

// tokenize splits expr into captures and the literals between them.
func tokenize(expr string) []token {
	var toks []token
	lit := 0
	for i := 0; i < len(expr); {
		n := captureLen(expr[i:])
		if n == 0 {
			i++
			continue
		}
		if lit < i {
			toks = append(toks, token{text: expr[lit:i], off: lit})
		}
		toks = append(toks, token{capture: true, text: expr[i+1 : i+n-1], off: i})
		i += n
		lit = i
	}
	if lit < len(expr) {
		toks = append(toks, token{text: expr[lit:], off: lit})
	}
	return toks
}

// captureLen returns the length of the capture at the start of s, such as
// "<name>", or 0 when s does not start with one.
func captureLen(s string) int {
	if len(s) < 3 || s[0] != '<' || !isNameStart(s[1]) {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == '>':
			return i + 1
		case !isNameStart(c) && (c < '0' || c > '9'):
			return 0
		}
	}
	return 0
}

func isNameStart(c byte) bool {
	return c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z'
}

// String returns the expression the parser was compiled from.
func (p *Parser) String() string { return p.expr }

// Names returns the names of the captures, in pattern order.
func (p *Parser) Names() []string {
	ns := make([]string, len(p.names))
	for i, n := range p.names {
		ns[i] = string(n)
	}
	return ns
}

// ParseLine parses one line into a record: one String field per named
// capture when the pattern matches, else the whole line as the message.
func (p *Parser) ParseLine(bl *record.Builder, line record.Span) {
	b := bl.Batch()
	data := b.Data[line.Off:line.End():line.End()]
	var buf [inline]record.Span
	n := min(len(p.names), inline)
	timeRule := p.hasTime
	if !p.match(data, b.ReceiveTime, timeRule, buf[:n], 0) {
		if !timeRule || !p.match(data, b.ReceiveTime, false, buf[:n], 0) {
			bl.Unmatched(line)
			return
		}
		timeRule = false
	}
	valid := utf8.Valid(data)
	bl.Begin(line)
	var lineFlags record.Flags
	if !valid {
		lineFlags = record.BadUTF8
	}
	bl.DefaultMsg(line, lineFlags)
	for k := 0; ; {
		if !p.add(bl, b, line, valid, buf[:n], p.names[k:k+n]) {
			return
		}
		k += n
		if k == len(p.names) {
			break
		}
		n = min(len(p.names)-k, inline)
		p.match(data, b.ReceiveTime, timeRule, buf[:n], k)
	}
	bl.End()
}

// add adds the captured spans (relative to line) as fields named names.
// It returns false when it failed the line.
func (p *Parser) add(bl *record.Builder, b *record.Batch, line record.Span, valid bool, spans []record.Span, names [][]byte) bool {
	for i, sp := range spans {
		id, ok := bl.Name(names[i])
		if !ok {
			bl.Fail(record.ErrTooManyNames, int(sp.Off)+1, fmt.Sprintf("pattern: field name table is full at capture <%s>", names[i]))
			return false
		}
		sp.Off += line.Off
		var flags record.Flags
		if !valid && !utf8.Valid(b.Bytes(sp)) {
			flags = record.BadUTF8
			b.BadUTF8++
		}
		bl.Add(record.Field{Name: id, Kind: record.String, Flags: flags, Raw: sp})
	}
	return true
}

// Match reports whether the pattern matches line.
func (p *Parser) Match(line []byte) bool {
	return p.match(line, 0, p.hasTime, nil, 0) || p.hasTime && p.match(line, 0, false, nil, 0)
}

// match matches the pattern against b and stores into out the spans
// (relative to b) of the named captures numbered skip to skip+len(out)-1.
// With timeRule, time captures first try to take a whole timestamp; when
// that fails the line, the caller tries again without. ref is the
// reference time for timestamps that lack a year; only their length
// matters here.
func (p *Parser) match(b []byte, ref int64, timeRule bool, out []record.Span, skip int) bool {
	pos := 0
	if p.hasLead {
		end, ok := p.lead.matchAt(b, 0)
		if !ok {
			return false
		}
		pos = end
	}
	k := 0
	for i := range p.steps {
		st := &p.steps[i]
		start, next := len(b), len(b)
		if !st.last {
			start = -1
			if timeRule && st.isTime {
				if _, n, ok := timestamp.ParseLayout(b[pos:], p.layout, ref); ok {
					if end, ok := st.lit.matchAt(b, pos+n); ok {
						start, next = pos+n, end
					}
				}
			}
			if start < 0 {
				start, next = st.lit.find(b, pos)
				if start < 0 {
					return false
				}
			}
		}
		if st.name != nil {
			if j := k - skip; j >= 0 && j < len(out) {
				out[j] = record.Span{Off: uint32(pos), Len: uint32(start - pos)}
			}
			k++
		}
		pos = next
	}
	return true
}
