package query

import (
	"hash/maphash"
	"slices"
	"sync"
	"unsafe"
)

// seriesTable holds the series of a range aggregation by the key of
// their labels (stage.Labels.AppendKey). It is an open-addressing table
// whose slot holds two independent 64-bit hashes of the key and the
// series: finding one of a million series reads one slot, where a Go
// map of strings reads a control word, a slot in another line and the
// key before the series, each a cache miss when the series are many
// (k8s-nodes, 65,536 series over 2M rows: 30% less time than a map).
// Two keys are taken for the same when both hashes agree, as
// ClickHouse's uniqExact takes strings by a 128-bit hash: for a billion
// series the chance that any two collide is below 10^-20.
//
// Keys are copied into chunks that never move, so the labels of a
// series can view its key. Series are kept in the order they were added.
type seriesTable struct {
	slots  []tableSlot // a power of two long, or nil
	used   int
	order  []*rangeSeries
	chunk  []byte // the free tail of the chunk keys are copied into
	chunkN int    // the size of the last chunk: from 1 KiB to keyChunk
	// marks are the keys of series counted by key alone: a count of
	// the distinct series at one step needs no series (rangeWorker.distinct).
	marks keySet
	// sealed: the slots are gone (seal); the series are read in order.
	sealed bool
	// flat, when not nil, holds states of series at one step in place of
	// series (flatTable): those of the keys of rows a worker batched
	// (flushKeys). A key a row taken alone asks for (get, add) has a
	// series instead, its state moved out of flat, where it is marked
	// moved (flatSlot.moved), so that the rows batched after it find the
	// series: a key is in one or the other, and a series takes its
	// samples in the rows' order. The readers (each, all, len, union)
	// take series once the flat states are made into them (unflat).
	flat *flatTable
}

type tableSlot struct {
	h1 uint64 // 0: empty (a key's h1 is never 0)
	h2 uint64
	s  *rangeSeries
}

// keyChunk is the size of the chunks keys are copied into.
const keyChunk = 64 << 10

// keySeeds seed the hashes of every table of the process, so that the
// hashes of one table's keys hold in another's (keySet.union).
var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func (t *seriesTable) hash(key []byte) (uint64, uint64) {
	return maphash.Bytes(keySeeds[0], key) | 1, maphash.Bytes(keySeeds[1], key)
}

func (t *seriesTable) hashString(key string) (uint64, uint64) {
	return t.hash(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// get returns the series of key, or nil; a state of key in the flat
// table is made into its series first.
func (t *seriesTable) get(key []byte) *rangeSeries {
	if t.flat != nil {
		return t.flatGet(key)
	}
	if t.used == 0 {
		return nil
	}
	h1, h2 := t.hash(key)
	return t.getHashed(h1, h2)
}

// flatGet is get for a table with a flat table.
func (t *seriesTable) flatGet(key []byte) *rangeSeries {
	h1, h2 := t.hash(key)
	f := t.flat
	sl := f.lookup(h1, h2)
	switch {
	case sl == nil:
		return nil
	case sl.moved():
		return t.getHashed(h1, h2)
	}
	s := f.series(sl)
	sl.move()
	t.addHashed(key, h1, h2, s)
	return s
}

// getHashed is get for a key whose hashes are h1 and h2 (hash). A
// sealed table's lookups panic (its slots are nil).
func (t *seriesTable) getHashed(h1, h2 uint64) *rangeSeries {
	if t.used == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h1 & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.h1 == 0 {
			return nil
		}
		if sl.h1 == h1 && sl.h2 == h2 {
			return sl.s
		}
	}
}

// touch reads the first slot of each of the hashes h1s and returns a
// value of them: loads that depend on nothing before them, which the
// core runs together, so that the lookups after it find the slots in
// the cache (a lookup by lookup, each a miss in a table of millions of
// series, waited for one miss at a time).
func (t *seriesTable) touch(h1s []uint64) uint64 {
	if t.used == 0 {
		return 0
	}
	mask := uint64(len(t.slots) - 1)
	x := uint64(0)
	for _, h1 := range h1s {
		x += t.slots[h1&mask].h2
	}
	return x
}

// add adds series s under key, which the table must not hold yet, and
// returns the copy of key the table keeps (it never moves).
func (t *seriesTable) add(key []byte, s *rangeSeries) string {
	h1, h2 := t.hash(key)
	if t.flat != nil {
		// The key's rows batched after it find this series.
		sl, _ := t.flat.find(key, h1, h2)
		sl.move()
	}
	return t.addHashed(key, h1, h2, s)
}

// addHashed is add for a key whose hashes are h1 and h2 (hash).
func (t *seriesTable) addHashed(key []byte, h1, h2 uint64, s *rangeSeries) string {
	k := t.keep(key)
	t.insert(h1, h2, s)
	s.key = k
	t.order = append(t.order, s)
	return k
}

// addString is add for a key that is a string already; the table keeps
// it as it is.
func (t *seriesTable) addString(key string, s *rangeSeries) {
	h1, h2 := t.hashString(key)
	t.insert(h1, h2, s)
	s.key = key
	t.order = append(t.order, s)
}

// union adds the series of o to t, each one whose key t holds merged
// into t's by merge. Its keys are hashed a batch at a time and their
// slots found in a pass that does nothing else, so that the misses of a
// table far larger than the caches overlap; t is sized for both first.
// When last, t is sealed after (its series are read in order from then
// on), and o's series it lacks are only appended to its order: their
// keys differ, so none is looked up again (the distinct users of two
// workers, 170,000 each: no table of 340,000 grown and filled).
func (t *seriesTable) union(o *seriesTable, merge func(into, s *rangeSeries), last bool) {
	// Flat states alone merge as flat states; beside series, they are
	// made series first. An empty o (a worker that found no row) leaves
	// t as it is.
	switch {
	case o.flat == nil && o.used == 0:
		return
	case o.flat != nil && t.flat != nil && t.used+o.used == 0 && len(t.flat.keys)+len(o.flat.keys) <= maxFlatKeys:
		t.flat.union(o.flat)
		o.flat = nil
		return
	case o.flat != nil && t.flat == nil && t.used+o.used == 0:
		t.flat, o.flat = o.flat, nil
		return
	}
	t.unflat()
	o.unflat()
	if last {
		t.order = slices.Grow(t.order, o.used)
		defer t.seal()
	} else {
		t.reserve(t.used + o.used)
	}
	defer o.seal()
	var h1, h2 [256]uint64
	var found [256]*rangeSeries
	for start := 0; start < len(o.order); start += len(h1) {
		order := o.order[start:min(start+len(h1), len(o.order))]
		for i, s := range order {
			h1[i], h2[i] = t.hashString(s.key)
		}
		for i := range order {
			found[i] = nil
			if len(t.slots) > 0 { // none when t was empty (last: it stays so)
				found[i] = t.getHashed(h1[i], h2[i])
			}
		}
		for i := range order {
			// o's keys differ: none of this batch made another's series.
			if found[i] != nil {
				merge(found[i], order[i])
				continue
			}
			if last {
				t.used++
			} else {
				t.insert(h1[i], h2[i], order[i])
			}
			t.order = append(t.order, order[i])
		}
	}
}

// seal hands the table's slots to tableSlotPool: from now on its
// series are read in order (each, all), never looked up or added to.
// Flat states stay flat until read.
func (t *seriesTable) seal() {
	tableSlotPool.give(t.slots)
	t.slots, t.sealed = nil, true
}

// getString is get for a key that is a string.
func (t *seriesTable) getString(key string) *rangeSeries {
	return t.get(unsafe.Slice(unsafe.StringData(key), len(key)))
}

func (t *seriesTable) insert(h1, h2 uint64, s *rangeSeries) {
	if (t.used+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	i := h1 & mask
	for t.slots[i].h1 != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = tableSlot{h1: h1, h2: h2, s: s}
	t.used++
}

func (t *seriesTable) grow() { t.resize(max(2*len(t.slots), 16)) }

// reserve makes room for n series without a resize.
func (t *seriesTable) reserve(n int) {
	size := max(len(t.slots), 16)
	for n*4 > size*3 {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
	t.order = slices.Grow(t.order, n-len(t.order))
}

// resize moves the series to n slots, a power of two.
func (t *seriesTable) resize(n int) {
	if t.sealed {
		panic("query: a series table added to after seal")
	}
	old := t.slots
	t.slots = tableSlotPool.take(n)
	defer tableSlotPool.give(old)
	mask := uint64(len(t.slots) - 1)
	for _, sl := range old {
		if sl.h1 == 0 {
			continue
		}
		i := sl.h1 & mask
		for t.slots[i].h1 != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = sl
	}
}

// keep copies key into the table's chunks.
func (t *seriesTable) keep(key []byte) string {
	if len(key) == 0 {
		return ""
	}
	if len(key) > len(t.chunk) {
		if len(key) > keyChunk/4 {
			return string(key)
		}
		t.chunkN = min(max(2*t.chunkN, 1<<10), keyChunk)
		t.chunk = make([]byte, max(t.chunkN, len(key)))
	}
	n := copy(t.chunk, key)
	k := unsafe.String(unsafe.SliceData(t.chunk), n)
	t.chunk = t.chunk[n:]
	return k
}

// len is the number of series.
func (t *seriesTable) len() int {
	t.unflat()
	return t.used
}

// all is the series in the order they were added.
func (t *seriesTable) all() []*rangeSeries {
	t.unflat()
	return t.order
}

// each calls f with each key and series, in the order they were added.
func (t *seriesTable) each(f func(key string, s *rangeSeries)) {
	t.unflat()
	for _, s := range t.order {
		f(s.key, s)
	}
}

// unflat makes series of the flat table's states (none when t has no
// flat table), adding them to t as add would; to the order alone when t
// is sealed (read in order from now on). No key of a state has a series
// (those that had were moved). Their keys view the flat table's chunks.
func (t *seriesTable) unflat() {
	f := t.flat
	if f == nil {
		return
	}
	t.flat = nil
	defer f.release()
	if t.sealed {
		t.order = slices.Grow(t.order, f.used)
	} else {
		t.reserve(t.used + f.used)
	}
	f.each(func(key string, sl *flatSlot) {
		s := f.series(sl)
		s.key = key
		if t.sealed {
			t.used++
		} else {
			h1, h2 := t.hashString(key) // the slot keeps 32 bits of h2
			t.insert(h1, h2, s)
		}
		t.order = append(t.order, s)
	})
}

// keySet is a set of keys by their two hashes (seriesTable.hash), the
// keys themselves not kept: what a count of distinct series needs. Its
// slots hold no pointer, so the collector does not scan them.
type keySet struct {
	slots []keySlot // a power of two long, or nil
	used  int
}

type keySlot struct{ h1, h2 uint64 } // h1 0: empty

// add adds the key of hashes h1 and h2, returning the bytes the set grew
// by.
func (s *keySet) add(h1, h2 uint64) (grew int64) {
	if (s.used+1)*4 > len(s.slots)*3 {
		grew = s.resize(grownSize(len(s.slots)))
	}
	mask := uint64(len(s.slots) - 1)
	for i := h1 & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.h1 == 0 {
			*sl = keySlot{h1, h2}
			s.used++
			return grew
		}
		if sl.h1 == h1 && sl.h2 == h2 {
			return grew
		}
	}
}

// touch reads the first slot of each of the hashes h1s, as
// seriesTable.touch does, so that the adds after it find them in the
// cache.
func (s *keySet) touch(h1s []uint64) uint64 {
	if s.used == 0 {
		return 0
	}
	mask := uint64(len(s.slots) - 1)
	x := uint64(0)
	for _, h1 := range h1s {
		x += s.slots[h1&mask].h2
	}
	return x
}

// grownSize is the size a set of size n grows to: four times once it is
// far larger than the caches (4 MiB), where each resize's moves are
// mostly misses (a set of distinct users grew 2x nine times, 23% of the
// count's profile). From 64 Ki slots it made a set of 65,536 hosts
// twice the size it needed, and its adds slower.
func grownSize(n int) int {
	if n >= 1<<18 {
		return 4 * n
	}
	return max(2*n, 1024)
}

// resize moves the keys to n slots, returning the bytes that added.
func (s *keySet) resize(n int) int64 {
	old := s.slots
	s.slots = keySlotPool.take(n)
	defer keySlotPool.give(old)
	mask := uint64(n - 1)
	for _, sl := range old {
		if sl.h1 == 0 {
			continue
		}
		i := sl.h1 & mask
		for s.slots[i].h1 != 0 { // the keys differ: no compare
			i = (i + 1) & mask
		}
		s.slots[i] = sl
	}
	return int64(16 * (n - len(old)))
}

// union adds the keys of o, leaving o empty. Keys taken in slot order
// from a table larger than the one they go to would pile up in runs
// there (each slot of o's second half lands where its first half's
// went): the larger set takes the smaller's keys, into room for both.
func (s *keySet) union(o *keySet) {
	if o.used == 0 {
		return
	}
	if len(o.slots) > len(s.slots) {
		*s, *o = *o, *s
	}
	n := max(len(s.slots), 1024)
	for (s.used+o.used)*4 > n*3 {
		n *= 2
	}
	if n > len(s.slots) {
		s.resize(n)
	}
	defer o.release()
	for _, sl := range o.slots {
		if sl.h1 != 0 {
			s.add(sl.h1, sl.h2)
		}
	}
}

// release empties the set, handing its slots to keySlotPool.
func (s *keySet) release() {
	keySlotPool.give(s.slots)
	*s = keySet{}
}

// slotPool holds the large slot arrays of the tables and sets that
// queries let go, by length, so that the next query's take pages the
// process has written already. A fresh server's count of 390,000
// distinct users took 16,400 minor page faults a query (about 7 µs each
// on a VM), 97% of them at the first writes to new slot arrays, until
// its heap had grown: its first six queries took 150-230 ms, the rest
// 40-47. A warm one still faults: after each collection the runtime
// hands the free pages above about 110% of the heap in use back to the
// OS, and the next query that allocates as much writes them anew (a
// high-cardinality topk, 5,000-30,000 faults a query, a third of them
// in series tables). Arrays given back are cleared then, so that the
// pool keeps no series alive.
type slotPool[T any] struct {
	mu    sync.Mutex
	free  map[int][][]T
	bytes int
}

var (
	keySlotPool   slotPool[keySlot]
	tableSlotPool slotPool[tableSlot]
)

// Arrays of at least minPooledSlots slots (1 MiB of key slots) are
// pooled, up to maxPooledSlotBytes in each pool; smaller ones the
// allocator reuses well.
const (
	minPooledSlots     = 1 << 16
	maxPooledSlotBytes = 96 << 20
)

// take returns n empty slots, from the pool when it has them.
func (p *slotPool[T]) take(n int) []T {
	if n >= minPooledSlots {
		p.mu.Lock()
		if list := p.free[n]; len(list) > 0 {
			s := list[len(list)-1]
			p.free[n] = list[:len(list)-1]
			p.bytes -= int(unsafe.Sizeof(s[0])) * n
			p.mu.Unlock()
			return s
		}
		p.mu.Unlock()
	}
	return make([]T, n)
}

// give hands slots nobody reads any more to the pool.
func (p *slotPool[T]) give(s []T) {
	if len(s) < minPooledSlots {
		return
	}
	size := int(unsafe.Sizeof(s[0])) * len(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+size > maxPooledSlotBytes {
		return
	}
	clear(s)
	if p.free == nil {
		p.free = map[int][][]T{}
	}
	p.free[len(s)] = append(p.free[len(s)], s)
	p.bytes += size
}
