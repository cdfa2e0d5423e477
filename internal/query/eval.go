package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/regexlit"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
)

// evaluator is the state of one query's evaluation.
type evaluator struct {
	e     *Engine
	src   Source
	p     Params
	stats counters
	// merged, when Partial.Finish evaluates, are the parts' merged
	// states of the query's range aggregations, which are not read again.
	merged map[*logql.RangeAggregation]map[string]*rangeSeries
	// hints are what each range aggregation's place in the query lets
	// the engine skip (queryHints); one missing gets none.
	hints map[*logql.RangeAggregation]rangeHints
}

// counters are Stats counted by concurrent workers.
type counters struct {
	streams, rows, bytes, linesOut, columnar, swept atomic.Int64
	held                                            atomic.Int64 // bytes of state, for Limits.MaxMemory
}

func (c *counters) snapshot() Stats {
	return Stats{Streams: c.streams.Load(), Rows: c.rows.Load(), Bytes: c.bytes.Load(), LinesOut: c.linesOut.Load(),
		RowsColumnar: c.columnar.Load(), RowsSwept: c.swept.Load()}
}

// streams returns the streams of the query's tenant with rows in
// [from, to] that sel matches.
func (ev *evaluator) streams(sel logql.Selector, from, to int64) []record.Labels {
	var out []record.Labels
	for _, ls := range ev.src.Streams(ev.p.Tenant, from, to) {
		if sel.Matches(ls.Value) {
			out = append(out, ls)
		}
	}
	return out
}

// tally counts one worker's rows read, added to the query's counters
// every few thousand rows: an atomic add per row, on counters all the
// workers share, cost a few percent of a scan.
type tally struct {
	rows, bytes, columnar, swept int64
	held                         int64 // bytes of state the worker took since the last flush
}

// scanned counts a row read and, every 1024 rows, checks the
// bytes-scanned limit.
func (ev *evaluator) scanned(t *tally, line []byte) error {
	t.rows++
	t.bytes += int64(len(line))
	if t.rows&1023 == 0 {
		return ev.flush(t)
	}
	return nil
}

// flush adds a tally to the query's counters and checks the limit.
func (ev *evaluator) flush(t *tally) error {
	ev.stats.rows.Add(t.rows)
	ev.stats.columnar.Add(t.columnar)
	ev.stats.swept.Add(t.swept)
	n := ev.stats.bytes.Add(t.bytes)
	held := ev.stats.held.Add(t.held)
	*t = tally{}
	if max := ev.e.limits.MaxBytesScanned; max > 0 && n > max {
		return fmt.Errorf("%w: the query would read more than %d bytes", ErrLimit, max)
	}
	if max := ev.e.limits.MaxMemory; max > 0 && held > max {
		return fmt.Errorf("%w: the query would hold more than %d bytes of series and lines in memory (max_query_memory); narrow its selector, time range or grouping, or raise the limit", ErrLimit, max)
	}
	return nil
}

// forStreams runs work for each stream on the engine's workers; each
// worker first calls setup for its own state (a compiled pipeline, say).
// The first error stops the others.
func forStreams[W any](ctx context.Context, ev *evaluator, streams []record.Labels, setup func() (W, error), work func(ctx context.Context, w W, ls record.Labels) error) ([]W, error) {
	return forUnits(ctx, ev, streams, func(record.Labels) bool { return true }, setup, work)
}

// streamShard is a share of one stream's rows (store.Shard): the unit of
// work of a range aggregation, whose workers' series merge whatever rows
// each read.
type streamShard struct {
	ls    record.Labels
	shard store.Shard
}

// shardStreams returns the units of work of a range aggregation over
// streams: each stream whole, or, when they are too few to keep every
// worker busy (one big stream, say) and split says the function's
// states merge whatever rows each share read, each cut in a share per
// worker.
func (ev *evaluator) shardStreams(streams []record.Labels, split bool) []streamShard {
	n := 1
	if w := ev.e.workers; split && w > 1 && len(streams) < 4*w && !ev.e.reference {
		n = w
	}
	out := make([]streamShard, 0, n*len(streams))
	for _, ls := range streams {
		for i := range n {
			out = append(out, streamShard{ls: ls, shard: store.Shard{I: i, N: n}})
		}
	}
	return out
}

// forUnits runs work for each unit on the engine's workers, as
// forStreams; begins says which units begin a stream (for the count of
// streams read).
func forUnits[W, U any](ctx context.Context, ev *evaluator, units []U, begins func(U) bool, setup func() (W, error), work func(ctx context.Context, w W, u U) error) ([]W, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streams := units
	n := min(ev.e.workers, len(streams))
	states := make([]W, n)
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		st, err := setup()
		if err != nil {
			return nil, err
		}
		states[i] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(streams) || ctx.Err() != nil {
					return
				}
				if begins(streams[j]) {
					ev.stats.streams.Add(1)
				}
				if err := work(ctx, st, streams[j]); err != nil {
					errs[i] = err
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	// The first error that is not the cancellation it caused in the
	// other workers.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return states, nil
}

// pruning is the package's pruning, none for the reference engine.
func (ev *evaluator) pruning(stages []logql.Stage) store.ScanOptions {
	if ev.e.reference {
		return store.ScanOptions{}
	}
	return pruning(stages)
}

// hintsOf returns the hints of a range aggregation: none for the
// reference engine.
func (ev *evaluator) hintsOf(x *logql.RangeAggregation) rangeHints {
	if ev.e.reference {
		return rangeHints{}
	}
	return ev.hints[x]
}

// pruning returns the scan options that skip the blocks and rows a
// pipeline's line filters rule out: those before the first stage that
// changes the line, from the literals every kept line contains (the
// tokens held whole and the edge tokens as needles, for blocks; the
// literals themselves, for rows), and for a regexp also from the groups
// of alternatives it requires one of (blocks only).
func pruning(stages []logql.Stage) store.ScanOptions {
	var o store.ScanOptions
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFilter:
			if len(s.Values) != 1 {
				// An "or" chain needs any one of its values: a group.
				o = chainPruning(o, s)
				continue
			}
			switch v := s.Values[0]; s.Op {
			case logql.FilterContains:
				if !v.IP && v.Value != "" {
					o = requireLiteral(o, []byte(v.Value), false)
				}
			case logql.FilterRegexp:
				o = regexpPruning(o, v.Re.String())
			}
		case *logql.LineFormat, *logql.Unpack, *logql.Decolorize:
			return o
		}
	}
	return o
}

// countsRows reports whether a range function counts rows without
// reading their lines.
func countsRows(op string) bool {
	return op == "count_over_time" || op == "rate" || op == "absent_over_time"
}

// literalsOnly reports whether a pipeline is only line filters that
// pruning gives the store as literals it checks exactly (ScanOptions
// Contains): one literal each, exact or folding ASCII case of a literal
// without k or s (a literal one, or a regexp that is exactly "contains
// this literal", error.* say).
func literalsOnly(stages []logql.Stage) bool {
	for _, s := range stages {
		f, ok := s.(*logql.LineFilter)
		if !ok || len(f.Values) != 1 {
			return false
		}
		switch v := f.Values[0]; f.Op {
		case logql.FilterContains:
			if v.IP || v.Value == "" {
				return false
			}
		case logql.FilterRegexp:
			if lit, complete := v.Re.LiteralPrefix(); complete && lit != "" {
				continue
			}
			if lit, ok := stage.FoldedLiteral(v.Re.String()); ok {
				if len(lit) == 0 || bytes.ContainsAny(lit, "ks") {
					return false
				}
				continue
			}
			// What regexpPruning gives as the one literal of Contains.
			p, err := regexlit.Parse(v.Re.String(), false)
			if err != nil || !p.Exact || len(p.Groups) != 1 || len(p.Groups[0]) != 1 {
				return false
			}
			if l := p.Groups[0][0]; l.Text == "" || l.Fold && strings.ContainsAny(l.Text, "ks") {
				return false
			}
		default:
			return false
		}
	}
	return len(stages) > 0
}

// regexpPruning adds to o what a line filter's regexp requires
// (regexlit): each literal it requires alone as tokens, needles and a
// literal of Contains; each group of alternatives as a group of probes
// (Any) for the blocks, and the prefix or suffix the group's literals
// share as a literal of its own. (Contains takes literals, not groups:
// the rows are left to the filter.)
func regexpPruning(o store.ScanOptions, src string) store.ScanOptions {
	// One case-insensitive literal: the store's folding search also
	// keeps the lines where Unicode folds a rune to its k or s.
	if lit, ok := stage.FoldedLiteral(src); ok {
		if len(lit) > 0 {
			o = requireLiteral(o, lit, true)
		}
		return o
	}
	p, err := regexlit.Parse(src, false)
	if err != nil {
		return o
	}
	// A literal of a byte or two is in most lines: searching each row
	// for it costs more than it rules out, unless it is the whole
	// regexp (literalsOnly counts on Contains then).
	const minLen = 3
	for _, g := range p.Groups {
		if len(g) == 1 {
			if p.Exact || len(g[0].Text) >= minLen {
				o = requireLiteral(o, []byte(g[0].Text), g[0].Fold)
			}
			continue
		}
		if c, ok := regexlit.Common(g); ok && len(c.Text) >= minLen {
			o = requireLiteral(o, []byte(c.Text), c.Fold)
		}
		probes := make([]store.Probe, 0, len(g))
		for _, l := range g {
			pr := store.NewProbe([]byte(l.Text))
			if pr.Empty() {
				probes = nil // that alternative rules no block out
				break
			}
			probes = append(probes, pr)
		}
		if probes != nil {
			o.Any = append(o.Any, probes)
		}
	}
	return o
}

// maxChainProbes bounds the literals of an "or" chain that prune blocks:
// every block asks its filter about each.
const maxChainProbes = 64

// chainPruning adds to o the group of an "or" chain of positive line
// filters whose every value is a literal, or a regexp that is exactly
// "contains one of these literals": a block must hold one of them.
func chainPruning(o store.ScanOptions, f *logql.LineFilter) store.ScanOptions {
	var lits []string
	for _, v := range f.Values {
		switch f.Op {
		case logql.FilterContains:
			if v.IP {
				return o
			}
			lits = append(lits, v.Value)
		case logql.FilterRegexp:
			p, err := regexlit.Parse(v.Re.String(), false)
			if err != nil || !p.Exact || len(p.Groups) != 1 {
				return o
			}
			for _, l := range p.Groups[0] {
				lits = append(lits, l.Text)
			}
		default:
			return o
		}
		if len(lits) > maxChainProbes {
			return o
		}
	}
	probes := make([]store.Probe, 0, len(lits))
	for _, l := range lits {
		pr := store.NewProbe([]byte(l))
		if pr.Empty() {
			return o // that value rules no block out
		}
		probes = append(probes, pr)
	}
	o.Any = append(o.Any, probes)
	return o
}

// requireLiteral adds a literal every line wanted contains to o.
func requireLiteral(o store.ScanOptions, lit []byte, fold bool) store.ScanOptions {
	o.Tokens = store.AppendLiteralTokens(o.Tokens, lit)
	o.Needles = store.AppendLiteralNeedles(o.Needles, lit)
	o.Contains = append(o.Contains, store.Literal{Text: lit, Fold: fold})
	return o
}
