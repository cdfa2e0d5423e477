package part

import (
	"encoding/binary"
	"slices"

	"github.com/sluicelog/sluice/internal/bin"
)

// The dictionary-and-rest encoding (encDictRest), for a text column too
// varied for a dictionary whose values are still mostly a few frequent
// ones (log messages, some of which carry an id): the frequent values as
// a dictionary's entries (at most 255), a byte per value naming its entry
// or restID, and every other value as a string column stores them,
// lengths then bytes, in order. A query decides a filter once per entry
// and searches only the rest; decompressed, such a column is small
// enough for the block cache to keep (maxKeptColumn).

// restID is the index byte of a value kept with the rest.
const restID = 255

// restSample is how many values, evenly spaced, dictRest looks at to
// find the frequent ones: a value met at least twice among them becomes
// an entry.
const restSample = 128

// dictRest reports whether c is better stored as entries and the rest,
// and if so leaves the entries, each value's index and the rest's
// lengths and bytes in w. It is asked after dictionary has refused c.
func (w *blockWriter) dictRest(c *column) bool {
	n := len(c.ends)
	if n < 2*restSample || hasNums(c) {
		return false
	}
	if w.sampled == nil {
		w.sampled = make(map[string]uint8, restSample)
	}
	clear(w.sampled)
	step := n / restSample
	for i := range restSample {
		v := c.value(i * step)
		if k := w.sampled[string(v)]; k < 2 {
			w.sampled[string(v)] = k + 1
		}
	}
	clear(w.dict)
	w.dictEntries, w.dictIdx = w.dictEntries[:0], w.dictIdx[:0]
	for i := range restSample {
		v := c.value(i * step)
		if _, ok := w.dict[string(v)]; !ok && w.sampled[string(v)] >= 2 {
			w.dict[string(v)] = uint8(len(w.dict))
			w.dictEntries = bin.AppendBytes(w.dictEntries, v)
		}
	}
	if len(w.dict) == 0 {
		return false
	}
	w.restLens, w.restData = w.restLens[:0], w.restData[:0]
	rest := 0
	for i := range n {
		v := c.value(i)
		id, ok := w.dict[string(v)]
		if !ok {
			if rest++; rest > n/2 {
				return false
			}
			id = restID
			w.restLens = binary.AppendUvarint(w.restLens, uint64(len(v)))
			w.restData = append(w.restData, v...)
		}
		w.dictIdx = append(w.dictIdx, id)
	}
	return true
}

// appendDictRest appends a dictionary-and-rest column's parts, built by
// dictRest: entries, indexes, the rest's lengths and its bytes.
func (w *blockWriter) appendDictRest(col []byte) []byte {
	col = bin.AppendBytes(col, w.dictEntries)
	col = bin.AppendBytes(col, w.dictIdx)
	col = bin.AppendBytes(col, w.restLens)
	return bin.AppendBytes(col, w.restData)
}

// loadDictRest reads a dictionary-and-rest column: the entries and an
// index per value, as loadDict, then the rest as loadStrings reads a
// string column's values.
func (c *colData) loadDictRest(r *bin.Reader) {
	c.loadEntries(r)
	if len(c.dict) > restID {
		r.Fail("dictionary entries")
	}
	nrest := 0
	for _, id := range c.idx {
		if id == restID {
			nrest++
		} else if int(id) >= len(c.dict) {
			r.Fail("dictionary index")
			break
		}
	}
	c.restAt = c.restAt[:0]
	c.loadEnds(r, nrest)
}

// restValue returns value i of a dictionary-and-rest column.
func (c *colData) restValue(i int) []byte {
	if id := c.idx[i]; id != restID {
		return c.dict[id]
	}
	if len(c.restAt) == 0 {
		// Each value's place among the rest, for reads in any order,
		// worked out at the first.
		c.restAt = slices.Grow(c.restAt, len(c.idx))
		nrest := uint32(0)
		for _, id := range c.idx {
			c.restAt = append(c.restAt, nrest)
			if id == restID {
				nrest++
			}
		}
	}
	return c.stringValue(int(c.restAt[i]))
}
