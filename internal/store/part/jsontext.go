package part

import "encoding/binary"

// What the values of a template's in-line slot are as JSON text, stated
// once per block by the writer (slot flags slotJSONString and
// slotJSONValue, version 4 on), so that a reader that must know it
// (LogQL's json parser fails on a line that is not well-formed, and a
// columnar read of a line's values must fail alike) does not decompress
// and walk the columns to find out.

// JSONStringContent reports whether v can stand between the quotes of a
// JSON string (RFC 8259): no quote and no control character (below
// 0x20), and every backslash the start of an escape: \" \\ \/ \b \f \n
// \r \t, or \u and four hex digits. (JSON parsers that accept raw control
// characters in strings accept every such v too.)
func JSONStringContent(v []byte) bool {
	// Eight bytes at a time while none needs a look (most values have
	// none): a word with a byte below 0x20, a quote or a backslash may
	// also flag a byte after it (a borrow), never miss one; the byte loop
	// then decides.
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := binary.LittleEndian.Uint64(v[i:])
		if below(x, 0x20)|zeroByte(x^(lsb*'"'))|zeroByte(x^(lsb*'\\')) != 0 {
			break
		}
	}
	for ; i < len(v); i++ {
		c := v[i]
		if !jsonSpecial[c] {
			continue
		}
		if c != '\\' || i+1 >= len(v) {
			return false
		}
		i++
		switch v[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(v) || !hex4(v[i+1:i+5]) {
				return false
			}
			i += 4
		default:
			return false
		}
	}
	return true
}

const (
	lsb = 0x0101010101010101 // the lowest bit of each byte
	msb = 0x8080808080808080 // the highest bit of each byte
)

// zeroByte is non-zero when a byte of x is zero.
func zeroByte(x uint64) uint64 { return (x - lsb) & ^x & msb }

// below is non-zero when a byte of x is below n (n at most 0x80).
func below(x uint64, n uint64) uint64 { return (x - lsb*n) & ^x & msb }

// jsonSpecial marks the bytes that need a look in string content.
var jsonSpecial = func() (set [256]bool) {
	for c := range 0x20 {
		set[c] = true
	}
	set['"'], set['\\'] = true, true
	return set
}()

func hex4(h []byte) bool {
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// maxJSONNesting bounds the arrays and objects a value JSONValue accepts
// may nest (deeper ones are refused, not judged).
const maxJSONNesting = 32

// JSONValue reports whether v is exactly one JSON value (RFC 8259) that
// is not an object: a number, true, false, null, a string whose content
// JSONStringContent accepts, or an array (whose elements may be objects),
// with no space before or after it and arrays and objects nested at most
// maxJSONNesting deep. Objects are left out because a parser that names
// the fields of a line flattens an object into fields of its own, which a
// column holding the object as one value does not describe.
func JSONValue(v []byte) bool {
	if len(v) == 0 || v[0] == '{' {
		return false
	}
	j := jsonValidator{d: v}
	end, ok := j.value(0, 0)
	return ok && end == len(v)
}

// jsonValidator walks JSON text, validating it.
type jsonValidator struct{ d []byte }

func (j *jsonValidator) space(i int) int {
	for i < len(j.d) && (j.d[i] == ' ' || j.d[i] == '\t' || j.d[i] == '\n' || j.d[i] == '\r') {
		i++
	}
	return i
}

// value validates the value at i and returns the offset after it.
func (j *jsonValidator) value(i, depth int) (int, bool) {
	d := j.d
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '"':
		return j.str(i)
	case c == '[' || c == '{':
		return j.container(i, depth)
	case c == 't':
		return j.word(i, "true")
	case c == 'f':
		return j.word(i, "false")
	case c == 'n':
		return j.word(i, "null")
	default:
		return j.number(i)
	}
}

// container validates the array or object at i.
func (j *jsonValidator) container(i, depth int) (int, bool) {
	if depth >= maxJSONNesting {
		return i, false
	}
	d, closing := j.d, byte(']')
	if d[i] == '{' {
		closing = '}'
	}
	i = j.space(i + 1)
	if i < len(d) && d[i] == closing {
		return i + 1, true
	}
	for {
		ok := true
		if closing == '}' {
			if i >= len(d) || d[i] != '"' {
				return i, false
			}
			if i, ok = j.str(i); !ok {
				return i, false
			}
			if i = j.space(i); i >= len(d) || d[i] != ':' {
				return i, false
			}
			i = j.space(i + 1)
		}
		if i, ok = j.value(i, depth+1); !ok {
			return i, false
		}
		if i = j.space(i); i >= len(d) {
			return i, false
		}
		switch d[i] {
		case ',':
			i = j.space(i + 1)
		case closing:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// str validates the string at i (d[i] is its opening quote).
func (j *jsonValidator) str(i int) (int, bool) {
	d := j.d
	for k := i + 1; k < len(d); k++ {
		switch d[k] {
		case '"':
			return k + 1, JSONStringContent(d[i+1 : k])
		case '\\':
			k++ // an escaped byte cannot close the string
		}
	}
	return len(d), false
}

func (j *jsonValidator) word(i int, w string) (int, bool) {
	if len(j.d)-i < len(w) || string(j.d[i:i+len(w)]) != w {
		return i, false
	}
	return i + len(w), true
}

// number validates the number at i: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (j *jsonValidator) number(i int) (int, bool) {
	d := j.d
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = j.digits(i)
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		k := j.digits(i + 1)
		if k == i+1 {
			return k, false
		}
		i = k
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		k := j.digits(i)
		if k == i {
			return k, false
		}
		i = k
	}
	return i, true
}

func (j *jsonValidator) digits(i int) int {
	for i < len(j.d) && j.d[i] >= '0' && j.d[i] <= '9' {
		i++
	}
	return i
}
