package query

import (
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/stage"
)

// rangeHints is what a range aggregation's place in its query lets the
// engine skip.
type rangeHints struct {
	// observed are the labels its parsers need set; nil: every label.
	observed *stage.Observed
	// mergedBy, when an aggregation (mergeOp) of its series by these
	// labels is all the query reads of them, groups its rows as they
	// are read: one series per group, not one per distinct set of
	// labels aggregated at the end.
	mergedBy *logql.Grouping
	mergeOp  string // "sum", "max" or "min"
}

// mergedAs reports whether the rows were merged as they were read by
// aggregation op by the labels of grouping g (a `by`, or none).
func (h rangeHints) mergedAs(op string, g *logql.Grouping) bool {
	return h.mergedBy != nil && h.mergeOp == op && (g == nil || !g.Without) && sameNames(h.mergedBy.Labels, g)
}

// queryHints returns, for the range aggregations of a metric query
// whose series' other labels cannot change its answer, the labels their
// pipelines' parsers need set (stage.Observed): those of a grouping that
// merges the series of the range aggregation before anything else reads
// them; and, when that grouping is an outer aggregation's, the
// aggregation and its grouping. A range aggregation missing from the map
// observes every label.
//
// Two groupings merge series soundly: the range aggregation's own
// (`sum_over_time(...) by (a)` groups rows before the function), and an
// aggregation directly above a function that it composes with: a sum of
// a function linear in its rows (`sum by (a) (count_over_time(...))`:
// the sum of the counts of some series is the count of their rows), a
// maximum of max_over_time and a minimum of min_over_time (the largest
// of the series' largest values is the largest of their rows'; NaN, as
// both levels take it, only when every value is NaN). An average or
// count of series, a maximum of counts, a top-k, a binary operation and
// label_replace see the series themselves: below them every label
// counts.
func queryHints(x logql.SampleExpr) map[*logql.RangeAggregation]rangeHints {
	out := map[*logql.RangeAggregation]rangeHints{}
	observeIn(x, nil, "", out)
	return out
}

// observeIn walks x; op is the aggregation x's series go through by the
// labels of by on their way to the answer ("" for none): "sum" also
// when only which groups by those labels have a value reaches it (see
// countOfGroups).
func observeIn(x logql.SampleExpr, by []string, op string, out map[*logql.RangeAggregation]rangeHints) {
	switch x := x.(type) {
	case *logql.RangeAggregation:
		var result []string
		var h rangeHints
		switch g := x.Grouping; {
		case g != nil && !g.Without:
			result = g.Labels
		case g == nil && composes(op, x.Op):
			result = by
			h.mergedBy, h.mergeOp = &logql.Grouping{Labels: by}, op
		default:
			return
		}
		u := x.Range.Unwrap
		if u != nil {
			result = append([]string{u.Label}, result...)
		}
		o := stage.ObservedBy(x.Range.Log.Pipeline, result)
		if u != nil {
			o = o.AddFilters(u.Filters)
		}
		o = o.Except(streamBound(x.Range.Log.Selector))
		h.observed = o
		out[x] = h
	case *logql.VectorAggregation:
		if g, ok := countOfGroups(x); ok {
			observeIn(x.Expr.(*logql.VectorAggregation).Expr, g, "sum", out)
			return
		}
		switch x.Op {
		case "sum", "max", "min":
			if x.Grouping == nil || !x.Grouping.Without {
				var labels []string
				if x.Grouping != nil {
					labels = x.Grouping.Labels
				}
				observeIn(x.Expr, labels, x.Op, out)
				return
			}
		}
		observeIn(x.Expr, nil, "", out)
	case *logql.BinaryExpr:
		observeIn(x.LHS, nil, "", out)
		observeIn(x.RHS, nil, "", out)
	case *logql.LabelReplace:
		observeIn(x.Expr, nil, "", out)
	}
}

// streamBound returns the labels that every stream a selector selects
// has: those of a matcher that the empty value (an absent label) fails.
// A parser never sets one of them (it sets name_extracted instead), so
// the labels observed after it need not include them: `sum by (service)
// (count_over_time({service=~".+"} | json [1m]))` reads no field of the
// lines.
func streamBound(sel logql.Selector) []string {
	var names []string
	for _, m := range sel {
		if !m.Matches("") {
			names = append(names, m.Name)
		}
	}
	return names
}

// countOfGroups reports whether x is a count of the groups of an inner
// count by some labels, by some of those labels (`count(count by (host)
// (...))`, the number of distinct hosts): then only which groups have a
// value at a step reaches the answer, not how many series they count,
// and a range aggregation linear in its rows under the inner count may
// group its rows by the inner count's labels as they are read (a group
// has a value at a step exactly when one of its series has). It returns
// the inner count's labels.
func countOfGroups(x *logql.VectorAggregation) ([]string, bool) {
	in, ok := x.Expr.(*logql.VectorAggregation)
	if x.Op != "count" || !ok || in.Op != "count" || in.Grouping == nil || in.Grouping.Without ||
		x.Grouping != nil && x.Grouping.Without {
		return nil, false
	}
	if x.Grouping != nil {
		for _, l := range x.Grouping.Labels {
			if !slices.Contains(in.Grouping.Labels, l) {
				return nil, false
			}
		}
	}
	return in.Grouping.Labels, true
}

// composes reports whether aggregation op of the values of range
// function fn over some series is fn's value over all their rows: a sum
// of a function linear in its rows (counts, bytes, sums, and rates of
// those), a maximum of maxima, a minimum of minima.
func composes(op, fn string) bool {
	switch op {
	case "sum":
		switch fn {
		case "count_over_time", "rate", "bytes_over_time", "bytes_rate", "sum_over_time":
			return true
		}
	case "max":
		return fn == "max_over_time"
	case "min":
		return fn == "min_over_time"
	}
	return false
}
