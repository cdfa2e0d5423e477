package query

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// A split of the data: which of n parts a row goes to.
type split struct {
	name  string
	parts int
	// part returns the part of a row of a stream (labels as the script
	// writes them, canonical) at time t, the row's index in its load.
	part func(stream string, t int64, i int) int
}

var splits = []split{
	{"streams", 2, func(stream string, _ int64, _ int) int {
		h := fnv.New32a()
		h.Write([]byte(stream))
		return int(h.Sum32() % 2)
	}},
	{"time", 2, func(_ string, t int64, _ int) int {
		if t < t0+int64(2500*time.Millisecond) {
			return 0
		}
		return 1
	}},
	{"rows", 3, func(_ string, _ int64, i int) int { return i % 3 }},
}

// splitStores are a script's data whole and split every way, each in the
// head and flushed to parts.
type splitStores struct {
	whole []*store.Store   // head, parts
	split [][]*store.Store // [split*2+variant][part]
}

func openMem(t testing.TB) *store.Store {
	t.Helper()
	return openMemWith(t, store.Options{})
}

// openMemWith opens a store in memory with opts, closed when the test ends.
func openMemWith(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	opts.FS, opts.Dir = vfs.NewMem(), "data"
	st, err := store.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// appendText parses text (lines of any shape) as sluice ingest does and
// appends its records to st, in the default tenant.
func appendText(t testing.TB, st *store.Store, text string) {
	t.Helper()
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Bytes(context.Background(), []byte(text), func(b *record.Batch) error {
		return st.Append(context.Background(), store.DefaultTenant, b)
	}); err != nil {
		t.Fatal(err)
	}
}

// add loads a block of script lines into every store.
func (ss *splitStores) add(t *testing.T, tenant, path string, end int, block []string) {
	t.Helper()
	for v, st := range ss.whole {
		load(t, st, tenant, path, end, block)
		if v == 1 {
			if err := st.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for si, sp := range splits {
		blocks := make([][]string, sp.parts)
		for i, l := range block {
			l = strings.TrimSpace(l)
			close := strings.Index(l, "}")
			ts, _, _ := strings.Cut(strings.TrimSpace(l[close+1:]), " ")
			k := sp.part(parseLabels(t, l[:close+1]).String(), offset(t, ts), i)
			blocks[k] = append(blocks[k], l)
		}
		for v := range 2 {
			for k, st := range ss.split[si*2+v] {
				if len(blocks[k]) == 0 {
					continue
				}
				load(t, st, tenant, path, end, blocks[k])
				if v == 1 {
					if err := st.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

// TestPartialScripts evaluates every case of the script suite on the
// data split three ways (by stream, by time, row by row in three parts),
// merges the parts and finishes, and compares with evaluating the whole.
func TestPartialScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	var notSplit []string
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			notSplit = append(notSplit, partialScript(t, f)...)
		})
	}
	// No case of the suite is refused: the one query kind Partial
	// refuses (a log query with an interval) has no case.
	if len(notSplit) > 0 {
		t.Errorf("cases not split:\n%s", strings.Join(notSplit, "\n"))
	}
}

func partialScript(t *testing.T, path string) (notSplit []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ss := &splitStores{whole: []*store.Store{openMem(t), openMem(t)}}
	for _, sp := range splits {
		for range 2 {
			var sts []*store.Store
			for range sp.parts {
				sts = append(sts, openMem(t))
			}
			ss.split = append(ss.split, sts)
		}
	}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case l == "load" || strings.HasPrefix(l, "load "):
			tenant := store.DefaultTenant
			if v, ok := strings.CutPrefix(l, "load tenant="); ok {
				tenant = v
			}
			var block []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				if !strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
					block = append(block, lines[i])
				}
			}
			ss.add(t, tenant, path, i, block)
		case strings.HasPrefix(l, "eval "):
			c := scriptCase{line: i + 1, args: map[string]string{}}
			fields := strings.Fields(l)
			c.kind = fields[1]
			for _, a := range fields[2:] {
				k, v, _ := strings.Cut(a, "=")
				c.args[k] = v
			}
			var q []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "==>"; i++ {
				q = append(q, lines[i])
			}
			c.query = strings.Join(q, "\n")
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			}
			p := c.params(t, path)
			for si, sp := range splits {
				for v, variant := range []string{"head", "parts"} {
					name := fmt.Sprintf("line%d/%s/%s", c.line, sp.name, variant)
					t.Run(name, func(t *testing.T) {
						err := compareSplit(t, p, ss.whole[v], ss.split[si*2+v])
						if errors.Is(err, ErrNotSplittable) {
							notSplit = append(notSplit, fmt.Sprintf("%s:%d %s: %v", path, c.line, c.query, err))
						}
					})
				}
			}
		default:
			t.Fatalf("%s:%d: unexpected %q", path, i+1, l)
		}
	}
	return notSplit
}

// compareSplit evaluates p on the whole store and in parts, one per
// store of parts, and fails unless both give the same result or both
// fail. It returns the error of a query Partial refuses.
func compareSplit(t *testing.T, p Params, whole *store.Store, parts []*store.Store) error {
	t.Helper()
	e := NewEngine(Limits{MaxPoints: 11000})
	sn := whole.Snapshot()
	defer sn.Release()
	want, werr := e.Exec(context.Background(), sn, p)
	got, gerr := evalSplit(e, p, parts)
	if errors.Is(gerr, ErrNotSplittable) {
		return gerr
	}
	switch {
	case werr != nil && gerr != nil:
		for _, kind := range []error{ErrBadRequest, ErrLimit} {
			if errors.Is(werr, kind) != errors.Is(gerr, kind) {
				t.Fatalf("%s\nwhole: %v\nsplit: %v", p.Query, werr, gerr)
			}
		}
		return nil
	case werr != nil:
		t.Fatalf("%s\nwhole: %v\nsplit: no error", p.Query, werr)
	case gerr != nil:
		t.Fatalf("%s\nwhole: no error\nsplit: %v", p.Query, gerr)
	}
	if w, g := render(want, p), render(got, p); !sameResult(g, w) {
		t.Fatalf("%s\nsplit:\n  %s\nwhole:\n  %s", p.Query, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	if want.Type != got.Type {
		t.Fatalf("%s: split type %s, whole %s", p.Query, got.Type, want.Type)
	}
	// The rows read differ: a store stops early, or skips blocks, by
	// what it holds.
	if want.Stats.LinesOut != got.Stats.LinesOut {
		t.Fatalf("%s: split returned %d lines, whole %d", p.Query, got.Stats.LinesOut, want.Stats.LinesOut)
	}
	return nil
}

// evalSplit evaluates p in parts, one per store, merges the first two
// and then the rest into that (merging is associative), and finishes.
func evalSplit(e *Engine, p Params, stores []*store.Store) (*Result, error) {
	var parts []*Partial
	for _, st := range stores {
		sn := st.Snapshot()
		part, err := e.Partial(context.Background(), sn, p)
		sn.Release()
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	merged, err := Merge(parts[:2]...)
	if err != nil {
		return nil, err
	}
	if len(parts) > 2 {
		if merged, err = Merge(append([]*Partial{merged}, parts[2:]...)...); err != nil {
			return nil, err
		}
	}
	res, err := merged.Finish(e)
	if err != nil {
		return nil, err
	}
	// Finishing modifies nothing: again, the same.
	again, err := merged.Finish(e)
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(render(res, p), render(again, p)) {
		return nil, fmt.Errorf("finishing twice gave two results:\n%v\n%v", render(res, p), render(again, p))
	}
	return res, nil
}

// sameResult compares rendered results, numbers within 1e-9 of the
// greater or of 1 (floating-point additions in another order). Lines of
// the same time in the same stream, whose order neither evaluation fixes,
// may come in any order.
func sameResult(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := 0; i < len(got); i++ {
		if sameLine(got[i], want[i]) {
			continue
		}
		// A run of lines of one stream and time, in another order.
		j := i
		for j < len(got) && sameTime(got[j], got[i]) && sameTime(want[j], got[i]) {
			j++
		}
		if j == i {
			return false
		}
		g, w := slices.Sorted(slices.Values(got[i:j])), slices.Sorted(slices.Values(want[i:j]))
		if !reflect.DeepEqual(g, w) {
			return false
		}
		i = j - 1
	}
	return true
}

// sameTime reports whether two rendered log lines are of the same stream
// and time.
func sameTime(a, b string) bool {
	ia, ib := strings.Index(a, "}"), strings.Index(b, "}")
	if ia < 0 || ib < 0 || a[:ia] != b[:ib] {
		return false
	}
	fa, fb := strings.Fields(a[ia+1:]), strings.Fields(b[ib+1:])
	return len(fa) > 0 && len(fb) > 0 && fa[0] == fb[0]
}

func sameLine(got, want string) bool {
	if got == want {
		return true
	}
	g, w := strings.Fields(got), strings.Fields(want)
	if len(g) != len(w) {
		return false
	}
	for j := range g {
		if g[j] == w[j] {
			continue
		}
		a, err1 := strconv.ParseFloat(g[j], 64)
		b, err2 := strconv.ParseFloat(w[j], 64)
		if err1 != nil || err2 != nil || math.Abs(a-b) > 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b))) {
			return false
		}
	}
	return true
}

// randomMetric and randomLogs are the queries of TestPartialRandom and
// the seeds of FuzzPartial: every range function (with unwrap, grouping
// and offset), vector aggregations, binary operations, topk, bottomk and
// label_replace; log queries with filters, parsers and formats.
var randomMetric, randomLogs = func() ([]string, []string) {
	fns := []string{"count_over_time", "rate", "bytes_over_time", "bytes_rate", "absent_over_time"}
	unwrapped := []string{"sum_over_time", "avg_over_time", "min_over_time", "max_over_time", "first_over_time",
		"last_over_time", "stddev_over_time", "stdvar_over_time", "quantile_over_time(0.9,", "quantile_over_time(0.25,",
		"rate_counter", "rate"}
	var metric []string
	for _, fn := range fns {
		metric = append(metric, fn+`({app=~"a|b"}[1m])`, fn+`({app="a"} |= "error" [90s] offset 30s)`)
	}
	metric = append(metric, `absent_over_time({app="none"}[1m])`)
	for _, fn := range unwrapped {
		call := fn + "("
		if strings.HasSuffix(fn, ",") {
			call = fn
		}
		metric = append(metric,
			call+`{app=~".+"} | logfmt | unwrap latency [1m])`,
			call+`{app=~".+"} | logfmt | unwrap size [2m]) by (level)`,
			call+`{app="b"} | logfmt | level!="debug" | unwrap latency [45s]) without (pod)`)
	}
	metric = append(metric,
		`sum by (app) (count_over_time({app=~".+"}[1m]))`,
		`avg by (level) (count_over_time({app=~".+"} | logfmt [1m]))`,
		`max(rate({app=~".+"}[1m]))`, `min by (pod) (bytes_over_time({app=~".+"}[1m]))`,
		`count(count_over_time({app=~".+"}[1m]))`,
		`stddev by (app) (sum_over_time({app=~".+"} | logfmt | unwrap latency [1m]))`,
		`stdvar(count_over_time({app=~".+"}[1m]))`,
		`topk(2, sum by (pod) (count_over_time({app=~".+"}[1m])))`,
		`bottomk(3, max_over_time({app=~".+"} | logfmt | unwrap size [1m]))`,
		`sort_desc(sum by (level) (count_over_time({app=~".+"} | logfmt [1m])))`,
		`sum by (app) (count_over_time({app=~".+"}[1m])) / on (app) sum by (app) (bytes_over_time({app=~".+"}[1m]))`,
		`count_over_time({app=~".+"}[1m]) > 3`,
		`sum(rate({app="a"}[1m])) + sum(rate({app="b"}[1m])) * 2`,
		`label_replace(count_over_time({app=~".+"}[1m]), "p", "$1", "pod", "p(.*)")`,
		`quantile_over_time(0.5, {app=~".+"} | logfmt | unwrap latency [1m]) by (app) and on (app) sum by (app) (count_over_time({app="a"}[1m]))`,
	)
	logs := []string{`{app=~".+"}`, `{app="a"} |= "error"`, `{app=~".+"} | logfmt | level="warn" | line_format "{{.msg}}"`}
	return metric, logs
}()

// randomStores loads 600 random rows into a store whole and, each row in
// a part picked at random, into n stores: the first of them and, when
// flushWhole, the whole store flushed to parts, the others in the head.
func randomStores(t testing.TB, seed uint64, n int, flushWhole bool) (*store.Store, []*store.Store) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	whole := openMem(t)
	parts := make([]*store.Store, n)
	for i := range parts {
		parts[i] = openMem(t)
	}
	var all []string
	blocks := make([][]string, n)
	levels := []string{"debug", "info", "warn", "error"}
	for i := range 600 {
		ls := fmt.Sprintf(`{app="%c", pod="p%d"}`, "abc"[rng.IntN(3)], rng.IntN(4))
		// Unique times: ties order lines as neither evaluation fixes.
		at := time.Duration(i)*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond
		latency := rng.Float64() * 5
		if rng.IntN(5) == 0 {
			latency = -rng.Float64() // negative values, and counter resets
		}
		l := fmt.Sprintf("%s %s level=%s latency=%.3f size=%d msg=m%d", ls, at, levels[rng.IntN(4)], latency, rng.IntN(5000), i)
		all = append(all, l)
		k := rng.IntN(n)
		blocks[k] = append(blocks[k], l)
	}
	load(t, whole, store.DefaultTenant, "random", 0, all)
	for k, st := range parts {
		load(t, st, store.DefaultTenant, "random", 0, blocks[k])
		if k == 0 {
			if err := st.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if flushWhole {
		if err := whole.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return whole, parts
}

// randomParams are the parameters TestPartialRandom evaluates a query
// with: a range query and an instant one, or a log query in both
// directions with limits from 1 to more than it has.
func randomParams(q string) []Params {
	if _, err := logql.ParseSampleExpr(q); err == nil {
		return []Params{
			{Tenant: store.DefaultTenant, Query: q, Start: t0 + int64(2*time.Minute), End: t0 + int64(9*time.Minute), Step: 20 * time.Second},
			{Tenant: store.DefaultTenant, Query: q, Start: t0 + int64(5*time.Minute), End: t0 + int64(5*time.Minute), Instant: true},
		}
	}
	var ps []Params
	for _, d := range []Direction{Forward, Backward} {
		for _, limit := range []int{1, 7, 50, 1000} {
			ps = append(ps, Params{Tenant: store.DefaultTenant, Query: q, Start: t0 + int64(time.Minute), End: t0 + int64(8*time.Minute),
				Limit: limit, Direction: d})
		}
	}
	return ps
}

// TestPartialRandom splits random data row by row at random among two
// or three stores and compares the queries of randomMetric and
// randomLogs evaluated in parts with the whole.
func TestPartialRandom(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			whole, parts := randomStores(t, seed, 2+int(seed%2), seed%2 == 0)
			for qi, q := range append(randomMetric, randomLogs...) {
				for _, p := range randomParams(q) {
					t.Run(fmt.Sprintf("query%d/instant=%v/direction=%d/limit=%d", qi, p.Instant, p.Direction, p.Limit), func(t *testing.T) {
						if err := compareSplit(t, p, whole, parts); err != nil {
							t.Fatal(err)
						}
					})
				}
			}
		})
	}
}

// FuzzPartial evaluates any query on random data split row by row among
// three stores and compares the merged parts with the whole. A query
// whose result turns on the last bits of a sum (an equality with a
// fraction) may differ, as the package doc says.
func FuzzPartial(f *testing.F) {
	for _, q := range append(randomMetric, randomLogs...) {
		f.Add(q)
	}
	whole, parts := randomStores(f, 1, 3, true)
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := logql.Parse(q); err != nil {
			return
		}
		for _, p := range randomParams(q) {
			if err := compareSplit(t, p, whole, parts); err != nil && !errors.Is(err, ErrNotSplittable) {
				t.Fatal(err)
			}
		}
	})
}

func TestPartialRefuses(t *testing.T) {
	st := openMem(t)
	load(t, st, store.DefaultTenant, "refuse", 0, []string{`{app="a"} 1s x`})
	sn := st.Snapshot()
	defer sn.Release()
	e := NewEngine(Limits{MaxPoints: 100})
	p := Params{Tenant: store.DefaultTenant, Query: `{app="a"}`, Start: t0, End: t0 + int64(time.Minute), Interval: time.Second, Limit: 10}
	if _, err := e.Partial(context.Background(), sn, p); !errors.Is(err, ErrNotSplittable) || !strings.Contains(err.Error(), "interval") {
		t.Errorf("a log query with an interval: %v, want ErrNotSplittable naming the interval", err)
	}
	p = Params{Tenant: store.DefaultTenant, Query: `{app="a"}`, Start: t0, End: t0, Instant: true}
	if _, err := e.Partial(context.Background(), sn, p); !errors.Is(err, ErrBadRequest) {
		t.Errorf("an instant log query: %v, want ErrBadRequest", err)
	}
	p = Params{Tenant: store.DefaultTenant, Query: `count_over_time({app="a"}[1m])`, Start: t0, End: t0 + int64(time.Hour), Step: time.Second}
	if _, err := e.Partial(context.Background(), sn, p); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "maximum resolution") {
		t.Errorf("too many points: %v, want ErrBadRequest naming the resolution", err)
	}
}

// TestMergeChecks feeds Merge and Finish parts that do not fit: they
// answer an error naming the part, never a panic.
func TestMergeChecks(t *testing.T) {
	st := openMem(t)
	load(t, st, store.DefaultTenant, "merge", 0, []string{`{app="a"} 1s x`, `{app="a"} 2s y`})
	sn := st.Snapshot()
	defer sn.Release()
	e := NewEngine(Limits{MaxPoints: 100})
	p := Params{Tenant: store.DefaultTenant, Query: `sum(count_over_time({app="a"}[1m])) or sum(count_over_time({app="b"}[1m]))`,
		Start: t0 + int64(time.Minute), End: t0 + int64(time.Minute), Instant: true}
	a, err := e.Partial(context.Background(), sn, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Ranges) != 2 || len(a.Ranges[0]) != 1 || a.Ranges[0][0].Count[0] != 2 || len(a.Ranges[1]) != 0 {
		t.Fatalf("ranges %+v, want 2 rows of one series and none", a.Ranges)
	}
	other := *a
	other.Params.Start++
	other.Params.End++
	if _, err := Merge(a, &other); err == nil || !strings.Contains(err.Error(), "part 1 is of another query") {
		t.Errorf("another query's part: %v", err)
	}
	short := *a
	short.Ranges = a.Ranges[:1]
	if _, err := Merge(a, &short); err == nil || !strings.Contains(err.Error(), "part 1 has 1 range aggregations, the query 2") {
		t.Errorf("a part short of a range aggregation: %v", err)
	}
	bad := *a
	bad.Ranges = [][]PartialSeries{{{Labels: a.Ranges[0][0].Labels, Count: []float64{1, 2}, Value: []float64{1}}}, nil}
	if _, err := Merge(a, &bad); err == nil || !strings.Contains(err.Error(), "part 1, range aggregation 0 (count_over_time)") ||
		!strings.Contains(err.Error(), "2 counts for 1 steps") {
		t.Errorf("a series of the wrong length: %v", err)
	}
	if _, err := bad.Finish(e); err == nil {
		t.Error("finishing a damaged part: no error")
	}
	unsorted := *a
	unsorted.Ranges = [][]PartialSeries{{{Labels: record.Labels{{Name: "z"}, {Name: "a"}}, Count: []float64{1}, Value: []float64{1}}}, nil}
	if _, err := Merge(&unsorted); err == nil || !strings.Contains(err.Error(), "not sorted") {
		t.Errorf("unsorted labels: %v", err)
	}
	if _, err := Merge(); err == nil {
		t.Error("no parts: no error")
	}
	// Merging a part with itself counts its rows twice: the merge adds.
	twice, err := Merge(a, a)
	if err != nil {
		t.Fatal(err)
	}
	res, err := twice.Finish(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vector) != 1 || res.Vector[0].Value != 4 {
		t.Errorf("a part merged with itself: %+v, want 4", res.Vector)
	}
	if a.Ranges[0][0].Count[0] != 2 {
		t.Errorf("merging modified a part: count %v", a.Ranges[0][0].Count[0])
	}
	// The bytes limit bounds what all the parts read.
	lim := NewEngine(Limits{MaxBytesScanned: 1})
	if _, err := twice.Finish(lim); !errors.Is(err, ErrLimit) {
		t.Errorf("bytes over the limit: %v, want ErrLimit", err)
	}
}
