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
	// sumBy, when a sum of it by these labels is all the query reads of
	// its series, groups its rows so as they are read: one series per
	// group, not one per distinct set of labels summed at the end.
	sumBy *logql.Grouping
}

// queryHints returns, for the range aggregations of a metric query
// whose series' other labels cannot change its answer, the labels their
// pipelines' parsers need set (stage.Observed): those of a grouping that
// merges the series of the range aggregation before anything else reads
// them; and, when that grouping is an outer sum's, the sum's grouping. A
// range aggregation missing from the map observes every label.
//
// Two groupings merge series soundly: the range aggregation's own
// (`sum_over_time(...) by (a)` groups rows before the function), and a
// sum directly above a function linear in its rows (`sum by (a)
// (count_over_time(...))`: the sum of the counts of some series is the
// count of their rows). A maximum, average or count of series, a top-k,
// a binary operation and label_replace see the series themselves: below
// them every label counts.
func queryHints(x logql.SampleExpr) map[*logql.RangeAggregation]rangeHints {
	out := map[*logql.RangeAggregation]rangeHints{}
	observeIn(x, nil, false, out)
	return out
}

// observeIn walks x; sum is set when x's series are summed by the
// labels of by on their way to the answer, or when only which groups by
// those labels have a value reaches it (see countOfGroups).
func observeIn(x logql.SampleExpr, by []string, sum bool, out map[*logql.RangeAggregation]rangeHints) {
	switch x := x.(type) {
	case *logql.RangeAggregation:
		var result []string
		var h rangeHints
		switch g := x.Grouping; {
		case g != nil && !g.Without:
			result = g.Labels
		case g == nil && sum && linearInRows(x.Op):
			result = by
			h.sumBy = &logql.Grouping{Labels: by}
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
			observeIn(x.Expr.(*logql.VectorAggregation).Expr, g, true, out)
			return
		}
		if x.Op == "sum" && (x.Grouping == nil || !x.Grouping.Without) {
			var labels []string
			if x.Grouping != nil {
				labels = x.Grouping.Labels
			}
			observeIn(x.Expr, labels, true, out)
			return
		}
		observeIn(x.Expr, nil, false, out)
	case *logql.BinaryExpr:
		observeIn(x.LHS, nil, false, out)
		observeIn(x.RHS, nil, false, out)
	case *logql.LabelReplace:
		observeIn(x.Expr, nil, false, out)
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

// linearInRows reports whether a range function's value for a set of
// rows is the sum of its values for any split of them: counts, bytes,
// sums, and rates of those.
func linearInRows(op string) bool {
	switch op {
	case "count_over_time", "rate", "bytes_over_time", "bytes_rate", "sum_over_time":
		return true
	}
	return false
}
