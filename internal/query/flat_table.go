package query

import (
	"iter"
	"unsafe"

	"github.com/sluicelog/sluice/internal/logql"
)

// flatTable holds the states of a range aggregation's series at one step
// in its slots, as the hash aggregations of column stores do: the count
// and value of a series beside its hashes, no rangeSeries made for it.
// A sum by user id over 20M rows (3.3M users) made a 128-byte series per
// user, each a pointer-holding object the collector scanned, and read a
// slot, then the series: with the states in the slot, a row reads one
// slot, a new key writes one, and the collector scans nothing.
//
// Slots are found by a control byte each (ctrl), as in Abseil's and Go's
// Swiss tables: 0 for an empty slot, else 0x80 and seven bits of the
// key's second hash. The probe of a key that is not in the table (most
// of them, when every user is new) reads control bytes only, a few in
// one cache line, where a probe over the series table's 24-byte slots
// (3.8 of them for a new key, as it fills to three quarters) read 1.4
// lines past the first on average, each a miss the batch's touch of the
// first had not loaded. flushFlat loads a batch's control bytes and the
// slots the probes end at (touch) before it looks any key up, so that
// the misses of a table far larger than the caches overlap.
//
// The keys are copied into chunks that never move; where each is in them
// (keyRef) is kept in the order they came (keys), and a slot holds its
// key's place in that order: a new key writes its slot and appends to
// keys, no third line. The table holds the ops whose state is a count
// and one value (flatOp); the series are made from it when a reader
// needs them (seriesTable.unflat).
type flatTable struct {
	ctrl  []uint8    // a power of two long, or nil
	slots []flatSlot // as long as ctrl
	keys  []uint64   // the keys' refs (keyRef), in the order they came
	used  int
	op    rangeOp
	// chunks hold the keys; free is the free tail of chunks[cur].
	chunks [][]byte
	cur    int
	free   []byte
	// touched keeps the loads of union's touches.
	touched uint64
	alloc   seriesAlloc // the series made of its states
}

// flatSlot is a series' state: the two hashes of its key
// (seriesTable.hash), the second's low 32 bits, and the key's place in
// keys; its count and value at the step. Two keys are taken for the
// same when h1, the 32 bits and the control byte's 7 bits of h2 agree:
// 103 bits, for a billion series a chance below 10^-12 that any two
// collide. 32 bytes: two slots a cache line, none across two.
type flatSlot struct {
	h1   uint64
	h2   uint32
	key  uint32
	n, v float64
}

// maxFlatKeys is how many keys a flat table holds at most (flatSlot.key).
const maxFlatKeys = 1<<32 - 1

// moved reports whether the key's series is in the series table
// (seriesTable.flat): its rows add to that.
func (sl *flatSlot) moved() bool { return sl.n < 0 }

// move marks the state moved.
func (sl *flatSlot) move() { sl.n, sl.v = -1, 0 }

// flatOp reports whether a series of op at one step is a count and one
// value (rangeSeries.add keeps nothing else for it).
func flatOp(op rangeOp) bool {
	return op == opSum || op == opMin || op == opMax || op == opAvg
}

// A keyRef says where a key is in a flatTable's chunks: the chunk in its
// top 24 bits, the offset in it in the next 20, its length in the low 20.
const (
	refLenBits = 20
	refOffBits = 20
	maxFlatKey = 1<<refLenBits - 1 // longer keys are not kept flat
	flatChunk  = 64 << 10          // < 1<<refOffBits
)

func keyRef(chunk, off, n int) uint64 {
	return uint64(chunk)<<(refOffBits+refLenBits) | uint64(off)<<refLenBits | uint64(n)
}

// key returns the key ref says, viewing the chunk that holds it.
func (t *flatTable) key(ref uint64) string {
	n := int(ref & (1<<refLenBits - 1))
	if n == 0 {
		return ""
	}
	c := t.chunks[ref>>(refOffBits+refLenBits)]
	off := int(ref>>refLenBits) & (1<<refOffBits - 1)
	return unsafe.String(&c[off], n)
}

// keep copies key into the chunks, returning its ref. A key longer than
// a quarter of a chunk gets a chunk of its own.
func (t *flatTable) keep(key []byte) uint64 {
	if len(key) > flatChunk/4 {
		t.chunks = append(t.chunks, append([]byte(nil), key...))
		return keyRef(len(t.chunks)-1, 0, len(key))
	}
	if len(key) > len(t.free) {
		t.chunks = append(t.chunks, make([]byte, flatChunk))
		t.cur, t.free = len(t.chunks)-1, t.chunks[len(t.chunks)-1]
	}
	off := flatChunk - len(t.free)
	n := copy(t.free, key)
	t.free = t.free[n:]
	return keyRef(t.cur, off, n)
}

func (t *flatTable) tag(h2 uint64) uint8 { return uint8(h2>>57) | 0x80 }

// touch loads the control bytes of each of the hashes h1s (and h2s),
// then the slot each key's probe ends at, the key's or the empty one it
// would take, and returns a value of them: two passes of loads that
// depend on nothing before them, which the core runs together, so that
// find after them finds both in the cache. (A touch of the first slot
// alone left the write of a new key's slot, often a line further, to
// wait on its miss.)
func (t *flatTable) touch(h1s, h2s []uint64) uint64 {
	if t.used == 0 {
		return 0
	}
	mask := uint64(len(t.ctrl) - 1)
	x := uint64(0)
	for _, h1 := range h1s {
		x += uint64(t.ctrl[h1&mask])
	}
	for k, h1 := range h1s {
		tag := t.tag(h2s[k])
		i := h1 & mask
		for c := t.ctrl[i]; c != 0 && c != tag; c = t.ctrl[i] {
			i = (i + 1) & mask
		}
		x += t.slots[i].h1
	}
	return x
}

// find returns the slot of the key of hashes h1 and h2, adding the key
// (its state empty) when the table lacks it: then new is true.
func (t *flatTable) find(key []byte, h1, h2 uint64) (sl *flatSlot, new bool) {
	if (t.used+1)*4 > len(t.ctrl)*3 {
		t.resize(grownSize(len(t.ctrl)))
	}
	mask := uint64(len(t.ctrl) - 1)
	tag := t.tag(h2)
	i := h1 & mask
	for {
		c := t.ctrl[i]
		if c == 0 {
			break
		}
		if c == tag {
			if sl := &t.slots[i]; sl.h1 == h1 && sl.h2 == uint32(h2) {
				return sl, false
			}
		}
		i = (i + 1) & mask
	}
	t.ctrl[i] = tag
	t.slots[i] = flatSlot{h1: h1, h2: uint32(h2), key: uint32(len(t.keys))}
	t.keys = append(t.keys, t.keep(key))
	t.used++
	return &t.slots[i], true
}

// lookup returns the slot of the key of hashes h1 and h2, or nil.
func (t *flatTable) lookup(h1, h2 uint64) *flatSlot {
	if t.used == 0 {
		return nil
	}
	mask := uint64(len(t.ctrl) - 1)
	tag := t.tag(h2)
	for i := h1 & mask; ; i = (i + 1) & mask {
		c := t.ctrl[i]
		if c == 0 {
			return nil
		}
		if sl := &t.slots[i]; c == tag && sl.h1 == h1 && sl.h2 == uint32(h2) {
			return sl
		}
	}
}

// add adds sample v to the state of sl.
func (t *flatTable) add(sl *flatSlot, v float64) {
	sl.n++
	sl.v = addSample(t.op, sl.n, sl.v, v)
}

// merge adds the state of another worker's series of the same key, as
// rangeSeries.merge does.
func (t *flatTable) merge(sl *flatSlot, o *flatSlot) {
	switch {
	case o.n == 0:
		return
	case sl.n == 0:
		sl.v = o.v
	default:
		sl.v = mergeSamples(t.op, sl.v, o.v)
	}
	sl.n += o.n
}

// series makes a series of the state of sl.
func (t *flatTable) series(sl *flatSlot) *rangeSeries {
	s := t.alloc.series(nil, t.op, 1)
	s.one = [2]float64{sl.n, sl.v}
	return s
}

// resize moves the states to n slots, a power of two.
func (t *flatTable) resize(n int) {
	oc, os := t.ctrl, t.slots
	t.ctrl, t.slots = flatCtrlPool.take(n), flatSlotPool.take(n)
	defer flatCtrlPool.give(oc)
	defer flatSlotPool.give(os)
	mask := uint64(n - 1)
	for j, c := range oc {
		if c == 0 {
			continue
		}
		i := os[j].h1 & mask
		for t.ctrl[i] != 0 { // the keys differ: no compare
			i = (i + 1) & mask
		}
		t.ctrl[i], t.slots[i] = c, os[j]
	}
}

// union adds the states of o to t, o's key by key, leaving o empty. As
// keySet.union does, the larger table takes the smaller's states, into
// room for both; its keys are looked up a batch at a time, each batch's
// slots loaded first.
func (t *flatTable) union(o *flatTable) {
	if o.used == 0 {
		return
	}
	if len(o.ctrl) > len(t.ctrl) {
		*t, *o = *o, *t
	}
	defer o.release()
	n := max(len(t.ctrl), 16)
	for (t.used+o.used)*4 > n*3 {
		n *= 2
	}
	if n > len(t.ctrl) {
		t.resize(n)
	}
	// o's keys stay in o's chunks, which t takes: their refs move by
	// the chunks t has, their places by the keys t has.
	base := uint64(len(t.chunks)) << (refOffBits + refLenBits)
	keyBase := uint32(len(t.keys))
	for _, ref := range o.keys {
		t.keys = append(t.keys, ref+base)
	}
	if len(o.free) > len(t.free) {
		t.cur, t.free = len(t.chunks)+o.cur, o.free
	}
	t.chunks = append(t.chunks, o.chunks...)
	mask := uint64(len(t.ctrl) - 1)
	var batch [256]int
	for start := 0; start < len(o.ctrl); {
		k := 0
		for ; start < len(o.ctrl) && k < len(batch); start++ {
			if o.ctrl[start] != 0 {
				batch[k] = start
				k++
			}
		}
		x := uint64(0)
		for _, j := range batch[:k] {
			i := o.slots[j].h1 & mask
			x += uint64(t.ctrl[i]) + t.slots[i].h1
		}
		t.touched += x
		for _, j := range batch[:k] {
			os := &o.slots[j]
			tag := o.ctrl[j]
			i := os.h1 & mask
			for {
				c := t.ctrl[i]
				if c == 0 {
					t.ctrl[i], t.slots[i] = tag, *os
					t.slots[i].key += keyBase
					t.used++
					break
				}
				if c == tag && t.slots[i].h1 == os.h1 && t.slots[i].h2 == os.h2 {
					t.merge(&t.slots[i], os)
					break
				}
				i = (i + 1) & mask
			}
		}
	}
}

// values yields each state not moved that has a value at the one step
// of range aggregation x (windows of rng), with that value, in slot
// order: neither key nor series is made.
func (t *flatTable) values(x *logql.RangeAggregation, rng int64) iter.Seq2[*flatSlot, float64] {
	return func(yield func(*flatSlot, float64) bool) {
		var rs rangeSeries
		rs.n, rs.v = rs.one[0:1:1], rs.one[1:2:2]
		for i, c := range t.ctrl {
			sl := &t.slots[i]
			if c == 0 || sl.n <= 0 { // empty, moved, or no sample
				continue
			}
			rs.one = [2]float64{sl.n, sl.v}
			if v, ok := rs.instant(x, rng); ok && !yield(sl, v) {
				return
			}
		}
	}
}

// each calls f with the key and state of each series not moved, in
// slot order.
func (t *flatTable) each(f func(key string, sl *flatSlot)) {
	for i, c := range t.ctrl {
		if c != 0 && !t.slots[i].moved() {
			f(t.key(t.keys[t.slots[i].key]), &t.slots[i])
		}
	}
}

// release empties the table, handing its arrays to the pools.
func (t *flatTable) release() {
	flatCtrlPool.give(t.ctrl)
	flatSlotPool.give(t.slots)
	*t = flatTable{op: t.op}
}

var (
	flatCtrlPool slotPool[uint8]
	flatSlotPool slotPool[flatSlot]
)
