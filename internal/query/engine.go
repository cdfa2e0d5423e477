package query

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

// Source is the storage a query reads: a consistent view of a store
// (store.Snapshot answers it).
type Source interface {
	// Streams returns the streams of a tenant with rows in [from, to].
	Streams(tenant string, from, to int64) []store.Stream
	// Scan calls fn for the rows of one stream with a time in [from, to]
	// in time order, or newest first when opts say so.
	Scan(ctx context.Context, tenant string, stream store.Stream, from, to int64, opts store.ScanOptions, fn store.RowFunc) error
	// ScanColumns calls rowFn for the stream's rows in [from, to] that
	// are not in stored blocks read columnar (the head's first), then
	// blockFn for its stored blocks with rows in [from, to], read
	// columnar, in order (blocks may overlap in time); a block whose
	// rows may have structured metadata only when metaOK (or nil: never)
	// takes it, else rowFn for its rows.
	// Only the share of the stream that shard names (ScanOptions.Shard
	// for Scan).
	ScanColumns(ctx context.Context, tenant string, stream store.Stream, from, to int64, shard store.Shard, order store.Order, blockFn store.BlockFunc, metaOK store.MetaFunc, rowFn store.RowFunc) error
}

// indexCounter is a Source that can count a stream's rows in [from,
// to] (key: its store.Stream's) from its index when no row need be read (store.Snapshot's
// CountIndexed); ok false: Scan them.
type indexCounter interface {
	CountIndexed(tenant, key string, from, to int64, shard store.Shard) (n int, ok bool)
}

// Warner is a Source that can say what its reads left out (damaged data
// skipped): the result's Warnings.
type Warner interface {
	Warnings() []string
}

// Direction orders the lines of a log query.
type Direction uint8

const (
	Backward Direction = iota // newest first, Loki's default
	Forward
)

// Params are one query's parameters, as Loki's API takes them.
type Params struct {
	Tenant string
	Query  string
	// Start and End bound a range query (Unix nanoseconds): a log query
	// returns lines with Start <= time < End; a metric query is evaluated
	// at Start, Start+Step, ... up to End. An instant query has Start ==
	// End, the evaluation time.
	Start, End int64
	Step       time.Duration
	// Interval thins a log query's lines: at most one line per interval
	// (Loki's interval parameter); zero keeps every line.
	Interval  time.Duration
	Limit     int
	Direction Direction
	Instant   bool
	// Categorize returns a log query's streams by their stream labels
	// alone, each entry with its structured metadata and parsed labels
	// (Loki's categorize-labels encoding). Otherwise a stream's labels
	// are all of its lines' labels.
	Categorize bool

	// Tenants, when more than one, make a multi-tenant query: it reads
	// each of them, its streams labelled TenantLabel (tenants.go), and
	// Tenant is only their name for logs and limits.
	Tenants []string
}

// Limits bound what one query may cost. Zero means no limit.
type Limits struct {
	MaxSeries       int
	MaxBytesScanned int64
	MaxLines        int
	MaxPoints       int // points per series of a range query
	// MaxMemory bounds what one query holds while it runs: the series
	// of its range aggregations (their windows and samples) and the lines
	// of a log query. Zero means no limit.
	MaxMemory int64
	Timeout   time.Duration
}

// DefaultLimits are the limits a server applies unless configured.
var DefaultLimits = Limits{
	MaxSeries:       500,
	MaxBytesScanned: 0,
	MaxLines:        5000,
	MaxPoints:       11000,
	MaxMemory:       1 << 30,
	Timeout:         5 * time.Minute,
}

// Errors a caller maps to client errors (HTTP 400).
var (
	ErrBadRequest = errors.New("bad request")
	ErrLimit      = errors.New("query limit exceeded")
)

// Engine evaluates LogQL queries.
//
// Concurrency: safe for concurrent queries.
type Engine struct {
	limits  Limits
	workers int
	// reference evaluates every query the plain way, the one the fast
	// paths are tested against: every row of the selected streams read
	// whole and run through the pipeline, every label set, no pruning
	// by the store, no columnar path.
	reference bool
	plans     planShare // templates' plans, shared by the queries (plan_share.go)
	// firstNewest, when set, replaces the const of that name (tests:
	// blocks of a few rows read their newest first too).
	firstNewest int
	// sweepAlways, when set, sweeps a columnar log query's blocks from
	// its first (tests: log_sweep.go's path is otherwise taken only once
	// the rows walked show the filters rare, which short walks never do).
	sweepAlways bool
}

// NewEngine returns an engine with the given limits.
func NewEngine(limits Limits) *Engine {
	return &Engine{limits: limits, workers: runtime.GOMAXPROCS(0)}
}

// Result is a query's result, of one of Loki's result types.
type Result struct {
	// Type is "streams", "matrix", "vector" or "scalar".
	Type    string
	Streams []Stream
	Matrix  []Series
	Vector  []Sample
	Scalar  Point
	Stats   Stats
	// Warnings say what the answer may lack: data the source skipped as
	// damaged (Loki's "warnings").
	Warnings []string
}

// Stream is the lines of a log query with one label set.
type Stream struct {
	Labels  record.Labels
	Entries []Entry
}

// Entry is one line of a log query.
type Entry struct {
	Time int64 // Unix nanoseconds
	Line string
	// Meta and Parsed are the line's structured metadata and its other
	// labels that are not stream labels, when Params.Categorize.
	Meta, Parsed record.Labels
}

// Series is one series of a range query.
type Series struct {
	Labels record.Labels
	Points []Point
}

// Sample is one series of an instant query.
type Sample struct {
	Labels record.Labels
	Point
}

// Point is a value at a time (Unix nanoseconds).
type Point struct {
	Time  int64
	Value float64
}

// Stats count a query's work.
type Stats struct {
	Streams      int64 // streams read
	Rows         int64 // rows read
	RowsColumnar int64 // rows of those read from their columns, their lines not rebuilt
	RowsSwept    int64 // rows of those counted by their columns' value ids, never walked one by one
	Bytes        int64 // bytes of the lines read
	LinesOut     int64 // lines returned
	ExecDuration time.Duration
}

// Exec parses and evaluates a query.
func (e *Engine) Exec(ctx context.Context, src Source, p Params) (*Result, error) {
	expr, err := logql.Parse(p.Query)
	if err != nil {
		return nil, err
	}
	return e.Eval(ctx, src, expr, p)
}

// Eval evaluates a parsed query.
func (e *Engine) Eval(ctx context.Context, src Source, expr logql.Expr, p Params) (*Result, error) {
	began := time.Now()
	if e.limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.limits.Timeout)
		defer cancel()
	}
	if err := check(expr, p); err != nil {
		return nil, err
	}
	if len(p.Tenants) > 1 {
		src = newMultiSource(src, p.Tenants)
	}
	if !e.reference {
		expr = pruned(expr)
	}
	ev := &evaluator{e: e, src: src, p: p}
	var res *Result
	var err error
	switch x := expr.(type) {
	case *logql.LogExpr:
		res, err = ev.logQuery(ctx, x)
	case logql.SampleExpr:
		res, err = ev.metricQuery(ctx, x)
	}
	if err != nil && ctx.Err() != nil {
		// Canceled or out of time: what a worker met meanwhile (a
		// pipeline error of rows read after) is not the answer.
		err = ctx.Err()
	}
	if err = e.timedOut(err); err != nil {
		return nil, err
	}
	if w, ok := src.(Warner); ok {
		res.Warnings = w.Warnings()
	}
	res.Stats = ev.stats.snapshot()
	res.Stats.ExecDuration = time.Since(began)
	return res, nil
}

// check refuses a query the parameters cannot evaluate.
func check(expr logql.Expr, p Params) error {
	if p.End < p.Start {
		return fmt.Errorf("%w: the end time is before the start time", ErrBadRequest)
	}
	switch x := expr.(type) {
	case *logql.LogExpr:
		if p.Instant {
			return fmt.Errorf("%w: log queries are not supported as an instant query type, please change your query to a range query type", ErrBadRequest)
		}
	case logql.SampleExpr:
		if !p.Instant && hasApproxTopK(x) {
			// Loki's words; its sketches only merge for one instant.
			return fmt.Errorf("%w: approx_topk error: count min sketches are only supported on instant queries", ErrBadRequest)
		}
	default:
		return fmt.Errorf("%w: unexpected expression %T", ErrBadRequest, expr)
	}
	return nil
}

// timedOut names the timeout limit in an error its deadline caused.
func (e *Engine) timedOut(err error) error {
	if errors.Is(err, context.DeadlineExceeded) && e.limits.Timeout > 0 {
		return fmt.Errorf("%w: the query ran longer than %s", ErrLimit, e.limits.Timeout)
	}
	return err
}

// hasApproxTopK reports whether e uses approx_topk.
func hasApproxTopK(e logql.SampleExpr) bool {
	switch x := e.(type) {
	case *logql.VectorAggregation:
		return x.Op == "approx_topk" || hasApproxTopK(x.Expr)
	case *logql.BinaryExpr:
		return hasApproxTopK(x.LHS) || hasApproxTopK(x.RHS)
	case *logql.LabelReplace:
		return hasApproxTopK(x.Expr)
	}
	return false
}

// metricQuery evaluates a metric query into a matrix (range), a vector
// (instant) or a scalar.
func (ev *evaluator) metricQuery(ctx context.Context, x logql.SampleExpr) (*Result, error) {
	shape, err := ev.shape()
	if err != nil {
		return nil, err
	}
	start := shape.start
	ev.hints = queryHints(x)
	m, err := ev.sample(ctx, x, shape, true)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if m.scalar {
		if ev.p.Instant {
			res.Type, res.Scalar = "scalar", Point{Time: start, Value: m.series[0].vals[0]}
			return res, nil
		}
	}
	m.compact()
	if max := ev.e.limits.MaxSeries; max > 0 && len(m.series) > max {
		return nil, fmt.Errorf("%w: maximum of series (%d) reached for a single query", ErrLimit, max)
	}
	if ev.p.Instant {
		res.Type = "vector"
		res.Vector = make([]Sample, 0, len(m.series))
		for _, s := range m.series {
			res.Vector = append(res.Vector, Sample{Labels: s.labels, Point: Point{Time: start, Value: s.vals[0]}})
		}
		return res, nil
	}
	res.Type = "matrix"
	res.Matrix = make([]Series, 0, len(m.series))
	for _, s := range m.series {
		out := Series{Labels: s.labels}
		for i, ok := range s.has {
			if ok {
				out.Points = append(out.Points, Point{Time: m.time(i), Value: s.vals[i]})
			}
		}
		res.Matrix = append(res.Matrix, out)
	}
	return res, nil
}

// shape returns an empty matrix of the steps a metric query is
// evaluated at.
func (ev *evaluator) shape() (*matrix, error) {
	start, step, steps := ev.p.Start, int64(ev.p.Step), 1
	if !ev.p.Instant {
		if step <= 0 {
			return nil, fmt.Errorf("%w: zero or negative query resolution step widths are not accepted. Try a positive integer", ErrBadRequest)
		}
		n := (ev.p.End-ev.p.Start)/step + 1
		if max := ev.e.limits.MaxPoints; max > 0 && n > int64(max) {
			return nil, fmt.Errorf("%w: exceeded maximum resolution of %d points per timeseries. Try decreasing the query resolution (?step=XX)", ErrBadRequest, max)
		}
		steps = int(n)
	}
	if step <= 0 {
		step = 1
	}
	return newMatrix(start, step, steps), nil
}

// sample evaluates a metric expression at the steps of shape.
//
// ordered says whether the series must be in label order, as a result
// is: a top-k, which breaks ties by labels, reads the series in any
// order, as a count, a sum, an avg, a max and a min do (their groups
// come out in label order), and a sum of a range aggregation that grouped its
// rows by the sum's labels (the sum is then the range aggregation
// itself) passes on its caller's need.
func (ev *evaluator) sample(ctx context.Context, x logql.SampleExpr, shape *matrix, ordered bool) (*matrix, error) {
	switch x := x.(type) {
	case *logql.RangeAggregation:
		return ev.rangeAggregation(ctx, x, shape, ordered)
	case *logql.VectorAggregation:
		if ra, ok := ev.seriesCount(x); ok {
			return ev.countSeries(ctx, ra, shape)
		}
		childOrdered := true
		switch x.Op {
		case "topk", "bottomk", "approx_topk":
			childOrdered = false
		case "count", "avg":
			// How many series a group has a value in, and their mean
			// (avgValues: an exact sum): their order cannot change them.
			childOrdered = false
		case "sum", "max", "min":
			if ra, ok := x.Expr.(*logql.RangeAggregation); ok && ev.hintsOf(ra).mergedAs(x.Op, x.Grouping) {
				childOrdered = ordered
			} else {
				// A group's sum (exactSum), largest or smallest value:
				// the order of its series cannot change it, and the
				// groups come out in label order (aggregateGroups).
				childOrdered = false
			}
		}
		if ra, ok := ev.foldAll(x, shape); ok {
			return ev.rangeFold(ctx, ra, shape, x.Op)
		}
		var in *matrix
		var err error
		if ra, ok := ev.preselectK(x, shape); ok {
			in, err = ev.rangeAggregationK(ctx, ra, shape, x.Param, x.Op == "topk")
			if err == nil && ra != x.Expr {
				in, err = evalVectorAgg(x.Expr.(*logql.VectorAggregation), in) // the sum the rows were read by
			}
		} else {
			in, err = ev.sample(ctx, x.Expr, shape, childOrdered)
		}
		if err != nil {
			return nil, err
		}
		return evalVectorAgg(x, in)
	case *logql.BinaryExpr:
		// Between series and a number, the answer keeps the series'
		// order (vectorScalarBinary): they come as it must.
		_, lnum := x.LHS.(*logql.LiteralExpr)
		_, rnum := x.RHS.(*logql.LiteralExpr)
		lhs, err := ev.sample(ctx, x.LHS, shape, ordered || !rnum)
		if err != nil {
			return nil, err
		}
		rhs, err := ev.sample(ctx, x.RHS, shape, ordered || !lnum)
		if err != nil {
			return nil, err
		}
		return evalBinary(x, lhs, rhs)
	case *logql.LabelReplace:
		in, err := ev.sample(ctx, x.Expr, shape, true)
		if err != nil {
			return nil, err
		}
		return evalLabelReplace(x, in)
	case *logql.LiteralExpr:
		m := shape.like()
		m.scalar = true
		fill(m.add(nil), x.Value)
		return m, nil
	case *logql.VectorExpr:
		m := shape.like()
		fill(m.add(record.Labels{}), x.Value)
		return m, nil
	default:
		return nil, fmt.Errorf("%w: unexpected expression %T", ErrBadRequest, x)
	}
}

func fill(s *series, v float64) {
	for i := range s.vals {
		s.set(i, v)
	}
}
