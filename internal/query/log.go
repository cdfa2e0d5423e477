package query

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// errEnough stops a stream's scan once it has yielded what is needed.
var errEnough = errors.New("enough lines")

// logLine is one line a log query keeps, with its labels' key.
type logLine struct {
	time         int64
	line         string
	key          string
	meta, parsed record.Labels // Params.Categorize
}

// logWorker is one worker's state in a log query.
type logWorker struct {
	pipe   *stage.Pipeline
	lb     *stage.Labels
	tally  tally
	lines  []logLine
	labels map[string]*keyed
	key    []byte
	cols   *logCols // the columnar path's state
	// the selected path's: the line filters' selection, a cursor, a line
	sel  *rowSelection
	cur  part.Cursor
	line []byte
}

// logQuery returns the lines of a log query in [Start, End), at most
// Limit of them, newest first unless Forward.
func (ev *evaluator) logQuery(ctx context.Context, x *logql.LogExpr) (*Result, error) {
	all, labels, err := ev.logLines(ctx, x)
	if err != nil {
		return nil, err
	}
	return ev.streamsOf(all, labels), nil
}

// logLimit is the most lines a log query returns.
func (e *Engine) logLimit(p Params) int {
	limit := p.Limit
	if max := e.limits.MaxLines; max > 0 && (limit <= 0 || limit > max) {
		limit = max
	}
	if limit <= 0 {
		limit = 100
	}
	return limit
}

// logLines returns the lines a log query returns, in their order, and
// their labels by key.
func (ev *evaluator) logLines(ctx context.Context, x *logql.LogExpr) ([]logLine, map[string]record.Labels, error) {
	from, to := ev.p.Start, ev.p.End-1
	limit := ev.e.logLimit(ev.p)
	opts := ev.pruning(x.Pipeline)
	opts.LinesOnly = true // the stages parse lines
	opts.Meta = true      // a line's structured metadata are among its labels
	opts.Backward = ev.p.Direction == Backward
	if opts.Backward && ev.p.Interval == 0 && !ev.e.reference && (keepsEveryRow(x.Pipeline) || literalsOnly(x.Pipeline)) {
		// Every row the store finds is kept: a stream's newest limit of
		// them are all its blocks need to find.
		opts.Newest = limit
	}
	interval := int64(ev.p.Interval)
	// The limit lines nearest the scans' start across all streams: a
	// stream's scan stops at a row beyond the farthest of them, which
	// could not be among the lines returned. (Not with an interval, which
	// thins each stream's lines by their own.)
	var cut *cutoff
	if interval == 0 && !ev.e.reference {
		cut = newCutoff(limit, opts.Backward)
		opts.NewestFloor = cut.floor // a block's rows older than the farthest kept are not made
		if opts.Backward && opts.Newest == 0 {
			// The pipeline drops rows: a block's newest first, the rest
			// if they are not enough.
			opts.FirstNewest = cmp.Or(ev.e.firstNewest, firstNewest)
		}
	}
	implied := ev.impliedOptions(opts, x.Pipeline)
	streams := ev.streams(x.Selector, from, to)
	setup := func() (*logWorker, error) {
		pipe, err := stage.Compile(x.Pipeline)
		if err != nil {
			return nil, err
		}
		return &logWorker{pipe: pipe, lb: &stage.Labels{}, labels: map[string]*keyed{}}, nil
	}
	// No interval: stored blocks are read columnar when the pipeline
	// allows, from the scan's start (the newest blocks and rows first,
	// or the oldest: log_columns.go); a pipeline of line filters alone
	// selects a block's rows in its columns (selectedBlock): newest
	// first, one with !=, !~ or !> among them (the store's newest rows,
	// opts.Newest, answer the others); oldest first, an empty one (the
	// store has no oldest rows of a block to make alone, and no filter
	// to rule blocks out by: `{service=~".+"}` oldest first 518 -> 5 ms,
	// where a trace id's `|= "7ce4…"` read in columns took 0.3 -> 12).
	lf := leadingFilters(x.Pipeline, true)
	selected := cut != nil && lf.n == len(x.Pipeline) && (opts.Backward && opts.Newest == 0 && len(x.Pipeline) > 0 || !opts.Backward && len(x.Pipeline) == 0)
	columnar := cut != nil && logColumnar(x) || selected
	order := store.NewestFirst
	if !opts.Backward {
		order = store.OldestFirst
	}
	newest := ev.newestFirst(streams, from, to, cut)
	// A pipeline that drops rows, newest first, read by Scan: two passes.
	// The first reads each stream's newest rows alone (first of them), so
	// that the lines kept, and the cutoff, come from every stream's newest
	// before any stream is read far back (a stream whose lines the
	// pipeline drops would otherwise be read whole before the cutoff
	// can rule it out); the second reads on from there the streams that
	// have more and whose rows are not all beyond the cutoff.
	twoPass := !columnar && opts.FirstNewest > 0
	first := opts.FirstNewest
	var (
		mu    sync.Mutex
		more  map[string]resume // the streams the first pass left, by key
		again bool              // the second pass
	)
	pass := func(ctx context.Context, w *logWorker, st store.Stream) error {
		if t, ok := newest[st.Key]; ok && cut.beyond(t) {
			return nil // every row of the stream is older than the limit lines kept
		}
		var from2 resume // where the first pass left the stream
		if again {
			from2 = more[st.Key]
			if cut.beyond(from2.last) {
				return nil
			}
		}
		ls := st.Labels
		// Each stream yields at most limit lines: its newest (or oldest)
		// ones are all the merged result can use.
		n, last := from2.kept, int64(0)
		// keep keeps a line the pipeline kept, whose labels are in w.lb.
		keep := func(t int64, line []byte) error {
			if interval > 0 && n > 0 && absDiff(t, last) < interval {
				return nil
			}
			var meta, parsed record.Labels
			if ev.p.Categorize {
				// The line's stream is its stream labels alone.
				var stream record.Labels
				stream, meta, parsed = w.lb.Categories()
				w.lb.Reset(stream)
			}
			w.key = w.lb.AppendKey(w.key[:0])
			k := intern(w.labels, w.key, w.lb)
			w.lines = append(w.lines, logLine{time: t, line: string(line), key: k.key, meta: meta, parsed: parsed})
			w.tally.held += int64(len(line)) + 64
			n, last = n+1, t
			cut.add(t)
			if n >= limit && !columnar {
				return errEnough
			}
			return nil
		}
		row := func(r *rows.Row, names []string) error {
			if cut.beyond(r.Time) {
				if columnar {
					return nil // rows do not come in time order
				}
				return errEnough // this stream's rows from here on come too late
			}
			if err := ev.scanned(&w.tally, r.Line); err != nil {
				return err
			}
			w.lb.Reset(ls)
			rowMeta(w.lb, r, names)
			line, ok := w.pipe.Process(r.Time, r.Line, w.lb)
			if !ok {
				return nil
			}
			return keep(r.Time, line)
		}
		var err error
		switch {
		case selected:
			if w.sel == nil {
				w.sel = &rowSelection{lf: lf}
			}
			err = ev.src.ScanColumns(ctx, ev.p.Tenant, st, from, to, store.Shard{}, order, func(b *part.Block) error {
				return w.selectedBlock(ev, ls, b, from, to, cut, keep)
			}, nil, row) // a line's labels are its metadata too
		case columnar:
			var lc *logCols
			if lc, err = w.columns(x); err != nil {
				return err
			}
			lc.startStream(implied.clauses(ls))
			err = ev.src.ScanColumns(ctx, ev.p.Tenant, st, from, to, store.Shard{}, order, func(b *part.Block) error {
				return w.block(ev, ls, b, from, to, cut, keep)
			}, nil, row) // a line's labels are its metadata too
		case twoPass && !again:
			// The stream's newest first rows, and whether it has more:
			// one more row read newest first (a block read for its newest
			// first rows alone would leave its others out unseen).
			o := implied.of(ls)
			o.Newest, o.FirstNewest = first+1, 0
			var at resume
			seen := 0
			err = ev.src.Scan(ctx, ev.p.Tenant, st, from, to, o, func(r *rows.Row, names []string) error {
				if seen == first {
					at.kept = n
					mu.Lock()
					more[st.Key] = at
					mu.Unlock()
					return errEnough // one more: the second pass reads on
				}
				seen++
				if seen > 1 && r.Time == at.last {
					at.atLast++
				} else {
					at.last, at.atLast = r.Time, 1
				}
				return row(r, names)
			})
		case again:
			// On from where the first pass left: rows newer than its
			// last, and as many of its last time as it read, were read.
			skip := from2.atLast
			err = ev.src.Scan(ctx, ev.p.Tenant, st, from, to, implied.of(ls), func(r *rows.Row, names []string) error {
				switch {
				case r.Time > from2.last:
					return nil
				case r.Time == from2.last && skip > 0:
					skip--
					return nil
				}
				return row(r, names)
			})
		default:
			err = ev.src.Scan(ctx, ev.p.Tenant, st, from, to, implied.of(ls), row)
		}
		if errors.Is(err, errEnough) {
			err = nil
		}
		if ferr := ev.flush(&w.tally); err == nil {
			err = ferr
		}
		return err
	}
	if twoPass {
		more = map[string]resume{}
	}
	workers, err := forStreams(ctx, ev, streams, setup, pass)
	if err == nil && len(more) > 0 {
		again = true
		rest := slices.DeleteFunc(streams, func(st store.Stream) bool { _, ok := more[st.Key]; return !ok })
		var ws []*logWorker
		ws, err = forStreams(ctx, ev, rest, setup, pass)
		workers = append(workers, ws...)
	}
	if err != nil {
		return nil, nil, err
	}
	var all []logLine
	labels := map[string]record.Labels{}
	for _, w := range workers {
		all = append(all, w.lines...)
		for k, e := range w.labels {
			labels[k] = e.labels
		}
	}
	sortLines(all, ev.p.Direction)
	return all[:min(len(all), limit)], labels, nil
}

// resume is where the first pass of a log query over a stream left it:
// the time of the last row it read (last), how many of the rows read had
// that time (atLast), and the lines kept (kept).
type resume struct {
	atLast, kept int
	last         int64
}

// keepsEveryRow reports whether a pipeline keeps every row it is given:
// it has no filter (its parsers and formats set labels and errors, and
// drop no row).
func keepsEveryRow(stages []logql.Stage) bool {
	for _, s := range stages {
		switch s.(type) {
		case *logql.LineFilter, *logql.LabelFilterStage:
			return false
		}
	}
	return true
}

// sortLines orders lines as a log query returns them: by time, newest
// first unless Forward, lines of the same time by their labels' key.
func sortLines(all []logLine, d Direction) {
	slices.SortStableFunc(all, func(a, b logLine) int {
		c := cmp.Or(cmp.Compare(a.time, b.time), strings.Compare(a.key, b.key))
		if d == Backward {
			return -c
		}
		return c
	})
}

// streamsOf is the result of a log query's lines, in their order.
func (ev *evaluator) streamsOf(all []logLine, labels map[string]record.Labels) *Result {
	byKey := map[string]int{}
	res := &Result{Type: "streams"}
	for _, l := range all {
		i, ok := byKey[l.key]
		if !ok {
			i = len(res.Streams)
			byKey[l.key] = i
			res.Streams = append(res.Streams, Stream{Labels: labels[l.key]})
		}
		res.Streams[i].Entries = append(res.Streams[i].Entries, Entry{Time: l.time, Line: l.line, Meta: l.meta, Parsed: l.parsed})
	}
	slices.SortFunc(res.Streams, func(a, b Stream) int { return compareLabels(a.Labels, b.Labels) })
	ev.stats.linesOut.Add(int64(len(all)))
	return res
}

// keyed is a label set with its key (labelsBuilder.appendKey).
type keyed struct {
	key    string
	labels record.Labels
}

// intern returns the entry of the builder's labels, whose key is given,
// adding it on first sight. Looking up allocates nothing.
func intern(m map[string]*keyed, key []byte, lb *stage.Labels) *keyed {
	if e := m[unsafe.String(unsafe.SliceData(key), len(key))]; e != nil {
		return e
	}
	e := &keyed{key: string(key), labels: lb.Copy()}
	m[e.key] = e
	return e
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// cutoff keeps the times of the limit lines nearest the scans' start
// (the newest when backward) that a log query's streams have yielded, so
// that each stream's scan stops at a row farther than all of them.
//
// Concurrency: safe for the query's workers; beyond is one atomic load.
type cutoff struct {
	limit    int
	backward bool
	mu       sync.Mutex
	times    []int64      // a heap whose root is the farthest kept
	bound    atomic.Int64 // the root once limit are kept; until then none
	full     atomic.Bool
}

func newCutoff(limit int, backward bool) *cutoff {
	return &cutoff{limit: limit, backward: backward}
}

// beyond reports whether a row at time t is farther from the start than
// limit lines already kept, so that neither it nor any later row of its
// stream can be returned. Rows at the bound itself are not beyond it.
func (c *cutoff) beyond(t int64) bool {
	if c == nil || !c.full.Load() {
		return false
	}
	if c.backward {
		return t < c.bound.Load()
	}
	return t > c.bound.Load()
}

// firstNewest is how many of a block's newest rows a log query whose
// pipeline drops rows makes first (store.ScanOptions.FirstNewest): the
// rest of a block's rows cost a second read when they are needed, which
// these few rows' lines made twice are a small part of.
const firstNewest = 256

// streamNewest is a Source that tells a stream's newest time from its
// index (store.Snapshot.StreamNewest).
type streamNewest interface {
	StreamNewest(tenant, key string, from, to int64) (int64, bool)
}

// newestFirst orders streams by their newest row, newest first, when
// the lines asked for are the newest (cut) and the source tells those
// times, and returns them by stream key: the first streams read hold
// the newest lines, so that the cutoff soon rules the others' blocks,
// and whole streams, out (none of their lines made).
func (ev *evaluator) newestFirst(streams []store.Stream, from, to int64, cut *cutoff) map[string]int64 {
	src, ok := ev.src.(streamNewest)
	if !ok || cut == nil || !cut.backward || len(streams) < 2 {
		return nil
	}
	newest := make(map[string]int64, len(streams))
	for _, st := range streams {
		if t, ok := src.StreamNewest(ev.p.Tenant, st.Key, from, to); ok {
			newest[st.Key] = t
		}
	}
	slices.SortStableFunc(streams, func(a, b store.Stream) int {
		ta, oka := newest[a.Key]
		tb, okb := newest[b.Key]
		switch {
		case oka != okb: // a stream without a time comes last
			if oka {
				return -1
			}
			return 1
		case ta > tb:
			return -1
		case ta < tb:
			return 1
		}
		return 0
	})
	return newest
}

// floor returns, newest first, the time of the farthest of limit lines
// kept, once limit are (store.ScanOptions.NewestFloor): no row older
// can be returned.
func (c *cutoff) floor() (int64, bool) {
	if !c.backward || !c.full.Load() {
		return 0, false
	}
	return c.bound.Load(), true
}

// add counts a line kept at time t.
func (c *cutoff) add(t int64) {
	if c == nil || c.limit <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := (*timeHeap)(c)
	switch {
	case len(c.times) < c.limit:
		heap.Push(h, t)
	case !c.farther(t, c.times[0]): // nearer than the farthest kept: it takes its place
		c.times[0] = t
		heap.Fix(h, 0)
	default:
		return // farther than every kept line
	}
	if len(c.times) == c.limit {
		c.bound.Store(c.times[0])
		c.full.Store(true)
	}
}

// blockBeyond reports whether every row of block b in [from, to] is
// beyond the cutoff: blocks come from the scan's start (store.NewestFirst
// backward, store.OldestFirst forward), so every block after it is too.
func (c *cutoff) blockBeyond(b *part.Block, from, to int64) bool {
	lo, hi := b.TimeRange()
	if c != nil && c.backward {
		return c.beyond(min(hi, to))
	}
	return c.beyond(max(lo, from))
}

// nearRows returns the rows [lo, hi) of block b, whose times are
// decoded, in [from, to] and not beyond the cutoff (which is full): a
// block's rows are in time order.
func (c *cutoff) nearRows(b *part.Block, from, to int64) (lo, hi int) {
	if c.backward {
		from = max(from, c.bound.Load())
	} else {
		to = min(to, c.bound.Load())
	}
	n := b.NumRows()
	lo = sort.Search(n, func(k int) bool { return b.RowTime(k) >= from })
	hi = sort.Search(n, func(k int) bool { return b.RowTime(k) > to })
	return lo, hi
}

// farther reports whether time a is farther from the scans' start than b.
func (c *cutoff) farther(a, b int64) bool {
	if c.backward {
		return a < b
	}
	return a > b
}

// timeHeap orders a cutoff's times with the farthest at the root.
type timeHeap cutoff

func (h *timeHeap) Len() int           { return len(h.times) }
func (h *timeHeap) Less(i, j int) bool { return (*cutoff)(h).farther(h.times[i], h.times[j]) }
func (h *timeHeap) Swap(i, j int)      { h.times[i], h.times[j] = h.times[j], h.times[i] }
func (h *timeHeap) Push(x any)         { h.times = append(h.times, x.(int64)) }
func (h *timeHeap) Pop() any {
	t := h.times[len(h.times)-1]
	h.times = h.times[:len(h.times)-1]
	return t
}
