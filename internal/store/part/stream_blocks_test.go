package part

import (
	"slices"
	"testing"
)

func TestStreamEnds(t *testing.T) {
	blocks := func(streams ...uint32) []BlockMeta {
		var bs []BlockMeta
		for _, s := range streams {
			bs = append(bs, BlockMeta{Stream: s})
		}
		return bs
	}
	for _, c := range []struct {
		name    string
		blocks  []BlockMeta
		streams int
		want    []int32
	}{
		{"none", nil, 2, []int32{0, 0}},
		{"one each", blocks(0, 1, 2), 3, []int32{1, 2, 3}},
		{"several", blocks(0, 0, 1, 1, 1, 2), 3, []int32{2, 5, 6}},
		{"streams without blocks", blocks(1, 1, 3), 5, []int32{0, 2, 2, 3, 3}},
		{"out of order", blocks(0, 2, 1), 3, nil},
		{"stream past the table", blocks(0, 3), 3, nil},
	} {
		if got := streamEnds(c.blocks, c.streams); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Out of order, every stream's range is the whole index.
	r := &Reader{Blocks: blocks(0, 2, 1)}
	r.streamEnd = streamEnds(r.Blocks, 3)
	if lo, hi := r.StreamBlocks(1); lo != 0 || hi != 3 {
		t.Errorf("out of order: stream 1 in [%d, %d), want [0, 3)", lo, hi)
	}
}
