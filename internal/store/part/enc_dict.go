package part

import (
	"bytes"
	"encoding/binary"

	"github.com/sluicelog/sluice/internal/bin"
)

// The dictionary encoding (encDict): up to 256 distinct values (and at
// most half the rows'), each stored once, and a byte per row naming its
// entry. Queries decide a filter once per entry (ValueID, CountIDs).

// dictionary reports whether c has at most 256 distinct values, and at
// most limit, each with one number; if so it leaves the dictionary's
// entries and each value's index in w.dictEntries and w.dictIdx.
func (w *blockWriter) dictionary(c *column, limit int) bool {
	limit = min(limit, 256)
	// Most columns are plainly one thing or the other: look at a sample
	// before paying for a map.
	if n := len(c.ends); n >= 64 {
		distinct := 0
		for i := range 32 {
			v := c.value(i)
			j := 0
			for j < i && !bytes.Equal(c.value(j), v) {
				j++
			}
			if j == i {
				distinct++
			}
		}
		if distinct > 24 {
			return false
		}
	}
	clear(w.dict)
	w.dictEntries, w.dictIdx = w.dictEntries[:0], w.dictIdx[:0]
	var nums [256]uint64
	for i := range c.ends {
		v := c.value(i)
		id, ok := w.dict[string(v)]
		if !ok {
			if len(w.dict) >= limit {
				return false
			}
			id = uint8(len(w.dict))
			w.dict[string(v)] = id
			nums[id] = c.nums[i]
			w.dictEntries = bin.AppendBytes(w.dictEntries, v)
		} else if nums[id] != c.nums[i] {
			return false
		}
		w.dictIdx = append(w.dictIdx, id)
	}
	return true
}

// appendDict appends a dictionary column's entries and each value's
// index, built by dictionary.
func (w *blockWriter) appendDict(col []byte) []byte {
	col = bin.AppendBytes(col, w.dictEntries)
	return bin.AppendBytes(col, w.dictIdx)
}

// loadDict reads a dictionary column: its entries, then an index per
// value.
func (c *colData) loadDict(r *bin.Reader) {
	c.loadEntries(r)
	if !idsBelow(c.idx, len(c.dict)) {
		r.Fail("dictionary index")
	}
}

// idsBelow reports whether every byte of ids is below n; eight at a time
// when n is at most 128: a byte below 128 plus 128-n sets its top bit
// exactly when it is n or more, and carries nothing into the next byte.
// (A byte of 128 or more sets the top bit by itself; its sum's carry
// may spoil the next byte's, but the answer is false already.)
func idsBelow(ids []byte, n int) bool {
	if n >= 256 {
		return true
	}
	i := 0
	if n > 0 && n <= 128 {
		const ones, tops = 0x0101010101010101, 0x8080808080808080
		add := uint64(128-n) * ones
		var bad uint64
		for ; i+8 <= len(ids); i += 8 {
			x := binary.LittleEndian.Uint64(ids[i:])
			bad |= x | (x + add)
		}
		if bad&tops != 0 {
			return false
		}
	}
	for _, id := range ids[i:] {
		if int(id) >= n {
			return false
		}
	}
	return true
}

// loadEntries reads a dictionary's entries and an index per value, which
// the caller checks.
func (c *colData) loadEntries(r *bin.Reader) {
	s := r.BytesN("column part")
	dr := bin.NewReader(s)
	for dr.Len() > 0 && dr.Err() == nil {
		c.dict = append(c.dict, dr.BytesN("dictionary entry"))
	}
	c.idx = r.BytesN("column part")
	if err := dr.Err(); err != nil {
		r.Fail(err.Error())
	}
	if len(c.idx) != c.n {
		r.Fail("dictionary index count")
	}
}
