package part

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/bin"
)

// The hex encoding (encHex): lowercase hex digits of one even length
// (trace and span ids), stored as their bytes.

// hexColumn reports whether every value is lowercase hex of one even
// length, which it returns, and leaves the decoded bytes in w.hex.
func (w *blockWriter) hexColumn(c *column) (int, bool) {
	l := len(c.value(0))
	if l == 0 || l%2 != 0 || len(c.data) != l*len(c.ends) {
		return 0, false
	}
	// The values are contiguous and of one even length: decode them as
	// one run, checking as we go.
	src := c.data
	dst := slices.Grow(w.hex[:0], len(src)/2)[:len(src)/2]
	for i := range dst {
		hi, lo := unhexTable[src[2*i]], unhexTable[src[2*i+1]]
		if hi|lo > 15 {
			return 0, false
		}
		dst[i] = hi<<4 | lo
	}
	w.hex = dst
	return l, true
}

// unhexTable maps lowercase hex digits to their value and other bytes to
// 0xff.
var unhexTable = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
	}
	return t
}()

// appendHex appends a hex column's bytes, decoded by hexColumn.
func (w *blockWriter) appendHex(col []byte) []byte { return bin.AppendBytes(col, w.hex) }

// hexParams reads a hex column's directory parameter: its values' length.
func (c *colData) hexParams(h *bin.Reader) {
	c.hexLen = int(h.Bounded("hex length", 1<<20))
	if c.hexLen == 0 || c.hexLen%2 != 0 {
		h.Fail("hex length")
	}
}

// loadHex reads a hex column's bytes: hexLen/2 per value.
func (c *colData) loadHex(r *bin.Reader) {
	c.data = r.BytesN("column part")
	if uint64(len(c.data)) != uint64(c.n)*uint64(c.hexLen/2) {
		r.Fail("hex bytes")
	}
}

const hexDigits = "0123456789abcdef"

// rowStreams reads the rows' times and template ids in order: a hot
// loop, so the varints are read here rather than through a bin.Reader.
type rowStreams struct {
	times, subms, tids []byte
	ms                 int64
	ntmpl              int
}

// appendHexValue appends value i of a hex column.
func (c *colData) appendHexValue(dst []byte, i int) []byte {
	for _, x := range c.data[i*c.hexLen/2 : (i+1)*c.hexLen/2] {
		dst = append(dst, hexDigits[x>>4], hexDigits[x&15])
	}
	return dst
}

// hexEqualBits sets the bit of each value equal to want (hexLen/2
// bytes). Each value is compared where it starts: its first 8 bytes as a
// word, four values a step, the rest only when a head agrees (a trace id
// is 16 bytes; a search of the values end to end stopped at every byte
// equal to the first).
func (c *colData) hexEqualBits(want []byte, bits []uint64) {
	w, data := len(want), c.data[:c.n*len(want)]
	vi := 0
	if w >= 8 {
		head := binary.LittleEndian.Uint64(want)
		for ; vi+4 <= c.n; vi += 4 {
			d := data[vi*w : (vi+4)*w]
			if binary.LittleEndian.Uint64(d) != head && binary.LittleEndian.Uint64(d[w:]) != head &&
				binary.LittleEndian.Uint64(d[2*w:]) != head && binary.LittleEndian.Uint64(d[3*w:]) != head {
				continue
			}
			for k := range 4 {
				if bytes.Equal(d[k*w:(k+1)*w], want) {
					bits[(vi+k)/64] |= 1 << ((vi + k) % 64)
				}
			}
		}
	}
	for ; vi < c.n; vi++ {
		if bytes.Equal(data[vi*w:(vi+1)*w], want) {
			bits[vi/64] |= 1 << (vi % 64)
		}
	}
}

// HexPrefixBits sets in dst (a bit per value of column col, at least
// as long) the bit of each value whose text starts with prefix, or with
// exact is prefix, and reports whether col is a hex column (it sets
// nothing otherwise): the values are compared as the bytes they are, not
// written out. A value's text is lowercase hex digits, so that a prefix
// of any other byte, or longer than the values, starts none.
func (b *Block) HexPrefixBits(col int, prefix string, exact bool, dst []uint64) (bool, error) {
	c, err := b.loadedCol(col)
	if err != nil || c.enc != encHex {
		return false, err
	}
	if len(prefix) > c.hexLen || exact && len(prefix) != c.hexLen {
		return true, nil
	}
	want := grown(b.scratch[:0], len(prefix)/2+1)
	clear(want)
	b.scratch = want
	for i := range len(prefix) {
		d := strings.IndexByte(hexDigits, prefix[i])
		if d < 0 {
			return true, nil
		}
		want[i/2] |= byte(d) << (4 * (1 - i%2))
	}
	w, full, odd := c.hexLen/2, len(prefix)/2, len(prefix)%2 == 1
	if exact {
		c.hexEqualBits(want[:w], dst)
		return true, nil
	}
	head, nib := want[:full], want[full]
	data := c.data[:c.n*w]
	for vi := range c.n {
		v := data[vi*w : (vi+1)*w]
		if string(v[:full]) == string(head) && (!odd || v[full]&0xf0 == nib) {
			dst[vi/64] |= 1 << (vi % 64)
		}
	}
	return true, nil
}

// hexAlphabet holds every byte a hex value may have.
var hexAlphabet = asciiSet("0123456789abcdef")
