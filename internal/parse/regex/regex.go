package regex

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/record"
)

// Parser parses lines with a compiled regular expression. It implements
// lines.Parser.
//
// Concurrency: immutable after Compile; safe for concurrent use.
type Parser struct {
	re *regexp.Regexp
	// groups lists the named groups: their names and their index among
	// the expression's groups.
	groups []group
}

type group struct {
	name  []byte
	index int
}

// Compile compiles an RE2 expression with at least one named group.
func Compile(expr string) (*Parser, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("regex: %w", err)
	}
	p := &Parser{re: re}
	seen := make(map[string]bool)
	for i, name := range re.SubexpNames() {
		if name == "" {
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("regex: duplicate group name %q in %q", name, expr)
		}
		seen[name] = true
		p.groups = append(p.groups, group{name: []byte(name), index: i})
	}
	if len(p.groups) == 0 {
		return nil, fmt.Errorf("regex: no named group in %q: at least one (?P<name>...) is required", expr)
	}
	return p, nil
}

// MustCompile is like Compile but panics on an error; for expressions
// fixed in the program.
func MustCompile(expr string) *Parser {
	p, err := Compile(expr)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the expression the parser was compiled from.
func (p *Parser) String() string { return p.re.String() }

// Names returns the names of the groups, in expression order.
func (p *Parser) Names() []string {
	ns := make([]string, len(p.groups))
	for i, g := range p.groups {
		ns[i] = string(g.name)
	}
	return ns
}

// ParseLine parses one line into a record: a String field per named group
// that took part in the match, else the whole line as the message.
func (p *Parser) ParseLine(bl *record.Builder, line record.Span) {
	b := bl.Batch()
	data := b.Data[line.Off:line.End():line.End()]
	loc := p.re.FindSubmatchIndex(data) // the one allocation per line
	valid := utf8.Valid(data)
	if loc == nil {
		bl.Unmatched(line)
		return
	}
	bl.Begin(line)
	var lineFlags record.Flags
	if !valid {
		lineFlags = record.BadUTF8
	}
	bl.DefaultMsg(line, lineFlags)
	for _, g := range p.groups {
		start, end := loc[2*g.index], loc[2*g.index+1]
		if start < 0 {
			continue
		}
		id, ok := bl.Name(g.name)
		if !ok {
			bl.Fail(record.ErrTooManyNames, start+1, fmt.Sprintf("regex: field name table is full at group %q", g.name))
			return
		}
		var flags record.Flags
		if !valid && !utf8.Valid(data[start:end]) {
			flags = record.BadUTF8
			b.BadUTF8++
		}
		bl.Add(record.Field{
			Name:  id,
			Kind:  record.String,
			Flags: flags,
			Raw:   record.Span{Off: line.Off + uint32(start), Len: uint32(end - start)},
		})
	}
	bl.End()
}
