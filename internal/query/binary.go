package query

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// opKind is the family of a binary operator.
type opKind uint8

const (
	opArith   opKind = iota // + - * / % ^
	opCompare               // == != > >= < <=
	opSet                   // and or unless
)

var opKinds = map[string]opKind{
	"+": opArith, "-": opArith, "*": opArith, "/": opArith, "%": opArith, "^": opArith,
	"==": opCompare, "!=": opCompare, ">": opCompare, ">=": opCompare, "<": opCompare, "<=": opCompare,
	"and": opSet, "or": opSet, "unless": opSet,
}

// errSameLabelset is Prometheus' error for two values of one label set at
// one step.
var errSameLabelset = fmt.Errorf("%w: vector cannot contain metrics with the same labelset", ErrBadRequest)

// evalBinary evaluates a binary operation on its evaluated operands, as
// Prometheus does:
//
//   - scalar op scalar is a scalar; a comparison needs bool.
//   - vector op scalar (either side) applies to each series and keeps its
//     labels; a comparison without bool keeps the vector's value where it
//     holds, with bool it gives 1 or 0 everywhere.
//   - vector op vector matches series by signature: all labels, those of
//     on(), or all but those of ignoring(). One-to-one by default, with
//     group_left or group_right many-to-one: see vectorBinary.
//   - and, or, unless match the same way, many-to-many, and keep the
//     labels and values of the series they return.
//
// Division by zero gives ±Inf or NaN (Go's float division, math.Mod for
// %, math.Pow for ^), as in Prometheus; Loki returns NaN for x/0 and x%0.
// Each step is computed on its own: a series without a value at a step
// takes no part in it.
func evalBinary(e *logql.BinaryExpr, lhs, rhs *matrix) (*matrix, error) {
	kind, ok := opKinds[e.Op]
	if !ok {
		return nil, fmt.Errorf("%w: unknown binary operator %q", ErrBadRequest, e.Op)
	}
	if e.ReturnBool && kind != opCompare {
		return nil, fmt.Errorf("%w: bool modifier can only be used on comparison operators", ErrBadRequest)
	}
	if lhs.start != rhs.start || lhs.step != rhs.step || lhs.steps != rhs.steps {
		return nil, fmt.Errorf("binary %s: operands have different steps", e.Op)
	}
	if kind == opSet && (lhs.scalar || rhs.scalar) {
		return nil, fmt.Errorf("%w: set operator %q not allowed in binary scalar expression", ErrBadRequest, e.Op)
	}
	switch {
	case lhs.scalar && rhs.scalar:
		if kind == opCompare && !e.ReturnBool {
			return nil, fmt.Errorf("%w: comparisons between scalars must use BOOL modifier", ErrBadRequest)
		}
		return scalarBinary(e.Op, lhs, rhs)
	case rhs.scalar:
		return vectorScalarBinary(e, kind, lhs, rhs, false)
	case lhs.scalar:
		return vectorScalarBinary(e, kind, rhs, lhs, true)
	case kind == opSet:
		return setBinary(e, lhs, rhs)
	default:
		return vectorBinary(e, lhs, rhs)
	}
}

// binop applies an arithmetic or comparison operator. For a comparison
// it returns l and whether the comparison holds; for arithmetic, true.
func binop(op string, l, r float64) (float64, bool) {
	switch op {
	case "+":
		return l + r, true
	case "-":
		return l - r, true
	case "*":
		return l * r, true
	case "/":
		if r == 0 {
			return math.NaN(), true // as Loki, not Prometheus' ±Inf
		}
		return l / r, true
	case "%":
		if r == 0 {
			return math.NaN(), true
		}
		return math.Mod(l, r), true
	case "^":
		return math.Pow(l, r), true
	case "==":
		return l, l == r
	case "!=":
		return l, l != r
	case ">":
		return l, l > r
	case ">=":
		return l, l >= r
	case "<":
		return l, l < r
	case "<=":
		return l, l <= r
	}
	panic("query: binop: unexpected operator " + op)
}

func btof(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// scalarSeries returns the only series of a scalar matrix.
func scalarSeries(m *matrix) (*series, error) {
	if len(m.series) != 1 {
		return nil, fmt.Errorf("scalar operand has %d series", len(m.series))
	}
	return m.series[0], nil
}

// scalarBinary evaluates scalar op scalar: comparisons give 1 or 0.
func scalarBinary(op string, lhs, rhs *matrix) (*matrix, error) {
	l, err := scalarSeries(lhs)
	if err != nil {
		return nil, err
	}
	r, err := scalarSeries(rhs)
	if err != nil {
		return nil, err
	}
	out := lhs.like()
	out.scalar = true
	s := out.add(nil)
	for i := range out.steps {
		if !l.has[i] || !r.has[i] {
			continue
		}
		v, keep := binop(op, l.vals[i], r.vals[i])
		if opKinds[op] == opCompare {
			v = btof(keep)
		}
		s.set(i, v)
	}
	return out, nil
}

// vectorScalarBinary evaluates vec op sc, or sc op vec when swapped. The
// series keep their labels and their order.
func vectorScalarBinary(e *logql.BinaryExpr, kind opKind, vec, sc *matrix, swapped bool) (*matrix, error) {
	c, err := scalarSeries(sc)
	if err != nil {
		return nil, err
	}
	out := vec.like()
	for _, s := range vec.series {
		var o *series
		for i, ok := range s.has {
			if !ok || !c.has[i] {
				continue
			}
			l, r := s.vals[i], c.vals[i]
			if swapped {
				l, r = r, l
			}
			v, keep := binop(e.Op, l, r)
			if kind == opCompare {
				// The vector's value, on whichever side it is.
				v = s.vals[i]
			}
			if e.ReturnBool {
				v, keep = btof(keep), true
			}
			if !keep {
				continue
			}
			if o == nil {
				o = out.add(s.labels)
			}
			o.set(i, v)
		}
	}
	return out, nil
}

// vectorMatching returns the vector matching of e: on (false for ignoring),
// the labels and the cardinality. No matching is ignoring().
func vectorMatching(e *logql.BinaryExpr) (on bool, names []string, card logql.Cardinality) {
	if m := e.Matching; m != nil {
		return m.On, m.Labels, m.Card
	}
	return false, nil, logql.OneToOne
}

// signatures gives each distinct signature (the labels a binary
// operation matches on) a small ordinal, shared by both operands.
type signatures struct {
	on    bool
	names []string
	ids   map[string]int
	buf   []byte
}

func newSignatures(on bool, names []string) *signatures {
	return &signatures{on: on, names: names, ids: make(map[string]int)}
}

// ordinals returns the signature ordinal of each series.
func (sg *signatures) ordinals(ss []*series) []int {
	out := make([]int, len(ss))
	for j, s := range ss {
		sg.buf = sg.buf[:0]
		for _, l := range s.labels {
			if slices.Contains(sg.names, l.Name) != sg.on {
				continue
			}
			sg.buf = binary.AppendUvarint(sg.buf, uint64(len(l.Name)))
			sg.buf = append(sg.buf, l.Name...)
			sg.buf = binary.AppendUvarint(sg.buf, uint64(len(l.Value)))
			sg.buf = append(sg.buf, l.Value...)
		}
		id, ok := sg.ids[string(sg.buf)]
		if !ok {
			id = len(sg.ids)
			sg.ids[string(sg.buf)] = id
		}
		out[j] = id
	}
	return out
}

// len returns how many signatures there are.
func (sg *signatures) len() int { return len(sg.ids) }

// matchLabels returns the labels of ls that its signature is made of.
func (sg *signatures) matchLabels(ls record.Labels) record.Labels {
	if sg.on {
		return keepLabels(ls, sg.names)
	}
	return dropLabels(ls, sg.names)
}

// stepStamps marks ordinals per step without clearing between steps: an
// ordinal is marked at step i when its stamp is i.
type stepStamps []int

func newStepStamps(n int) stepStamps {
	s := make(stepStamps, n)
	for i := range s {
		s[i] = -1
	}
	return s
}

// outputSeries finds or makes the output series of a label set, so
// that the values one label set gets at different steps, from whichever
// inputs, make one series, in the order the label sets first appear.
type outputSeries struct {
	m     *matrix
	index map[string]*series
	buf   []byte
}

func newOutputSeries(m *matrix) *outputSeries {
	return &outputSeries{m: m, index: make(map[string]*series)}
}

func (o *outputSeries) get(ls record.Labels) *series {
	o.buf = appendLabelsKey(o.buf[:0], ls)
	s, ok := o.index[string(o.buf)]
	if !ok {
		s = o.m.add(ls)
		o.index[string(o.buf)] = s
	}
	return s
}

// putValue sets a value at step i, which must not have one yet.
func putValue(s *series, i int, v float64) error {
	if s.has[i] {
		return errSameLabelset
	}
	s.set(i, v)
	return nil
}

// vectorBinary evaluates an arithmetic or comparison operation between
// two vectors, step by step, as Prometheus' VectorBinop.
//
// The "one" side (the RHS, or the LHS with group_right) must not have two
// series with the same signature at a step. Each series of the "many"
// side is paired with the one-side series of its signature. One-to-one,
// a one-side series may pair with one series only and the result keeps
// only the on() labels, or drops the ignoring() labels; many-to-one, the
// result keeps all the labels of the many side, and group_x labels are
// copied from the one side (removed when it lacks them). The value is
// always computed as LHS op RHS; a comparison keeps the LHS value.
func vectorBinary(e *logql.BinaryExpr, lhs, rhs *matrix) (*matrix, error) {
	on, names, card := vectorMatching(e)
	many, one := lhs, rhs
	oneSide := "right"
	if card == logql.OneToMany {
		many, one = rhs, lhs
		oneSide = "left"
	}
	sg := newSignatures(on, names)
	manySig, oneSig := sg.ordinals(many.series), sg.ordinals(one.series)

	// oneAt[sig] is the one-side series with that signature at the
	// step when oneStamp[sig] is the step.
	oneAt, oneStamp := make([]int, sg.len()), newStepStamps(sg.len())
	matchStamp := newStepStamps(sg.len()) // one-to-one: sig matched at the step
	type sigOut struct {
		sig int
		out *series
	}
	matched := make(map[sigOut]struct{}) // many-to-one, cleared each step
	// The output series of many-side series j is lastOut[j] when paired
	// with one-side series lastOne[j], as it mostly is at every step.
	lastOne, lastOut := make([]int, len(many.series)), make([]*series, len(many.series))

	out := lhs.like()
	outs := newOutputSeries(out)
	for i := range out.steps {
		if !hasAt(many, i) {
			// Nothing to match: a one side with duplicates is no error.
			continue
		}
		for k, s := range one.series {
			if !s.has[i] {
				continue
			}
			sig := oneSig[k]
			if oneStamp[sig] == i {
				dup := one.series[oneAt[sig]]
				return nil, fmt.Errorf("%w: found duplicate series for the match group %s on the %s hand-side of the operation: [%s, %s];many-to-many matching not allowed: matching labels must be unique on one side",
					ErrBadRequest, sg.matchLabels(s.labels), oneSide, s.labels, dup.labels)
			}
			oneAt[sig], oneStamp[sig] = k, i
		}
		clear(matched)
		for j, s := range many.series {
			sig := manySig[j]
			if !s.has[i] || oneStamp[sig] != i {
				continue
			}
			k := oneAt[sig]
			o := one.series[k]
			res := lastOut[j]
			if res == nil || lastOne[j] != k {
				res = outs.get(resultLabels(s.labels, o.labels, e.Matching))
				lastOne[j], lastOut[j] = k, res
			}
			if card == logql.OneToOne {
				if matchStamp[sig] == i {
					return nil, fmt.Errorf("%w: multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)", ErrBadRequest)
				}
				matchStamp[sig] = i
			} else {
				if _, dup := matched[sigOut{sig, res}]; dup {
					return nil, fmt.Errorf("%w: multiple matches for labels: grouping labels must ensure unique matches", ErrBadRequest)
				}
				matched[sigOut{sig, res}] = struct{}{}
			}
			l, r := s.vals[i], o.vals[i]
			if card == logql.OneToMany {
				l, r = r, l
			}
			v, keep := binop(e.Op, l, r)
			if e.ReturnBool {
				v, keep = btof(keep), true
			}
			if !keep {
				continue
			}
			if err := putValue(res, i, v); err != nil {
				return nil, err
			}
		}
	}
	out.compact()
	orderLike(out, lhs, rhs)
	return out, nil
}

// hasAt reports whether a series of m has a value at step i.
func hasAt(m *matrix, i int) bool {
	for _, s := range m.series {
		if s.has[i] {
			return true
		}
	}
	return false
}

// resultLabels returns the labels of the result of a vector binary
// operation between a series of the many side and one of the one side,
// as Prometheus' resultMetric.
func resultLabels(many, one record.Labels, m *logql.VectorMatching) record.Labels {
	if m == nil {
		return many
	}
	ls := many
	if m.Card == logql.OneToOne {
		if m.On {
			ls = keepLabels(many, m.Labels)
		} else if len(m.Labels) > 0 {
			ls = dropLabels(many, m.Labels)
		}
	}
	for _, name := range m.Include {
		v, _ := one.Get(name)
		ls, _ = setLabel(ls, name, v)
	}
	return ls
}

// setBinary evaluates and, or and unless, step by step, as Prometheus'
// VectorAnd, VectorOr and VectorUnless:
//
//   - and: the LHS series that have a RHS series of their signature at
//     the step;
//   - or: all LHS series, and the RHS series that have no LHS series of
//     their signature at the step;
//   - unless: the LHS series that have no RHS series of their signature
//     at the step.
func setBinary(e *logql.BinaryExpr, lhs, rhs *matrix) (*matrix, error) {
	on, names, card := vectorMatching(e)
	if card != logql.OneToOne {
		return nil, fmt.Errorf("%w: no grouping allowed for %q operation", ErrBadRequest, e.Op)
	}
	sg := newSignatures(on, names)
	lSig, rSig := sg.ordinals(lhs.series), sg.ordinals(rhs.series)
	stamp := newStepStamps(sg.len())
	out := lhs.like()
	outs := newOutputSeries(out)
	lOut, rOut := make([]*series, len(lhs.series)), make([]*series, len(rhs.series))
	emit := func(dst []*series, j int, s *series, i int) error {
		if dst[j] == nil {
			dst[j] = outs.get(s.labels)
		}
		return putValue(dst[j], i, s.vals[i])
	}
	for i := range out.steps {
		switch e.Op {
		case "and", "unless":
			for k, s := range rhs.series {
				if s.has[i] {
					stamp[rSig[k]] = i
				}
			}
			for j, s := range lhs.series {
				if !s.has[i] || (stamp[lSig[j]] == i) != (e.Op == "and") {
					continue
				}
				if err := emit(lOut, j, s, i); err != nil {
					return nil, err
				}
			}
		case "or":
			for j, s := range lhs.series {
				if !s.has[i] {
					continue
				}
				stamp[lSig[j]] = i
				if err := emit(lOut, j, s, i); err != nil {
					return nil, err
				}
			}
			for k, s := range rhs.series {
				if !s.has[i] || stamp[rSig[k]] == i {
					continue
				}
				if err := emit(rOut, k, s, i); err != nil {
					return nil, err
				}
			}
		default:
			return nil, errors.New("query: setBinary: unexpected operator " + e.Op)
		}
	}
	out.compact()
	orderLike(out, lhs, rhs)
	return out, nil
}
