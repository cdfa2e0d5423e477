package pattern

import "bytes"

// literal is the text between two captures. In the flexible form every run
// of spaces is a segment of its own that matches one or more spaces.
type literal struct {
	text  []byte // as written in the pattern
	plain bool   // matched byte for byte: exact mode, or no space in text
	segs  []seg  // flexible form; nil when plain
	first int    // index in segs of the first text segment, -1 if none
}

// seg is a piece of a flexible literal: text without spaces, or (text ==
// nil) a run of spaces.
type seg struct {
	text []byte
}

func newLiteral(text []byte, exact bool) literal {
	l := literal{text: text, first: -1}
	if exact || bytes.IndexByte(text, ' ') < 0 {
		l.plain = true
		return l
	}
	for i := 0; i < len(text); {
		if text[i] == ' ' {
			for i < len(text) && text[i] == ' ' {
				i++
			}
			l.segs = append(l.segs, seg{})
			continue
		}
		j := i
		for j < len(text) && text[j] != ' ' {
			j++
		}
		if l.first < 0 {
			l.first = len(l.segs)
		}
		l.segs = append(l.segs, seg{text: text[i:j]})
		i = j
	}
	return l
}

// matchAt reports whether the literal matches b at i, and where the match
// ends. Space runs are consumed whole.
func (l *literal) matchAt(b []byte, i int) (end int, ok bool) {
	if l.plain {
		if hasAt(b, i, l.text) {
			return i + len(l.text), true
		}
		return 0, false
	}
	return l.segsAt(b, 0, i)
}

// hasAt reports whether b holds t at i. Literals are short, and a byte
// loop beats a call to the general comparison for them.
func hasAt(b []byte, i int, t []byte) bool {
	if len(b)-i < len(t) {
		return false
	}
	b = b[i : i+len(t)]
	for j := range t {
		if b[j] != t[j] {
			return false
		}
	}
	return true
}

// index returns the index of t in b, or -1.
func index(b, t []byte) int {
	if len(t) == 1 {
		return bytes.IndexByte(b, t[0])
	}
	return bytes.Index(b, t)
}

// segsAt matches segs[k:] at b[i:].
func (l *literal) segsAt(b []byte, k, i int) (end int, ok bool) {
	for _, s := range l.segs[k:] {
		if s.text != nil {
			if !hasAt(b, i, s.text) {
				return 0, false
			}
			i += len(s.text)
			continue
		}
		if i >= len(b) || b[i] != ' ' {
			return 0, false
		}
		i = skipSpaces(b, i)
	}
	return i, true
}

// find returns the first match of the literal in b at or after from: its
// start and end, or start -1 if there is none.
func (l *literal) find(b []byte, from int) (start, end int) {
	if l.plain {
		i := index(b[from:], l.text)
		if i < 0 {
			return -1, 0
		}
		return from + i, from + i + len(l.text)
	}
	if l.first < 0 {
		// Only spaces: the first space starts the match.
		i := bytes.IndexByte(b[from:], ' ')
		if i < 0 {
			return -1, 0
		}
		return from + i, skipSpaces(b, from+i)
	}
	anchor := l.segs[l.first].text
	for q := from; ; {
		i := index(b[q:], anchor)
		if i < 0 {
			return -1, 0
		}
		i += q
		q = i + 1
		s := i
		if l.first == 1 {
			// A leading space run: at least one space must come before
			// the anchor, all of it at or after from.
			if s == from || b[s-1] != ' ' {
				continue
			}
			s--
			for s > from && b[s-1] == ' ' {
				s--
			}
		}
		if e, ok := l.segsAt(b, l.first, i); ok {
			return s, e
		}
	}
}

func skipSpaces(b []byte, i int) int {
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}
