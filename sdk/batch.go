package sdk

import (
	"bytes"
	"slices"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// batch holds records as they will be sent: NDJSON lines ready to go, or
// for LokiProtobuf the lines back to back with an entry each.
type batch struct {
	data  []byte
	ents  []entry
	n     int
	first time.Time // when the first record was added
	tc    timeCache
}

type entry struct {
	stream   uint32
	ns       int64
	off, end int
}

func (b *batch) reset() {
	b.data = b.data[:0]
	b.ents = b.ents[:0]
	b.n = 0
}

// blank replaces each c in b with a space.
func blank(b []byte, c byte) {
	for {
		i := bytes.IndexByte(b, c)
		if i < 0 {
			return
		}
		b[i] = ' '
		b = b[i+1:]
	}
}

// add appends one record. compact says line is a JSON object with no
// white space between its tokens (the Handler's).
func (b *batch) add(p Protocol, t time.Time, line []byte, id uint32, s *stream, compact bool) {
	if b.n == 0 {
		b.first = time.Now()
	}
	b.n++
	if p == LokiProtobuf {
		if t.IsZero() {
			t = time.Now()
		}
		off := len(b.data)
		b.data = append(b.data, line...)
		b.ents = append(b.ents, entry{stream: id, ns: t.UnixNano(), off: off, end: len(b.data)})
		return
	}
	d := append(b.data, '{')
	sep := false
	if !t.IsZero() {
		d = append(d, `"_time":"`...)
		d = b.tc.append(d, t)
		d = append(d, '"')
		sep = true
	}
	if len(s.json) > 0 {
		if sep {
			d = append(d, ',')
		}
		d = append(d, s.json...)
		sep = true
	}
	if compact {
		// The Handler's own object: no white space, no raw newline.
		if len(line) > 2 {
			if sep {
				d = append(d, ',')
			}
			d = append(d, line[1:len(line)-1]...)
		}
	} else if obj := bytes.TrimSpace(line); len(obj) >= 2 && obj[0] == '{' && obj[len(obj)-1] == '}' {
		inner := bytes.TrimSpace(obj[1 : len(obj)-1])
		if len(inner) > 0 {
			if sep {
				d = append(d, ',')
			}
			// A JSON object has no raw newline inside a string: one
			// between tokens is white space, and NDJSON wants none.
			start := len(d)
			d = append(d, inner...)
			blank(d[start:], '\n')
			blank(d[start:], '\r')
		}
	} else {
		if sep {
			d = append(d, ',')
		}
		d = append(d, `"_msg":`...)
		d = appendJSONString(d, line)
	}
	d = append(d, '}', '\n')
	b.data = d
}

// addLine appends one whole NDJSON record, newline included.
func (b *batch) addLine(line []byte) {
	if b.n == 0 {
		b.first = time.Now()
	}
	b.n++
	b.data = append(b.data, line...)
}

// appendPushRequest appends b's records as an uncompressed
// logproto.PushRequest: streams (1), each a StreamAdapter with labels (1)
// and entries (2), each an EntryAdapter with a timestamp (1: seconds 1,
// nanos 2) and a line (2). order and sbuf are scratch space, returned for
// reuse.
func appendPushRequest(dst []byte, b *batch, streams []stream, order []int32, sbuf []byte) ([]byte, []int32, []byte) {
	order = order[:0]
	for i := range b.ents {
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(x, y int32) int {
		return int(b.ents[x].stream) - int(b.ents[y].stream)
	})
	for i := 0; i < len(order); {
		id := b.ents[order[i]].stream
		s := sbuf[:0]
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendBytes(s, streams[id].loki)
		for ; i < len(order) && b.ents[order[i]].stream == id; i++ {
			e := &b.ents[order[i]]
			sec, nanos := e.ns/1e9, e.ns%1e9
			if nanos < 0 {
				sec, nanos = sec-1, nanos+1e9
			}
			tsSize := 0
			if sec != 0 {
				tsSize += 1 + protowire.SizeVarint(uint64(sec))
			}
			if nanos != 0 {
				tsSize += 1 + protowire.SizeVarint(uint64(nanos))
			}
			line := b.data[e.off:e.end]
			size := 1 + protowire.SizeVarint(uint64(tsSize)) + tsSize + 1 + protowire.SizeBytes(len(line))
			s = protowire.AppendTag(s, 2, protowire.BytesType)
			s = protowire.AppendVarint(s, uint64(size))
			s = protowire.AppendTag(s, 1, protowire.BytesType)
			s = protowire.AppendVarint(s, uint64(tsSize))
			if sec != 0 {
				s = protowire.AppendTag(s, 1, protowire.VarintType)
				s = protowire.AppendVarint(s, uint64(sec))
			}
			if nanos != 0 {
				s = protowire.AppendTag(s, 2, protowire.VarintType)
				s = protowire.AppendVarint(s, uint64(nanos))
			}
			s = protowire.AppendTag(s, 2, protowire.BytesType)
			s = protowire.AppendBytes(s, line)
		}
		sbuf = s
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendBytes(dst, s)
	}
	return dst, order, sbuf
}

const hexDigits = "0123456789abcdef"

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD.
func appendJSONString[T ~string | ~[]byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	dst = appendJSONEscaped(dst, s)
	return append(dst, '"')
}

// plainASCII[c] says that byte c stands for itself inside a JSON string.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONEscaped appends s escaped as inside a JSON string.
func appendJSONEscaped[T ~string | ~[]byte](dst []byte, s T) []byte {
	// Most keys and values need no escape: one append.
	i := 0
	for i < len(s) && plainASCII[s[i]] {
		i++
	}
	if i == len(s) {
		return append(dst, s...)
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		size := validRune(s, i)
		if size == 0 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// validRune returns the length of the valid UTF-8 sequence starting at
// s[i] (a byte of 0x80 or more), or 0 if it is not one.
func validRune[T ~string | ~[]byte](s T, i int) int {
	c := s[i]
	var n int
	var lo, hi byte = 0x80, 0xbf
	switch {
	case c >= 0xc2 && c <= 0xdf:
		n = 2
	case c == 0xe0:
		n, lo = 3, 0xa0
	case c == 0xed:
		n, hi = 3, 0x9f
	case c >= 0xe1 && c <= 0xef:
		n = 3
	case c == 0xf0:
		n, lo = 4, 0x90
	case c >= 0xf1 && c <= 0xf3:
		n = 4
	case c == 0xf4:
		n, hi = 4, 0x8f
	default:
		return 0
	}
	if i+n > len(s) {
		return 0
	}
	if b := s[i+1]; b < lo || b > hi {
		return 0
	}
	for k := 2; k < n; k++ {
		if b := s[i+k]; b < 0x80 || b > 0xbf {
			return 0
		}
	}
	return n
}

// appendLokiQuoted appends s as a quoted label value of Loki's label
// syntax (Go string escapes for quote, backslash and newline).
func appendLokiQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// timeCache appends times as appendTime does, the date and clock of the
// second before computed once: records come in bursts within a second.
type timeCache struct {
	sec  int64 // Unix seconds of head; valid when set
	set  bool
	head [20]byte // "2006-01-02T15:04:05."
}

func (tc *timeCache) append(d []byte, t time.Time) []byte {
	sec := t.Unix()
	if !tc.set || sec != tc.sec {
		var b [30]byte
		if len(appendTime(b[:0], t)) != len(b) {
			return appendTime(d, t) // a year outside 0 to 9999
		}
		copy(tc.head[:], b[:20])
		tc.sec, tc.set = sec, true
	}
	var n [10]byte
	ns := uint32(t.Nanosecond())
	n[0] = byte('0' + ns/1e8)
	ns %= 1e8
	for k := 7; k > 0; k -= 2 {
		q := ns / 100
		r := ns - q*100
		n[k], n[k+1] = digitPairs[2*r], digitPairs[2*r+1]
		ns = q
	}
	n[9] = 'Z'
	// Stored as two arrays: fixed-size moves, no memmove calls.
	i := len(d)
	d = slices.Grow(d, 30)[:i+30]
	*(*[20]byte)(d[i:]) = tc.head
	*(*[10]byte)(d[i+20:]) = n
	return d
}

// appendTime appends t in UTC as RFC 3339 with nine fractional digits,
// faster than time.Format.
func appendTime(d []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	hour, min, sec := t.Clock()
	if year < 0 || year > 9999 {
		return t.AppendFormat(d, time.RFC3339Nano)
	}
	var b [30]byte
	put := func(i, v, n int) {
		for k := i + n - 1; k >= i; k-- {
			b[k] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, min, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, t.Nanosecond(), 9)
	b[29] = 'Z'
	return append(d, b[:]...)
}
