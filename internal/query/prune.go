package query

import (
	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/stage"
)

// pruned returns x without the stages that cannot change its answer
// (prunedStages), sharing every node it leaves as it is: x itself is
// never changed, as a parsed query may be evaluated again (by the
// reference engine, say, which runs every stage as written).
func pruned(x logql.Expr) logql.Expr {
	switch x := x.(type) {
	case *logql.LogExpr:
		if ps, ok := prunedStages(x.Pipeline); ok {
			return &logql.LogExpr{Selector: x.Selector, Pipeline: ps}
		}
	case logql.SampleExpr:
		return prunedSample(x)
	}
	return x
}

func prunedSample(x logql.SampleExpr) logql.SampleExpr {
	switch x := x.(type) {
	case *logql.RangeAggregation:
		if ps, ok := prunedStages(x.Range.Log.Pipeline); ok {
			r := *x.Range
			r.Log = &logql.LogExpr{Selector: x.Range.Log.Selector, Pipeline: ps}
			y := *x
			y.Range = &r
			return &y
		}
	case *logql.VectorAggregation:
		if e := prunedSample(x.Expr); e != x.Expr {
			y := *x
			y.Expr = e
			return &y
		}
	case *logql.BinaryExpr:
		l, r := prunedSample(x.LHS), prunedSample(x.RHS)
		if l != x.LHS || r != x.RHS {
			y := *x
			y.LHS, y.RHS = l, r
			return &y
		}
	case *logql.LabelReplace:
		if e := prunedSample(x.Expr); e != x.Expr {
			y := *x
			y.Expr = e
			return &y
		}
	}
	return x
}

// prunedStages returns stages without the drops of error labels alone
// that come before any stage that can set one (only line filters and
// decolorize come before them): `{app="x"} | drop __error__,
// __error_details__`, as Grafana's Logs Drilldown asks for a stream's
// volume, removes nothing, and without it the pipeline is empty, which
// the engine answers from the stream's index. It reports whether it
// took out any.
func prunedStages(stages []logql.Stage) ([]logql.Stage, bool) {
	n := 0
scan:
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFilter, *logql.Decolorize:
			continue
		case *logql.Drop:
			if dropsErrorLabelsOnly(s) {
				n++
				continue
			}
		}
		break scan
	}
	if n == 0 {
		return stages, false
	}
	out := make([]logql.Stage, 0, len(stages)-n)
	before := true
	for _, s := range stages {
		switch s := s.(type) {
		case *logql.LineFilter, *logql.Decolorize:
		case *logql.Drop:
			if before && dropsErrorLabelsOnly(s) {
				continue
			}
			before = false
		default:
			before = false
		}
		out = append(out, s)
	}
	return out, true
}

// dropsErrorLabelsOnly reports whether d names only the error labels.
func dropsErrorLabelsOnly(d *logql.Drop) bool {
	for _, it := range d.Items {
		if it.Name != stage.ErrorLabel && it.Name != stage.ErrorDetailsLabel {
			return false
		}
	}
	return true
}
