package part

import (
	"math/bits"
	"slices"
)

// A Cursor walks the rows of a columnar read (ReadColumns), forward or
// from the last row back, and says where the current row's values are:
// slot s of a row of template t is value At(SlotColumn(t, s)) +
// SlotRank(t, s) of its column, and a raw row's line is value
// At(LineColumn()) of the line column.
//
// It owns the advance rule, which no caller repeats: a row passed moves
// each column by as many values as its template has slots in it, and the
// line column by one when the template is raw. A cursor keeps only the
// columns it is started with (the others stay at zero and cost nothing to
// move), so a walk that reads two columns of a wide block moves two.
type Cursor struct {
	pos    []int // per column, the current row's first value
	moves  []int // per template from start[t], the kept columns its rows move, once per value
	start  []int
	counts []int // over's rows per template
}

// Start places c at the first row of b, keeping the columns keep marks
// (every column when keep is nil).
func (c *Cursor) Start(b *Block, keep []bool) {
	c.plan(b, keep)
	c.pos = grown(c.pos, len(b.cols))
	clear(c.pos)
}

// StartAtEnd places c after the last row of b, each kept column at its
// end, for a walk back with Back.
func (c *Cursor) StartAtEnd(b *Block, keep []bool) {
	c.plan(b, keep)
	c.pos = grown(c.pos, len(b.cols))
	for i := range c.pos {
		c.pos[i] = 0
		if keep == nil || keep[i] {
			c.pos[i] = b.cols[i].n
		}
	}
}

func (c *Cursor) plan(b *Block, keep []bool) {
	lci := b.LineColumn()
	start := append(c.start[:0], 0)
	// Room for every template's columns (the header's, end to end) and
	// a raw template's line: each column is written, and kept by a count
	// that moves on or not, with no branch per column (a kept column is
	// a coin toss) and no growth check per template.
	room := len(b.tmpls)
	if b.hd != nil {
		room += len(b.hd.cols)
	}
	moves := slices.Grow(c.moves[:0], room)
	moves = moves[:cap(moves)]
	// The kept columns under 64 as bits: a template whose mask has all
	// its columns (template.colMask) keeps its mask's AND with them (a
	// few, of a template's dozens), whatever order its slots name them
	// in.
	var kept uint64
	if keep != nil {
		for col, k := range keep[:min(len(keep), 64)] {
			if k {
				kept |= 1 << col
			}
		}
	}
	n := 0
	for t := range b.tmpls {
		tm := &b.tmpls[t]
		if n+len(tm.cols)+1 > len(moves) { // a header whose templates' columns are not its array's
			moves = slices.Grow(moves[:n], len(tm.cols)+1)
			moves = moves[:cap(moves)]
		}
		if keep != nil && bits.OnesCount64(tm.colMask) == len(tm.cols) {
			for m := tm.colMask & kept; m != 0; m &= m - 1 {
				moves[n] = bits.TrailingZeros64(m)
				n++
			}
		} else {
			for _, col := range tm.cols {
				moves[n] = int(col)
				if keep == nil || keep[col] {
					n++
				}
			}
		}
		if tm.raw && lci >= 0 && (keep == nil || keep[lci]) {
			moves[n] = lci
			n++
		}
		start = append(start, n)
	}
	c.moves, c.start = moves[:n], start
}

// Next moves c past a row of template t.
func (c *Cursor) Next(t int) { c.by(t, 1) }

// Back moves c back before a row of template t (walking from the end).
func (c *Cursor) Back(t int) { c.by(t, -1) }

// BackBy moves c back before n rows of template t: Back n times.
func (c *Cursor) BackBy(t, n int) { c.by(t, -n) }

// BackOver moves c back before the rows of templates tids, a run of a
// block's rows (RowTemplates()[i:j], its last row the one c is after):
// Back for each, or, when the run is long beside the block's templates,
// by each template's count of rows in it.
func (c *Cursor) BackOver(tids []int32) { c.over(tids, -1) }

// NextOver moves c past the rows of templates tids, a run of a block's
// rows (RowTemplates()[i:j], its first row the one c is at): Next for
// each, or by counts as BackOver.
func (c *Cursor) NextOver(tids []int32) { c.over(tids, 1) }

// over moves each kept column of c by dir values per value of the rows
// of templates tids.
func (c *Cursor) over(tids []int32, dir int) {
	nt := len(c.start) - 1
	if len(tids) < 2*nt {
		for _, t := range tids {
			c.by(int(t), dir)
		}
		return
	}
	counts := grown(c.counts, nt)
	clear(counts)
	for _, t := range tids {
		counts[t]++
	}
	for t, n := range counts {
		if n > 0 {
			c.by(t, dir*n)
		}
	}
	c.counts = counts
}

// by moves c by n rows of template t: forward for n > 0.
func (c *Cursor) by(t, n int) {
	pos := c.pos // a local: the stores need not reload it
	for _, col := range c.moves[c.start[t]:c.start[t+1]] {
		pos[col] += n
	}
}

// Moves reports whether a row of template t moves a kept column: rows
// that move none read no kept value and may be passed over unwalked.
func (c *Cursor) Moves(t int) bool { return c.start[t+1] > c.start[t] }

// At returns where column col's values of the current row begin.
func (c *Cursor) At(col int) int { return c.pos[col] }
