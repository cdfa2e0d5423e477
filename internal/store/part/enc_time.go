package part

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/sluicelog/sluice/internal/bin"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// The time encoding (encTime): each value is its row's time written in
// one of at most 255 shapes, stored as nothing but the shape (and a byte
// per row when there are several).

// timeShapes reports whether every value of c is its row's time written
// in one of at most 255 shapes, collected in w.shapes.
func (w *blockWriter) timeShapes(c *column) bool {
	w.shapes, w.shapeIdx = w.shapes[:0], w.shapeIdx[:0]
	var buf [40]byte
	for i := range c.ends {
		v := c.value(i)
		// The text says which shape it has; one render proves it.
		sh, ok := timestamp.DetectShape(v)
		if !ok || !bytes.Equal(sh.Append(buf[:0], w.times[c.rows[i]]), v) {
			return false
		}
		if k, _ := unmeta(c.meta[i]); k != record.String && !(k == record.Int && intExact(c, i)) {
			return false
		}
		j := slices.Index(w.shapes, sh)
		if j < 0 {
			if len(w.shapes) == 255 {
				return false
			}
			j = len(w.shapes)
			w.shapes = append(w.shapes, sh)
		}
		w.shapeIdx = append(w.shapeIdx, byte(j))
	}
	return true
}

func appendShape(dst []byte, s timestamp.Shape) []byte {
	return append(dst, byte(s.Kind), s.Sep, s.FracSep, s.Digits, byte(s.Zone), byte(s.Offset), byte(s.Offset>>8))
}

// appendTimes appends a time column's shape per value when it has
// several (timeShapes found them); with one, the directory says it all.
func (w *blockWriter) appendTimes(col []byte) []byte {
	if len(w.shapes) > 1 {
		col = bin.AppendBytes(col, w.shapeIdx)
	}
	return col
}

// timeParams reads a time column's directory parameters: its shapes.
func (c *colData) timeParams(h *bin.Reader) {
	ns := int(h.Byte("shape count"))
	if ns == 0 {
		h.Fail("shape count")
	}
	c.shapes = c.shapes[:0]
	for range ns {
		b := h.Bytes(7, "shape")
		if b == nil {
			break
		}
		sh := timestamp.Shape{Kind: timestamp.ShapeKind(b[0]), Sep: b[1], FracSep: b[2],
			Digits: b[3], Zone: timestamp.ZoneKind(b[4]), Offset: int16(uint16(b[5]) | uint16(b[6])<<8)}
		if !sh.Valid() {
			h.Fail("time shape")
		}
		c.shapes = append(c.shapes, sh)
	}
}

// loadTimes reads a time column's shape per value, when it has several.
func (c *colData) loadTimes(r *bin.Reader) {
	if len(c.shapes) > 1 {
		c.idx = r.BytesN("column part")
		if len(c.idx) != c.n {
			r.Fail("shape index count")
		}
		for _, i := range c.idx {
			if int(i) >= len(c.shapes) {
				r.Fail("shape index")
				break
			}
		}
	}
}

// timeValue appends value i of a time column, t written in its shape, to
// dst and returns it, with its number when epoch asks for it (an integer
// epoch time).
func (c *colData) timeValue(i int, dst []byte, t int64, epoch bool) (v, out []byte, num uint64, err error) {
	sh := c.shapes[0]
	if c.idx != nil {
		sh = c.shapes[c.idx[i]]
	}
	start := len(dst)
	dst = sh.Append(dst, t)
	v = dst[start:]
	if epoch {
		n, perr := strconv.ParseInt(string(v), 10, 64)
		if perr != nil {
			return nil, dst, 0, fmt.Errorf("value %d: epoch %q", i, v)
		}
		num = uint64(n)
	}
	return v, dst, num, nil
}

// timeAlphabet holds every byte timestamp.Shape writes.
var timeAlphabet = asciiSet("0123456789-:T .,Z+")
