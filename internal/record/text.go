package record

import (
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnescaped appends raw to dst as text: JSON backslash escapes
// decoded when flags has Escaped (a \u escape of a lone surrogate becomes
// U+FFFD), RFC 5424 ones when it has SDEscaped, and invalid UTF-8 replaced
// with U+FFFD when it has BadUTF8.
// An escape that is not JSON's (logfmt is lenient) is kept as written.
func AppendUnescaped(dst, raw []byte, flags Flags) []byte {
	if flags&(Escaped|SDEscaped|BadUTF8) == 0 {
		return append(dst, raw...)
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\' && flags&SDEscaped != 0 && i+1 < len(raw) &&
			(raw[i+1] == '"' || raw[i+1] == '\\' || raw[i+1] == ']'):
			dst = append(dst, raw[i+1])
			i += 2
		case c == '\\' && flags&Escaped != 0 && i+1 < len(raw):
			n := 2
			switch raw[i+1] {
			case '"', '\\', '/':
				dst = append(dst, raw[i+1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, m := decodeU(raw[i:])
				if m == 0 {
					dst = append(dst, '\\', 'u')
				} else {
					dst = utf8.AppendRune(dst, r)
					n = m
				}
			default:
				// Not an escape: keep the backslash and read what follows
				// as ordinary text.
				dst = append(dst, '\\')
				n = 1
			}
			i += n
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// decodeU decodes a \uXXXX escape at the start of b, joining a surrogate
// pair written as two escapes. It returns the rune and the bytes used, or
// 0 bytes if b does not start with four hex digits after \u.
func decodeU(b []byte) (rune, int) {
	r, ok := HexEscape(b)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if r < 0xDC00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		if r2, ok := HexEscape(b[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
	}
	return utf8.RuneError, 6
}

// HexEscape returns the code unit of the `\u` escape that b starts with
// (`\u` and four hex digits; a surrogate half as it is), false when b
// holds no four hex digits after its first two bytes.
func HexEscape(b []byte) (rune, bool) {
	if len(b) < 6 {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		v := hexVal[c]
		if v == 0xff {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// AppendJSONEscaped appends s escaped for use inside a JSON string (without
// the quotes). Invalid UTF-8 becomes U+FFFD so that the output is always
// valid JSON.
//
// Runs of bytes that need no escape are skipped eight at a time
// (jsonSpecial8 finds the first byte of a word that does) and at the end
// byte by byte by table (jsonSafe), then copied whole.
func AppendJSONEscaped[T ~string | ~[]byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			m := jsonSpecial8(load64(s, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the first byte to look at
		} else if jsonSafe[s[i]] {
			i++
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
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
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[i:])
		r, size := utf8.DecodeRune(buf[:n])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// jsonSafe[c] is set for the bytes AppendJSONEscaped copies as they are:
// ASCII from 0x20 on, but '"' and '\\'.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	lsb8 = 0x0101010101010101
	msb8 = 0x8080808080808080
)

// jsonSpecial8 returns a word with the high bit set in the first byte of
// w (in little-endian order) that AppendJSONEscaped does not copy as it is
// (jsonSafe: not ASCII, below 0x20, '"' or '\\'), 0 if there is none.
// Bytes after the first may be flagged wrongly (a borrow), the first never
// is: a byte below n, in (x - n each) &^ x, borrows from the next byte only
// when it is itself below n. Below 0x20 so; equal to c as below 1 in
// w ^ c each; not ASCII by w's own high bits.
func jsonSpecial8(w uint64) uint64 {
	ctl := (w - 0x20*lsb8) &^ w
	q := w ^ '"'*lsb8
	q = (q - lsb8) &^ q
	bs := w ^ '\\'*lsb8
	bs = (bs - lsb8) &^ bs
	return (w | ctl | q | bs) & msb8
}

// load64 returns the eight bytes of s from i as a little-endian word.
// REQUIRES: i+8 <= len(s).
func load64[T ~string | ~[]byte](s T, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
