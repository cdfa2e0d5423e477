package part

import (
	"encoding/binary"
	"hash/maphash"
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

// restFloor is the share of the sample (in 128ths) the entries must
// cover for dictRest to read the whole column: below it the rest would
// hardly stay under half the values.
const restFloor = 32

// dictRest reports whether c is better stored as entries and the rest,
// and if so leaves the entries, each value's index and the rest's
// lengths and bytes in w. It is asked after dictionary has refused c.
//
// The sample finds the commonest values; a value too rare to be met
// twice in it (one in a few hundred) but still repeated goes with the
// rest at first, counted by its hash, and the most repeated of those
// become entries too while there is room: a message in 1% of the rows
// is then decided once by a query, not once per row.
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
	w.dictEntries = w.dictEntries[:0]
	covered := 0
	for i := range restSample {
		v := c.value(i * step)
		if w.sampled[string(v)] < 2 {
			continue
		}
		covered++
		if _, ok := w.dict[string(v)]; !ok {
			w.dict[string(v)] = uint8(len(w.dict))
			w.dictEntries = bin.AppendBytes(w.dictEntries, v)
		}
	}
	if len(w.dict) == 0 || covered < restFloor {
		return false
	}
	if w.restCounts == nil {
		w.restCounts = make(map[uint64]restCount)
		w.restSeed = maphash.MakeSeed()
	}
	clear(w.restCounts)
	if w.assignRest(c, true) > n/2 {
		return false
	}
	if w.promoteRest(c) {
		w.assignRest(c, false)
	}
	return true
}

// restCount is how often a value of the rest came (n) and where first.
type restCount struct{ n, first uint32 }

// assignRest writes the index of each value of c and the rest's lengths
// and bytes from the entries in w.dict, and returns how many values are
// of the rest; with count, it counts them in w.restCounts by hash, and
// stops past half the values (dictRest then refuses the column).
func (w *blockWriter) assignRest(c *column, count bool) int {
	w.dictIdx, w.restLens, w.restData = w.dictIdx[:0], w.restLens[:0], w.restData[:0]
	rest := 0
	for i := range c.ends {
		v := c.value(i)
		id, ok := w.dict[string(v)]
		if !ok {
			if rest++; count && rest > len(c.ends)/2 {
				return rest
			}
			id = restID
			w.restLens = binary.AppendUvarint(w.restLens, uint64(len(v)))
			w.restData = append(w.restData, v...)
			if count {
				h := maphash.Bytes(w.restSeed, v)
				rc, seen := w.restCounts[h]
				if !seen {
					rc.first = uint32(i)
				}
				rc.n++
				w.restCounts[h] = rc
			}
		}
		w.dictIdx = append(w.dictIdx, id)
	}
	return rest
}

// promoteRest makes entries of the values of the rest that came more
// than once (w.restCounts), the most frequent first while ids remain,
// and reports whether there were any.
func (w *blockWriter) promoteRest(c *column) bool {
	w.promote = w.promote[:0]
	for _, rc := range w.restCounts {
		if rc.n > 1 {
			w.promote = append(w.promote, rc)
		}
	}
	if len(w.promote) == 0 {
		return false
	}
	// By count, then by first place: the same entries from the same
	// column whatever the hashes.
	slices.SortFunc(w.promote, func(a, b restCount) int {
		if a.n != b.n {
			return int(b.n) - int(a.n)
		}
		return int(a.first) - int(b.first)
	})
	for _, rc := range w.promote {
		if len(w.dict) >= restID {
			break
		}
		// Two values of one hash are counted as one: the first of them
		// becomes an entry, which costs a little room and is still
		// exact.
		v := c.value(int(rc.first))
		w.dict[string(v)] = uint8(len(w.dict))
		w.dictEntries = bin.AppendBytes(w.dictEntries, v)
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
