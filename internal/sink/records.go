package sink

import (
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/wal"
)

// AppendBlock adds every row of blk, the decoded WAL record at at, to b as
// the runtime does for a sink that takes everything, and returns how many.
// It is for programs that need the records a destination receives without
// a WAL (bench/pgcopy builds the rows of its bare COPY with it).
func (b *Batch) AppendBlock(blk *rows.Block, at wal.Pos) int {
	return b.appendBlock(&filter{}, blk, at)
}
