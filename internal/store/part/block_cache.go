package part

import (
	"fmt"
	"math"
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
	// region holds a cached header's arrays (those above), in the
	// cache's memory (moveHeader).
	region []byte
	size   int64 // the memory it holds, for the cache's budget
	used   atomic.Bool
	cache  *BlockCache // the cache holding it, if one does
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
	mem     []byte // holding the three, in the cache's memory
}

// newSkeleton returns a copy of a block's row skeleton in the cache's
// memory.
func (c *BlockCache) newSkeleton(tids []int32, perTmpl []int, flags []byte) *rowSkeleton {
	var size, off int
	regionSize[int](&size, len(perTmpl))
	regionSize[int32](&size, len(tids))
	regionSize[byte](&size, len(flags))
	sk := &rowSkeleton{mem: c.mem.alloc(size)}
	sk.perTmpl = view[int](sk.mem, &off, len(perTmpl))
	sk.tids = view[int32](sk.mem, &off, len(tids))
	sk.flags = view[byte](sk.mem, &off, len(flags))
	copy(sk.perTmpl, perTmpl)
	copy(sk.tids, tids)
	copy(sk.flags, flags)
	return sk
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
	h.pointTemplates(func(k int) (slots, holes, line, ends int) {
		t := &h.tmpls[k]
		return len(t.slots), len(t.holes), len(t.gaps.line), len(t.gaps.ends)
	})
	if err := r.Err(); err != nil {
		return fmt.Errorf("block header: %w", err)
	}
	h.rest = hdr[r.Off():]
	h.meta = h.findOutOfLine(h.meta[:0])
	h.ool = len(h.meta) > 0
	return nil
}

// pointTemplates points each template at its part of the header's
// arrays, which hold them end to end in order; n gives template k's
// lengths (called before it is pointed).
func (h *blockHeader) pointTemplates(n func(k int) (slots, holes, line, ends int)) {
	var s, o, l, e int
	for k := range h.tmpls {
		ns, nh, nl, ne := n(k)
		t := &h.tmpls[k]
		t.slots = h.slots[s : s+ns : s+ns]
		t.cols = h.cols[s : s+ns : s+ns]
		s += ns
		if !t.raw {
			t.holes = h.holes[o : o+nh : o+nh]
			t.gaps = Gaps{line: h.line[l : l+nl : l+nl], ends: h.ends[e : e+ne : e+ne]}
			o, l, e = o+nh, l+nl, e+ne
		}
	}
}

// BlockCache keeps what reads of a block find the same every time: its
// header parsed, and once reads have walked its rows, their templates and
// flags (rowSkeleton) and their times. Up to a budget of memory shared by
// every part it serves, so that a warm query decompresses no block header
// nor, unless it reads values, anything but the columns it needs. When
// full it evicts a block's whole entry by CLOCK: one read since the hand
// last passed it is kept one more turn.
//
// What the cache holds lies outside the Go heap (offHeap), so it is freed
// by hand: an entry evicted is retired, and freed once every read that
// began before is done. A read of a reader that uses the cache must lie
// between Enter and Leave (the store's Snapshot and its Release), and
// keep no view of what it read past Leave.
type BlockCache struct {
	budget int64
	mem    *offHeap
	mu     sync.Mutex
	used   int64
	ring   []cachedHeader
	hand   int
	// epoch grows with each retirement; pins counts the reads under way
	// by the epoch they entered at; retired is what waits for them, by
	// the epoch it was retired at, oldest first.
	epoch   uint64
	pins    map[uint64]int
	retired []retiredBuf
	// backlog is the memory retired and not yet freed; once it is a
	// maxBacklogShare of the budget the cache is crowded and takes
	// nothing more in until reads leave. (A query reading more than the
	// cache holds would otherwise retire all it read beyond the budget,
	// held until it ends: a scan of 20M lines' columns, a gigabyte more.)
	backlog int64
	crowded atomic.Bool
	closed  bool // takes nothing more in
}

type retiredBuf struct {
	p     *byte
	size  int64
	epoch uint64
}

type cachedHeader struct {
	r     *Reader
	block int
	h     *blockHeader
}

// NewBlockCache returns a cache holding at most budget bytes.
func NewBlockCache(budget int64) *BlockCache {
	return &BlockCache{budget: budget, mem: newOffHeap(max(budget/16, 4<<20)), pins: map[uint64]int{}}
}

// Enter begins a read through the cache: nothing the cache holds now or
// later is freed before the Leave of the epoch it returns.
func (c *BlockCache) Enter() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pins[c.epoch]++
	return c.epoch
}

// Leave ends a read begun by Enter, and frees what no read under way may
// hold any more.
func (c *BlockCache) Leave(epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pins[epoch]--; c.pins[epoch] <= 0 {
		delete(c.pins, epoch)
	}
	c.reclaim()
}

// retireLocked hands p, which the cache no longer holds, to be freed once
// the reads under way are done. REQUIRES: c.mu.
func (c *BlockCache) retireLocked(p *byte) {
	if p == nil {
		return
	}
	size := c.mem.mappedSize(p)
	c.retired = append(c.retired, retiredBuf{p: p, size: size, epoch: c.epoch})
	c.epoch++
	c.backlog += size
	c.crowded.Store(c.backlog >= c.budget/maxBacklogShare)
}

// maxBacklogShare: the cache is crowded once what waits to be freed is
// this share of its budget. A share is what one query can turn over of
// what an earlier one left: at 20M lines (`LINES=20000000 bench/query.sh`)
// an eighth held the count by level per minute at 231-306 ms after the
// questions before it (their blocks filled the cache), a quarter at
// 156-170, a half at 119, the cache on the heap at 132; the peak resident
// set was 2,538-2,551, 2,554, 2,865 and 2,849 MB.
const maxBacklogShare = 4

// admits reports whether the cache takes in more: reads of a crowded one
// decompress and parse into their own scratch, as a scan's.
func (c *BlockCache) admits() bool { return !c.crowded.Load() }

func (c *BlockCache) retire(p *byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retireLocked(p)
}

// reclaim frees what was retired before the oldest read under way began.
// REQUIRES: c.mu.
func (c *BlockCache) reclaim() {
	oldest := uint64(math.MaxUint64)
	for e := range c.pins {
		oldest = min(oldest, e)
	}
	k := 0
	for k < len(c.retired) && c.retired[k].epoch < oldest {
		c.mem.release(c.retired[k].p)
		c.backlog -= c.retired[k].size
		k++
	}
	c.crowded.Store(c.backlog >= c.budget/maxBacklogShare)
	if k > 0 {
		n := copy(c.retired, c.retired[k:])
		clear(c.retired[n:])
		c.retired = c.retired[:n]
	}
}

// Close frees the cache's memory once the reads under way are done; the
// store closes it after its readers.
func (c *BlockCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for len(c.ring) > 0 {
		c.remove(len(c.ring) - 1)
	}
	c.reclaim()
	c.mem.close()
}

// Waiting returns the memory evicted and waiting for the reads under way
// to leave before it is freed.
func (c *BlockCache) Waiting() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backlog
}

// Resident returns the memory of the cache's mappings that may be
// resident: what it holds, what waits for reads to leave, and the free
// buffers it keeps to reuse.
func (c *BlockCache) Resident() int64 { return c.mem.residentBytes() }

// Mappings returns how many memory mappings the cache uses.
func (c *BlockCache) Mappings() int { return c.mem.mappings() }

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
	if r.headers == nil || b.Scan || int64(len(hdr)) > r.cache.budget/8 || !r.cache.admits() {
		return &b.header, parseHeader(hdr, &b.header)
	}
	// Parsed into the block's own header, then moved to the cache's
	// memory: the block's arrays are scratch the next parse reuses.
	if err := parseHeader(hdr, &b.header); err != nil {
		return nil, err
	}
	h := r.cache.moveHeader(&b.header)
	cr := bin.NewReader(h.rest)
	if n := cr.Count("column count", 4); cr.Err() == nil {
		h.colRaw = make([]atomic.Pointer[[]byte], n)
	}
	h.size = int64(unsafe.Sizeof(*h)) + r.cache.mem.size(h.region) + 8*int64(len(h.colRaw))
	if !r.cache.add(r, i, h) {
		r.cache.retire(unsafe.SliceData(h.region)) // this read's alone
	}
	return h, nil
}

// moveHeader returns a copy of the parsed header p in one buffer of the
// cache's memory: the templates and every array they view, so that the
// copy holds no pointer into the heap (the collector does not see it).
func (c *BlockCache) moveHeader(p *blockHeader) *blockHeader {
	var size int
	regionSize[template](&size, len(p.tmpls))
	regionSize[int](&size, len(p.holes))
	regionSize[slot](&size, len(p.slots))
	regionSize[int32](&size, len(p.cols))
	regionSize[uint32](&size, len(p.ends))
	regionSize[int32](&size, len(p.meta))
	regionSize[byte](&size, len(p.line))
	regionSize[byte](&size, len(p.rest))
	region := c.mem.alloc(size)
	var off int
	h := &blockHeader{nrows: p.nrows, ool: p.ool, cache: c, region: region}
	h.tmpls = view[template](region, &off, len(p.tmpls))
	h.holes = view[int](region, &off, len(p.holes))
	h.slots = view[slot](region, &off, len(p.slots))
	h.cols = view[int32](region, &off, len(p.cols))
	h.ends = view[uint32](region, &off, len(p.ends))
	h.meta = view[int32](region, &off, len(p.meta))
	h.line = view[byte](region, &off, len(p.line))
	h.rest = view[byte](region, &off, len(p.rest))
	copy(h.holes, p.holes)
	copy(h.slots, p.slots)
	copy(h.cols, p.cols)
	copy(h.ends, p.ends)
	copy(h.meta, p.meta)
	copy(h.line, p.line)
	copy(h.rest, p.rest)
	for k := range p.tmpls {
		t := &p.tmpls[k]
		// The scalars; pointTemplates sets the views.
		h.tmpls[k] = template{raw: t.raw, msgLine: t.msgLine, dup: t.dup, whole: t.whole, shape: t.shape, holeStr: t.holeStr, holeVal: t.holeVal, colMask: t.colMask}
	}
	h.pointTemplates(func(k int) (slots, holes, line, ends int) {
		t := &p.tmpls[k]
		return len(t.slots), len(t.holes), len(t.gaps.line), len(t.gaps.ends)
	})
	return h
}

// add caches h as block i of r, and reports whether it did.
func (c *BlockCache) add(r *Reader, i int, h *blockHeader) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || r.headers[i].Load() != nil {
		return false // closed, or another read cached it first
	}
	if !c.makeRoom(h.size) {
		return false
	}
	h.inCache = true
	r.headers[i].Store(h)
	c.ring = append(c.ring, cachedHeader{r: r, block: i, h: h})
	c.used += h.size
	return true
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

// keep gives a cached header buf, what reads of its block find, from the
// cache's memory (set stores it, and reports false if another read did
// first), if there is room for it; what the header does not take is
// retired, for the read that made it may still use it.
func (c *BlockCache) keep(h *blockHeader, buf *byte, n int64, set func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !h.inCache {
		c.retireLocked(buf)
		return
	}
	h.used.Store(true) // not the one to evict for it
	if !c.makeRoom(n) || !h.inCache || !set() {
		c.retireLocked(buf)
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
	c.retireLocked(unsafe.SliceData(e.h.region))
	if sk := e.h.skeleton.Load(); sk != nil {
		c.retireLocked(unsafe.SliceData(sk.mem))
	}
	if ts := e.h.times.Load(); ts != nil {
		c.retireLocked(bytesOf(*ts))
	}
	for i := range e.h.colRaw {
		if p := e.h.colRaw[i].Load(); p != nil {
			c.retireLocked(unsafe.SliceData(*p))
		}
	}
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
