package store

import (
	"cmp"
	"slices"
	"sort"
	"sync"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
)

// head holds the records acknowledged since the last flush, as the rows
// blocks the WAL carried, indexed by tenant and stream.
//
// Concurrency: insert takes the write lock; views take the read lock only
// to copy slice headers. Appending never changes an element a view can
// see, so views read without a lock afterwards.
type head struct {
	mu      sync.RWMutex
	blocks  []*rows.Block
	order   []uint64 // of each block: its place in the WAL
	bytes   int64    // encoded bytes held
	rows    int64
	tenants map[string]*headTenant
	key     []byte // insert's stream key, under mu

	// flightMu guards inFlight: the batches queued for this head whose
	// rows are not inserted yet (a list linked through Pending.prev and
	// Pending.next). Once the head is cut, it only shrinks.
	flightMu sync.Mutex
	inFlight *Pending
}

// addInFlight adds p to the batches in flight to h.
// REQUIRES: s.cut is held, and h is s.head.
func (h *head) addInFlight(p *Pending) {
	h.flightMu.Lock()
	p.next = h.inFlight
	if p.next != nil {
		p.next.prev = p
	}
	h.inFlight = p
	h.flightMu.Unlock()
}

// removeInFlight removes p (settled) from the batches in flight to h.
func (h *head) removeInFlight(p *Pending) {
	h.flightMu.Lock()
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		h.inFlight = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	}
	p.prev, p.next = nil, nil
	h.flightMu.Unlock()
}

func (h *head) hasInFlight() bool {
	h.flightMu.Lock()
	defer h.flightMu.Unlock()
	return h.inFlight != nil
}

// settleInFlight returns once every batch queued to h is inserted or
// has failed, settling each itself: it waits for the WAL's writer, never
// for a caller's Wait.
// REQUIRES: h has been cut (no batch is queued to it any more).
func (h *head) settleInFlight() {
	for {
		h.flightMu.Lock()
		p := h.inFlight
		h.flightMu.Unlock()
		if p == nil {
			return
		}
		_ = p.settle() // its error is its Wait's to report
	}
}

type headTenant struct {
	streams map[string]*headStream // by labels.String()
}

type headStream struct {
	labels record.Labels
	key    string
	refs   []headRef
	sorted bool // refs are in time order
}

// headRef is one row: its time, and where it is.
type headRef struct {
	time int64
	blk  uint32
	row  uint32
}

func newHead() *head { return &head{tenants: map[string]*headTenant{}} }

// insert adds a block's rows; order is its place in the WAL, which
// orders rows with equal times.
func (h *head) insert(b *rows.Block, order uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	bi := uint32(len(h.blocks))
	h.blocks = append(h.blocks, b)
	h.order = append(h.order, order)
	h.bytes += int64(len(b.Data))
	h.rows += int64(len(b.Rows))
	t := h.tenants[b.Tenant]
	if t == nil {
		t = &headTenant{streams: map[string]*headStream{}}
		h.tenants[b.Tenant] = t
	}
	// A one-line push has a stream or two: no allocation for them, nor
	// for the key of a stream the head holds already.
	var small [4]*headStream
	byIdx := small[:0]
	if len(b.Streams) > len(small) {
		byIdx = make([]*headStream, 0, len(b.Streams))
	}
	for _, ls := range b.Streams {
		h.key = ls.AppendString(h.key[:0])
		st := t.streams[string(h.key)]
		if st == nil {
			key := string(h.key)
			st = &headStream{labels: ls, key: key, sorted: true}
			t.streams[key] = st
		}
		byIdx = append(byIdx, st)
	}
	for i, r := range b.Rows {
		st := byIdx[r.Stream]
		if n := len(st.refs); n > 0 {
			if last := st.refs[n-1]; last.time > r.Time || last.time == r.Time && h.order[last.blk] > order {
				st.sorted = false
			}
		}
		st.refs = append(st.refs, headRef{time: r.Time, blk: bi, row: uint32(i)})
	}
}

func (h *head) size() (bytes, rows int64) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.bytes, h.rows
}

// headView is a head as it was when the view was taken.
type headView struct {
	blocks  []*rows.Block
	order   []uint64
	tenants map[string][]streamView
}

type streamView struct {
	labels record.Labels
	key    string
	refs   []headRef // sorted by time, ties in WAL order
}

// spans reports whether the stream's rows in the head reach into [from,
// to]: its first is at or before to and its last at or after from.
func (sv *streamView) spans(from, to int64) bool {
	return len(sv.refs) > 0 && sv.refs[0].time <= to && sv.refs[len(sv.refs)-1].time >= from
}

// rowsIn returns the stream's rows in the head with a time in [from, to].
func (sv *streamView) rowsIn(from, to int64) []headRef {
	refs := sv.refs
	lo := sort.Search(len(refs), func(i int) bool { return refs[i].time >= from })
	hi := sort.Search(len(refs), func(i int) bool { return refs[i].time > to })
	return refs[lo:hi]
}

// view returns the head's current content. Streams are sorted by key.
func (h *head) view() *headView {
	h.mu.RLock()
	v := &headView{blocks: h.blocks[:len(h.blocks):len(h.blocks)], order: h.order[:len(h.order):len(h.order)], tenants: map[string][]streamView{}}
	type pending struct {
		sv     streamView
		sorted bool
	}
	all := map[string][]pending{}
	for name, t := range h.tenants {
		for _, st := range t.streams {
			all[name] = append(all[name], pending{streamView{st.labels, st.key, st.refs[:len(st.refs):len(st.refs)]}, st.sorted})
		}
	}
	h.mu.RUnlock()
	for name, ps := range all {
		svs := make([]streamView, len(ps))
		for i, p := range ps {
			if !p.sorted {
				p.sv.refs = slices.Clone(p.sv.refs)
				sortRefs(p.sv.refs, v.order)
			}
			svs[i] = p.sv
		}
		slices.SortFunc(svs, func(a, b streamView) int { return cmp.Compare(a.key, b.key) })
		v.tenants[name] = svs
	}
	return v
}

// refBefore reports whether a goes before b: by time, ties in WAL order
// (order, by block), then by row.
func refBefore(a, b headRef, order []uint64) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	if oa, ob := order[a.blk], order[b.blk]; oa != ob {
		return oa < ob
	}
	return a.row < b.row
}

// sortRefs sorts refs by refBefore, in the shape head.insert leaves them:
// each block's refs appended together, blocks in the order they were
// inserted. Out of order are mostly (a) refs a few places late within a
// block's (clients that stamp a record before they take the lock that
// orders their records) and (b) whole blocks interleaved with others'
// (requests served at once, each a chain of blocks in time order). So:
// segments, cut where a block starts before the one ahead of it ends (in
// order, consecutive blocks stay one segment), are sorted by insertion,
// which puts (a) right in time linear in their number; then neighbouring
// segments are merged pairwise, log2 of their number times over, a merge
// of two segments already in order being a copy. A general sort spent
// n log n comparisons on it (a tenth of the server's CPU under a bulk
// NDJSON load from the SDK). A segment in no order gives up insertion
// after insertionBudget moves per ref and is sorted the general way.
func sortRefs(refs []headRef, order []uint64) {
	if len(refs) < 2 {
		return
	}
	bounds := []int{0}
	for i := 1; i < len(refs); i++ {
		if refs[i].blk != refs[i-1].blk && refBefore(refs[i], refs[i-1], order) {
			bounds = append(bounds, i)
		}
	}
	bounds = append(bounds, len(refs))
	for k := 0; k+1 < len(bounds); k++ {
		insertionSort(refs[bounds[k]:bounds[k+1]], order)
	}
	if len(bounds) == 2 {
		return
	}
	src, dst := refs, make([]headRef, len(refs))
	for len(bounds) > 2 {
		// Segment k of the next round is segments 2k and 2k+1 of this
		// one; bounds is rewritten in place, behind what is read.
		n := 0
		for k := 0; k+1 < len(bounds); k += 2 {
			lo, mid := bounds[k], bounds[k+1]
			if k+2 < len(bounds) {
				hi := bounds[k+2]
				mergeRefs(dst[lo:hi], src[lo:mid], src[mid:hi], order)
			} else {
				copy(dst[lo:mid], src[lo:mid])
			}
			bounds[n] = lo
			n++
		}
		bounds[n] = len(refs)
		bounds = bounds[:n+1]
		src, dst = dst, src
	}
	if &src[0] != &refs[0] {
		copy(refs, src)
	}
}

// insertionSort sorts refs by refBefore by insertion, or, past
// insertionBudget moves per ref, the general way.
func insertionSort(refs []headRef, order []uint64) {
	budget := insertionBudget * len(refs)
	for i := 1; i < len(refs); i++ {
		x := refs[i]
		j := i
		for j > 0 && refBefore(x, refs[j-1], order) {
			refs[j] = refs[j-1]
			j--
		}
		refs[j] = x
		if budget -= i - j; budget < 0 {
			slices.SortFunc(refs, func(a, b headRef) int {
				return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(order[a.blk], order[b.blk]), cmp.Compare(a.row, b.row))
			})
			return
		}
	}
}

// mergeRefs merges a and b, each sorted by refBefore, into dst.
// REQUIRES: len(dst) == len(a)+len(b).
func mergeRefs(dst, a, b []headRef, order []uint64) {
	if !refBefore(b[0], a[len(a)-1], order) {
		copy(dst, a)
		copy(dst[len(a):], b)
		return
	}
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if refBefore(b[j], a[i], order) {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// insertionBudget is the moves per ref insertionSort makes before it
// sorts the general way.
const insertionBudget = 8
