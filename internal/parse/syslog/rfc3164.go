package syslog

import (
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// maxTag bounds the TAG of an RFC 3164 message (RFC 5424's APP-NAME
// limit): a longer run before '[' or ':' is taken as message text.
const maxTag = 48

// maxTagSpaces bounds the spaces within a TAG. Real tags hold at most
// one ("Microsoft Word", "syslogd 1.4.1"); a sentence before a colon
// ("Out of memory: Kill process 42") holds more.
const maxTagSpaces = 1

// maxPID bounds the PID between a TAG's brackets (RFC 5424's PROCID limit).
const maxPID = 128

// rfc3164 parses an RFC 3164 message from i, just after "<PRI>" or at the
// start of the line, adding its fields. It returns false if it failed the
// line.
func (p *Parser) rfc3164(bl *record.Builder, s []byte, off uint32, i int, hasPRI bool) bool {
	ns, n, ok := timestamp.ParsePrefix(s[i:], ref(bl))
	if !ok || n == 0 {
		if hasPRI {
			bl.Fail(record.ErrSyntax, i+1, "syslog: expected VERSION or TIMESTAMP after PRI")
		} else {
			bl.Fail(record.ErrSyntax, i+1, "syslog: expected '<PRI>' or TIMESTAMP")
		}
		return false
	}
	bl.SetTime(ns)
	if i += n; i == len(s) || s[i] != ' ' {
		bl.Fail(record.ErrSyntax, i+1, "syslog: expected SP after TIMESTAMP")
		return false
	}
	i = skipSP(s, i)
	if end := wordEnd(s, i); end > i && !isTag(s[i:end]) {
		if !p.addString(bl, nameHostname, s, off, i, end, 0) {
			return false
		}
		i = skipSP(s, end)
	}
	if t, ok := tag(s, i); ok {
		if !p.addString(bl, nameAppName, s, off, i, t.end, 0) {
			return false
		}
		if t.pidEnd > t.pidStart && !p.addString(bl, nameProcID, s, off, t.pidStart, t.pidEnd, 0) {
			return false
		}
		i = t.msg
	}
	p.setMsg(bl, s, off, i)
	return true
}

// isTag reports whether the first word after the timestamp is a tag
// rather than a hostname: "sshd:", "sshd[42]:" or "sandboxd[129]".
// Hostnames hold neither a trailing ':' nor brackets.
func isTag(w []byte) bool {
	last := w[len(w)-1]
	if last == ':' {
		return len(w) > 1
	}
	if last != ']' {
		return false
	}
	for _, c := range w[1:] {
		if c == '[' {
			return true
		}
	}
	return false
}

// tagSpan locates a TAG[PID]: in a line.
type tagSpan struct {
	end              int // end of TAG
	pidStart, pidEnd int // PID, empty if none
	msg              int // start of MSG
}

// tag reads "TAG[PID]:", "TAG[PID]", or "TAG:" at s[i:], each followed by
// SP (skipped) or the end of s.
func tag(s []byte, i int) (t tagSpan, ok bool) {
	j, spaces := i, 0
	for j < len(s) && j-i < maxTag && s[j] != '[' && s[j] != ':' {
		if s[j] == ' ' {
			spaces++
		}
		j++
	}
	if j == i || j == len(s) || s[j] != '[' && s[j] != ':' || s[j-1] == ' ' || spaces > maxTagSpaces {
		return t, false
	}
	t.end = j
	if s[j] == '[' {
		k := j + 1
		for k < len(s) && k-j <= maxPID && s[k] != ']' && s[k] != ' ' {
			k++
		}
		if k == len(s) || s[k] != ']' {
			return t, false
		}
		t.pidStart, t.pidEnd = j+1, k
		j = k + 1
		if j == len(s) || s[j] != ':' {
			j-- // no colon: stand on ']' so that SP or the end follows
		}
	}
	// s[j] is the ':' (or ']') that ends the tag.
	switch j++; {
	case j == len(s):
		t.msg = j
	case s[j] == ' ':
		t.msg = j + 1
	default:
		return t, false
	}
	return t, true
}
