package part

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicelog/sluice/internal/bin"
)

// blockHeader is the part of a block's header that every read decodes
// alike: its row count and templates, parsed. (A log store's blocks hold
// a few hundred templates for a few thousand rows: parsing them was a
// quarter of a warm query's work.) A header in the cache is shared by
// every read of its block and never changes, but for what reads find of
// its rows (skeleton, times), each set once.
type blockHeader struct {
	nrows int
	tmpls []template
	// The templates' slots, holes and gaps, end to end: a block's
	// templates lie together in memory, which the loops over all of them
	// (every read plans each) are quicker for.
	slots []slot
	cols  []int32 // the slots' columns alone: 4 bytes a slot to walk, not 24
	holes []int
	line  []byte   // the gaps
	ends  []uint32 // and where each ends in its template's part of line
	seen  []bool   // scratch of parseTemplate
	rest  []byte   // the header after the templates: column count, row streams length, column entries
	ool   bool     // outOfLine, worked out once
	meta  []int32  // the columns of fields that may be structured metadata (MetaColumns)
	size  int64    // the memory it holds, for the cache's budget
	used  atomic.Bool
	cache *BlockCache // the cache holding it, if one does
	// skeleton, once a read has walked the block's rows, and the rows'
	// times, once one has read them.
	skeleton atomic.Pointer[rowSkeleton]
	times    atomic.Pointer[[]int64]
	// colRaw holds, per column, its stream decompressed once a read has
	// loaded it (small columns only: Block.loadedCol): a warm query over
	// dictionaries and numbers decompressed the same columns every time.
	colRaw  []atomic.Pointer[[]byte]
	inCache bool // guarded by cache.mu
}

// keptColumn returns column i's stream decompressed by an earlier read,
// or nil.
func (h *blockHeader) keptColumn(i int) *[]byte {
	if h == nil || i >= len(h.colRaw) {
		return nil
	}
	return h.colRaw[i].Load()
}

// rowSkeleton is what a walk of a block's rows finds (decodeRows): each
// row's template and flags, the rows of each template, and the values
// each column gives them.
type rowSkeleton struct {
	tids    []int32
	perTmpl []int
	flags   []byte
}

func (s *rowSkeleton) memory() int64 {
	return int64(unsafe.Sizeof(*s)) + 4*int64(cap(s.tids)) + 8*int64(cap(s.perTmpl)) + int64(cap(s.flags))
}

// parseHeader parses hdr, a block's header stream, into h, reusing its
// buffers; h keeps views of hdr.
func parseHeader(hdr []byte, h *blockHeader) error {
	r := bin.NewReader(hdr)
	h.nrows = int(r.Bounded("row count", maxBlockRows))
	h.tmpls = grown(h.tmpls, r.Count("template count", 1))
	h.slots, h.cols, h.holes, h.line, h.ends = h.slots[:0], h.cols[:0], h.holes[:0], h.line[:0], h.ends[:0]
	for i := range h.tmpls {
		if err := h.parseTemplate(r.BytesN("template"), &h.tmpls[i]); err != nil {
			return err
		}
	}
	// The arrays have stopped growing: point each template at its part
	// of their final copies.
	var s, o, l, e int
	for i := range h.tmpls {
		t := &h.tmpls[i]
		t.slots = h.slots[s : s+len(t.slots) : s+len(t.slots)]
		t.cols = h.cols[s : s+len(t.slots) : s+len(t.slots)]
		s += len(t.slots)
		if !t.raw {
			t.holes = h.holes[o : o+len(t.holes) : o+len(t.holes)]
			n, ne := len(t.gaps.line), len(t.gaps.ends)
			t.gaps = Gaps{line: h.line[l : l+n : l+n], ends: h.ends[e : e+ne : e+ne]}
			o, l, e = o+len(t.holes), l+n, e+ne
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("block header: %w", err)
	}
	h.rest = hdr[r.Off():]
	h.meta = h.findOutOfLine(h.meta[:0])
	h.ool = len(h.meta) > 0
	return nil
}

// BlockCache keeps what reads of a block find the same every time: its
// header parsed, and once reads have walked its rows, their templates and
// flags (rowSkeleton) and their times. Up to a budget of memory shared by
// every part it serves, so that a warm query decompresses no block header
// nor, unless it reads values, anything but the columns it needs. When
// full it evicts a block's whole entry by CLOCK: one read since the hand
// last passed it is kept one more turn.
type BlockCache struct {
	budget int64
	mu     sync.Mutex
	used   int64
	ring   []cachedHeader
	hand   int
}

type cachedHeader struct {
	r     *Reader
	block int
	h     *blockHeader
}

// NewBlockCache returns a cache holding at most budget bytes.
func NewBlockCache(budget int64) *BlockCache { return &BlockCache{budget: budget} }

// Budget returns the bytes the cache may hold.
func (c *BlockCache) Budget() int64 { return c.budget }

// Used returns the bytes the cache holds.
func (c *BlockCache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// header returns block i's parsed header, for a read into b whose header
// stream d is at: the cached one (d skips the stream), or one parsed now,
// which the cache keeps unless the read is a scan's.
func (r *Reader) header(i int, d *bin.Reader, b *Block) (*blockHeader, error) {
	if r.headers != nil {
		if h := r.headers[i].Load(); h != nil {
			skipStream(d)
			h.used.Store(true)
			return h, d.Err()
		}
	}
	var hdr []byte
	hdr, b.raw = readStream(d, b.raw)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("block header: %w", err)
	}
	if r.headers == nil || b.Scan || int64(len(hdr)) > r.cache.budget/8 {
		return &b.header, parseHeader(hdr, &b.header)
	}
	h := new(blockHeader)
	if err := parseHeader(hdr, h); err != nil {
		return nil, err
	}
	h.rest = slices.Clone(h.rest) // the templates hold no view of hdr, which b.raw's next use overwrites
	cr := bin.NewReader(h.rest)
	if n := cr.Count("column count", 4); cr.Err() == nil {
		h.colRaw = make([]atomic.Pointer[[]byte], n)
	}
	h.size = headerMemory(h)
	r.cache.add(r, i, h)
	return h, nil
}

// headerMemory estimates the memory a cached header holds.
func headerMemory(h *blockHeader) int64 {
	return int64(unsafe.Sizeof(*h)) + int64(cap(h.rest)) + int64(cap(h.tmpls))*int64(unsafe.Sizeof(template{})) +
		int64(cap(h.slots))*int64(unsafe.Sizeof(slot{})) + 4*int64(cap(h.cols)) + int64(cap(h.holes))*int64(unsafe.Sizeof(0)) +
		int64(cap(h.line)) + 4*int64(cap(h.ends)) + 8*int64(len(h.colRaw))
}

func (c *BlockCache) add(r *Reader, i int, h *blockHeader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.headers[i].Load() != nil {
		return // another read cached it first
	}
	if !c.makeRoom(h.size) {
		return
	}
	h.cache, h.inCache = c, true
	r.headers[i].Store(h)
	c.ring = append(c.ring, cachedHeader{r: r, block: i, h: h})
	c.used += h.size
}

// makeRoom evicts headers until n more bytes fit, and reports whether
// they do. REQUIRES: c.mu.
func (c *BlockCache) makeRoom(n int64) bool {
	for c.used+n > c.budget && len(c.ring) > 0 {
		c.hand %= len(c.ring)
		e := &c.ring[c.hand]
		if e.h.used.Swap(false) {
			c.hand++
			continue
		}
		c.remove(c.hand)
	}
	return c.used+n <= c.budget
}

// keep gives a cached header n more bytes of what reads of its block
// find (set stores it, and reports false if another read did first), if
// there is room for them.
func (c *BlockCache) keep(h *blockHeader, n int64, set func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !h.inCache {
		return
	}
	h.used.Store(true) // not the one to evict for it
	if !c.makeRoom(n) || !h.inCache || !set() {
		return
	}
	h.size += n
	c.used += n
}

// remove drops entry k (the last entry takes its place). REQUIRES: c.mu.
func (c *BlockCache) remove(k int) {
	e := c.ring[k]
	e.r.headers[e.block].Store(nil)
	e.h.inCache = false
	c.used -= e.h.size
	last := len(c.ring) - 1
	c.ring[k] = c.ring[last]
	c.ring[last] = cachedHeader{}
	c.ring = c.ring[:last]
}

// forget drops the headers of a reader being closed.
func (c *BlockCache) forget(r *Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := 0; k < len(c.ring); {
		if c.ring[k].r == r {
			c.remove(k)
		} else {
			k++
		}
	}
}

// UseBlockCache makes reads from r (other than scans') keep what they
// find in c, and find it there. REQUIRES: no read from r yet.
func (r *Reader) UseBlockCache(c *BlockCache) {
	r.cache = c
	r.headers = make([]atomic.Pointer[blockHeader], len(r.Blocks))
}
