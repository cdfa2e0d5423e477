package part

import (
	"encoding/binary"

	"github.com/sluicelog/sluice/internal/bin"
)

// The string encoding (encString), the one every value fits: lengths as
// varints, then the bytes end to end.

// appendStrings appends a string column's value lengths, then their
// bytes end to end (s is scratch, returned grown).
func appendStrings(col []byte, c *column, s []byte) (_, _ []byte) {
	s = s[:0]
	for i := range c.ends {
		s = binary.AppendUvarint(s, uint64(len(c.value(i))))
	}
	return bin.AppendBytes(bin.AppendBytes(col, s), c.data), s
}

// loadStrings reads a string column: the values' lengths, then their
// bytes end to end.
func (c *colData) loadStrings(r *bin.Reader) { c.loadEnds(r, c.n) }

// loadEnds reads n values stored as a string column stores them.
func (c *colData) loadEnds(r *bin.Reader, n int) {
	s := r.BytesN("column part")
	lr := bin.NewReader(s)
	var end uint64
	c.ends, end = lr.Ends(c.ends[:0], n, maxStream, "value length")
	lr.Done("value lengths")
	if err := lr.Err(); err != nil {
		r.Fail(err.Error())
	}
	c.data = r.BytesN("column part")
	if r.Err() == nil && end != uint64(len(c.data)) {
		r.Fail("string bytes")
	}
}

// stringValue returns value i of a string column.
func (c *colData) stringValue(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.data[start:c.ends[i]]
}
