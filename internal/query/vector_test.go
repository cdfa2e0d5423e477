package query

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// Test matrices are written one series a line:
//
//	{app="a", pod="1"} 1 _ 3
//	scalar 2 2 2
//	steps 3
//
// The labels, then one value per step: `_` for no value, NaN, Inf and
// -Inf as strconv reads them. `scalar` is a scalar's one series; `steps
// N` a matrix of N steps without series. Labels are sorted by name.

const (
	testStart = 1000
	testStep  = 10
)

// testMatrix builds a matrix from its text.
func testMatrix(t testing.TB, text string) *matrix {
	t.Helper()
	m, err := parseTestMatrix(text)
	if err != nil {
		t.Fatalf("test matrix: %v\n%s", err, text)
	}
	return m
}

func parseTestMatrix(text string) (*matrix, error) {
	var (
		m     *matrix
		steps = -1
	)
	shape := func(n int) error {
		if steps >= 0 && n != steps {
			return fmt.Errorf("%d values, want %d", n, steps)
		}
		steps = n
		if m == nil {
			m = newMatrix(testStart, testStep, n)
		}
		return nil
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var (
			ls     record.Labels
			fields []string
		)
		switch {
		case strings.HasPrefix(line, "steps "):
			n, err := strconv.Atoi(strings.TrimSpace(line[len("steps "):]))
			if err != nil {
				return nil, err
			}
			if err := shape(n); err != nil {
				return nil, err
			}
			continue
		case strings.HasPrefix(line, "scalar"):
			fields = strings.Fields(line[len("scalar"):])
		case strings.HasPrefix(line, "{"):
			end := strings.Index(line, "}")
			if end < 0 {
				return nil, fmt.Errorf("no } in %q", line)
			}
			var err error
			if ls, err = parseTestLabels(line[1:end]); err != nil {
				return nil, err
			}
			fields = strings.Fields(line[end+1:])
		default:
			return nil, fmt.Errorf("bad line %q", line)
		}
		if err := shape(len(fields)); err != nil {
			return nil, err
		}
		if strings.HasPrefix(line, "scalar") {
			m.scalar = true
		}
		s := m.add(ls)
		for i, f := range fields {
			if f == "_" {
				continue
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, err
			}
			s.set(i, v)
		}
	}
	if m == nil {
		return nil, fmt.Errorf("no series and no steps")
	}
	return m, nil
}

func parseTestLabels(s string) (record.Labels, error) {
	ls := record.Labels{}
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		name, quoted, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("bad label %q", p)
		}
		v, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("bad label value %q: %v", quoted, err)
		}
		ls = append(ls, record.Label{Name: name, Value: v})
	}
	slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls, nil
}

// formatMatrix writes m in the text form testMatrix reads, one series a line in
// the matrix's order.
func formatMatrix(m *matrix) string {
	if len(m.series) == 0 {
		return "steps " + strconv.Itoa(m.steps)
	}
	var b strings.Builder
	for i, s := range m.series {
		if i > 0 {
			b.WriteByte('\n')
		}
		if m.scalar {
			b.WriteString("scalar")
		} else {
			b.WriteByte('{')
			for j, l := range s.labels {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(l.Name + "=" + strconv.Quote(l.Value))
			}
			b.WriteByte('}')
		}
		for j := range s.vals {
			b.WriteByte(' ')
			if !s.has[j] {
				b.WriteByte('_')
				continue
			}
			b.WriteString(strconv.FormatFloat(s.vals[j], 'g', -1, 64))
		}
	}
	return b.String()
}

// checkOperatorResult checks got against the text want, and what every operator
// promises: inputs unchanged (their text before the call is given), the
// inputs' steps, labels sorted by name without empty values, and no
// value slices shared between series other than a reused input series.
func checkOperatorResult(t *testing.T, ins []*matrix, before []string, got *matrix, want string) {
	t.Helper()
	for i, in := range ins {
		if after := formatMatrix(in); after != before[i] {
			t.Errorf("input %d modified:\n%s\nwas:\n%s", i, after, before[i])
		}
	}
	if w := formatMatrix(testMatrix(t, want)); formatMatrix(got) != w {
		t.Errorf("got:\n%s\nwant:\n%s", formatMatrix(got), w)
	}
	if got.start != ins[0].start || got.step != ins[0].step || got.steps != ins[0].steps {
		t.Errorf("steps %d+%d*%d, want %d+%d*%d", got.start, got.step, got.steps, ins[0].start, ins[0].step, ins[0].steps)
	}
	owner := make(map[*float64]*series)
	owners := make(map[*bool]*series)
	claim := func(s *series) {
		if len(s.vals) == 0 {
			return
		}
		if o, ok := owner[&s.vals[0]]; ok && o != s {
			t.Errorf("series %s shares its values with %s", s.labels, o.labels)
		}
		if o, ok := owners[&s.has[0]]; ok && o != s {
			t.Errorf("series %s shares its has with %s", s.labels, o.labels)
		}
		owner[&s.vals[0]], owners[&s.has[0]] = s, s
	}
	for _, in := range ins {
		for _, s := range in.series {
			claim(s)
		}
	}
	for _, s := range got.series {
		if len(s.vals) != got.steps || len(s.has) != got.steps {
			t.Errorf("series %s: %d values, %d has, want %d", s.labels, len(s.vals), len(s.has), got.steps)
		}
		for i, l := range s.labels {
			if l.Value == "" {
				t.Errorf("series %s: empty label %s", s.labels, l.Name)
			}
			if i > 0 && s.labels[i-1].Name >= l.Name {
				t.Errorf("series %s: labels not sorted", s.labels)
			}
		}
		claim(s)
	}
}

// checkErrContains checks that err is an error containing want.
func checkErrContains(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

func groupBy(names ...string) *logql.Grouping { return &logql.Grouping{Labels: names} }

func groupWithout(names ...string) *logql.Grouping {
	return &logql.Grouping{Without: true, Labels: names}
}

func TestVectorTestMatrix(t *testing.T) {
	for _, text := range []string{
		"steps 3",
		"scalar 1 _ NaN",
		`{} 1 +Inf -Inf`,
		"{a=\"x\", b=\"y \\\"q\\\"\"} _ 2.5 -0",
	} {
		if got := formatMatrix(testMatrix(t, text)); got != text {
			t.Errorf("round trip of %q gave %q", text, got)
		}
	}
	if m := testMatrix(t, `{b="1", a="2"} 1`); m.series[0].labels[0].Name != "a" {
		t.Errorf("labels not sorted: %s", m.series[0].labels)
	}
	for _, bad := range []string{"", "{a=\"1\"} 1\n{b=\"1\"} 1 2", "{a=1} 1", "x 1", "{a=\"1\"} z"} {
		if _, err := parseTestMatrix(bad); err == nil {
			t.Errorf("parseTestMatrix(%q) did not fail", bad)
		}
	}
}

// aggInput is four series over three steps, some missing at some steps.
const aggInput = `
{app="a", env="prod", pod="1"} 1  2 _
{app="a", env="prod", pod="2"} 3  _ _
{app="b", env="dev",  pod="3"} 5  6 7
{app="b", env="prod", pod="4"} 10 1 _
`

func TestVectorAggregation(t *testing.T) {
	tests := []struct {
		name  string
		op    string
		param int
		g     *logql.Grouping
		in    string
		want  string
	}{
		{name: "sum", op: "sum", in: aggInput, want: `{} 19 9 7`},
		{name: "sum by ()", op: "sum", g: groupBy(), in: aggInput, want: `{} 19 9 7`},
		{name: "sum by app", op: "sum", g: groupBy("app"), in: aggInput, want: `
			{app="a"} 4  2 _
			{app="b"} 15 7 7`},
		{name: "sum by absent label", op: "sum", g: groupBy("nothere"), in: aggInput, want: `{} 19 9 7`},
		{name: "sum by app and absent", op: "sum", g: groupBy("nothere", "app"), in: aggInput, want: `
			{app="a"} 4  2 _
			{app="b"} 15 7 7`},
		{name: "sum by label some lack", op: "sum", g: groupBy("zone"), in: `
			{pod="1", zone="z1"} 1 _
			{pod="2"}            2 3
			{pod="3", zone="z1"} 4 5`, want: `
			{}          2 3
			{zone="z1"} 5 5`},
		{name: "sum without pod", op: "sum", g: groupWithout("pod"), in: aggInput, want: `
			{app="a", env="prod"} 4  2 _
			{app="b", env="dev"}  5  6 7
			{app="b", env="prod"} 10 1 _`},
		{name: "sum without nothing", op: "sum", g: groupWithout(), in: aggInput, want: aggInput},
		{name: "sum without all", op: "sum", g: groupWithout("app", "env", "pod"), in: aggInput, want: `{} 19 9 7`},
		{name: "avg", op: "avg", in: aggInput, want: `{} 4.75 3 7`},
		{name: "avg by app", op: "avg", g: groupBy("app"), in: aggInput, want: `
			{app="a"} 2   2   _
			{app="b"} 7.5 3.5 7`},
		{name: "min", op: "min", in: aggInput, want: `{} 1 1 7`},
		{name: "max", op: "max", in: aggInput, want: `{} 10 6 7`},
		{name: "max by env", op: "max", g: groupBy("env"), in: aggInput, want: `
			{env="dev"}  5  6 7
			{env="prod"} 10 2 _`},
		{name: "count", op: "count", in: aggInput, want: `{} 4 3 1`},
		{name: "count by env", op: "count", g: groupBy("env"), in: aggInput, want: `
			{env="dev"}  1 1 1
			{env="prod"} 3 2 _`},
		{name: "stdvar", op: "stdvar", in: aggInput, want: `{} 11.1875 4.666666666666667 0`},
		{name: "stddev", op: "stddev", in: aggInput, want: `{} 3.344772040064913 2.160246899469287 0`},
		{name: "stddev by app", op: "stddev", g: groupBy("app"), in: aggInput, want: `
			{app="a"} 1   0   _
			{app="b"} 2.5 2.5 0`},
		{name: "empty input", op: "sum", in: "steps 2", want: "steps 2"},
		{name: "group without values", op: "sum", g: groupBy("app"), in: `
			{app="a"} _ _
			{app="b"} 1 _`, want: `{app="b"} 1 _`},

		// NaN and infinities, as Prometheus.
		{name: "sum NaN", op: "sum", in: "{a=\"1\"} NaN 1\n{a=\"2\"} 1 1", want: `{} NaN 2`},
		{name: "sum Inf", op: "sum", in: "{a=\"1\"} +Inf +Inf\n{a=\"2\"} 1 -Inf", want: `{} +Inf NaN`},
		{name: "sum compensated", op: "sum", in: `
			{a="1"} 1
			{a="2"} 1e100
			{a="3"} 1
			{a="4"} -1e100`, want: `{} 2`},
		{name: "sum negative zero", op: "sum", in: `{a="1"} -0`, want: `{} 0`}, // sum + compensation, as Prometheus
		{name: "avg overflow", op: "avg", in: "{a=\"1\"} 1e308\n{a=\"2\"} 1e308\n{a=\"3\"} 1e308", want: `{} 1e308`},
		{name: "avg NaN", op: "avg", in: "{a=\"1\"} NaN\n{a=\"2\"} 1", want: `{} NaN`},
		{name: "avg Inf", op: "avg", in: "{a=\"1\"} +Inf\n{a=\"2\"} 1", want: `{} +Inf`},
		{name: "max NaN first", op: "max", in: "{a=\"1\"} NaN NaN\n{a=\"2\"} 1 NaN", want: `{} 1 NaN`},
		{name: "min NaN last", op: "min", in: "{a=\"1\"} 1\n{a=\"2\"} NaN", want: `{} 1`},
		{name: "max Inf", op: "max", in: "{a=\"1\"} 1\n{a=\"2\"} +Inf", want: `{} +Inf`},
		{name: "min -Inf", op: "min", in: "{a=\"1\"} 1\n{a=\"2\"} -Inf", want: `{} -Inf`},
		{name: "count NaN", op: "count", in: "{a=\"1\"} NaN\n{a=\"2\"} 1", want: `{} 2`},
		{name: "stddev Inf first", op: "stddev", in: "{a=\"1\"} +Inf\n{a=\"2\"} 1", want: `{} NaN`},
		{name: "stdvar NaN later", op: "stdvar", in: "{a=\"1\"} 1\n{a=\"2\"} NaN", want: `{} NaN`},
		{name: "stdvar one NaN", op: "stdvar", in: `{a="1"} NaN`, want: `{} NaN`},

		// topk and bottomk keep labels and, per series, the steps where it
		// was among the k; the result is in label order.
		{name: "topk 1", op: "topk", param: 1, in: aggInput, want: `
			{app="b", env="dev",  pod="3"} _  6 7
			{app="b", env="prod", pod="4"} 10 _ _`},
		{name: "topk by app", op: "topk", param: 1, g: groupBy("app"), in: aggInput, want: `
			{app="a", env="prod", pod="1"} _  2 _
			{app="a", env="prod", pod="2"} 3  _ _
			{app="b", env="dev",  pod="3"} _  6 7
			{app="b", env="prod", pod="4"} 10 _ _`},
		{name: "topk 2 by app", op: "topk", param: 2, g: groupBy("app"), in: aggInput, want: aggInput},
		{name: "topk more than series", op: "topk", param: 10, in: aggInput, want: aggInput},
		{name: "topk 0", op: "topk", param: 0, in: aggInput, want: "steps 3"},
		{name: "topk negative", op: "topk", param: -1, in: aggInput, want: "steps 3"},
		{name: "topk by ()", op: "topk", param: 1, g: groupBy(), in: aggInput, want: `
			{app="b", env="dev",  pod="3"} _  6 7
			{app="b", env="prod", pod="4"} 10 _ _`},
		{name: "bottomk 1", op: "bottomk", param: 1, in: aggInput, want: `
			{app="a", env="prod", pod="1"} 1 _ _
			{app="b", env="dev",  pod="3"} _ _ 7
			{app="b", env="prod", pod="4"} _ 1 _`},
		{name: "bottomk without pod", op: "bottomk", param: 1, g: groupWithout("pod"), in: aggInput, want: `
			{app="a", env="prod", pod="1"} 1  2 _
			{app="b", env="dev",  pod="3"} 5  6 7
			{app="b", env="prod", pod="4"} 10 1 _`},
		{name: "topk instant in label order", op: "topk", param: 2, in: `
			{app="a"} 1
			{app="b"} 3
			{app="c"} 2`, want: `
			{app="b"} 3
			{app="c"} 2`},
		{name: "topk tie goes to first", op: "topk", param: 1, in: "{a=\"1\"} 5\n{a=\"2\"} 5", want: `{a="1"} 5`},
		{name: "bottomk tie goes to first", op: "bottomk", param: 1, in: "{a=\"1\"} 5\n{a=\"2\"} 5", want: `{a="1"} 5`},
		{name: "topk NaN last", op: "topk", param: 1, in: "{a=\"1\"} NaN\n{a=\"2\"} -Inf", want: `{a="2"} -Inf`},
		{name: "bottomk NaN last", op: "bottomk", param: 1, in: "{a=\"1\"} NaN\n{a=\"2\"} +Inf", want: `{a="2"} +Inf`},
		{name: "topk NaN when few", op: "topk", param: 2, in: "{a=\"1\"} NaN\n{a=\"2\"} 1", want: "{a=\"1\"} NaN\n{a=\"2\"} 1"},
		{name: "topk Inf", op: "topk", param: 1, in: "{a=\"1\"} 1e308\n{a=\"2\"} +Inf", want: `{a="2"} +Inf`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testMatrix(t, tt.in)
			before := formatMatrix(in)
			got, err := evalVectorAgg(&logql.VectorAggregation{Op: tt.op, Grouping: tt.g, Param: tt.param}, in)
			if err != nil {
				t.Fatal(err)
			}
			checkOperatorResult(t, []*matrix{in}, []string{before}, got, tt.want)
		})
	}
}

func TestVectorSort(t *testing.T) {
	instant := `
		{app="a", g="2"} 3
		{app="b", g="1"} NaN
		{app="c", g="2"} 1
		{app="d", g="1"} 2
		{app="e", g="1"} _
		{app="f", g="2"} 3`
	tests := []struct {
		name string
		op   string
		g    *logql.Grouping
		in   string
		want string
	}{
		{name: "sort", op: "sort", in: instant, want: `
			{app="c", g="2"} 1
			{app="d", g="1"} 2
			{app="a", g="2"} 3
			{app="f", g="2"} 3
			{app="b", g="1"} NaN`},
		{name: "sort_desc", op: "sort_desc", in: instant, want: `
			{app="a", g="2"} 3
			{app="f", g="2"} 3
			{app="d", g="1"} 2
			{app="c", g="2"} 1
			{app="b", g="1"} NaN`},
		{name: "sort by g", op: "sort", g: groupBy("g"), in: instant, want: `
			{app="d", g="1"} 2
			{app="b", g="1"} NaN
			{app="c", g="2"} 1
			{app="a", g="2"} 3
			{app="f", g="2"} 3`},
		{name: "sort_desc without app", op: "sort_desc", g: groupWithout("app"), in: instant, want: `
			{app="d", g="1"} 2
			{app="b", g="1"} NaN
			{app="a", g="2"} 3
			{app="f", g="2"} 3
			{app="c", g="2"} 1`},
		{name: "sort infinities", op: "sort", in: "{a=\"1\"} +Inf\n{a=\"2\"} NaN\n{a=\"3\"} -Inf", want: `
			{a="3"} -Inf
			{a="1"} +Inf
			{a="2"} NaN`},
		{name: "sort of a range is by label", op: "sort_desc", in: `
			{app="b"} 1 2
			{app="a"} 3 _
			{app="c"} _ _`, want: `
			{app="a"} 3 _
			{app="b"} 1 2`},
		{name: "sort empty", op: "sort", in: "steps 1", want: "steps 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testMatrix(t, tt.in)
			before := formatMatrix(in)
			got, err := evalVectorAgg(&logql.VectorAggregation{Op: tt.op, Grouping: tt.g}, in)
			if err != nil {
				t.Fatal(err)
			}
			checkOperatorResult(t, []*matrix{in}, []string{before}, got, tt.want)
		})
	}
}

func TestVectorAggregationErrors(t *testing.T) {
	tests := []struct {
		name string
		op   string
		in   string
		want string
	}{
		{name: "scalar", op: "sum", in: "scalar 1", want: "sum: expected a vector, got a scalar"},
		{name: "unknown", op: "median", in: `{a="1"} 1`, want: `unknown vector aggregation "median"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := evalVectorAgg(&logql.VectorAggregation{Op: tt.op}, testMatrix(t, tt.in))
			checkErrContains(t, err, tt.want)
		})
	}
}

func TestVectorCompareValues(t *testing.T) {
	nan := math.NaN()
	for _, tt := range []struct {
		a, b float64
		desc bool
		want int
	}{
		{1, 2, false, -1}, {1, 2, true, 1}, {2, 2, false, 0},
		{nan, 1, false, 1}, {nan, 1, true, 1}, {1, nan, true, -1}, {nan, nan, false, 0},
		{math.Inf(-1), nan, false, -1},
	} {
		if got := compareValues(tt.a, tt.b, tt.desc); got != tt.want {
			t.Errorf("compareValues(%v, %v, %v) = %d, want %d", tt.a, tt.b, tt.desc, got, tt.want)
		}
	}
}

func BenchmarkVectorAggregation(b *testing.B) {
	in := newMatrix(0, 1, 100)
	for i := range 1000 {
		s := in.add(record.Labels{{Name: "app", Value: strconv.Itoa(i % 10)}, {Name: "pod", Value: strconv.Itoa(i)}})
		for j := range s.vals {
			s.set(j, float64(i*j%97))
		}
	}
	for _, op := range []string{"sum", "topk"} {
		b.Run("op="+op, func(b *testing.B) {
			b.ReportAllocs()
			e := &logql.VectorAggregation{Op: op, Grouping: groupBy("app"), Param: 3}
			for b.Loop() {
				if _, err := evalVectorAgg(e, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestVectorSelectK checks both ways selectK picks (insertion for a small k, a
// sort for a large one) against a stable sort of the whole group in label
// order, whatever the order selectK is given the members in.
func TestVectorSelectK(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	values := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, 1, 2, 3}
	for range 200 {
		n := rnd.IntN(150)
		members := make([]*series, n)
		for j := range members {
			members[j] = &series{labels: record.Labels{{Name: "i", Value: fmt.Sprintf("%04d", j)}}, vals: []float64{0}, has: []bool{rnd.IntN(5) > 0}}
			members[j].vals[0] = values[rnd.IntN(len(values))]
		}
		// In label order, ties go to the earlier member; selectK gets
		// the members in any order.
		shuffled := slices.Clone(members)
		rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, k := range []int{1, 2, 5, 64, 65, 100, 200} {
			for _, top := range []bool{true, false} {
				var want []*series
				for _, m := range members {
					if m.has[0] {
						want = append(want, m)
					}
				}
				slices.SortStableFunc(want, func(a, b *series) int { return compareValues(a.vals[0], b.vals[0], top) })
				want = want[:min(k, len(want))]
				got := selectK([]*series{nil}, shuffled, 0, k, top)[1:]
				if !sameSeriesSet(got, want) {
					t.Fatalf("n=%d k=%d top=%v: got %d series, want %d or another set", n, k, top, len(got), len(want))
				}
			}
		}
	}
}

func sameSeriesSet(a, b []*series) bool {
	if len(a) != len(b) {
		return false
	}
	in := make(map[*series]bool, len(a))
	for _, s := range a {
		in[s] = true
	}
	for _, s := range b {
		if !in[s] {
			return false
		}
	}
	return true
}

// TestAggregateValuesAnyOrder: the largest, smallest, count, sum and
// mean of a group's values do not depend on the order its series come
// in (these read them in any order: evaluator.sample), signed zeros,
// NaN, cancellation and sums past the largest float included.
func TestAggregateValuesAnyOrder(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, vals := range [][]float64{
		{0, negZero},
		{negZero, 0, math.NaN()},
		{math.NaN(), 3, -2, math.Inf(-1)},
		{math.NaN(), math.NaN()},
		{1, 1, negZero, 7},
		{1e16, 1, -1e16, 0.1, 3.3e-5},
		{1e308, 1e308, -1e308, 1e308, 3},
		{math.Inf(1), 1e308, 1e308},
	} {
		for _, op := range []string{"max", "min", "count", "sum", "avg"} {
			want := aggregateValues(op, vals)
			rev := slices.Clone(vals)
			slices.Reverse(rev)
			for _, order := range [][]float64{rev, append(slices.Clone(vals[1:]), vals[0])} {
				got := aggregateValues(op, order)
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Errorf("%s of %v: %v, of %v: %v", op, vals, want, order, got)
				}
			}
		}
	}
}

// TestExactSum: exactSum gives the exact sum of its values rounded to
// the nearest float, whatever their order, as math/big computes it; and
// sumOf infinities and NaN as floats sum them, and sums past the largest
// float the same in any order.
func TestExactSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	value := func() float64 {
		switch r.IntN(6) {
		case 0:
			return float64(r.IntN(2001) - 1000) // cancels often
		case 1:
			return math.Ldexp(r.Float64()-0.5, r.IntN(200)-100) // wide exponents
		case 2:
			return []float64{1e16, -1e16, 1, 0.1, 3.3e-5, math.Copysign(0, -1), 0}[r.IntN(7)]
		case 3:
			return math.Ldexp(r.Float64(), r.IntN(2000)-1000)
		default:
			return r.NormFloat64() * 1e6
		}
	}
	exact := func(vals []float64) float64 {
		sum := new(big.Float).SetPrec(4096)
		for _, v := range vals {
			sum.Add(sum, new(big.Float).SetPrec(4096).SetFloat64(v))
		}
		f, _ := sum.Float64()
		return f
	}
	for range 3000 {
		vals := make([]float64, 1+r.IntN(40))
		for i := range vals {
			vals[i] = value()
		}
		want := exact(vals) + 0
		for range 3 {
			var e exactSum
			for _, v := range vals {
				e = e.add(v)
			}
			if got := e.result(); got != want {
				t.Fatalf("sum of %v: %v, want %v", vals, got, want)
			}
			r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		}
	}
	negZero := math.Copysign(0, -1)
	for _, c := range []struct {
		vals []float64
		want float64
	}{
		{[]float64{negZero, negZero}, 0}, // as Prometheus' sum: never -0
		{[]float64{negZero, 0}, 0},
		{[]float64{math.Inf(1), 1}, math.Inf(1)},
		{[]float64{math.Inf(1), math.Inf(-1)}, math.NaN()},
		{[]float64{math.NaN(), 1}, math.NaN()},
		{[]float64{math.MaxFloat64, math.MaxFloat64}, math.Inf(1)},
		{[]float64{1e308, 1e308, -1e308}, 1e308}, // past the largest float, then back
		{[]float64{-1e308, 1e308, 1e308}, 1e308},
		{[]float64{math.Inf(-1), 1e308, 1e308}, math.Inf(-1)},
		{[]float64{1, 1e100, 1, -1e100}, 2},
	} {
		got := sumOf(func(add func(float64)) {
			for _, v := range c.vals {
				add(v)
			}
		})
		if math.Float64bits(got) != math.Float64bits(c.want) && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("sum of %v: %v, want %v", c.vals, got, c.want)
		}
	}
}
