package part

import (
	"bytes"

	"github.com/sluicelog/sluice/internal/bin"
)

// The constant encoding (encConst): one value stands for every row's,
// stored once. Values must agree in text, kind and number.

func (w *blockWriter) isConst(c *column) bool {
	v0 := c.value(0)
	for i := 1; i < len(c.ends); i++ {
		if c.meta[i] != c.meta[0] || c.nums[i] != c.nums[0] || !bytes.Equal(c.value(i), v0) {
			return false
		}
	}
	return true
}

// appendConst appends a constant column's one value.
func appendConst(col []byte, c *column) []byte { return bin.AppendBytes(col, c.value(0)) }
