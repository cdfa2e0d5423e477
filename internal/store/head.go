package store

import (
	"cmp"
	"slices"
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
				slices.SortFunc(p.sv.refs, func(a, b headRef) int {
					return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(v.order[a.blk], v.order[b.blk]), cmp.Compare(a.row, b.row))
				})
			}
			svs[i] = p.sv
		}
		slices.SortFunc(svs, func(a, b streamView) int { return cmp.Compare(a.key, b.key) })
		v.tenants[name] = svs
	}
	return v
}
