package syslog

import (
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// The RFC 5424 header fields after VERSION, in order.
var headerNames = [...]struct {
	field     []byte // nil for TIMESTAMP
	want, sep string // the errors for a missing value and a missing SP
}{
	{nil, "syslog: expected TIMESTAMP or '-'", "syslog: expected SP after TIMESTAMP"},
	{nameHostname, "syslog: expected HOSTNAME or '-'", "syslog: expected SP after HOSTNAME"},
	{nameAppName, "syslog: expected APP-NAME or '-'", "syslog: expected SP after APP-NAME"},
	{nameProcID, "syslog: expected PROCID or '-'", "syslog: expected SP after PROCID"},
	{nameMsgID, "syslog: expected MSGID or '-'", "syslog: expected SP after MSGID"},
}

// rfc5424 parses the rest of an RFC 5424 message from i, just after
// "VERSION SP", adding its fields. It returns false if it failed the line.
func (p *Parser) rfc5424(bl *record.Builder, s []byte, off uint32, i int) bool {
	for k := range headerNames {
		h := &headerNames[k]
		end := wordEnd(s, i)
		if end == i {
			bl.Fail(record.ErrSyntax, i+1, h.want)
			return false
		}
		if end-i != 1 || s[i] != '-' {
			if h.field == nil {
				ns, ok := rfc3339(s[i:end], ref(bl))
				if !ok {
					bl.Fail(record.ErrSyntax, i+1, "syslog: invalid TIMESTAMP, expected RFC 3339 or '-'")
					return false
				}
				bl.SetTime(ns)
			} else if !p.addString(bl, h.field, s, off, i, end, 0) {
				return false
			}
		}
		if end == len(s) {
			bl.Fail(record.ErrSyntax, end+1, h.sep)
			return false
		}
		i = end + 1
	}
	switch {
	case i == len(s):
		bl.Fail(record.ErrSyntax, i+1, "syslog: expected STRUCTURED-DATA")
		return false
	case s[i] == '-':
		i++
	case s[i] == '[':
		var ok bool
		if i, ok = p.structuredData(bl, s, off, i); !ok {
			return false
		}
	default:
		bl.Fail(record.ErrSyntax, i+1, "syslog: expected '[' or '-' for STRUCTURED-DATA")
		return false
	}
	switch {
	case i == len(s):
		p.setMsg(bl, s, off, i)
	case s[i] == ' ':
		i++
		if len(s)-i >= 3 && s[i] == 0xEF && s[i+1] == 0xBB && s[i+2] == 0xBF {
			i += 3
		}
		p.setMsg(bl, s, off, i)
	default:
		bl.Fail(record.ErrSyntax, i+1, "syslog: expected SP after STRUCTURED-DATA")
		return false
	}
	return true
}

// rfc3339 reads an RFC 5424 TIMESTAMP: RFC 3339 with a 'T'. Whatever else
// timestamp.Parse accepts of that shape (no zone meaning UTC, up to 9
// fraction digits) is taken too.
func rfc3339(b []byte, ref int64) (int64, bool) {
	if len(b) < 19 || b[4] != '-' || b[10] != 'T' && b[10] != 't' {
		return 0, false
	}
	return timestamp.Parse(b, ref)
}

// structuredData parses one or more SD-ELEMENTs starting at s[i] == '['
// and returns the index after the last one.
func (p *Parser) structuredData(bl *record.Builder, s []byte, off uint32, i int) (int, bool) {
	for i < len(s) && s[i] == '[' {
		i++
		idStart := i
		i = sdName(s, i)
		if i == idStart {
			bl.Fail(record.ErrSyntax, i+1, "syslog: expected SD-ID after '['")
			return 0, false
		}
		idEnd := i
		params := 0
		for {
			if i == len(s) {
				bl.Fail(record.ErrSyntax, i+1, "syslog: expected ']' to close SD-ELEMENT")
				return 0, false
			}
			if s[i] == ']' {
				i++
				break
			}
			if s[i] != ' ' {
				bl.Fail(record.ErrSyntax, i+1, "syslog: expected SP or ']' in SD-ELEMENT")
				return 0, false
			}
			if i = skipSP(s, i); i < len(s) && s[i] == ']' {
				continue // trailing spaces before ']'
			}
			nameStart := i
			i = sdName(s, i)
			if i == nameStart {
				bl.Fail(record.ErrSyntax, i+1, "syslog: expected PARAM-NAME in SD-ELEMENT")
				return 0, false
			}
			nameEnd := i
			if i == len(s) || s[i] != '=' {
				bl.Fail(record.ErrSyntax, i+1, "syslog: expected '=' after PARAM-NAME")
				return 0, false
			}
			if i++; i == len(s) || s[i] != '"' {
				bl.Fail(record.ErrSyntax, i+1, "syslog: expected '\"' to open PARAM-VALUE")
				return 0, false
			}
			i++
			valStart := i
			var flags record.Flags
			i, flags = paramValue(s, i)
			if i == len(s) {
				bl.Fail(record.ErrSyntax, i+1, "syslog: expected '\"' to close PARAM-VALUE")
				return 0, false
			}
			p.name = append(append(append(append(p.name[:0], "sd."...), s[idStart:idEnd]...), '.'), s[nameStart:nameEnd]...)
			if !p.addString(bl, p.name, s, off, valStart, i, flags) {
				return 0, false
			}
			i++ // the closing quote
			params++
		}
		if params == 0 {
			p.name = append(append(p.name[:0], "sd."...), s[idStart:idEnd]...)
			if !p.add(bl, p.name, record.Field{Kind: record.Null, Raw: span(off, idStart, idEnd)}, idStart+1) {
				return 0, false
			}
		}
	}
	return i, true
}

// sdName returns the end of the SD-NAME (SD-ID or PARAM-NAME) at s[i:]:
// printable US-ASCII except '=', SP, ']' and '"'.
func sdName(s []byte, i int) int {
	for i < len(s) && sdNameByte[s[i]] {
		i++
	}
	return i
}

var sdNameByte = func() (t [256]bool) {
	for c := 33; c <= 126; c++ {
		t[c] = c != '=' && c != ']' && c != '"'
	}
	return t
}()

// paramValue scans a PARAM-VALUE from s[i:] to its closing '"' and returns
// the quote's index (len(s) if there is none) and the value's flags:
// SDEscaped when it holds a backslash, which record.AppendUnescaped then
// decodes as RFC 5424 says (only `\"`, `\\` and `\]` are escapes).
func paramValue(s []byte, i int) (int, record.Flags) {
	var flags record.Flags
	for i < len(s) {
		switch s[i] {
		case '"':
			return i, flags
		case '\\':
			if i+1 == len(s) {
				return len(s), 0
			}
			flags = record.SDEscaped
			i += 2
		default:
			i++
		}
	}
	return i, 0
}
