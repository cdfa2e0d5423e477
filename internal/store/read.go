package store

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
)

// livePart is an open part, shared by snapshots and counted so that a
// merged or expired part is closed and deleted only once no reader has it.
type livePart struct {
	info    partInfo
	rd      *part.Reader
	streams map[string]uint32 // labels.String() -> the part's stream index
	refs    atomic.Int32      // one for the store's list, one per snapshot
	onFree  func(*livePart)
	noMerge bool // a merge of it met damage; guarded by Store.mu
}

func (p *livePart) acquire() { p.refs.Add(1) }

func (p *livePart) release() {
	if p.refs.Add(-1) == 0 {
		p.onFree(p)
	}
}

// Snapshot is a consistent view of the store: the rows acknowledged
// before it was taken, in the head and in parts, pinned until Release.
//
// Concurrency: a Snapshot may be read by several goroutines at once.
type Snapshot struct {
	heads    []*headView // oldest first
	parts    []*livePart // by id
	badParts []Damage    // unreadable parts (shared with the Store: never changed)
	strict   bool        // FailOnDamage

	dmgMu  sync.Mutex
	damage []Damage // what reads skipped

	// The block cache the reads go through, entered at epoch until
	// Release: what it holds stays until then.
	cache *part.BlockCache
	epoch uint64
}

// Release unpins the snapshot's parts and what its reads found in the
// block cache: nothing read from the snapshot may be used afterwards.
func (sn *Snapshot) Release() {
	for _, p := range sn.parts {
		p.release()
	}
	sn.parts = nil
	if sn.cache != nil {
		sn.cache.Leave(sn.epoch)
		sn.cache = nil
	}
}

// Tenants returns the tenants with data, sorted.
func (sn *Snapshot) Tenants() []string {
	seen := map[string]bool{}
	for _, h := range sn.heads {
		for t := range h.tenants {
			seen[t] = true
		}
	}
	for _, p := range sn.parts {
		seen[p.info.Tenant] = true
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Stream is one stream of a tenant: its labels, and their String, the
// key the store finds its rows by. A reader of many streams keeps the
// key the store gives it rather than writing it again for each read.
type Stream struct {
	Labels record.Labels
	Key    string
}

// StreamOf returns the Stream of labels ls.
func StreamOf(ls record.Labels) Stream { return Stream{Labels: ls, Key: ls.String()} }

// Streams returns the streams of a tenant with data in [from, to],
// sorted by their key.
//
// The unreadable parts of the tenant with rows in [from, to] are noted
// as skipped (Damage).
func (sn *Snapshot) Streams(tenant string, from, to int64) []Stream {
	sn.noteBadParts(tenant, from, to)
	if out, ok := sn.streamsOfOnePart(tenant, from, to); ok {
		return out
	}
	return sn.streamsMerged(tenant, from, to)
}

// streamsMerged is Streams from every part and head: a set of their
// streams, sorted.
func (sn *Snapshot) streamsMerged(tenant string, from, to int64) []Stream {
	seen := map[string]record.Labels{}
	for _, h := range sn.heads {
		for _, sv := range h.tenants[tenant] {
			if sv.spans(from, to) {
				seen[sv.key] = sv.labels
			}
		}
	}
	var found []bool // per stream of a part, whether it is in seen
	for _, p := range sn.parts {
		if p.info.Tenant != tenant || p.info.MaxTime < from || p.info.MinTime > to {
			continue
		}
		found = append(found[:0], make([]bool, len(p.rd.Streams))...)
		for i := range p.rd.Blocks {
			b := &p.rd.Blocks[i]
			if !found[b.Stream] && b.MaxTime >= from && b.MinTime <= to {
				found[b.Stream] = true
				seen[p.rd.StreamKey(b.Stream)] = p.rd.Streams[b.Stream]
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Stream, len(keys))
	for i, k := range keys {
		out[i] = Stream{Labels: seen[k], Key: k}
	}
	return out
}

// streamsOfOnePart is Streams when one part alone has rows of the tenant
// in [from, to] (a store merged to one part a day, and a range within
// the day) and its streams are in order: they come in it, without a set
// and a sort. ok false: not so.
func (sn *Snapshot) streamsOfOnePart(tenant string, from, to int64) (out []Stream, ok bool) {
	for _, h := range sn.heads {
		for _, sv := range h.tenants[tenant] {
			if sv.spans(from, to) {
				return nil, false
			}
		}
	}
	var one *livePart
	for _, p := range sn.parts {
		if p.info.Tenant != tenant || p.info.MaxTime < from || p.info.MinTime > to {
			continue
		}
		if one != nil || !p.rd.StreamKeysSorted() {
			return nil, false
		}
		one = p
	}
	if one == nil {
		return []Stream{}, true
	}
	found := make([]bool, len(one.rd.Streams))
	n := 0
	for i := range one.rd.Blocks {
		b := &one.rd.Blocks[i]
		if !found[b.Stream] && b.MaxTime >= from && b.MinTime <= to {
			found[b.Stream] = true
			n++
		}
	}
	out = make([]Stream, 0, n)
	for s, ok := range found {
		if ok {
			out = append(out, Stream{Labels: one.rd.Streams[s], Key: one.rd.StreamKey(uint32(s))})
		}
	}
	return out, true
}

// RowFunc receives one row; its field names index names. Both are valid
// only during the call.
type RowFunc func(r *rows.Row, names []string) error

// ScanOptions shape a scan.
type ScanOptions struct {
	// Shard, when its N is above 1, reads only the share of the stream
	// it names (see Shard).
	Shard Shard

	// Backward yields the newest rows first.
	Backward bool
	// Tokens are token hashes (part.TokenHash) that every row wanted
	// holds: a block whose token filter lacks one of them is skipped
	// unread. The scan may still yield rows without them (the head has
	// no filters, and filters have false positives): the caller checks
	// each row.
	Tokens []uint64
	// Needles are edge tokens of a literal every row wanted holds: a
	// block whose filter lacks one and whose longest token is no longer
	// than it is skipped unread.
	Needles []Needle
	// Any are groups of literals of which every row wanted holds one
	// (a regexp's alternatives, error|fatal): a block whose token filter
	// rules out every literal of a group, as Tokens and Needles rule out
	// one, is skipped unread.
	Any [][]Probe
	// LineAny are groups as Any's that only a row's line holds, not a
	// field stored out of it (the literals a regexp or pattern parser
	// needs to set a label that structured metadata may set instead): they
	// rule out a block only when every field of its rows is in its line,
	// or without Meta.
	LineAny [][]Probe
	// Drop drops the pages of each block once read, and adds no block to
	// the block cache: for a scan of everything, which reads each block
	// once.
	Drop bool
	// LinesOnly yields rows with their time and line but without Fields
	// or Msg, which spares most of a stored block's decoding. (Rows of
	// the head keep theirs.)
	LinesOnly bool
	// Meta, with LinesOnly, still yields the Fields (and Msg) of the
	// stored rows of every block that holds a field stored out of its
	// line, such as a Loki push's structured metadata; such blocks are
	// read whole, without Contains and NoLines.
	Meta bool
	// Contains, with LinesOnly, leaves out the stored rows whose line
	// lacks one of these clauses (holds none of a clause's literals),
	// without rebuilding their lines. (The head's rows all come: the
	// caller still checks each row.)
	Contains []Clause
	// NoLines, with Contains, yields the stored rows found to hold every
	// clause without their line (Line nil): for callers that only count.
	// Rows whose line is given (the head's, and some stored ones) are the
	// caller's to check.
	NoLines bool
	// Newest, with Backward, says the caller wants at most the newest
	// Newest rows of the stream that hold the clauses (every row, without
	// Contains): a stored block tests and makes only as many of its rows,
	// from the newest, as it takes to find them.
	Newest int
	// NewestFloor, with Newest, is asked before each stored block is
	// read: a time before which the caller wants no row any more (the
	// farthest of the lines it keeps across streams, which only rises),
	// if it has one. A block whose rows are all older is not read; one
	// that is makes no older row.
	NewestFloor func() (t int64, ok bool)
	// FirstNewest, with Backward and without Newest, says the caller
	// may stop early but drops some rows (a pipeline's filters): a stored
	// block first makes only its newest FirstNewest rows (that hold the
	// clauses), and the rest of its rows only when the caller reads past
	// them. NewestFloor applies as with Newest.
	FirstNewest int
	// BlockCount, with NoLines, is asked of each stored block before it
	// is read, with the block's time range: when it returns a function,
	// the block's rows that hold the clauses are not yielded but counted,
	// and the function is given their number (the caller only counts, and
	// the block's rows all count alike).
	BlockCount func(minTime, maxTime int64) func(n int) error
	// CountAll, with BlockCount and without Contains, says every row
	// counts (the caller has no filter): a stored block BlockCount takes
	// is counted from the part's index, its rows never decoded, unless,
	// with Meta, its rows may have structured metadata (which are labels
	// to the caller): then its rows are yielded.
	CountAll bool
	// MetaOK, with Meta, takes a stored block whose rows may have
	// structured metadata (asked after reading its columns' directory,
	// part.Block.MetaColumns) as if they had none: the caller reads none
	// of the metadata's names, so its block is read (or counted) as a
	// block without Meta is.
	MetaOK MetaFunc
}

// Scan calls fn for every row of one stream of a tenant with a time in
// [from, to], in time order (rows with equal times in the order they were
// stored; reversed when backward). An error fn returns ends the scan and
// is returned.
func (sn *Snapshot) Scan(ctx context.Context, tenant string, stream Stream, from, to int64, opts ScanOptions, fn RowFunc) error {
	key := stream.Key
	var its []rowIter
	for _, p := range sn.parts {
		if p.info.Tenant != tenant || p.info.MaxTime < from || p.info.MinTime > to {
			continue
		}
		if si, ok := p.streams[key]; ok {
			if it := newPartIter(p.rd, si, from, to, opts); it != nil {
				it.skip = sn.skipper(p)
				its = append(its, it)
			}
		}
	}
	for _, h := range sn.heads {
		if sv := h.stream(tenant, key); sv != nil && opts.Shard.head() {
			its = append(its, newHeadIter(h, sv, from, to, opts.Backward))
		}
	}
	return mergeRows(ctx, its, opts.Backward, fn)
}

// CountIndexed returns the number of rows of one stream of a tenant
// (key: its labels' String) with a time in [from, to], in the share
// shard names, when the parts' index says it without a block read: each
// stored block of the stream that the range touches lies within it and
// holds no field out of its lines (which a reader may take for labels:
// structured metadata), and the heads hold none of its rows in the
// range. ok false: the rows must be read (Scan). A stream-label question
// (`count by (host) (count_over_time({...}[1h]))`) asks it of every
// stream, where a Scan costs an iterator and its merge per stream.
func (sn *Snapshot) CountIndexed(tenant, key string, from, to int64, shard Shard) (n int, ok bool) {
	for _, h := range sn.heads {
		if sv := h.stream(tenant, key); sv != nil && shard.head() && len(sv.rowsIn(from, to)) > 0 {
			return 0, false
		}
	}
	for p, i := range sn.storedBlocks(tenant, key, from, to, shard) {
		b := &p.rd.Blocks[i]
		if b.MinTime < from || b.MaxTime > to || b.Fields != part.FieldsInLine {
			return 0, false
		}
		n += b.Rows
	}
	return n, true
}

// StreamNewest returns the time of the newest row of a stream of a
// tenant (key: its labels' String) in [from, to] as far as the head and
// the parts' index tell without reading a block: a stored block's latest
// time in range is taken to be its newest row's (at most to), so the time
// returned may be later than any row's but never earlier. False: no row.
func (sn *Snapshot) StreamNewest(tenant, key string, from, to int64) (int64, bool) {
	newest, ok := int64(0), false
	for _, h := range sn.heads {
		if sv := h.stream(tenant, key); sv != nil {
			if in := sv.rowsIn(from, to); len(in) > 0 && (!ok || in[len(in)-1].time > newest) {
				newest, ok = in[len(in)-1].time, true
			}
		}
	}
	for p, i := range sn.storedBlocks(tenant, key, from, to, Shard{}) {
		if t := min(p.rd.Blocks[i].MaxTime, to); !ok || t > newest {
			newest, ok = t, true
		}
	}
	return newest, ok
}

// storedBlocks yields the stored blocks of one stream of a tenant (key:
// its labels' String) with rows in [from, to], in the share shard names:
// each block's part and its index there.
func (sn *Snapshot) storedBlocks(tenant, key string, from, to int64, shard Shard) iter.Seq2[*livePart, int] {
	return func(yield func(*livePart, int) bool) {
		for _, p := range sn.parts {
			if p.info.Tenant != tenant || p.info.MaxTime < from || p.info.MinTime > to {
				continue
			}
			si, ok := p.streams[key]
			if !ok {
				continue
			}
			lo, hi := p.rd.StreamBlocks(si)
			for i := lo; i < hi; i++ {
				if b := &p.rd.Blocks[i]; b.Stream == si && b.MaxTime >= from && b.MinTime <= to && shard.block(i) && !yield(p, i) {
					return
				}
			}
		}
	}
}

// Shard names one of N shares of a stream's rows, so that N workers can
// read one stream together: stored block i of a part (its index in the
// part) is in share i mod N, and the head's rows are in share 0. A Shard
// with N of 0 or 1 is the whole stream.
type Shard struct{ I, N int }

// block reports whether stored block i is in the share.
func (s Shard) block(i int) bool { return s.N <= 1 || i%s.N == s.I }

// head reports whether the head's rows are in the share.
func (s Shard) head() bool { return s.N <= 1 || s.I == 0 }

// rowIter yields rows of one stream in time order (or reversed).
type rowIter interface {
	next() bool
	row() (*rows.Row, []string)
	err() error
	close()
}

// mergeRows merges iterators by time; ties go to the earlier iterator
// (to the later one when backward, so that a backward scan is the
// forward one reversed). It closes every iterator.
func mergeRows(ctx context.Context, its []rowIter, backward bool, fn RowFunc) error {
	defer func() {
		for _, it := range its {
			it.close()
		}
	}()
	if backward {
		slices.Reverse(its)
	}
	live := make([]rowIter, 0, len(its))
	for _, it := range its {
		if it.next() {
			live = append(live, it)
		} else if err := it.err(); err != nil {
			return err
		}
	}
	for n := 0; len(live) > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		best := 0
		if len(live) > 1 {
			bt := rowTime(live[0])
			for i := 1; i < len(live); i++ {
				if t := rowTime(live[i]); t < bt && !backward || t > bt && backward {
					best, bt = i, t
				}
			}
		}
		r, names := live[best].row()
		if err := fn(r, names); err != nil {
			return err
		}
		if !live[best].next() {
			if err := live[best].err(); err != nil {
				return err
			}
			live = slices.Delete(live, best, best+1)
		}
	}
	return nil
}

func rowTime(it rowIter) int64 {
	r, _ := it.row()
	return r.Time
}

// stream returns a head view's stream of a tenant by its key, or nil.
func (h *headView) stream(tenant, key string) *streamView {
	svs := h.tenants[tenant]
	i := sort.Search(len(svs), func(i int) bool { return svs[i].key >= key })
	if i < len(svs) && svs[i].key == key {
		return &svs[i]
	}
	return nil
}

type headIter struct {
	h        *headView
	refs     []headRef
	i        int
	backward bool
	r        rows.Row
	fields   []rows.Field
}

func newHeadIter(h *headView, sv *streamView, from, to int64, backward bool) *headIter {
	it := &headIter{h: h, refs: sv.rowsIn(from, to), i: -1, backward: backward}
	if backward {
		it.i = len(it.refs)
	}
	return it
}

func (it *headIter) next() bool {
	if it.backward {
		it.i--
	} else {
		it.i++
	}
	if it.i < 0 || it.i >= len(it.refs) {
		return false
	}
	ref := it.refs[it.i]
	it.fields = it.h.blocks[ref.blk].Row(int(ref.row), &it.r, it.fields)
	return true
}

func (it *headIter) row() (*rows.Row, []string) {
	return &it.r, it.h.blocks[it.refs[it.i].blk].Names
}

func (it *headIter) err() error { return nil }

func (it *headIter) close() {}

// blockPool keeps decoded-block buffers between scans: a block's buffers
// grow to the size of the largest block, and a new one per stream would
// make every scan re-grow them.
var blockPool = sync.Pool{New: func() any { return new(part.Block) }}

type partIter struct {
	count    func(minTime, maxTime int64) func(n int) error // ScanOptions.BlockCount
	countAll bool                                           // ScanOptions.CountAll
	meta     bool                                           // ScanOptions.Meta
	metaOK   MetaFunc                                       // ScanOptions.MetaOK
	// cur is the question of the current block's read: lines, or
	// noMeta (lines without Meta) for a block metaOK took.
	cur    *part.LineRead
	noMeta part.LineRead
	plain  bool // metaOK found the current block's rows free of metadata, or took them
	// skip, if set, is asked about a block that does not read: true
	// means it was noted as damaged and the read goes on without it.
	skip     func(error) bool
	rd       *part.Reader
	drop     bool // drop each block's pages once read
	backward bool
	blocks   []int
	bi       int
	blk      *part.Block
	lines    *part.LineRead       // a lines read's question, or nil: rows whole
	floor    func() (int64, bool) // ScanOptions.NewestFloor
	// first: blocks are read their newest rows first (FirstNewest);
	// chunk: the current block was, and the rest of its rows are not
	// read yet.
	first, chunk bool
	i            int
	from, to     int64
	e            error
}

// newPartIter returns the iterator over the blocks of one stream of a
// part that may hold rows for opts in [from, to], or nil when none may
// (a needle's filters pass few blocks of few streams: the others cost no
// iterator).
func newPartIter(rd *part.Reader, stream uint32, from, to int64, opts ScanOptions) *partIter {
	blocks := partBlocks(rd, stream, from, to, opts)
	if len(blocks) == 0 {
		return nil
	}
	if opts.Backward {
		slices.Reverse(blocks)
	}
	it := &partIter{rd: rd, from: from, to: to, bi: -1, drop: opts.Drop, backward: opts.Backward, blocks: blocks, blk: blockPool.Get().(*part.Block)}
	it.blk.Scan = opts.Drop
	if opts.LinesOnly {
		q := &part.LineRead{Meta: opts.Meta, Contains: opts.Contains, NoLines: opts.NoLines && len(opts.Contains) > 0}
		if q.NoLines {
			it.count = opts.BlockCount // blocks it takes are counted (CountLines)
		}
		switch {
		case opts.Backward && opts.Newest > 0:
			q.Newest, q.From, q.To = opts.Newest, from, to
			it.floor = opts.NewestFloor
		case opts.Backward && opts.FirstNewest > 0:
			q.Newest, q.From, q.To = opts.FirstNewest, from, to
			it.floor, it.first = opts.NewestFloor, true
		}
		it.lines = q
		if q.Meta && opts.MetaOK != nil {
			it.noMeta = *q
			it.noMeta.Meta = false
		}
	}
	if opts.Meta {
		it.metaOK = opts.MetaOK
	}
	if opts.CountAll && len(opts.Contains) == 0 && opts.BlockCount != nil {
		it.count, it.countAll, it.meta = opts.BlockCount, true, opts.Meta
	}
	return it
}

// partBlocks returns the blocks of one stream of a part with rows in
// [from, to], in the share opts.Shard names, that its filters say may
// hold opts' tokens and needles, in order.
func partBlocks(rd *part.Reader, stream uint32, from, to int64, opts ScanOptions) []int {
	var blocks []int
	lo, hi := rd.StreamBlocks(stream)
blocks:
	for i := lo; i < hi; i++ {
		b := &rd.Blocks[i]
		if b.Stream != stream || b.MaxTime < from || b.MinTime > to || !opts.Shard.block(i) {
			continue
		}
		lineAny := opts.LineAny
		if opts.Meta && b.Fields != part.FieldsInLine {
			lineAny = nil
		}
		if len(opts.Tokens) > 0 || len(opts.Needles) > 0 || len(opts.Any) > 0 || len(lineAny) > 0 {
			f := rd.Filter(i)
			if !mayHold(f, b.LongestToken, opts.Tokens, opts.Needles) {
				continue blocks
			}
			for _, groups := range [2][][]Probe{opts.Any, lineAny} {
				for _, g := range groups {
					if !slices.ContainsFunc(g, func(p Probe) bool { return mayHold(f, b.LongestToken, p.Tokens, p.Needles) }) {
						continue blocks
					}
				}
			}
		}
		blocks = append(blocks, i)
	}
	return blocks
}

func (it *partIter) next() bool {
	for {
		if it.bi >= 0 {
			if it.backward {
				for it.i--; it.i >= 0; it.i-- {
					if t := it.blk.Rows[it.i].Time; t >= it.from && t <= it.to {
						return true
					}
				}
				if it.chunk {
					// Read past the block's newest rows: the rest of them.
					if err := it.readRest(); err != nil {
						if it.skipBlock(err) {
							continue
						}
						return false
					}
					continue
				}
			} else {
				for it.i++; it.i < len(it.blk.Rows); it.i++ {
					if t := it.blk.Rows[it.i].Time; t >= it.from && t <= it.to {
						return true
					}
				}
			}
		}
		// The rows of the block done with may view its pages (streams
		// stored raw): drop them only now.
		if it.drop && it.bi >= 0 && it.bi < len(it.blocks) {
			it.rd.DropBlock(it.blocks[it.bi])
		}
		it.bi++
		if it.bi >= len(it.blocks) {
			return false
		}
		it.cur, it.plain, it.chunk = it.lines, false, false
		if it.floor != nil {
			if t, ok := it.floor(); ok {
				if it.rd.Blocks[it.blocks[it.bi]].MaxTime < t {
					it.blk.Rows, it.i = it.blk.Rows[:0], -1
					continue // every row older than the caller wants
				}
				it.lines.From = max(it.from, t)
				it.noMeta.From = it.lines.From
			}
		}
		if it.metaOK != nil {
			free, err := it.metaFree()
			if err != nil {
				if it.skipBlock(err) {
					continue
				}
				return false
			}
			it.plain = free
			if free && it.lines != nil {
				it.cur = &it.noMeta
			}
		}
		if it.countAll {
			counted, err := it.countFromIndex()
			if err != nil {
				if it.skipBlock(err) {
					continue
				}
				return false
			}
			if counted {
				it.blk.Rows, it.i = it.blk.Rows[:0], -1
				continue
			}
		} else if it.count != nil {
			bm := &it.rd.Blocks[it.blocks[it.bi]]
			if fn := it.count(bm.MinTime, bm.MaxTime); fn != nil {
				n, err := it.rd.CountLines(it.blocks[it.bi], it.blk, it.cur)
				if !errors.Is(err, part.ErrOutOfLine) { // else its rows are read below
					if err != nil && it.skip != nil && it.skip(err) {
						it.blk.Rows, it.i = it.blk.Rows[:0], -1
						continue
					}
					if err == nil {
						err = fn(n)
					}
					if err != nil {
						it.e = err
						return false
					}
					it.blk.Rows, it.i = it.blk.Rows[:0], -1
					continue
				}
			}
		}
		if err := it.read(); err != nil {
			if it.skipBlock(err) {
				continue
			}
			return false
		}
		it.i = -1
		if it.backward {
			it.i = len(it.blk.Rows)
			// A read of the newest rows first that kept as many as it
			// could has more.
			it.chunk = it.first && it.cur != nil && it.cur.Newest > 0 && len(it.blk.Rows) == it.cur.Newest
		}
	}
}

// skipBlock reports whether the current block, whose read failed with
// err, is skipped (noted as damaged); else err ends the iteration.
func (it *partIter) skipBlock(err error) bool {
	if it.skip != nil && it.skip(err) {
		it.blk.Rows, it.i = it.blk.Rows[:0], -1
		return true
	}
	it.e = err
	return false
}

// readRest reads the current block again, every row that holds the
// clauses, after a read of its newest (it.chunk), and places the walk
// back at the newest row that read did not keep.
func (it *partIter) readRest() error {
	it.chunk = false
	first, rest := *it.cur, *it.cur // the newest rows' read, and every row's
	rest.Newest, rest.From, rest.To = 0, 0, 0
	if err := it.rd.ReadLines(it.blocks[it.bi], it.blk, &rest); err != nil {
		return err
	}
	// The rows of the first read are the newest of those in its time
	// range (the rows are in time order): the last as many of these.
	k, i := 0, len(it.blk.Rows)
	for i > 0 && k < first.Newest {
		i--
		if t := it.blk.Rows[i].Time; t >= first.From && t <= first.To {
			k++
		}
	}
	it.i = i
	return nil
}

// read reads the current block: its lines, or its rows whole.
func (it *partIter) read() error {
	if it.cur != nil {
		return it.rd.ReadLines(it.blocks[it.bi], it.blk, it.cur)
	}
	return it.rd.ReadRows(it.blocks[it.bi], it.blk)
}

// metaFree reports whether the current block's rows have no structured
// metadata, or metaOK takes the block's: then the caller sees it as a
// block without metadata. It reads the block's columns' directory only
// when the index says its rows may have some.
func (it *partIter) metaFree() (bool, error) {
	i := it.blocks[it.bi]
	out, err := it.rd.BlockOutOfLine(i, it.blk)
	if err != nil || !out {
		return !out, err
	}
	if err := it.rd.ReadColumns(i, it.blk); err != nil {
		return false, err
	}
	return it.metaOK(it.blk), nil
}

// countFromIndex counts the rows of the current block from the part's
// index if BlockCount takes the block and, with Meta, its rows have no
// structured metadata (or MetaOK took them); it reports whether it did.
func (it *partIter) countFromIndex() (bool, error) {
	i := it.blocks[it.bi]
	bm := &it.rd.Blocks[i]
	fn := it.count(bm.MinTime, bm.MaxTime)
	if fn == nil {
		return false, nil
	}
	if it.meta && !it.plain {
		// Its rows may have metadata, which are labels to the caller.
		if out, err := it.rd.BlockOutOfLine(i, it.blk); err != nil || out {
			return false, err
		}
	}
	return true, fn(bm.Rows)
}

func (it *partIter) row() (*rows.Row, []string) { return &it.blk.Rows[it.i], it.blk.Names }

func (it *partIter) err() error { return it.e }

func (it *partIter) close() {
	if it.blk != nil {
		blockPool.Put(it.blk)
		it.blk = nil
	}
}

// LineFunc receives one stored row with its tenant and stream labels.
type LineFunc func(tenant string, stream record.Labels, r *rows.Row) error

// Lines calls fn for every row of the given tenants (all when none is
// given) with a time in [from, to] whose stream match accepts (all when
// match is nil), ordered by tenant, then stream, then time.
func (sn *Snapshot) Lines(ctx context.Context, tenants []string, from, to int64, match func(record.Labels) bool, fn LineFunc) error {
	if len(tenants) == 0 {
		tenants = sn.Tenants()
	}
	for _, t := range tenants {
		for _, st := range sn.Streams(t, from, to) {
			if match != nil && !match(st.Labels) {
				continue
			}
			err := sn.Scan(ctx, t, st, from, to, ScanOptions{}, func(r *rows.Row, _ []string) error { return fn(t, st.Labels, r) })
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Literal is a text a row wanted contains (in ScanOptions.Contains),
// exactly or ignoring ASCII case.
type Literal = part.Literal

// Clause is a set of literals every row wanted contains one of
// (ScanOptions.Contains): an alternation, error|fatal, or a literal
// alone.
type Clause = part.Clause

// Needle is an edge token of a searched literal (ScanOptions.Needles).
type Needle = part.Needle

// AppendLiteralNeedles appends the needles (ScanOptions.Needles) of a
// literal every line wanted contains.
func AppendLiteralNeedles(dst []Needle, lit []byte) []Needle {
	return part.AppendLiteralNeedles(dst, lit)
}

// Probe is what a block's token filter is asked of one literal: the
// tokens and needles every text holding it has (ScanOptions.Any).
type Probe struct {
	Tokens  []uint64
	Needles []Needle
}

// NewProbe returns the probe of a literal. One with no tokens or needles
// rules no block out.
func NewProbe(lit []byte) Probe {
	return Probe{Tokens: AppendLiteralTokens(nil, lit), Needles: AppendLiteralNeedles(nil, lit)}
}

// Empty reports whether the probe rules no block out.
func (p Probe) Empty() bool { return len(p.Tokens) == 0 && len(p.Needles) == 0 }

// mayHold reports whether a block, by its token filter and its longest
// token, may hold a text with the tokens and needles.
func mayHold(f part.Filter, longest int, tokens []uint64, needles []Needle) bool {
	for _, h := range tokens {
		if !f.MayContain(h) {
			return false
		}
	}
	for _, n := range needles {
		if longest <= n.Len && !f.MayContain(n.Hash) {
			return false
		}
	}
	return true
}

// AppendLiteralTokens appends the token hashes (for ScanOptions.Tokens)
// that every line containing lit holds.
func AppendLiteralTokens(dst []uint64, lit []byte) []uint64 {
	return part.AppendLiteralTokens(dst, lit)
}

// StreamStats counts what a tenant's streams hold in [from, to].
type StreamStats struct {
	Streams int64
	Blocks  int64 // blocks of parts with rows in range (the head counts one per stream)
	Rows    int64
	Bytes   int64 // bytes of the original lines
}

// StreamStats counts the streams of a tenant that match accepts (all
// when nil) and their blocks, rows and line bytes in [from, to]. Rows
// and bytes are counted exactly, by reading the rows.
func (sn *Snapshot) StreamStats(ctx context.Context, tenant string, from, to int64, match func(record.Labels) bool) (StreamStats, error) {
	var st StreamStats
	for _, stream := range sn.Streams(tenant, from, to) {
		if match != nil && !match(stream.Labels) {
			continue
		}
		st.Streams++
		key := stream.Key
		for _, p := range sn.parts {
			if si, ok := p.streams[key]; ok && p.info.Tenant == tenant {
				lo, hi := p.rd.StreamBlocks(si)
				for _, b := range p.rd.Blocks[lo:hi] {
					if b.Stream == si && b.MaxTime >= from && b.MinTime <= to {
						st.Blocks++
					}
				}
			}
		}
		for _, h := range sn.heads {
			if h.stream(tenant, key) != nil {
				st.Blocks++
			}
		}
		err := sn.Scan(ctx, tenant, stream, from, to, ScanOptions{}, func(r *rows.Row, _ []string) error {
			st.Rows++
			st.Bytes += int64(len(r.Line))
			return nil
		})
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// BlockFunc receives a stored block read columnar (part.Reader.ReadColumns):
// its rows may lie outside the range asked for, and are the caller's to
// walk. The block is valid only during the call.
type BlockFunc func(b *part.Block) error

// MetaFunc says whether a BlockFunc takes block b, whose rows may have
// structured metadata (part.Block.OutOfLine): one that reads none of
// the metadata's names (part.Block.MetaColumns) may.
type MetaFunc func(b *part.Block) bool

// rowsOf calls fn for each row of block i of rd in [from, to].
func rowsOf(rd *part.Reader, i int, from, to int64, fn RowFunc) error {
	blk := blockPool.Get().(*part.Block)
	defer blockPool.Put(blk)
	blk.Scan = false
	if err := rd.ReadRows(i, blk); err != nil {
		return err
	}
	for k := range blk.Rows {
		if r := &blk.Rows[k]; r.Time >= from && r.Time <= to {
			if err := fn(r, blk.Names); err != nil {
				return err
			}
		}
	}
	return nil
}

// Order is the order in which ScanColumns gives a stream's stored
// blocks, which may overlap in time.
type Order int8

const (
	NewestFirst Order = iota // by their newest row, newest first
	OldestFirst              // by their oldest row, oldest first
)

// ScanColumns calls rowFn for each row of the head in [from, to], then
// blockFn for each stored block of one stream of a tenant with rows in
// [from, to], in order, or rowFn for each row in [from, to] of a block
// with fields out of its lines (structured metadata, see
// ScanOptions.Meta) unless metaOK (which may be nil) takes it; only the
// share of the stream that shard names. For queries that read a few
// values of every row rather than lines, and for log queries that want
// the newest (or oldest) lines and can stop early.
func (sn *Snapshot) ScanColumns(ctx context.Context, tenant string, stream Stream, from, to int64, shard Shard, order Order, blockFn BlockFunc, metaOK MetaFunc, rowFn RowFunc) error {
	key := stream.Key
	var its []rowIter
	for _, h := range sn.heads {
		if sv := h.stream(tenant, key); sv != nil && shard.head() {
			its = append(its, newHeadIter(h, sv, from, to, false))
		}
	}
	if err := mergeRows(ctx, its, false, rowFn); err != nil {
		return err
	}
	type stored struct {
		p   *livePart
		i   int
		key int64 // the newest row's time, negated (NewestFirst), or the oldest's
	}
	var blocks []stored
	for p, i := range sn.storedBlocks(tenant, key, from, to, shard) {
		k := -p.rd.Blocks[i].MaxTime
		if order == OldestFirst {
			k = p.rd.Blocks[i].MinTime
		}
		blocks = append(blocks, stored{p, i, k})
	}
	slices.SortStableFunc(blocks, func(a, b stored) int { return cmp.Compare(a.key, b.key) })
	blk := blockPool.Get().(*part.Block)
	defer blockPool.Put(blk)
	blk.Scan = false
	for _, sb := range blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, i := sb.p, sb.i
		skip := sn.skipper(p)
		if err := p.rd.ReadColumns(i, blk); err != nil {
			if skip != nil && skip(err) {
				continue
			}
			return err
		}
		if blk.OutOfLine() && (metaOK == nil || !metaOK(blk)) {
			// Its rows may carry structured metadata, which blockFn
			// would not see: they go to rowFn.
			if err := rowsOf(p.rd, i, from, to, rowFn); err != nil {
				if skip != nil && skip(err) {
					continue
				}
				return err
			}
			continue
		}
		if err := blockFn(blk); err != nil {
			return err
		}
	}
	return nil
}
