package query

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// Vector aggregations, binary operators (binary.go) and label_replace
// (labelreplace.go) work on matrices that are already evaluated. They
// follow PromQL's semantics, which LogQL shares, and Loki where the two
// differ in what a user sees (documented where it happens).
//
// INVARIANT: they never modify an input matrix, its series or their
// labels. An output may reuse an input series that it leaves unchanged,
// and output series may share label slices with input series: labels are
// never modified in place, only replaced.
//
// Order of series. Loki returns a range query's series and an instant
// query's samples in label order, except an instant query that contains
// sort or sort_desc, whose samples come in the order its operators
// produce them. The operators here keep that true without help: every one
// returns label order, except sort and sort_desc of one step (value
// order) and what is computed from such a value-ordered vector (binary
// operators and label_replace keep the order of their input then, as Loki
// does; see inLabelOrder).

// evalVectorAgg evaluates a vector aggregation over in, step by step: a
// series without a value at a step takes no part in that step.
//
// Without grouping (e.Grouping nil or `by ()`) everything is one group:
// the aggregates give one series without labels, topk, bottomk, sort and
// sort_desc keep the labels of the series they return.
func evalVectorAgg(e *logql.VectorAggregation, in *matrix) (*matrix, error) {
	if in.scalar {
		return nil, fmt.Errorf("%w: %s: expected a vector, got a scalar", ErrBadRequest, e.Op)
	}
	switch e.Op {
	case "sum", "avg", "min", "max", "count", "stddev", "stdvar":
		if in.mergedBy != nil && (e.Grouping == nil || !e.Grouping.Without) && sameNames(in.mergedBy, e.Grouping) {
			// The rows were aggregated by the group as they were read:
			// each series is a group of its own.
			if e.Op == in.mergeOp {
				return in, nil
			}
			return aggregateSingles(e.Op, in), nil
		}
		return aggregateGroups(e.Op, e.Grouping, in), nil
	case "topk", "bottomk":
		return aggregateK(e.Op == "topk", e.Param, e.Grouping, in), nil
	case "approx_topk":
		// Loki estimates it with a count-min sketch over its shards;
		// sluice has every series at hand and computes the exact topk
		// (instant queries only, refused in Eval otherwise, as Loki).
		return aggregateK(true, e.Param, nil, in), nil
	case "sort", "sort_desc":
		return sortByValue(e.Op == "sort_desc", e.Grouping, in), nil
	}
	return nil, fmt.Errorf("%w: unknown vector aggregation %q", ErrBadRequest, e.Op)
}

// sameNames reports whether a by-grouping (nil: by nothing) names the
// labels of names.
func sameNames(names []string, g *logql.Grouping) bool {
	var by []string
	if g != nil {
		by = g.Labels
	}
	a, b := slices.Clone(names), slices.Clone(by)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// aggGroup is the input series of one output group.
type aggGroup struct {
	labels  record.Labels // the output labels of an aggregate
	members []*series     // in input order
}

// groupSeries splits the series of in into groups, in order of first
// appearance. A group's labels are those of `by` found on its series, or
// all of them but those of `without`, as Prometheus'.
func groupSeries(g *logql.Grouping, in *matrix) []*aggGroup {
	if g == nil {
		// One group of every series: none of their labels is read (a
		// maximum over 3.3M series spent a second on them).
		if len(in.series) == 0 {
			return nil
		}
		return []*aggGroup{{labels: record.Labels{}, members: in.series}}
	}
	var groups []*aggGroup
	index := make(map[string]*aggGroup)
	var key []byte
	for _, s := range in.series {
		// The key of the group's labels, made without them: they are
		// made once per group.
		key = key[:0]
		for _, l := range s.labels {
			if inGroup(g, l.Name) {
				key = appendLabelsKey(key, record.Labels{l})
			}
		}
		gr, ok := index[string(key)]
		if !ok {
			gr = &aggGroup{labels: groupLabels(g, s.labels)}
			index[string(key)] = gr
			groups = append(groups, gr)
		}
		gr.members = append(gr.members, s)
	}
	return groups
}

// inGroup reports whether the group of a series has its label name:
// those of `by`, or all but those of `without` (Prometheus also drops
// __name__ there; our series have none), none without a grouping.
func inGroup(g *logql.Grouping, name string) bool {
	if g == nil {
		return false
	}
	return slices.Contains(g.Labels, name) != g.Without
}

// groupLabels returns the labels of ls that identify its group (those
// inGroup keeps). The result never shares ls' backing array.
func groupLabels(g *logql.Grouping, ls record.Labels) record.Labels {
	out := record.Labels{}
	if g != nil {
		out = make(record.Labels, 0, len(ls))
	}
	for _, l := range ls {
		if inGroup(g, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// keepLabels returns a new set with the labels of ls named in names.
func keepLabels(ls record.Labels, names []string) record.Labels {
	out := make(record.Labels, 0, min(len(ls), len(names)))
	for _, l := range ls {
		if slices.Contains(names, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// dropLabels returns a new set with the labels of ls not named in names.
func dropLabels(ls record.Labels, names []string) record.Labels {
	out := make(record.Labels, 0, len(ls))
	for _, l := range ls {
		if !slices.Contains(names, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// appendLabelsKey appends an encoding of ls that identifies the set:
// each name and value prefixed with its length, so no byte of a value
// can make two sets collide.
func appendLabelsKey(dst []byte, ls record.Labels) []byte {
	for _, l := range ls {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	}
	return dst
}

// setLabel returns ls with the label name set to value, or removed when
// value is empty (Prometheus' labels.Builder.Set), still sorted by name,
// and whether that changed ls. It never modifies ls: a change returns a
// new set.
//
// REQUIRES: ls sorted by name.
func setLabel(ls record.Labels, name, value string) (record.Labels, bool) {
	i, found := slices.BinarySearchFunc(ls, name, func(l record.Label, n string) int { return strings.Compare(l.Name, n) })
	if (found && ls[i].Value == value) || (!found && value == "") {
		return ls, false
	}
	out := make(record.Labels, 0, len(ls)+1)
	out = append(out, ls[:i]...)
	if value != "" {
		out = append(out, record.Label{Name: name, Value: value})
	}
	if found {
		i++
	}
	return append(out, ls[i:]...), true
}

// orderLike puts the series of out, computed from ins, in label order,
// unless out is of one step and an input vector is not in label order:
// then a sort or sort_desc came before and out keeps the order it was
// built in, which follows the inputs' as Loki's operators do.
func orderLike(out *matrix, ins ...*matrix) {
	if out.steps == 1 {
		for _, in := range ins {
			if !in.scalar && !inLabelOrder(in) {
				return
			}
		}
	}
	out.sortSeries()
}

// inLabelOrder reports whether the series of m are in label order. Only
// sort and sort_desc of one step produce another order (see the top of
// this file), so an instant query's vector out of label order tells that
// a sort came before and its order is to be kept.
func inLabelOrder(m *matrix) bool {
	return slices.IsSortedFunc(m.series, func(a, b *series) int { return compareLabels(a.labels, b.labels) })
}

// aggregateGroups evaluates sum, avg, min, max, count, stddev or stdvar: one
// series per group, with a value at the steps where a member has one.
func aggregateGroups(op string, g *logql.Grouping, in *matrix) *matrix {
	out := in.like()
	var vals []float64
	for _, gr := range groupSeries(g, in) {
		vals = addAggregate(out, op, gr.labels, gr.members, vals)
	}
	out.sortSeries()
	return out
}

// aggregateSingles is aggregateGroups of series that are each a group
// of their own, labelled as their group is (matrix.mergedBy): no index
// of groups, no list of members (a count of the series of each of 300
// hosts spent a third of its time there).
func aggregateSingles(op string, in *matrix) *matrix {
	out := in.like()
	var vals []float64
	var one [1]*series
	for _, m := range in.series {
		one[0] = m
		vals = addAggregate(out, op, m.labels, one[:], vals)
	}
	out.sortSeries()
	return out
}

// addAggregate adds to out the series of the group of members, labelled
// ls, with op's value at each step where a member has one (none if no
// member has any). vals is scratch, returned for reuse.
func addAggregate(out *matrix, op string, ls record.Labels, members []*series, vals []float64) []float64 {
	var s *series
	for i := range out.steps {
		vals = vals[:0]
		for _, m := range members {
			if m.has[i] {
				vals = append(vals, m.vals[i])
			}
		}
		if len(vals) == 0 {
			continue
		}
		if s == nil {
			s = out.add(ls)
		}
		s.set(i, aggregateValues(op, vals))
	}
	return vals
}

// aggregateValues aggregates the values of one group at one step, as
// Prometheus' engine does.
//
// REQUIRES: len(vals) > 0.
func aggregateValues(op string, vals []float64) float64 {
	switch op {
	case "sum":
		return sumValues(vals)
	case "avg":
		return avgValues(vals)
	case "min":
		m := vals[0]
		for _, v := range vals[1:] {
			m = minStep(m, v)
		}
		return m
	case "max":
		m := vals[0]
		for _, v := range vals[1:] {
			m = maxStep(m, v)
		}
		return m
	case "count":
		return float64(len(vals))
	case "stddev":
		return math.Sqrt(varianceValues(vals))
	case "stdvar":
		return varianceValues(vals)
	}
	panic("query: aggregateValues: unexpected op " + op)
}

// exactSum sums floats exactly, keeping the sum as non-overlapping
// partial sums (Shewchuk's algorithm, as Python's math.fsum), and
// rounds it once, correctly, at the end: the answer does not depend on
// the order the values come in, so a sum reads its series in any order
// (evaluator.sample; sorting 3.3M series by their labels for a sum took
// 2 s). Where Prometheus' Kahan-Neumaier sum differs from it, it is in
// the last bits, and exactSum is the exact one. Infinities and NaN sum
// as floats do. A partial sum beyond the largest float (the values' sum,
// in some order, above 1.8e308) sets overflow, and the sum is then taken
// again scaled down (sumOf).
//
// Its partials start in the caller's scratch (newExactSum), so that a
// sum of a few values allocates nothing.
type exactSum struct {
	partials []float64
	special  float64 // the sum of the infinities and NaN among the values
	hasSpec  bool
	overflow bool // a partial sum of finite values overflowed: result is not the sum
}

// newExactSum returns an empty sum whose partials start in scratch.
func newExactSum(scratch []float64) exactSum { return exactSum{partials: scratch[:0]} }

// add returns the sum with v added. (A value, not a pointer, is
// changed: its partials then stay in the caller's scratch.)
func (e exactSum) add(v float64) exactSum {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		e.special, e.hasSpec = e.special+v, true
		return e
	}
	i := 0
	for _, y := range e.partials {
		if math.Abs(v) < math.Abs(y) {
			v, y = y, v
		}
		hi := v + y
		lo := y - (hi - v)
		if lo != 0 {
			e.partials[i] = lo
			i++
		}
		v = hi
	}
	if math.IsInf(v, 0) {
		e.partials, e.overflow = e.partials[:i], true
		return e
	}
	e.partials = append(e.partials[:i], v)
	return e
}

// result is the sum rounded to the nearest float (ties to even), never
// -0; 0 when nothing was added. Not the sum after an overflow (sumOf).
func (e exactSum) result() float64 {
	if e.hasSpec {
		return e.special
	}
	p := e.partials
	n := len(p)
	if n == 0 {
		return 0
	}
	n--
	hi, lo := p[n], 0.0
	for n > 0 {
		x := hi
		n--
		y := p[n]
		hi = x + y
		lo = y - (hi - x)
		if lo != 0 {
			break
		}
	}
	// hi+lo is exact; when what is below them has lo's sign, the sum is
	// past the halfway point hi+lo rounded to: round away from it.
	if n > 0 && (lo < 0 && p[n-1] < 0 || lo > 0 && p[n-1] > 0) {
		y := lo * 2
		x := hi + y
		if x-hi == y {
			hi = x
		}
	}
	return hi + 0 // -0 as 0, as Prometheus' sum gives it
}

// sumOf is the exact sum of the values each gives add, rounded once
// (exactSum). Past the largest float, the values are summed again scaled
// down by 2^64 (exact but for values below 2^-958, far under the sum's
// last bit) and the sum scaled back: an infinity when it is beyond the
// largest float, the same in any order.
func sumOf(each func(add func(float64))) float64 {
	var scratch [16]float64
	e := newExactSum(scratch[:])
	each(func(v float64) { e = e.add(v) })
	if !e.overflow {
		return e.result()
	}
	s := newExactSum(scratch[:])
	each(func(v float64) { s = s.add(math.Ldexp(v, -64)) })
	return math.Ldexp(s.result(), 64) + e.special
}

// sumValues is sumOf vals, with no closure on the way of a sum that
// does not overflow: a range query sums each group at each step.
func sumValues(vals []float64) float64 {
	var scratch [16]float64
	e := newExactSum(scratch[:])
	for _, v := range vals {
		e = e.add(v)
	}
	if !e.overflow {
		return e.result()
	}
	return sumOf(func(add func(float64)) {
		for _, v := range vals {
			add(v)
		}
	})
}

// minStep is the smaller of m, the smallest value so far, and v: NaN
// only when every value is NaN, and -0 below 0, so that the order of
// the values (any: evaluator.sample) cannot change the answer.
func minStep(m, v float64) float64 {
	if m > v || math.IsNaN(m) || m == v && math.Signbit(v) {
		return v
	}
	return m
}

// maxStep is minStep's largest.
func maxStep(m, v float64) float64 {
	if m < v || math.IsNaN(m) || m == v && !math.Signbit(v) {
		return v
	}
	return m
}

// avgValues is the mean of vals: their exact sum (exactSum) divided by
// their count, so that, as a sum, it does not depend on the order of the
// values; where that sum would overflow, the exact sum of each value
// divided by the count first, which cannot. (Prometheus takes a
// compensated sum, then an incremental mean past an overflow: the same
// but for the last bits.)
func avgValues(vals []float64) float64 {
	n := float64(len(vals))
	var scratch [16]float64
	e := newExactSum(scratch[:])
	for _, v := range vals {
		e = e.add(v)
	}
	if !e.overflow {
		return e.result() / n
	}
	s := newExactSum(scratch[:])
	for _, v := range vals {
		s = s.add(v / n)
	}
	return s.result() + e.special
}

// varianceValues is the population variance (divided by n), by Welford's
// method as Prometheus computes it: NaN when the first value is NaN or
// infinite.
func varianceValues(vals []float64) float64 {
	avg, acc := vals[0], 0.0
	if math.IsNaN(avg) || math.IsInf(avg, 0) {
		acc = math.NaN()
	}
	for i, v := range vals[1:] {
		n := float64(i + 2)
		delta := v - avg
		avg += delta / n
		acc += delta * (v - avg)
	}
	return acc / float64(len(vals))
}

// aggregateK evaluates topk (top) or bottomk: per group and step the k
// series with the highest (lowest) values, with their own labels. A
// series is in the result at the steps where it was among them.
//
// Ties go to the series first in input order. NaN ranks below every
// number for both, as in Prometheus. The result is in label order, as
// Loki returns an instant topk (Prometheus returns it by value, but
// Loki's engine sorts any instant vector by labels unless the query
// contains sort or sort_desc).
func aggregateK(top bool, k int, g *logql.Grouping, in *matrix) *matrix {
	out := in.like()
	if k < 1 {
		return out
	}
	outOf := make(map[*series]*series)
	var best []*series
	for _, gr := range groupSeries(g, in) {
		for i := range in.steps {
			best = selectK(best[:0], gr.members, i, k, top)
			for _, m := range best {
				o, ok := outOf[m]
				if !ok {
					o = out.add(m.labels)
					outOf[m] = o
				}
				o.set(i, m.vals[i])
			}
		}
	}
	out.sortSeries()
	return out
}

// selectK appends to dst the k series of members with the highest (top)
// or lowest values at step i, ties to the series with the lower labels
// (the earlier member of an input in label order; the input's order does
// not matter), in no particular order.
//
// REQUIRES: k >= 1.
func selectK(dst, members []*series, i, k int, top bool) []*series {
	start := len(dst)
	if k > 64 {
		// Sort the group: inserting into a long best list would copy
		// too much. Stable, so that ties keep the input order.
		for _, m := range members {
			if m.has[i] {
				dst = append(dst, m)
			}
		}
		if len(dst)-start <= k {
			return dst
		}
		slices.SortFunc(dst[start:], func(a, b *series) int { return compareRanked(a, b, i, top) })
		return dst[:start+k]
	}
	// Keep the best k so far, best first.
	best := dst[start:]
	cmp := func(a, b *series) int { return compareRanked(a, b, i, top) }
	for _, m := range members {
		if m.has[i] {
			best, _ = keepBest(best, k, m, cmp)
		}
	}
	return append(dst[:start], best...)
}

// keepBest keeps x among best, the at most k best so far in cmp's order
// (best first), when it beats the worst of them, after those it does not
// beat; it reports whether x entered. (cmp takes values: a pointer to x
// handed to a function value would move x to the heap at every call.)
func keepBest[T any](best []T, k int, x T, cmp func(a, b T) int) ([]T, bool) {
	if len(best) == k && cmp(x, best[k-1]) >= 0 {
		return best, false // most candidates, inlined
	}
	return enterBest(best, k, x, cmp), true
}

// enterBest is keepBest's entry of x.
func enterBest[T any](best []T, k int, x T, cmp func(a, b T) int) []T {
	j := sort.Search(len(best), func(j int) bool { return cmp(x, best[j]) < 0 })
	if len(best) < k {
		var zero T
		best = append(best, zero)
	}
	copy(best[j+1:], best[j:len(best)-1])
	best[j] = x
	return best
}

// compareRanked orders series a before b when its value at step i is
// higher (top) or lower, or, the values equal, when its labels are lower.
func compareRanked(a, b *series, i int, top bool) int {
	if c := compareValues(a.vals[i], b.vals[i], top); c != 0 {
		return c
	}
	return compareLabels(a.labels, b.labels)
}

// compareValues orders a before b when it is higher (desc) or lower,
// NaN after every number either way.
func compareValues(a, b float64, desc bool) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	c := 0
	switch {
	case a < b:
		c = -1
	case a > b:
		c = 1
	}
	if desc {
		c = -c
	}
	return c
}

// sortByValue evaluates sort (ascending) and sort_desc. Order is only
// meaningful for an instant query: a matrix of one step comes ordered by
// value, NaN last, ties in input order, each group after the other in
// the order of their grouping labels (Loki sorts within the groups of
// `sort by (...)` and returns the groups in no defined order). A range
// query returns its series by label, as Loki does.
func sortByValue(desc bool, g *logql.Grouping, in *matrix) *matrix {
	out := in.like()
	out.series = slices.DeleteFunc(slices.Clone(in.series), (*series).empty)
	if in.steps != 1 {
		out.sortSeries()
		return out
	}
	groups := groupSeries(g, out)
	slices.SortFunc(groups, func(a, b *aggGroup) int { return compareLabels(a.labels, b.labels) })
	out.series = out.series[:0]
	for _, gr := range groups {
		slices.SortStableFunc(gr.members, func(a, b *series) int { return compareValues(a.vals[0], b.vals[0], desc) })
		out.series = append(out.series, gr.members...)
	}
	return out
}
