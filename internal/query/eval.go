package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp/syntax"
	"sync"
	"sync/atomic"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
				ev.stats.streams.Add(1)
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
// literals themselves, for rows).
func pruning(stages []logql.Stage) store.ScanOptions {
	var o store.ScanOptions
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFilter:
			if len(s.Values) != 1 {
				continue // an "or" chain needs any one of its values
			}
			switch v := s.Values[0]; s.Op {
			case logql.FilterContains:
				if !v.IP && v.Value != "" {
					o.Tokens = store.AppendLiteralTokens(o.Tokens, []byte(v.Value))
					o.Needles = store.AppendLiteralNeedles(o.Needles, []byte(v.Value))
					o.Contains = append(o.Contains, store.Literal{Text: []byte(v.Value)})
				}
			case logql.FilterRegexp:
				for _, lit := range regexpLiterals(v.Re.String()) {
					o.Tokens = store.AppendLiteralTokens(o.Tokens, lit)
					o.Needles = store.AppendLiteralNeedles(o.Needles, lit)
				}
				if lit, complete := v.Re.LiteralPrefix(); complete && lit != "" {
					o.Contains = append(o.Contains, store.Literal{Text: []byte(lit)})
				} else if lit, ok := stage.FoldedLiteral(v.Re.String()); ok && len(lit) > 0 {
					o.Contains = append(o.Contains, store.Literal{Text: lit, Fold: true})
				}
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
// without k or s.
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
			lit, ok := stage.FoldedLiteral(v.Re.String())
			if !ok || len(lit) == 0 || bytes.ContainsAny(lit, "ks") {
				return false
			}
		default:
			return false
		}
	}
	return len(stages) > 0
}

// regexpLiterals returns literals every match of a regexp contains: the
// literal parts of a top-level concatenation. The filters fold ASCII case
// only, so a case-insensitive literal counts only when it is ASCII.
func regexpLiterals(src string) [][]byte {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	var out [][]byte
	for _, s := range subs {
		if s.Op == syntax.OpLiteral && (s.Flags&syntax.FoldCase == 0 || ascii(s.Rune)) {
			out = append(out, []byte(string(s.Rune)))
		}
	}
	return out
}

// ascii reports whether every rune is ASCII: the filters fold ASCII case
// only, so a case-insensitive literal prunes only when it is ASCII.
func ascii(rs []rune) bool {
	for _, r := range rs {
		if r >= 0x80 {
			return false
		}
	}
	return true
}
