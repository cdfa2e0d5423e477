package syslog

import (
	"strconv"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/record"
)

// Parser parses syslog messages. The zero value is ready to use.
//
// Concurrency: a Parser is used by one goroutine (it keeps scratch
// buffers); give each Builder its own.
type Parser struct {
	name []byte // scratch: an "sd.ID.PARAM" field name
	bad  int    // values with invalid UTF-8 in the current line
}

// Field names, as byte slices so that interning them never converts.
var (
	namePriority = []byte("priority")
	nameFacility = []byte("facility")
	nameSeverity = []byte("severity")
	nameLevel    = []byte("level")
	nameHostname = []byte("hostname")
	nameAppName  = []byte("app_name")
	nameProcID   = []byte("proc_id")
	nameMsgID    = []byte("msg_id")
)

var levels = [8]string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}

// levelConsts are the level keywords as constant values for Const fields.
var levelConsts = func() (c [8]record.Span) {
	for i, l := range levels {
		c[i] = record.Constant(l)
	}
	return c
}()

// Level returns the keyword of a syslog severity (0-7): emerg, alert,
// crit, err, warning, notice, info or debug; "" for any other value.
func Level(severity int) string {
	if severity < 0 || severity >= len(levels) {
		return ""
	}
	return levels[severity]
}

// ParseLine parses the syslog message in line, which may be any
// contiguous message bytes of the batch (newlines included), into one
// record, or fails the line.
func (p *Parser) ParseLine(bl *record.Builder, line record.Span) {
	b := bl.Batch()
	s := b.Bytes(line)
	bl.Begin(line)
	p.bad = 0
	i := 0
	hasPRI := len(s) > 0 && s[0] == '<'
	if hasPRI {
		var ok bool
		if i, ok = p.pri(bl, s, line.Off); !ok {
			return
		}
		if v, n := version(s[i:]); n > 0 {
			if v != 1 {
				bl.Fail(record.ErrSyntax, i+1, "syslog: unsupported VERSION "+strconv.Quote(string(s[i:i+n]))+", expected 1")
				return
			}
			if i+n == len(s) {
				bl.Fail(record.ErrSyntax, i+n+1, "syslog: expected SP after VERSION")
				return
			}
			if !p.rfc5424(bl, s, line.Off, i+n+1) {
				return
			}
			p.end(bl)
			return
		}
	}
	if !p.rfc3164(bl, s, line.Off, i, hasPRI) {
		return
	}
	p.end(bl)
}

func (p *Parser) end(bl *record.Builder) {
	bl.Batch().BadUTF8 += p.bad
	bl.End()
}

// pri reads "<PRI>" at the start of s and adds its fields. It returns the
// index after '>'. REQUIRES: s[0] == '<'.
func (p *Parser) pri(bl *record.Builder, s []byte, off uint32) (int, bool) {
	v, j := 0, 1
	for j < len(s) && j < 4 && isDigit(s[j]) {
		v = v*10 + int(s[j]-'0')
		j++
	}
	switch {
	case j == 1:
		bl.Fail(record.ErrSyntax, 2, "syslog: expected PRI digits after '<'")
		return 0, false
	case j == len(s) || s[j] != '>':
		bl.Fail(record.ErrSyntax, j+1, "syslog: expected '>' after 1-3 PRI digits")
		return 0, false
	case v > 191:
		bl.Fail(record.ErrSyntax, 2, "syslog: PRI "+strconv.Itoa(v)+" out of range, expected 0-191")
		return 0, false
	}
	digits := record.Span{Off: off + 1, Len: uint32(j - 1)}
	derived := record.Span{Off: off + 1}
	if !p.add(bl, namePriority, record.Field{Kind: record.Int, Raw: digits, Num: uint64(v)}, 2) ||
		!p.add(bl, nameFacility, record.Field{Kind: record.Int, Raw: derived, Num: uint64(v >> 3)}, 2) ||
		!p.add(bl, nameSeverity, record.Field{Kind: record.Int, Raw: derived, Num: uint64(v & 7)}, 2) ||
		!p.add(bl, nameLevel, record.Field{Kind: record.String, Flags: record.Const, Raw: levelConsts[v&7]}, 2) {
		return 0, false
	}
	return j + 1, true
}

// version reads an RFC 5424 VERSION (1-3 digits) followed by SP or the
// end of s, and returns its value and length; n is 0 when s does not
// start with one.
func version(s []byte) (v, n int) {
	for n < len(s) && n < 4 && isDigit(s[n]) {
		v = v*10 + int(s[n]-'0')
		n++
	}
	if n == 0 || n > 3 || n < len(s) && s[n] != ' ' {
		return 0, 0
	}
	return v, n
}

// add interns name and appends f under it; col is where the value starts,
// for the error when the name table is full.
func (p *Parser) add(bl *record.Builder, name []byte, f record.Field, col int) bool {
	id, ok := bl.Name(name)
	if !ok {
		bl.Fail(record.ErrTooManyNames, col, "syslog: too many distinct field names")
		return false
	}
	f.Name = id
	bl.Add(f)
	return true
}

// addString appends s[start:end] as a String field.
func (p *Parser) addString(bl *record.Builder, name, s []byte, off uint32, start, end int, flags record.Flags) bool {
	return p.add(bl, name, record.Field{Kind: record.String, Flags: flags | p.utf8(s[start:end]), Raw: span(off, start, end)}, start+1)
}

// utf8 returns BadUTF8 for a value holding invalid UTF-8, and counts it.
func (p *Parser) utf8(v []byte) record.Flags {
	if utf8.Valid(v) {
		return 0
	}
	p.bad++
	return record.BadUTF8
}

// setMsg makes s[start:] the record's message.
func (p *Parser) setMsg(bl *record.Builder, s []byte, off uint32, start int) {
	bl.SetMsg(span(off, start, len(s)), p.utf8(s[start:]))
}

func span(off uint32, start, end int) record.Span {
	return record.Span{Off: off + uint32(start), Len: uint32(end - start)}
}

func isDigit(c byte) bool { return c-'0' <= 9 }

// wordEnd returns the index of the first SP at or after i, or len(s).
func wordEnd(s []byte, i int) int {
	for i < len(s) && s[i] != ' ' {
		i++
	}
	return i
}

func skipSP(s []byte, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// ref returns the reference time for timestamps without a year.
func ref(bl *record.Builder) int64 { return bl.Batch().ReceiveTime }
