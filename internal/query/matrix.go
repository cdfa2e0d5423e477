package query

import (
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/record"
)

// matrix is the value of a metric expression at every step of a query:
// step i is at time start + i*step (Unix nanoseconds). An instant query
// is a matrix of one step.
type matrix struct {
	start, step int64
	steps       int
	// scalar marks a scalar value (a number literal): one series without
	// labels that has a value at every step.
	scalar bool
	series []*series
}

// series is one labelled series of a matrix. has[i] reports whether it
// has a value at step i; vals[i] is meaningless when it has not.
type series struct {
	labels record.Labels
	vals   []float64
	has    []bool
}

func newMatrix(start, step int64, steps int) *matrix {
	return &matrix{start: start, step: step, steps: steps}
}

// like returns an empty matrix with m's steps.
func (m *matrix) like() *matrix { return newMatrix(m.start, m.step, m.steps) }

// add appends a series with no values yet.
func (m *matrix) add(ls record.Labels) *series {
	s := &series{labels: ls, vals: make([]float64, m.steps), has: make([]bool, m.steps)}
	m.series = append(m.series, s)
	return s
}

// time returns the time of step i.
func (m *matrix) time(i int) int64 { return m.start + int64(i)*m.step }

// set sets the value at step i.
func (s *series) set(i int, v float64) {
	s.vals[i], s.has[i] = v, true
}

// empty reports whether the series has no value at any step.
func (s *series) empty() bool { return !slices.Contains(s.has, true) }

// compact drops the series without any value.
func (m *matrix) compact() {
	m.series = slices.DeleteFunc(m.series, (*series).empty)
}

// sortSeries orders series by their labels, as Loki's results are.
func (m *matrix) sortSeries() {
	slices.SortFunc(m.series, func(a, b *series) int { return compareLabels(a.labels, b.labels) })
}

// compareLabels orders label sets as Prometheus does: label by label,
// names then values, a prefix first.
func compareLabels(a, b record.Labels) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].Name, b[i].Name); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].Value, b[i].Value); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}
