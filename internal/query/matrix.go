package query

import (
	"slices"
	"strings"
	"unsafe"

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
	// mergedBy, when set, says each series is already the aggregation
	// mergeOp of its group by these labels (a range aggregation grouped
	// early, rangeHints.mergedBy): that aggregation is the matrix itself.
	mergedBy []string
	mergeOp  string
	// vals and has are chunks the next series' steps are taken from,
	// structs the chunk the next series is.
	vals    []float64
	has     []bool
	chunk   int // the size of the last chunk
	structs []series
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
	n := m.steps
	if len(m.vals) < n {
		// Chunks of 16 series' steps, doubling up to 4,096 values: an
		// instant answer of a few series zeroes little.
		m.chunk = min(max(2*m.chunk, 16*n), max(n, 4096))
		m.vals, m.has = make([]float64, m.chunk), make([]bool, m.chunk)
	}
	if len(m.structs) == 0 {
		m.structs = make([]series, min(max(2*cap(m.series), 16), 1024))
	}
	s := &m.structs[0]
	m.structs = m.structs[1:]
	*s = series{labels: ls, vals: m.vals[:n:n], has: m.has[:n:n]}
	m.vals, m.has = m.vals[n:], m.has[n:]
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
// Many series are sorted by a key per series that orders as
// compareLabels does, one comparison of bytes instead of a loop over
// labels: a third of the time for a million series.
func (m *matrix) sortSeries() {
	if len(m.series) < 1024 {
		slices.SortFunc(m.series, func(a, b *series) int { return compareLabels(a.labels, b.labels) })
		return
	}
	type keyed struct {
		key string
		s   *series
	}
	all := make([]keyed, len(m.series))
	ends := make([]int, len(m.series))
	var arena []byte
	for i, s := range m.series {
		arena = appendOrderedKey(arena, s.labels)
		ends[i] = len(arena)
	}
	// The keys view the arena, complete now that it no longer moves.
	start := 0
	for i, s := range m.series {
		all[i] = keyed{key: unsafe.String(unsafe.SliceData(arena[start:]), ends[i]-start), s: s}
		start = ends[i]
	}
	slices.SortFunc(all, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range all {
		m.series[i] = all[i].s
	}
}

// appendOrderedKey appends a key of ls whose byte order is
// compareLabels' order: each name and value with its zero bytes written
// 0x00 0xff and ended by 0x00 0x00, which sorts before any byte a longer
// string continues with.
func appendOrderedKey(dst []byte, ls record.Labels) []byte {
	for _, l := range ls {
		dst = appendOrdered(dst, l.Name)
		dst = appendOrdered(dst, l.Value)
	}
	return dst
}

func appendOrdered(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, 0, 0xff)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0, 0)
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
