//go:build !race

// The race detector makes sync.Pool drop items on purpose, and
// encoding/json keeps the scanner json.Valid uses in one: allocations
// are counted without it.

package elastic

import "testing"

// TestEncodeAllocs: a reused Encoder and buffer allocate nothing.
func TestEncodeAllocs(t *testing.T) {
	b := benchBatch(t)
	var e Encoder
	buf := e.AppendBulk(nil, b, "logs")
	if n := testing.AllocsPerRun(20, func() { buf = e.AppendBulk(buf[:0], b, "logs") }); n != 0 {
		t.Errorf("%v allocations per batch, want 0", n)
	}
}
