package query

import (
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/stage"
)

// pruned returns x without the stages that cannot change its answer and
// with its line filters as early as they give the same answer
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
	out, dropped := withoutErrorDrops(stages)
	out, hoisted := filtersFirst(out)
	return out, dropped || hoisted
}

// filtersFirst returns stages with each line filter moved before the
// parsers and stages of labels alone that come before it, up to the
// last stage that changes the line (line_format, decolorize, unpack, or
// a stage not known here), keeping the filters' order: `| json | level="error"
// |= "timeout"` is `|= "timeout" | json | level="error"`. A line filter
// reads only the line, which those stages leave as it is, and drops a
// row whatever its labels: the answer is the same, the filter runs
// before the parser, and the columnar paths select a block's rows by it
// (lead_filters.go). It reports whether it moved any.
func filtersFirst(stages []logql.Stage) ([]logql.Stage, bool) {
	out := make([]logql.Stage, 0, len(stages))
	moved := false
	start := 0 // in out, where the line was last changed
	for _, s := range stages {
		switch s.(type) {
		case *logql.LineFilter:
			at := start
			for at < len(out) && isLineFilter(out[at]) {
				at++
			}
			moved = moved || at < len(out)
			out = slices.Insert(out, at, s)
			continue
		case *logql.JSONParser, *logql.LogfmtParser, *logql.RegexpParser, *logql.PatternParser,
			*logql.LabelFilterStage, *logql.Drop, *logql.Keep, *logql.LabelFormat:
			out = append(out, s)
		default:
			out = append(out, s)
			start = len(out)
		}
	}
	if !moved {
		return stages, false
	}
	return out, true
}

func isLineFilter(s logql.Stage) bool {
	_, ok := s.(*logql.LineFilter)
	return ok
}

// withoutErrorDrops is prunedStages' drop of the error labels' drops,
// and whether it dropped any.
func withoutErrorDrops(stages []logql.Stage) ([]logql.Stage, bool) {
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

// withoutQuietParsers returns stages without their parsers when those
// can change nothing the query reads: line filters, then parsers
// without parameters (json, logfmt without --keep-empty), then drops
// of the error labels alone that drop both, and nothing
// after, in a range aggregation that observes no label (observed holds
// only the error labels). Such parsers set only the labels observed
// and errors, which the drops take away again: Grafana's Logs
// Drilldown counts a service's lines by a stream label so (`sum by
// (cluster) (count_over_time({...} | json | logfmt | drop __error__,
// __error_details__ [1m]))`), and without the parsers the engine
// counts them from the streams' index.
func withoutQuietParsers(stages []logql.Stage, observed *stage.Observed) ([]logql.Stage, bool) {
	if observed == nil {
		return stages, false
	}
	for _, n := range observed.Names() {
		if n != stage.ErrorLabel && n != stage.ErrorDetailsLabel {
			return stages, false
		}
	}
	k := 0
	for k < len(stages) && isLineFilter(stages[k]) {
		k++
	}
	parsers := 0
	for ; k < len(stages); k++ {
		switch p := stages[k].(type) {
		case *logql.JSONParser:
			if len(p.Params) > 0 {
				return stages, false
			}
			parsers++
			continue
		case *logql.LogfmtParser:
			if len(p.Params) > 0 || p.KeepEmpty {
				return stages, false
			}
			parsers++
			continue
		}
		break
	}
	dropped := map[string]bool{}
	for _, s := range stages[k:] {
		d, ok := s.(*logql.Drop)
		if !ok || !dropsErrorLabelsOnly(d) {
			return stages, false
		}
		for _, it := range d.Items {
			dropped[it.Name] = true
		}
	}
	if parsers == 0 || !dropped[stage.ErrorLabel] || !dropped[stage.ErrorDetailsLabel] {
		return stages, false
	}
	return stages[:k-parsers], true
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
