package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluicelog/sluice/internal/logql"
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
	merged map[*logql.RangeAggregation]*seriesTable
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
func (ev *evaluator) streams(sel logql.Selector, from, to int64) []store.Stream {
	var out []store.Stream
	for _, st := range ev.src.Streams(ev.p.Tenant, from, to) {
		if sel.Matches(st.Labels.Value) {
			out = append(out, st)
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
func forStreams[W any](ctx context.Context, ev *evaluator, streams []store.Stream, setup func() (W, error), work func(ctx context.Context, w W, st store.Stream) error) ([]W, error) {
	return forUnits(ctx, ev, streams, func(store.Stream) bool { return true }, setup, work)
}

// streamShard is a share of one stream's rows (store.Shard): the unit of
// work of a range aggregation, whose workers' series merge whatever rows
// each read.
type streamShard struct {
	st    store.Stream
	shard store.Shard
}

// shardStreams returns the units of work of a range aggregation over
// streams: each stream whole, or, when they are too few to keep every
// worker busy (one big stream, say) and split says the function's
// states merge whatever rows each share read, each cut in a share per
// worker.
func (ev *evaluator) shardStreams(streams []store.Stream, split bool) []streamShard {
	n := 1
	if w := ev.e.workers; split && w > 1 && len(streams) < 4*w && !ev.e.reference {
		n = w
	}
	out := make([]streamShard, 0, n*len(streams))
	for _, st := range streams {
		for i := range n {
			out = append(out, streamShard{st: st, shard: store.Shard{I: i, N: n}})
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
	n := min(ev.e.workers, len(units))
	states := make([]W, n)
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	loop := func(i int) {
		// Each worker makes its own state, on its own thread: states
		// made one after another on one are neighbours in memory, and
		// what one worker writes at every row shared cache lines with
		// what the next one reads (see workerPad).
		st, err := setup()
		if err != nil {
			errs[i] = err
			cancel()
			return
		}
		states[i] = st
		for {
			j := int(next.Add(1) - 1)
			if j >= len(units) || ctx.Err() != nil {
				return
			}
			if begins(units[j]) {
				ev.stats.streams.Add(1)
			}
			if err := work(ctx, states[i], units[j]); err != nil {
				errs[i] = err
				cancel()
				return
			}
		}
	}
	// Worker 0 is the calling goroutine: a small query wakes no other.
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(i)
		}()
	}
	if n > 0 {
		loop(0)
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

// impliedOptions returns the scan options o of a pipeline with the
// clauses its label filters imply (impliedClauses): none for the
// reference engine.
func (ev *evaluator) impliedOptions(o store.ScanOptions, stages []logql.Stage) *impliedOptions {
	if ev.e.reference {
		return newImpliedOptions(o, nil)
	}
	return newImpliedOptions(o, impliedClauses(stages))
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
// changes the line, from the clauses of literals every kept line holds
// (lineClauses): a literal alone as the tokens it holds whole and its
// edge tokens as needles, a clause of alternatives as a group of probes
// (Any), for blocks; the clauses themselves, for rows (Contains).
func pruning(stages []logql.Stage) store.ScanOptions {
	var o store.ScanOptions
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFilter:
			req := lineClauses(s)
			for _, c := range req.clauses {
				o = requireClause(o, c)
			}
			for _, g := range req.blocksOnly {
				o = requireProbes(o, g)
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

// measuresLines reports whether a range aggregation's sample is the
// line's length.
func measuresLines(op string) bool { return op == "bytes_over_time" || op == "bytes_rate" }

// literalsOnly reports whether a pipeline is only line filters whose
// clauses (lineClauses, which pruning gives the store as Contains) hold
// in exactly the lines the filters keep, as the store finds them: so
// that every row the store keeps is one the pipeline keeps. (A folding
// literal with a k or an s, unless ASCII, does not: the store's folding
// search also keeps lines with a non-ASCII byte, where Unicode may fold a
// rune to it.)
func literalsOnly(stages []logql.Stage) bool {
	return len(stages) > 0 && leadingFilters(stages, false).n == len(stages)
}

// maxClause bounds the literals of a clause given the store: a block
// searches its candidate columns for each. A regexp that is not exactly
// its clauses gives one of at most maxInexact (the regexp runs on the
// rows kept anyway: a clause of more literals costs more searches than
// the rows it rules out would).
const (
	maxClause  = 64
	maxInexact = 8
)

// minLen is the shortest literal of a clause a regexp requires that is
// worth giving the store when the regexp is not exactly its clauses: a
// literal of a byte or two is in most lines, and searching each row for
// it costs more than it rules out.
const minLen = 3

// lineReq is what a line filter requires of the lines it keeps.
type lineReq struct {
	// clauses of literals (each: one of them) every line kept holds
	clauses []store.Clause
	// exact: a line holds them exactly when the filter keeps it
	exact bool
	// blocksOnly are more clauses, of alternatives too many to search
	// each row for: for the blocks' token filters.
	blocksOnly []store.Clause
}

// lineClauses returns the clauses of literals (each: one of them) that
// every line a positive line filter keeps holds, and whether a line
// holds them exactly when the filter keeps it (exact). A literal filter,
// or an "or" chain of them, is one clause; a regexp's are what it
// requires (regexlit): exact when it is exactly "contains one of these
// literals" (error|fatal, (?i)timeout); an "or" chain of such regexps is
// the union of their literals. Others give no clause: negative filters,
// IP filters, an empty literal (every line holds it), an "or" chain with
// a regexp that is not exact.
func lineClauses(f *logql.LineFilter) lineReq {
	switch f.Op {
	case logql.FilterContains:
		c := make(store.Clause, 0, len(f.Values))
		for _, v := range f.Values {
			if v.IP || v.Value == "" || len(c) == maxClause {
				return lineReq{}
			}
			c = append(c, store.Literal{Text: []byte(v.Value)})
		}
		return lineReq{clauses: []store.Clause{c}, exact: true}
	case logql.FilterRegexp:
		if len(f.Values) == 1 {
			return regexpClauses(f.Values[0].Re.String())
		}
		var c store.Clause
		for _, v := range f.Values {
			req := regexpClauses(v.Re.String())
			if !req.exact || len(req.clauses) != 1 || len(c)+len(req.clauses[0]) > maxClause {
				return lineReq{}
			}
			c = append(c, req.clauses[0]...)
		}
		return lineReq{clauses: []store.Clause{c}, exact: true}
	case logql.FilterPattern:
		return patternClauses(f)
	}
	return lineReq{}
}

// patternClauses returns what a pattern line filter's lines hold (|>
// "<_> declined <_>", as Grafana's Logs Drilldown filters by a
// pattern): of patterns that are each a literal between two captures,
// one clause of those literals, Inner (off the line's edges: each
// capture takes a byte at least), exactly; otherwise every literal of
// its one pattern, each a clause, or of an "or" chain of patterns, one
// clause of each one's longest literal, where the pattern decides the
// lines that hold them.
func patternClauses(f *logql.LineFilter) lineReq {
	var inner store.Clause
	for _, v := range f.Values {
		lit, ok := innerLiteral(v.Pattern)
		if !ok || len(inner) == maxClause {
			inner = nil
			break
		}
		inner = append(inner, store.Literal{Text: []byte(lit), Inner: true})
	}
	if inner != nil {
		return lineReq{clauses: []store.Clause{inner}, exact: true}
	}
	longest := func(p *logql.Pattern) string {
		lit := ""
		for _, part := range p.Parts {
			if !part.Capture && len(part.Literal) > len(lit) {
				lit = part.Literal
			}
		}
		return lit
	}
	if len(f.Values) == 1 && f.Values[0].Pattern != nil {
		var req lineReq
		for _, part := range f.Values[0].Pattern.Parts {
			if !part.Capture && part.Literal != "" && len(req.clauses) < maxClause {
				req.clauses = append(req.clauses, store.Clause{{Text: []byte(part.Literal)}})
			}
		}
		return req
	}
	var c store.Clause
	for _, v := range f.Values {
		if v.Pattern == nil || len(c) == maxClause {
			return lineReq{}
		}
		lit := longest(v.Pattern)
		if lit == "" {
			return lineReq{} // a pattern of captures alone: any line may match
		}
		c = append(c, store.Literal{Text: []byte(lit)})
	}
	return lineReq{clauses: []store.Clause{c}}
}

// innerLiteral returns the literal of a pattern that is one literal
// between two captures (<_> declined <_>), the literals next to each
// other joined and the empty ones left out, as a pattern filter reads
// it.
func innerLiteral(p *logql.Pattern) (string, bool) {
	if p == nil {
		return "", false
	}
	var parts []logql.PatternPart
	for _, part := range p.Parts {
		n := len(parts)
		switch {
		case part.Capture:
			parts = append(parts, part)
		case part.Literal == "":
		case n > 0 && !parts[n-1].Capture:
			parts[n-1].Literal += part.Literal
		default:
			parts = append(parts, part)
		}
	}
	if len(parts) != 3 || !parts[0].Capture || parts[1].Capture || !parts[2].Capture {
		return "", false
	}
	return parts[1].Literal, true
}

// regexpClauses returns what a line filter's regexp requires.
func regexpClauses(src string) lineReq {
	// One case-insensitive literal without a k or an s: one folding
	// search. (With one, regexlit writes the runes Unicode folds to it
	// as alternatives of their own, and the store's search of each is
	// exact.)
	lit, folded := stage.FoldedLiteral(src)
	if folded && len(lit) > 0 && !bytes.ContainsAny(lit, "ks") {
		return lineReq{clauses: []store.Clause{{{Text: lit, Fold: true}}}, exact: true}
	}
	p, err := regexlit.Parse(src, false)
	if err != nil {
		return lineReq{}
	}
	if p.Exact {
		// No group: every line matches, and there is nothing to give.
		if len(p.Groups) != 1 || len(p.Groups[0]) > maxClause || !nonEmpty(p.Groups[0]) {
			return lineReq{}
		}
		return lineReq{clauses: []store.Clause{clauseOf(p.Groups[0])}, exact: true}
	}
	if folded && len(lit) > 0 {
		// Too many variants for regexlit: the store's folding search,
		// which also keeps the lines where Unicode folds a rune to a k
		// or an s.
		return lineReq{clauses: []store.Clause{{{Text: lit, Fold: true}}}, exact: true}
	}
	var req lineReq
	for _, g := range p.Groups {
		switch {
		case !nonEmpty(g):
		case len(g) <= maxInexact && shortestText(g) >= minLen:
			req.clauses = append(req.clauses, clauseOf(g))
		case len(g) > 1:
			// Too many or too short alternatives to search each row for:
			// the text they share, if it is long enough, and the group
			// for the blocks.
			if c, ok := regexlit.Common(g); ok && len(c.Text) >= minLen {
				req.clauses = append(req.clauses, store.Clause{{Text: []byte(c.Text), Fold: c.Fold, ASCII: c.Fold}})
			}
			req.blocksOnly = append(req.blocksOnly, clauseOf(g))
		}
	}
	return req
}

// clauseOf returns a group of regexlit's literals as a clause. A folding
// one ignores ASCII case alone: regexlit writes the runes Unicode folds
// to an ASCII letter (the Kelvin sign, the long s) as literals of their
// own.
func clauseOf(g []regexlit.Lit) store.Clause {
	c := make(store.Clause, len(g))
	for i, l := range g {
		c[i] = store.Literal{Text: []byte(l.Text), Fold: l.Fold, ASCII: l.Fold}
	}
	return c
}

func nonEmpty(g []regexlit.Lit) bool {
	return len(g) > 0 && !slices.ContainsFunc(g, func(l regexlit.Lit) bool { return l.Text == "" })
}

func shortestText(g []regexlit.Lit) int {
	n := math.MaxInt
	for _, l := range g {
		n = min(n, len(l.Text))
	}
	return n
}

// requireClause adds a clause every line wanted holds to o: as rows'
// Contains, and for blocks a literal alone as tokens and needles, a
// clause of several as a group of probes (unless one of its literals
// has none: that one rules no block out) and the tokens and needles of
// the text they share.
func requireClause(o store.ScanOptions, c store.Clause) store.ScanOptions {
	o.Contains = append(o.Contains, c)
	if len(c) == 1 {
		o.Tokens = store.AppendLiteralTokens(o.Tokens, c[0].Text)
		o.Needles = store.AppendLiteralNeedles(o.Needles, c[0].Text)
		return o
	}
	o = requireProbes(o, c)
	g := make([]regexlit.Lit, len(c))
	for i, l := range c {
		g[i] = regexlit.Lit{Text: string(l.Text), Fold: l.Fold}
	}
	if common, ok := regexlit.Common(g); ok && len(common.Text) >= minLen {
		o.Tokens = store.AppendLiteralTokens(o.Tokens, []byte(common.Text))
		o.Needles = store.AppendLiteralNeedles(o.Needles, []byte(common.Text))
	}
	return o
}

// requireProbes adds to o a group of probes of the blocks, one of which
// every line wanted holds: none when a literal has no token to probe
// (that one rules no block out).
func requireProbes(o store.ScanOptions, c store.Clause) store.ScanOptions {
	if probes, ok := clauseProbes(c); ok {
		o.Any = append(o.Any, probes)
	}
	return o
}

// clauseProbes returns the probes of a clause's literals, false when one
// has none (that one rules no block out).
func clauseProbes(c store.Clause) ([]store.Probe, bool) {
	probes := make([]store.Probe, 0, len(c))
	for _, l := range c {
		pr := store.NewProbe(l.Text)
		if pr.Empty() {
			return nil, false
		}
		probes = append(probes, pr)
	}
	return probes, true
}
