package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// columnLines are lines of every shape the columnar path must get right
// or leave to the row path: nested objects, arrays, nulls, escapes,
// duplicate keys, keys that collide with stream labels, damaged JSON,
// and lines that are no JSON at all.
func columnLines(n int) []string {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	out := make([]string, n)
	for i := range out {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Millisecond).Format(time.RFC3339Nano)
		svc := pick("api", "web")
		switch rng.IntN(12) {
		case 0:
			out[i] = fmt.Sprintf(`ts=%s level=%s service=lf msg="logfmt line"`, ts, pick("info", "error"))
		case 1:
			out[i] = fmt.Sprintf(`{"ts":"%s","level":"error","service":"%s","bad":}`, ts, svc)
		case 2:
			out[i] = fmt.Sprintf(`{"ts":"%s","level":"warn","service":"%s","dup":"one","dup":"two","esc":"a\"b\\c\u00e9\n"}`, ts, svc)
		case 3:
			out[i] = fmt.Sprintf(`{"ts":"%s","level":%s,"service":"%s","nul":null,"obj":{"k":[1,2]},"arr":[10,"x",{"y":1}]}`, ts, pick(`"info"`, `null`, `5`, `true`), svc)
		case 4:
			out[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","nested":{"deep":{"k":"%s"}},"http":{"status":%d,"latency_ms":%d.%03d}}`, ts, svc, pick("a", "b\\u0041", ""), 200+100*rng.IntN(4), rng.IntN(300), rng.IntN(1000))
		case 5:
			out[i] = fmt.Sprintf(`{"ts":"%s","level":"%s","service":"%s","msg":"payment %s%s","http":{"status":"%d"}}`, ts, pick("info", "error", "ERROR"), svc, pick("declined", "ok"),
				[]string{"", " level=warn", " http.method=PUT", " a_b=1 x=", ""}[i%5], 200+100*rng.IntN(4))
		case 6:
			out[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"info","http":{"status":%d},"http.status":999}`, ts, svc, 500+rng.IntN(3))
		case 7:
			out[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"debug","esc":"%s","arr":[]}`, ts, svc, pick(`\u0065rror`, `\\`, `x\/y`, `\ud83d\ude00`))
		case 8:
			out[i] = fmt.Sprintf(`%s ERROR plain text {"level":"error"}`, ts)
		default:
			out[i] = fmt.Sprintf(`{"ts":"%s","level":"%s","service":"%s","msg":"m%d","trace_id":"%016x","http":{"method":"%s","status":%d,"latency_ms":%d.%d},"neg":%d}`,
				ts, pick("info", "error", "warn"), svc, rng.IntN(5), rng.Uint64(), pick("GET", "POST"), 200+100*rng.IntN(4), rng.IntN(500), rng.IntN(10), -(i % 997))
		}
	}
	return out
}

// TestColumnarSameAsRows: range aggregations over `| json` parameters
// give the same results on the columnar path as on the row path, over
// parts (the columnar path) and the head (rows only).
func TestColumnarSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, columnLines(6000), false, []string{
		`sum by (level) (count_over_time(` + all + ` | json level [1h]))`,
		`sum by (level, msg) (count_over_time(` + all + ` | json level, msg | level=~"(?i)error" [1h]))`,
		`sum(count_over_time(` + all + ` | json s="http.status" | s >= 500 | __error__="" [1h]))`,
		`sum by (s) (count_over_time(` + all + ` | json s="http.status" [1h]))`,
		`quantile_over_time(0.5, ` + all + ` | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]) by (service)`,
		`sum by (lat) (sum_over_time(` + all + ` | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`,
		`sum by (level) (max_over_time(` + all + ` | json lat="http.latency_ms", level | level != "debug" | unwrap lat | __error__="" [1h]))`,
		`sum(sum_over_time(` + all + ` | json lat="http.latency_ms" | lat > 100 | unwrap lat | __error__="" [1h]))`,
		`sum by (level) (sum_over_time(` + all + ` | json n="http.status", level | unwrap n | __error__="" [1h]))`,
		`sum by (a) (count_over_time(` + all + ` | json a="arr[1]" [1h]))`,
		`sum by (a) (count_over_time(` + all + ` | json a="arr" [1h]))`,
		`sum by (x) (count_over_time(` + all + ` | json x="nested.deep.k" [1h]))`,
		`sum by (d) (count_over_time(` + all + ` | json d="dup" [1h]))`,
		`sum by (e) (count_over_time(` + all + ` | json e="esc" [1h]))`,
		`sum by (n, o) (count_over_time(` + all + ` | json n="nul", o="obj" [1h]))`,
		`sum by (service, service_extracted) (count_over_time(` + all + ` | json service [1h]))`,
		`sum by (__error__, __error_details__) (count_over_time(` + all + ` | json level, bad [1h]))`,
		`sum by (hs) (count_over_time(` + all + ` | json hs="[\"http.status\"]" [1h]))`,
		`sum by (level) (rate(` + all + ` | json level | level != "" [10m]))`,
		`sum by (level) (count_over_time(` + all + ` | json level, s="http.status" | s >= 500 | __error__="" [1h]))`,
		`sum(count_over_time(` + all + ` | json s="nope" | __error__="" [1h]))`,
		`sum by (service) (max_over_time(` + all + ` | json lat="http.latency_ms" | __error__="" | unwrap lat [1h]))`,
		// Series keys written from the values (range_keys.go): many
		// series, string filters on parameters and stream labels.
		`count(sum by (tid) (count_over_time(` + all + ` | json tid="trace_id" | tid!="" [1h])))`,
		`sum by (service, tid) (count_over_time(` + all + ` | json tid="trace_id", level | level=~"err.*" or tid="" [1h]))`,
		`sum without (level) (count_over_time(` + all + ` | json tid="trace_id", level | service="api" [1h]))`,
		`topk(3, sum by (tid) (sum_over_time(` + all + ` | json tid="trace_id", lat="http.latency_ms" | tid!="" | unwrap lat | __error__="" [1h])))`,
		`count(count by (m) (count_over_time(` + all + ` | json m="msg", other="level" | other != "debug" | __error__="" [1h])))`,
		`sum by (lvl, nope) (count_over_time(` + all + ` | json lvl="level", nope="zzz" | nope="" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json service, tid="trace_id" | tid!="" [1h]))`,
		// json without parameters, its labels those the query observes.
		`sum by (level) (count_over_time(` + all + ` | json [1h]))`,
		`sum by (level) (count_over_time(` + all + ` | json | level=~"(?i)error" | __error__="" [1h]))`,
		`sum(count_over_time(` + all + ` | json | http_status >= 500 | __error__="" [1h]))`,
		`sum by (nested_deep_k, http_status) (count_over_time(` + all + ` | json | __error__="" [1h]))`,
		`sum by (service, service_extracted) (count_over_time(` + all + ` | json [1h]))`,
		`sum by (dup, esc, nul, arr, obj_k) (count_over_time(` + all + ` | json [1h]))`,
		`sum by (http_status) (rate(` + all + ` | json | __error__="" [10m]))`,
		`sum by (level) (sum_over_time(` + all + ` | json | __error__="" | unwrap http_latency_ms [1h]))`,
		// The one label observed is the one unwrapped.
		`quantile_over_time(0.5, ` + all + ` | json | unwrap http_latency_ms | __error__="" [1h]) by (service)`,
		`sum by (service) (sum_over_time(` + all + ` | json | unwrap http_status [1h]))`,
		`max_over_time(` + all + ` | json | unwrap http_status | __error__="" [1h]) by (service)`,
		`sum by (__error__, __error_details__) (count_over_time(` + all + ` | json [1h]))`,
	})
}

// sweepLines are clean JSON lines, as most logs are, whose counts the
// columnar path sweeps (filterSweep, range_filters.go): a parameter in a dictionary
// column, escaped in some rows, absent from others, or the same in every
// row of a template.
func sweepLines(n int) []string {
	rng := rand.New(rand.NewPCG(7, 8))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	out := make([]string, n)
	for i := range out {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Millisecond).Format(time.RFC3339Nano)
		svc := pick("api", "web")
		switch rng.IntN(10) {
		case 0:
			out[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","msg":"no level here"}`, ts, svc)
		case 1:
			out[i] = fmt.Sprintf(`{"ts":"%s","level":"%s","service":"%s","msg":"odd level"}`, ts, pick(`error`, `ERROR`, ``, `in"fo`), svc)
		default:
			out[i] = fmt.Sprintf(`{"ts":"%s","level":"%s","service":"%s","msg":"m%d","http":{"status":%d,"latency_ms":%d.%03d}}`,
				ts, pick("info", "error", "warn", "debug"), svc, rng.IntN(5), 200+100*rng.IntN(4), rng.IntN(500), rng.IntN(1000))
		}
	}
	return out
}

// TestSweepSameAsRows: counts that the columnar path sweeps give what
// the row path gives.
func TestSweepSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, sweepLines(6000), true, []string{
		`sum by (level) (count_over_time(` + all + ` | json level [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json level | level="error" [1h]))`,
		`count_over_time(` + all + ` | json lvl="level" | lvl=~"(?i)error" [1h])`,
		`sum by (level) (rate(` + all + ` | json level | level != "" [10m]))`,
		`sum by (service, service_extracted) (count_over_time(` + all + ` | json service [1h]))`,
		`sum by (nolevel) (count_over_time(` + all + ` | json nolevel="none" [1h]))`,
		`sum by (msg) (count_over_time(` + all + ` | json msg | msg != "m1" [1h]))`,
		`sum(count_over_time(` + all + ` | json s="http.status" | s >= 500 | __error__="" [1h]))`,
		`absent_over_time(` + all + ` | json level | level="fatal" [1h])`,
		`sum by (level) (count_over_time(` + all + ` | json [1h]))`,
		`sum by (level) (count_over_time(` + all + ` | json | level="error" [1h]))`,
		`sum(count_over_time(` + all + ` | json | http_status >= 500 | __error__="" [1h]))`,
		// Windows shorter than a block: each row at its time (sweepTimed).
		`sum by (level) (count_over_time(` + all + ` | json level [40s]))`,
		`sum by (level) (count_over_time(` + all + ` | json [35s]))`,
		`sum by (msg) (count_over_time(` + all + ` | json msg | msg != "m1" [40s]))`,
		`sum by (service, service_extracted) (count_over_time(` + all + ` | json service [40s]))`,
		`sum by (level) (rate(` + all + ` | json level | level != "" [40s]))`,
	})
}

// TestWholeSweepSameAsRows: counts of one json label swept with any
// stages after json (the label's outcome is the whole pipeline's, once
// per dictionary entry), and by each value's series key where its column
// has no ids, with an unwrapped label too.
func TestWholeSweepSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, columnLines(6000), true, []string{
		`count(sum by (tid) (count_over_time(` + all + ` | json tid="trace_id" [1h])))`,
		`topk(3, sum by (tid) (count_over_time(` + all + ` | json tid="trace_id" | tid=~"0.*" [1h])))`,
		`topk(3, sum by (tid) (sum_over_time(` + all + ` | json tid="trace_id", lat="http.latency_ms" | tid!="" | unwrap lat | __error__="" [1h])))`,
		`max_over_time(` + all + ` | json tid="trace_id", lat="http.latency_ms" | tid=~"[0-7].*" | unwrap lat | __error__="" [1h]) by (tid)`,
		`sum by (service) (count_over_time(` + all + ` | json msg | line_format "{{.msg}}" |= "m1" [1h]))`,
		`sum by (level) (count_over_time(` + all + ` | json level | line_format "<{{.level}}>" | regexp "<(?P<l>e.*)>" | l!="" [1h]))`,
		`sum by (msg) (count_over_time(` + all + ` | json msg | line_format "{{.msg}}" != "m2" [40s]))`,
		`sum by (service) (count_over_time(` + all + ` | json | line_format "{{.level}}" |~ "warn|error" [40s]))`,
	})
}

// TestKeptSweepSameAsRows: counts and sums grouped by two or more json
// labels swept (each value a class, a row's series its classes'
// combination), with filters on the kept labels and on others, json with
// and without parameters, in windows longer and shorter than the rows'
// span.
func TestKeptSweepSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, columnLines(6000), true, []string{
		`sum by (level, m) (count_over_time(` + all + ` | json level, m="http.method" [1h]))`,
		`sum by (level, http_method) (count_over_time(` + all + ` | json [1h]))`,
		`sum by (level, m) (count_over_time(` + all + ` | json level, m="http.method", lat="http.latency_ms" | lat > 100 | level!="warn" | __error__="" [1h]))`,
		`sum by (m, level) (sum_over_time(` + all + ` | json level, m="http.method", lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`,
		`sum by (level, m, msg) (count_over_time(` + all + ` | json level, m="http.method", msg [1h]))`,
		`sum by (level, m) (count_over_time(` + all + ` | json level, m="http.method" | m!="POST" [40s]))`,
		`sum by (msg, level) (sum_over_time(` + all + ` | json level, msg, lat="http.latency_ms" | unwrap lat | __error__="" [40s]))`,
		`topk(2, sum by (level, service, m) (count_over_time(` + all + ` | json level, m="http.method" [1h])))`,
	})
}

// TestLeadingLineFiltersSameAsRows: line filters before the json stage
// whose literals the store finds exactly select a block's rows before
// their values are read (part.Block.MatchingRows), on the sweep and on
// the walk, with any stages after json.
func TestLeadingLineFiltersSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, columnLines(6000), true, []string{
		`sum by (level) (count_over_time(` + all + ` |= "payment" | json level [1h]))`,
		`sum by (service) (count_over_time(` + all + ` |= "error" |~ "(?i)DECLINED|m1" | json | level="error" [1h]))`,
		`sum by (level, m) (count_over_time(` + all + ` |= "GET" | json level, m="http.method" [1h]))`,
		`sum by (service) (sum_over_time(` + all + ` |= "POST" | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`,
		`sum by (level) (count_over_time(` + all + ` |= "\"level\":\"error\"" | json level [40s]))`,
		`sum by (msg) (count_over_time(` + all + ` |= "m" | json msg | line_format "{{.msg}}" |= "m2" [1h]))`,
		// Negated: the rows that hold none of the literals.
		`sum by (level) (count_over_time(` + all + ` != "debug" | json level [1h]))`,
		`sum by (level) (count_over_time(` + all + ` |= "m" != "m2" !~ "(?i)POST|declined" | json level [40s]))`,
		`sum by (service) (sum_over_time(` + all + ` !~ "warn|info" | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`,
	})
	// The rows walked, as the sweep takes not these.
	checkColumnar(t, columnLines(6000), false, []string{
		`sum by (tid) (count_over_time(` + all + ` |= "m3" | json tid="trace_id" [1h]))`,
		`max_over_time(` + all + ` |= "status" | json lat="http.latency_ms", s="http.status" | s >= 300 | unwrap lat | __error__="" [1h]) by (service)`,
		`first_over_time(` + all + ` |= "GET" | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]) by (service)`,
	})
}

// sameAsReference asks p of eng and of the reference engine on sn, and
// fails t unless both answer alike (neither may fail).
func sameAsReference(t *testing.T, eng *Engine, sn *store.Snapshot, p Params) {
	t.Helper()
	rows, rerr := (&Engine{workers: 2, reference: true}).Exec(context.Background(), sn, p)
	cols, cerr := eng.Exec(context.Background(), sn, p)
	if rerr != nil || cerr != nil {
		t.Fatalf("%s: %v / %v", p.Query, rerr, cerr)
	}
	if r, c := render(rows, p), render(cols, p); !slices.Equal(r, c) {
		t.Errorf("%s:\nrows:\n  %s\ncolumns:\n  %s", p.Query, strings.Join(r, "\n  "), strings.Join(c, "\n  "))
	}
}

// columnStore returns an engine and a snapshot of a store of lines,
// the first 4,500 in parts and the rest in the head; the store closes
// when the test ends.
func columnStore(t *testing.T, lines []string) (*Engine, *store.Snapshot) {
	t.Helper()
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(lines); i += 500 {
		chunk := strings.Join(lines[i:min(i+500, len(lines))], "\n") + "\n"
		err := p.Bytes(context.Background(), []byte(chunk), func(b *record.Batch) error { return st.Append(context.Background(), store.DefaultTenant, b) })
		if err != nil {
			t.Fatal(err)
		}
		if i == 4000 {
			if err := st.Flush(); err != nil { // the rest stays in the head
				t.Fatal(err)
			}
		}
	}
	return &Engine{workers: 2}, st.Snapshot()
}

// TestLineLengthsSameAsRows: bytes_over_time and bytes_rate measure the
// lines in their columns (part.Block.LineLengths), without a pipeline,
// after line filters the store decides and on the columnar walk after
// json, with the same answers as the lines read whole.
func TestLineLengthsSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, columnLines(6000), false, []string{
		`sum by (service) (bytes_over_time(` + all + ` [1h]))`,
		`bytes_rate(` + all + ` [40s])`,
		`sum(bytes_over_time({service=~".+"} [1h]))`,
		`sum by (service) (bytes_over_time(` + all + ` |= "payment" [1h]))`,
		`sum by (service) (bytes_rate(` + all + ` != "debug" |~ "m1|m2" [40s]))`,
		`sum by (level) (bytes_over_time(` + all + ` | json level [1h]))`,
		`sum by (level) (bytes_over_time(` + all + ` | json | level="error" [40s]))`,
		`sum by (service) (bytes_rate(` + all + ` | json s="http.status" | s >= 300 | __error__="" [1h]))`,
		`sum by (tid) (bytes_over_time(` + all + ` |= "m3" | json tid="trace_id" [1h]))`,
		`sum by (e) (bytes_over_time(` + all + ` | json e="esc" [1h]))`,
		`sum by (level, m) (bytes_over_time(` + all + ` |= "GET" | json level, m="http.method" | drop __error__, __error_details__ [1h]))`,
		// unwrap bytes() of a number column: its number, truncated;
		// a negative one fails as the text does.
		`sum by (service) (sum_over_time(` + all + ` | json lat="http.latency_ms" | unwrap bytes(lat) | __error__="" [1h]))`,
		`sum by (level) (max_over_time(` + all + ` | json s="http.status", level | unwrap bytes(s) | __error__="" [40s]))`,
		`sum by (service) (sum_over_time(` + all + ` | json n="neg" | unwrap bytes(n) | __error__="" [1h]))`,
	})
	// The line a line_format makes is the one measured: not the stored one.
	q := `sum by (msg) (bytes_over_time(` + all + ` | json msg | line_format "{{.msg}}" |= "m2" [1h]))`
	x, err := logql.ParseSampleExpr(q)
	if err != nil {
		t.Fatal(err)
	}
	ra := x.(*logql.VectorAggregation).Expr.(*logql.RangeAggregation)
	if columnarPipeline(ra, stage.ObservedBy(ra.Range.Log.Pipeline, []string{"msg"})) {
		t.Errorf("%s takes the columnar path", q)
	}
}

// TestSelectedCountsSameAsRows: counts whose pipeline is line filters
// the store decides, negated ones among them (!= "debug", !~, !> of a
// pattern <_>text<_>), count the rows selected in the columns.
func TestSelectedCountsSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, columnLines(6000), false, []string{
		`sum by (service) (count_over_time(` + all + ` != "payment" [1h]))`,
		`sum by (service) (rate(` + all + ` != "debug" |~ "m1|m2" [40s]))`,
		`count_over_time(` + all + ` |= "GET" !~ "m[12]" [1h])`,
		`sum(count_over_time(` + all + ` !> "<_>payment<_>" [40s]))`,
		`sum by (service) (count_over_time(` + all + ` |> "<_>payment<_>" != "m3" [1h]))`,
	})
}

// TestQuietLogfmtSameAsRows: a logfmt parser after json, as Logs
// Drilldown writes for mixed formats, takes the columnar path; the rows
// whose line holds a key the query observes (`level=` in a message) go
// through the whole pipeline, and with no label observed the parsers
// are gone (the streams' index counts).
func TestQuietLogfmtSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	mixed := ` | json | logfmt | drop __error__, __error_details__`
	checkColumnar(t, columnLines(6000), false, []string{
		`sum by (level) (count_over_time(` + all + mixed + ` | level!="" [1h]))`,
		`sum by (level) (count_over_time(` + all + mixed + ` | level!="" [40s]))`,
		`sum by (http_method) (count_over_time(` + all + mixed + ` [1h]))`,
		`sum by (level, a_b) (count_over_time(` + all + mixed + ` [1h]))`,
		`sum by (x) (count_over_time(` + all + mixed + ` [1h]))`,
		`sum by (service) (count_over_time(` + all + ` |= "payment"` + mixed + ` | level=~"e.*" [1h]))`,
		`sum by (level) (bytes_over_time(` + all + mixed + ` [1h]))`,
		`sum by (service) (sum_over_time(` + all + ` | json | logfmt | unwrap http_status | __error__="" [1h]))`,
	})
	// Nothing observed: the parsers and drops are gone, and the index or
	// the rows' times count.
	eng, sn := columnStore(t, columnLines(6000))
	defer sn.Release()
	at := time.Date(2026, 1, 15, 8, 1, 0, 0, time.UTC).UnixNano()
	for _, q := range []string{
		`sum by (service) (count_over_time(` + all + mixed + ` [1h]))`,
		`sum(count_over_time(` + all + ` |= "payment"` + mixed + ` [40s]))`,
	} {
		for _, p := range []Params{
			{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true},
			{Tenant: store.DefaultTenant, Query: q, Start: at - int64(time.Minute), End: at, Step: 10 * time.Second},
		} {
			sameAsReference(t, eng, sn, p)
		}
	}
	for _, c := range []struct {
		q    string
		gone bool
	}{
		{`sum by (service) (count_over_time(` + all + mixed + ` [1h]))`, true},
		{`sum by (service) (count_over_time(` + all + ` |= "x" | json | drop __error__, __error_details__ [1h]))`, true},
		{`sum by (service) (count_over_time(` + all + ` | json | drop __error__ [1h]))`, false},
		{`sum by (service) (count_over_time(` + all + ` | json [1h]))`, false},
		{`sum by (level) (count_over_time(` + all + mixed + ` [1h]))`, false},
		{`sum by (service) (count_over_time(` + all + ` | json a="b" | drop __error__, __error_details__ [1h]))`, false},
		{`sum by (service) (count_over_time(` + all + mixed + ` | service="api" [1h]))`, false},
	} {
		x, err := logql.ParseSampleExpr(c.q)
		if err != nil {
			t.Fatal(err)
		}
		ra := x.(*logql.VectorAggregation).Expr.(*logql.RangeAggregation)
		h := queryHints(x)[ra]
		if ps, gone := withoutQuietParsers(ra.Range.Log.Pipeline, h.observed); gone != c.gone || gone && slices.ContainsFunc(ps, func(s logql.Stage) bool { return !isLineFilter(s) }) {
			t.Errorf("%s: parsers gone %v (%d stages left), want %v", c.q, gone, len(ps), c.gone)
		}
	}
}

// TestLabelStagesSameAsRows: drop, keep and label_format of labels
// alone after json take the columnar path (and a dropped label is not
// read), on the sweep and on the walk; a label_format that reads the
// line or the time does not.
func TestLabelStagesSameAsRows(t *testing.T) {
	all := `{service=~"api|web"}`
	checkColumnar(t, columnLines(6000), false, []string{
		`sum by (level) (count_over_time(` + all + ` | json | drop trace_id [1h]))`,
		`sum by (level) (count_over_time(` + all + ` | json | drop level="info", msg [1h]))`,
		`sum by (level, service) (count_over_time(` + all + ` | json | keep level [1h]))`,
		`sum by (lvl) (count_over_time(` + all + ` | json | label_format lvl=level [1h]))`,
		`sum by (lvl) (count_over_time(` + all + ` | json | label_format lvl=level | lvl!="warn" [40s]))`,
		`sum by (x) (count_over_time(` + all + ` | json | label_format x="{{.service}}-{{ .level | upper }}" [1h]))`,
		`sum by (service) (sum_over_time(` + all + ` | json | label_format lat=http_latency_ms | unwrap lat | __error__="" [1h]))`,
		`sum by (level) (count_over_time(` + all + ` |= "m1" | json | keep level, service | level=~"e.*" [1h]))`,
	})
	for _, q := range []string{
		`count_over_time(` + all + ` | json | label_format x="{{ __line__ | len }}" [1h])`,
		`count_over_time(` + all + ` | json | label_format x="{{ __timestamp__ }}" [1h])`,
	} {
		x, err := logql.ParseSampleExpr(q)
		if err != nil {
			t.Fatal(err)
		}
		ra := x.(*logql.RangeAggregation)
		if columnarPipeline(ra, stage.ObservedBy(ra.Range.Log.Pipeline, []string{"x"})) {
			t.Errorf("%s: takes the columnar path, but its label_format reads the row", q)
		}
	}
}

// TestIDKeysOfFewerParameters: a row's packed value ids never read as
// those of a template with more parameters. Here the block's first
// column is a constant (its one value has id 0), and a template without
// it has the same ids but for that one: packed without a mark per
// parameter, both templates' rows counted in the first one's series.
func TestIDKeysOfFewerParameters(t *testing.T) {
	var lines []string
	for i := range 6000 {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Millisecond).Format(time.RFC3339Nano)
		svc := []string{"api", "web"}[i%2]
		if i%3 == 0 {
			lines = append(lines, fmt.Sprintf(`{"a":"x","b":"y","service":"%s","ts":"%s"}`, svc, ts))
		} else {
			lines = append(lines, fmt.Sprintf(`{"b":"y","service":"%s","ts":"%s"}`, svc, ts))
		}
	}
	all := `{service=~"api|web"}`
	checkColumnar(t, lines, false, []string{
		`sum by (a, b) (count_over_time(` + all + ` | json [1h]))`,
		`sum by (a) (count_over_time(` + all + ` | json | b="y" [1h]))`,
	})
}

// checkColumnar compares each query's results on the columnar and the
// row path, instant and over a range; swept says that the instant
// queries must sweep some rows.
func checkColumnar(t *testing.T, lines []string, swept bool, queries []string) {
	t.Helper()
	// One engine for every query: each plans its templates with the
	// plans the ones before it made (planShare), under its own stage.
	eng, sn := columnStore(t, lines)
	defer sn.Release()
	at := time.Date(2026, 1, 15, 8, 1, 0, 0, time.UTC).UnixNano()
	for _, q := range queries {
		for _, p := range []Params{
			{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true},
			{Tenant: store.DefaultTenant, Query: q, Start: at - int64(time.Minute), End: at, Step: 10 * time.Second},
		} {
			rows, rerr := (&Engine{workers: 2, reference: true}).Exec(context.Background(), sn, p)
			cols, cerr := eng.Exec(context.Background(), sn, p)
			if (rerr == nil) != (cerr == nil) || rerr != nil && errorClass(rerr) != errorClass(cerr) {
				t.Errorf("%s: errors differ: rows %v, columns %v", q, rerr, cerr)
				continue
			}
			if rerr != nil {
				t.Errorf("%s: %v", q, rerr)
				continue
			}
			if r, c := render(rows, p), render(cols, p); !slices.Equal(r, c) {
				t.Errorf("%s (instant %v):\nrows:\n  %s\ncolumns:\n  %s", q, p.Instant, strings.Join(r, "\n  "), strings.Join(c, "\n  "))
			}
			if len(render(rows, p)) == 0 {
				t.Errorf("%s: no result: the test tests nothing", q)
			}
			if cols.Stats.RowsColumnar == 0 || rows.Stats.RowsColumnar != 0 {
				t.Errorf("%s: %d rows read from columns (row path %d): the columnar path was not taken", q, cols.Stats.RowsColumnar, rows.Stats.RowsColumnar)
			}
			if swept && p.Instant && cols.Stats.RowsSwept == 0 {
				t.Errorf("%s: no row swept", q)
			}
			t.Logf("%s: %d of %d rows from columns, %d swept", q, cols.Stats.RowsColumnar, cols.Stats.Rows, cols.Stats.RowsSwept)
		}
	}
}

// TestNumberFiltersSameAsRows: number filters decided a column at a time
// (a pass bit per value of an integer or decimal column) give what the
// row path gives, at every comparison, with thresholds the columns hold
// exactly, combined with and/or, unwrapped, and with rows that lack the
// parameter.
func TestNumberFiltersSameAsRows(t *testing.T) {
	var lines []string
	for i := range 6000 { // checkColumnar flushes the first 4000 to a part
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Millisecond).Format(time.RFC3339Nano)
		svc := []string{"api", "web"}[i%2]
		if i%11 == 0 {
			lines = append(lines, fmt.Sprintf(`{"ts":"%s","service":"%s","level":"info"}`, ts, svc))
			continue
		}
		lines = append(lines, fmt.Sprintf(`{"ts":"%s","service":"%s","n":%d,"d":%d.%02d}`, ts, svc, i, i/4, i%4*25))
	}
	all := `{service=~"api|web"}`
	var queries []string
	for _, f := range []string{`n > 3000`, `n >= 3000`, `n < 100`, `n <= 100`, `n == 2003`, `n != 2003`, `n >= 1000 and n < 2000`, `n <= 10 or n == 3003 or n > 3990`} {
		queries = append(queries, `sum by (service) (count_over_time(`+all+` | json n | `+f+` | __error__="" [1h]))`)
	}
	for _, f := range []string{`d > 500.25`, `d >= 500.25`, `d < 10.5`, `d <= 10.5`, `d == 700.75`, `d != 700.75`, `d >= 5 and d < 6 or d > 999`} {
		queries = append(queries, `sum by (service) (count_over_time(`+all+` | json d | `+f+` | __error__="" [1h]))`)
	}
	queries = append(queries,
		`sum by (service) (sum_over_time(`+all+` | json n | n > 2000 | unwrap n | __error__="" [1h]))`,
		`sum by (service) (max_over_time(`+all+` | json d | unwrap d | __error__="" [1h]))`,
		// Unwrap removes the label: a filter after it sees it absent.
		`sum by (service) (sum_over_time(`+all+` | json d, n | unwrap d | d <= 100.25 or n > 5 | __error__="" [1h]))`,
	)
	checkColumnar(t, lines, false, queries)
}

// FuzzColumnarSameAsRows: for any lines, range aggregations over json
// parameters give on the columnar path (sweeps, skipped templates, numbers
// read from their columns) what the row path gives. Each line is the rest
// of a JSON object that starts with a time and a service, so that it is
// selected and falls in the window.
func FuzzColumnarSameAsRows(f *testing.F) {
	for _, l := range append(columnLines(40), sweepLines(40)...) {
		if strings.HasPrefix(l, "{") {
			f.Add(strings.Replace(l[1:], `"ts":`, `"t0":`, 1), uint8(len(l)))
		}
	}
	f.Add(`"level":"err\u006fr","http":{"status":500,"latency_ms":1.50}}`+"\n"+`"level":null}`+"\n"+`"x":1}`, uint8(3))
	// Lines whose own fields come first, a constant column before the
	// rest: the packing of value ids of templates with fewer parameters
	// (TestIDKeysOfFewerParameters).
	f.Add(strings.Repeat(`"a":"x","level":"info"}`+"\n"+`"level":"info"}`+"\n"+`"level":"info"}`+"\n", 4), uint8(0x80|19))
	queries := []string{
		`sum by (level) (count_over_time({service="api"} | json level [1h]))`,
		`sum by (level) (count_over_time({service="api"} | json level | level="error" | __error__="" [1h]))`,
		`sum(count_over_time({service="api"} | json s="http.status" | s >= 500 | __error__="" [1h]))`,
		`sum by (__error__) (count_over_time({service="api"} | json s="http.status" [1h]))`,
		`sum(sum_over_time({service="api"} | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`,
		`max_over_time({service="api"} | json lat="http.latency_ms", level | unwrap lat | __error__="" [1h])`,
		`sum by (a, b) (count_over_time({service="api"} | json a="level", b="x" | __error__="" [1h]))`,
		`quantile_over_time(0.9, {service="api"} | json lat="http.latency_ms" | unwrap lat | __error__="" [1h])`,
		`last_over_time({service="api"} | json lat="http.latency_ms" | unwrap lat | __error__="" [1h])`,
		`sum by (level) (count_over_time({service="api"} | json [1h]))`,
		`sum by (http_status, __error__, __error_details__) (count_over_time({service="api"} | json [1h]))`,
		`sum by (level, service_extracted) (sum_over_time({service="api"} | json | __error__="" | unwrap http_latency_ms [1h]))`,
		`sum by (x, http) (count_over_time({service="api"} | json | level=~"err.*" [1h]))`,
		`count(sum by (l, x) (count_over_time({service="api"} | json l="level", x | l!="" or x=~"1.*" [1h])))`,
		`sum by (x) (sum_over_time({service="api"} | json x, lat="http.latency_ms" | x!="" | unwrap lat | __error__="" [1h]))`,
		`quantile_over_time(0.9, {service="api"} | json | unwrap http_latency_ms | __error__="" [1h])`,
		`sum(sum_over_time({service="api"} | json | unwrap http_status [1h]))`,
		// Label filters decided a column at a time (range_filters.go).
		`sum by (service) (count_over_time({service="api"} | json lat="http.latency_ms" | lat > 1.5 and lat <= 300 or lat == 0 | __error__="" [1h]))`,
		`sum by (service) (sum_over_time({service="api"} | json s="http.status" | s != 500 | unwrap s | __error__="" [1h]))`,
		`sum by (a, level) (count_over_time({service="api"} | json [1h]))`,
		`sum by (service) (count_over_time({service="api"} | json l="level", x | l="error" | x!="1" [1h]))`,
		`sum(count_over_time({service="api"} | json | level=~"err.*" | a!="x" | __error__="" [1h]))`,
		`sum by (service) (count_over_time({service="api"} | json lat="http.latency_ms", l="level" | lat > 1 | l!="info" | __error__="" [1h]))`,
		`sum by (service) (count_over_time({service="api"} | json lat="http.latency_ms" | lat > 1.5 [1h]))`,
		`sum(count_over_time({service="api"} | json | http_status >= 400 or http_status == 0 | level="error" [1h]))`,
		`sum by (service) (sum_over_time({service="api"} | json lat="http.latency_ms", l="level" | l=~"e.*" | unwrap lat | __error__="" [1h]))`,
		`sum by (service) (max_over_time({service="api"} | json lat="http.latency_ms", s="http.status" | s > 200 | unwrap lat [1h]))`,
		`sum by (l) (count_over_time({service="api"} | json l="level", x | x!="1" [1h]))`,
		`sum by (http_status) (sum_over_time({service="api"} | json | level!="info" | unwrap http_latency_ms | __error__="" [1h]))`,
		`sum by (level) (count_over_time({service="api"} | json | level=~"e.*|i.*" | x!="2" [1h]))`,
		// One label through the whole pipeline (whole), keyed where its
		// column has no ids.
		`sum by (service) (count_over_time({service="api"} | json l="level" | line_format "{{.l}}" |= "err" [1h]))`,
		`count(sum by (x) (count_over_time({service="api"} | json x [1h])))`,
		`sum by (level) (count_over_time({service="api"} | json | line_format "{{.level}}" != "info" [1h]))`,
		// Windows shorter than the rows' span: each row at its time.
		`sum by (l) (sum_over_time({service="api"} | json l="level", lat="http.latency_ms" | unwrap lat | __error__="" [150ms]))`,
		`max_over_time({service="api"} | json lat="http.latency_ms", s="http.status" | s >= 300 | unwrap lat | __error__="" [150ms])`,
		`sum by (level) (count_over_time({service="api"} | json level | level!="debug" [150ms]))`,
		// A logfmt parser after json (logfmt_after.go).
		`sum by (level) (count_over_time({service="api"} | json | logfmt | drop __error__, __error_details__ | level!="" [1h]))`,
		`sum by (x, l) (count_over_time({service="api"} | json | logfmt | label_format l=level | drop __error__, __error_details__ [150ms]))`,
		`sum(count_over_time({service="api"} | json | logfmt | drop __error__, __error_details__ [1h]))`,
		// Lines measured in their columns (part.Block.LineLengths).
		`sum by (level) (bytes_over_time({service="api"} | json | level=~"e.*|i.*" [1h]))`,
		`sum(bytes_rate({service="api"} |= "a" [150ms]))`,
		`sum by (x) (bytes_over_time({service="api"} | json x, lat="http.latency_ms" | lat > 1 [1h]))`,
		// Grouped by two or more json labels.
		`sum by (level, a) (count_over_time({service="api"} | json level, a [1h]))`,
		`sum by (level, a) (count_over_time({service="api"} | json level, a | a!="x" [150ms]))`,
		`sum by (level, x, a) (count_over_time({service="api"} | json | level=~"e.*|i.*" | __error__="" [1h]))`,
		`sum by (a, l) (sum_over_time({service="api"} | json l="level", a, lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`,
		`sum by (a, l) (count_over_time({service="api"} | json l="level", a, s="http.status" | s >= 300 | __error__="" [1h]))`,
		// Label stages after json.
		`sum by (level) (count_over_time({service="api"} | json | drop a [1h]))`,
		`sum by (l) (count_over_time({service="api"} | json | label_format l=level | keep l, x [1h]))`,
		`sum by (level, a) (count_over_time({service="api"} | json | label_format a="{{.x}}{{.a}}" | drop x="1" [150ms]))`,
		// Line filters before json.
		`sum by (level) (count_over_time({service="api"} |= "e" | json level [1h]))`,
		`sum by (level, a) (count_over_time({service="api"} |= "\"" |~ "(?i)X|info" | json [1h]))`,
		`sum(sum_over_time({service="api"} |= "1" | json lat="http.latency_ms" | unwrap lat | __error__="" [150ms]))`,
		`sum by (level) (count_over_time({service="api"} != "x" !~ "(?i)ERR" | json level [1h]))`,
	}
	f.Fuzz(func(t *testing.T, data string, qi uint8) {
		// qi's top bit puts each line's own fields first, the time and
		// service after them, so that the block's first columns are the
		// fuzzer's.
		first := qi&0x80 != 0
		var lines []string
		for i, l := range strings.Split(data, "\n") {
			if i == 300 {
				break
			}
			ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
			if first && strings.HasSuffix(l, "}") {
				lines = append(lines, fmt.Sprintf(`{%s,"ts":"%s","service":"api"}`, l[:len(l)-1], ts))
				continue
			}
			lines = append(lines, fmt.Sprintf(`{"ts":"%s","service":"api",%s`, ts, l))
		}
		st := openMem(t)
		appendText(t, st, strings.Join(lines, "\n")+"\n")
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
		sn := st.Snapshot()
		defer sn.Release()
		q := queries[int(qi&0x7f)%len(queries)]
		at := time.Date(2026, 1, 15, 8, 1, 0, 0, time.UTC).UnixNano()
		for _, p := range []Params{
			{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true},
			{Tenant: store.DefaultTenant, Query: q, Start: at - int64(time.Minute), End: at, Step: 20 * time.Second},
		} {
			rows, rerr := (&Engine{workers: 1, reference: true}).Exec(context.Background(), sn, p)
			cols, cerr := (&Engine{workers: 1}).Exec(context.Background(), sn, p)
			// A pipeline error names the first row's series that has
			// one: the row path's has every label json sets, the
			// columnar path's those the query observes (errorClass).
			if (rerr == nil) != (cerr == nil) || rerr != nil && errorClass(rerr) != errorClass(cerr) {
				t.Fatalf("%s: errors differ: rows %v, columns %v\nDATA %q", q, rerr, cerr, lines)
			}
			if rerr != nil {
				continue
			}
			if r, c := render(rows, p), render(cols, p); !slices.Equal(r, c) {
				t.Fatalf("%s (instant %v):\nrows:\n  %s\ncolumns:\n  %s\nDATA %q", q, p.Instant, strings.Join(r, "\n  "), strings.Join(c, "\n  "), lines)
			}
		}
	})
}

// FuzzJSONFlagsImplyStage checks the promise the columnar path takes from
// a part's JSON slot flags (part.Block.SlotJSON): a value part.JSONStringContent accepts is
// string content the json stage reads, and one part.JSONValue accepts is
// a value it reads whole (and not an object, which json without
// parameters would flatten).
func FuzzJSONFlagsImplyStage(f *testing.F) {
	for _, s := range []string{`abc`, `a \"b\" \u00e9 \n`, `\u12`, `\x`, "a\tb", `"`, `\`,
		`12`, `-0.5e+3`, `01`, `1.`, `true`, `nul`, `null `, `[1, "a", {"b": [true]}]`, `[1,]`, `{}`, `"s"`, `"\ud800"`, `[[[[]]]]`} {
		f.Add([]byte(s))
	}
	var sc stage.JSONScanner
	f.Fuzz(func(t *testing.T, v []byte) {
		if part.JSONStringContent(v) {
			if _, ok := sc.UnquoteAppend(nil, v); !ok {
				t.Errorf("%q: JSONStringContent accepts it, the json stage does not read it as a string's content", v)
			}
		}
		if part.JSONValue(v) && (!sc.Valid(v) || v[0] == '{') {
			t.Errorf("%q: JSONValue accepts it, the json stage does not read it as one value (or it is an object)", v)
		}
	})
}

// TestKeyBatchSameAsRows: counts in a series per user, thousands of
// users in a stream (the memo gives up; keys are written and looked up in
// batches, range_keys.go), agree with the row path.
func TestKeyBatchSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	lines := make([]string, 4400)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		user := fmt.Sprintf("u%d", rng.IntN(3000))
		switch {
		case i%97 == 0:
			user = "" // a user_id!="" filter drops it
		case i%13 == 0:
			user = fmt.Sprintf(`u\u0031%d`, rng.IntN(30)) // the same key as u1…, escaped
		case i%29 == 0:
			user = `bad\ud800` // a lone surrogate: U+FFFD to json
		}
		// f: floats whose sum depends on the order they are added in
		// ((1e16+1)-1e16 is 0, (1e16-1e16)+1 is 1): a series must take
		// its samples in the rows' order, batched or not.
		f := []string{"1e16", "1", "-1e16", "0.1", "3.3e-5"}[rng.IntN(5)]
		pad := ""
		if i%17 == 0 {
			// A line mostly key: stored whole, it takes the row path,
			// between rows of the same series in the batch.
			pad = `,"` + strings.Repeat("k", 300) + `":0`
		}
		who := fmt.Sprintf(`"user":{"id":"%s"},`, user)
		switch {
		case i%31 == 0:
			who = "" // json without parameters sets no user_id
		case i%37 == 0:
			who = fmt.Sprintf(`"user_id":"dup%d",`, i%5) + who // two fields of the label: the first wins
		}
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"api","level":"%s",%s"bytes":%d,"f":%s%s}`, ts, []string{"info", "error"}[rng.IntN(2)], who, rng.IntN(1000), f, pad)
	}
	all := `{service="api"}`
	checkColumnar(t, lines, false, []string{
		`count(sum by (u) (count_over_time(` + all + ` | json u="user.id" | u!="" [1h])))`,
		`topk(3, sum by (u) (count_over_time(` + all + ` | json u="user.id" [1h])))`,
		`sum by (u, level) (count_over_time(` + all + ` | json u="user.id", level | level="error" [1h]))`,
		`count(count by (u) (rate(` + all + ` | json u="user.id", level | u=~"u1.*" [1m])))`,
		`topk(5, sum by (u) (sum_over_time(` + all + ` | json u="user.id", b="bytes" | u!="" | unwrap b | __error__="" [1h])))`,
		`sum by (u) (last_over_time(` + all + ` | json u="user.id", b="bytes" | unwrap b [1h]))`,
		`sum by (u, level) (max_over_time(` + all + ` | json u="user.id", level, b="bytes" | unwrap b | __error__="" [1h]))`,
		`sum by (u) (sum_over_time(` + all + ` | json u="user.id", f | unwrap f [1h]))`,
		`topk(20, sum by (u) (sum_over_time(` + all + ` | json u="user.id", f | u!="" | unwrap f [1h])))`,
		// json without parameters, the one label observed: keys too.
		`sum by (user_id) (count_over_time(` + all + ` | json [1h]))`,
		`topk(3, sum by (user_id) (count_over_time(` + all + ` | json | user_id!="" [1h])))`,
		`count(sum by (user_id) (count_over_time(` + all + ` | json | user_id=~"u1.*" [1h])))`,
		`sum by (user_id, service) (rate(` + all + ` | json | drop __error__ [1m]))`,
	})
}

// TestPrefixReadSameAsRows: a pipeline that parses the JSON inside a
// field (`| json | line_format "{{.log}}" | json | level="error"`) reads
// a prefix of each long value first (stage.PrefixRead) and the whole
// value only for the rows the prefix does not decide, and drops unread
// the rows whose value lacks the text a filter requires (the needle): it
// gives what the row path gives, with levels early, late, twice or
// missing, escapes across the cut, lines that are text or broken JSON,
// values short enough to be read whole, the required text made by an
// escape (inside the JSON, or of the stored text), and a level outside
// the value that the unparameterized json sets first.
func TestPrefixReadSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	levels := []string{"info", "error", "warn", `err\u006fr`}
	pad := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString([]string{"a", `\n`, `\"q\"`, `\\`, `\u00e9`, `\ud83d\ude00`, "payment declined ", "/"}[rng.IntN(8)])
		}
		return b.String()
	}
	inner := func() string {
		if rng.IntN(6) == 0 {
			return fmt.Sprintf("2026-01-15T08:00:00Z %s %s", strings.ToUpper(levels[rng.IntN(3)]), pad(rng.IntN(200)))
		}
		fields := []string{
			fmt.Sprintf(`"ts":%d`, 1768464000000+rng.IntN(1000)),
			fmt.Sprintf(`"msg":"%s"`, pad(rng.IntN(120))),
			fmt.Sprintf(`"http":{"method":"GET","status":%d}`, []int{200, 404, 500, 503}[rng.IntN(4)]),
			`"tags":["a","b"]`,
		}
		if rng.IntN(2) == 0 {
			fields = slices.Insert(fields, 3, fmt.Sprintf(`"error":{"stack":"%s"}`, pad(rng.IntN(80))))
		}
		if rng.IntN(8) != 0 {
			at := rng.IntN(len(fields) + 1)
			fields = slices.Insert(fields, at, fmt.Sprintf(`"level":"%s"`, levels[rng.IntN(len(levels))]))
			if rng.IntN(10) == 0 {
				fields = append(fields, `"level":"error"`) // the first wins
			}
		}
		obj := "{" + strings.Join(fields, ",") + "}"
		switch rng.IntN(10) {
		case 0:
			return obj[:rng.IntN(len(obj))] // cut short
		case 1:
			return strings.Replace(obj, `"tags"`, `"tags":tru,"x"`, 1) // broken after the level, or before
		case 2:
			return strings.Replace(obj, `"msg":"`, `"msg":"\q`, 1) // an invalid escape inside
		}
		return obj
	}
	lines := make([]string, 4400)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		log, _ := json.Marshal(inner())
		if rng.IntN(9) == 0 {
			// "error" made by an escape of the stored text itself.
			log = bytes.Replace(log, []byte("error"), []byte(`\u0065rror`), 1)
		}
		outer := ""
		if rng.IntN(7) == 0 {
			// A level beside the log, which the unparameterized json
			// sets first.
			outer = fmt.Sprintf(`"level":"%s",`, levels[rng.IntN(3)])
		}
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"api","stream":"stdout",%s"log":%s}`, ts, outer, log)
	}
	all := `{service="api"}`
	checkColumnar(t, lines, false, []string{
		`sum by (level) (count_over_time(` + all + ` | json | line_format "{{.log}}" | json | level="error" | __error__="" [1h]))`,
		`sum(count_over_time(` + all + ` | json log | line_format "{{.log}}" | json level | level="error" | __error__="" [1h]))`,
		`sum by (level, http_status) (count_over_time(` + all + ` | json | line_format "{{.log}}" | json | level!="info" | __error__="" [1h]))`,
		`sum by (msg) (count_over_time(` + all + ` | json log | line_format "{{.log}}" | json level, msg | level=~"err.*" | msg!="" | __error__="" [1h]))`,
		`sum by (http_status) (count_over_time(` + all + ` | json | line_format "{{.log}}" | json | level="error" and http_status=~"5.." | __error__="" [1h]))`,
		`sum by (stream) (count_over_time(` + all + ` | json log, stream | line_format "{{.log}}" | json ts | ts=~"17.*1" | __error__="" [1h]))`,
		// Rows the prefix keeps: counted by its labels, unless the
		// series keeps the label whose value the prefix is.
		`sum by (level) (count_over_time(` + all + ` | json log | line_format "{{.log}}" | json level | level=~"e.*" [1h]))`,
		`sum by (log) (count_over_time(` + all + ` | json log | line_format "{{.log}}" | json level | level="error" [1h]))`,
	})
}

// TestVecSweepSameAsRows: a block counted from the verdicts of a column
// of numbers (filterSweep) gives what the row path gives, with rows that
// lack the number (their templates pass or fail alike), numbers in
// another column in some blocks (strings), filters that pass absent
// values, and number and string filters on two labels.
func TestVecSweepSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	lines := make([]string, 4400)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		svc := []string{"api", "web"}[rng.IntN(2)]
		switch r := rng.IntN(10); {
		case r < 2:
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"info"}`, ts, svc)
		case r == 2:
			// A stream of its own: its column is not one of numbers.
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"str","http":{"latency_ms":"%d"}}`, ts, rng.IntN(500))
		default:
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","http":{"latency_ms":%d.%03d,"status":%d}}`, ts, svc, rng.IntN(500), rng.IntN(1000), 200+100*rng.IntN(4))
		}
	}
	all := `{service=~".+"}`
	checkColumnar(t, lines, false, []string{
		`sum by (service) (count_over_time(` + all + ` | json lat="http.latency_ms" | lat > 100 and lat <= 400.5 | __error__="" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json lat="http.latency_ms" | __error__="" or lat > 300 [1h]))`,
		`sum(count_over_time(` + all + ` | json lat="http.latency_ms" | lat < 50 or lat >= 450 | __error__="" [1h]))`,
		`avg_over_time(` + all + ` | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]) by (service)`,
		`sum by (service) (sum_over_time(` + all + ` | json lat="http.latency_ms" | lat > 250 | unwrap lat | __error__="" [1h]))`,
		`max_over_time(` + all + ` | json lat="http.latency_ms" | unwrap lat | __error__="" or lat > 1 [1h]) by (service)`,
		`min_over_time(` + all + ` | json lat="http.latency_ms" | lat >= 100 | unwrap lat [1h]) by (service)`,
		`quantile_over_time(0.9, ` + all + ` | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]) by (service)`,
		`quantile_over_time(0.5, ` + all + ` | json lat="http.latency_ms" | lat > 120 | unwrap lat [1h]) by (service)`,
		// Windows shorter than a block.
		`sum by (service) (count_over_time(` + all + ` | json lat="http.latency_ms" | lat > 100 and lat <= 400.5 | __error__="" [15s]))`,
		`sum by (service) (count_over_time(` + all + ` | json lat="http.latency_ms" | __error__="" or lat > 300 [20s]))`,
		`avg_over_time(` + all + ` | json lat="http.latency_ms" | unwrap lat | __error__="" [15s]) by (service)`,
		`quantile_over_time(0.9, ` + all + ` | json lat="http.latency_ms" | lat > 50 | unwrap lat | __error__="" [25s]) by (service)`,
	})
	// Numbers and strings together, each label decided on its own
	// column: a column of numbers and a dictionary of statuses, an
	// unwrap under a filter of another label.
	checkColumnar(t, lines, true, []string{
		`sum by (service) (count_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | lat > 100 | s >= 300 | __error__="" [1h]))`,
		`sum(count_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | lat <= 250 or lat > 450 | s!="200" | __error__="" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | http_status="500" | http_latency_ms < 300 | __error__="" [1h]))`,
		`sum by (service) (sum_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | s="500" | unwrap lat | __error__="" [1h]))`,
		`quantile_over_time(0.5, ` + all + ` | json lat="http.latency_ms", s="http.status" | s=~"[45].." | unwrap lat | __error__="" [1h]) by (service)`,
		`max_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | lat > 10 | unwrap lat | s!="200" [1h]) by (service)`,
		// Windows shorter than a block.
		`sum by (service) (count_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | lat > 100 | s >= 300 | __error__="" [15s]))`,
		`avg_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | s="200" | unwrap lat | __error__="" [20s]) by (service)`,
		// The grouping keeps one label.
		`sum by (s) (sum_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | unwrap lat | __error__="" [1h]))`,
		`max_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | lat > 100 | unwrap lat | __error__="" [1h]) by (s)`,
		`sum by (s) (count_over_time(` + all + ` | json lat="http.latency_ms", s="http.status" | lat > 100 | __error__="" [15s]))`,
		`quantile_over_time(0.5, ` + all + ` | json lat="http.latency_ms", s="http.status" | unwrap lat | __error__="" [20s]) by (s, service)`,
	})
}

// TestFilterSweepSameAsRows: string filters decided per dictionary entry
// and counted in one pass over a block's rows (filterSweep: aligned
// columns, two slots without a branch, more in the general loop) give
// what the row path gives: rows that lack a label, labels whose values
// are escaped, null, numbers or booleans, constant columns, a stream
// label of a filtered name, and filters that pass absent values.
func TestFilterSweepSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	methods := []string{"GET", "POST", "DELETE", `P\"UT`, "get"}
	paths := []string{"/a", "/b/c", `/q\u00e9`, "/d"}
	levels := []string{"info", "error", "ERROR", "warn"}
	lines := make([]string, 4600)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		svc := []string{"api", "web"}[rng.IntN(2)]
		lvl := levels[rng.IntN(len(levels))]
		m, p := methods[rng.IntN(len(methods))], paths[rng.IntN(len(paths))]
		switch r := rng.IntN(13); {
		case r == 12:
			// A stream of one level: a constant column in blocks of
			// more rows than a dictionary has ids.
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"one","level":"error","http":{"method":"%s"}}`, ts, m)
		case r < 2:
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"%s"}`, ts, svc, lvl)
		case r == 2:
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":null,"http":{"method":"%s"}}`, ts, svc, m)
		case r == 3:
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","http":{"path":"%s","method":"%s"},"level":"%s"}`, ts, svc, p, m, lvl)
		case r == 4:
			// A stream with a label of a filtered name.
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"%s","http":{"method":"%s","path":"%s"},"host":"h1"}`, ts, "level", lvl, m, p)
		case r == 5:
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"%s","http":{"method":%d,"path":true}}`, ts, svc, lvl, rng.IntN(3))
		case r == 6:
			// A field twice: its column has two values per row.
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","http":{"path":"%s","method":"%s"},"x":{"path":"%s"},"level":"%s"}`, ts, svc, p, m, paths[rng.IntN(len(paths))], lvl)
		case r == 7:
			// A key twice: its column has two values per row.
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"dup","level":"%s","http":{"method":"%s"},"level":"%s"}`, ts, lvl, m, levels[rng.IntN(len(levels))])
		case r == 8 && i%3 == 0:
			// A line mostly key: stored whole, it takes the row path
			// after the block's other rows are counted.
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"%s","http":{"method":"%s"},"%s":0}`, ts, svc, lvl, m, strings.Repeat("k", 300))
		default:
			st := []string{"200", "404", "500", "503", `"5xx"`, "2.5e2"}[rng.IntN(6)]
			lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"%s","http":{"method":"%s","path":"%s","status":%s}}`, ts, svc, lvl, m, p, st)
		}
	}
	all := `{service=~".+"}`
	checkColumnar(t, lines, true, []string{
		// Number filters on dictionary entries: a value that is no
		// number fails (its error dropped by the last filter).
		`sum by (service) (count_over_time(` + all + ` | json s="http.status", m="http.method" | s >= 300 | m!="GET" | __error__="" [1h]))`,
		`sum(count_over_time(` + all + ` | json | http_status > 250 and http_status != 503 | level="error" | __error__="" [15s]))`,
		`sum by (service) (count_over_time(` + all + ` | json | http_status == 250 | __error__="" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json m="http.method", p="http.path" | m="DELETE" | p="/b/c" [1h]))`,
		`sum(count_over_time(` + all + ` | json m="http.method", p="http.path" | m!="GET" and p=~"/[ab].*" [1h]))`,
		`sum(count_over_time(` + all + ` | json m="http.method", p="x.path" | m!="GET" and p=~"/[ab].*" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json m="http.method", l="level" | m!="GET" and l="error" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json m="http.method" | m="" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json m="http.method", level | m!~"G.*" | level="error" | __error__="" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | http_method="POST" | level="error" [1h]))`,
		`sum(count_over_time(` + all + ` | json | http_method=~"P.*" | level!="info" | http_path!="/a" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | level="" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | http_path="true" | http_method=~"1|2" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | http_method="P\"UT" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | http_path="/qé" | http_method!="get" [1h]))`,
		`sum by (service) (rate(` + all + ` | json | http_method="GET" | level="error" [1h]))`,
		// Windows shorter than a block: each row that passes at its time.
		`sum by (service) (count_over_time(` + all + ` | json m="http.method" | m="GET" [15s]))`,
		`sum(count_over_time(` + all + ` | json | http_method="POST" | level="error" [25s]))`,
		`sum by (service) (count_over_time(` + all + ` | json | level=~"err.*" | http_path!="/a" | http_method!="" [20s]))`,
		// The grouping keeps one label: a passing row counts in its
		// entry's series.
		`sum by (m) (count_over_time(` + all + ` | json m="http.method", p="http.path" | p="/b/c" [1h]))`,
		`sum by (level) (count_over_time(` + all + ` | json | http_method="POST" [1h]))`,
		`sum by (service, m) (count_over_time(` + all + ` | json m="http.method", l="level" | m=~"P.*|G.*" | l!="info" [1h]))`,
		`sum by (http_path) (count_over_time(` + all + ` | json | level="error" | http_method!="GET" [20s]))`,
		`count(sum by (m) (count_over_time(` + all + ` | json m="http.method", l="level" | l="warn" [1h])))`,
	})
	// Not and-ed: the row path's memo decides.
	checkColumnar(t, lines, false, []string{
		`sum by (service) (count_over_time(` + all + ` | json | http_path="true" or http_method="1" [1h]))`,
	})
}

// TestStringSweepSameAsRows: string filters on columns without ids (a
// dictionary-and-rest column of a few frequent messages and a tail that
// carries ids and escapes, and a column of distinct values) decided a
// value at a time, each entry once, give what the row path gives: in and
// out of a string, case-insensitive contains, prefixes, negations, and
// and/or of one label's matchers, beside a filter of a dictionary
// column.
func TestStringSweepSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	frequent := []string{"upstream timeout", "request completed", "connection reset by peer", "Upstream TIMEOUT"}
	lines := make([]string, 4600) // 4,000 in a part (columnStore), the rest in the head
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		msg := frequent[rng.IntN(len(frequent))]
		switch rng.IntN(5) {
		case 0:
			msg = fmt.Sprintf(`query "SELECT %d" took %dms	TimeOut`, rng.IntN(1e6), rng.IntN(5000))
		case 1:
			msg = fmt.Sprintf(`order %d declined é`, rng.IntN(1e6))
		}
		lvl := []string{"info", "error"}[rng.IntN(2)]
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","level":"%s","msg":"%s","user":"u%d x"}`, ts, []string{"api", "web"}[rng.IntN(2)], lvl, msg, rng.IntN(1e7))
	}
	all := `{service=~".+"}`
	checkColumnar(t, lines, true, []string{
		`sum by (service) (count_over_time(` + all + ` | json msg | msg=~"(?i).*timeout.*" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | msg=~"(?i).*timeout.*" | level="error" [1h]))`,
		`sum(count_over_time(` + all + ` | json | msg!~".*declined.*" [20s]))`,
		`sum(count_over_time(` + all + ` | json | msg=~"query.*|order 1.*" [1h]))`,
		`sum(count_over_time(` + all + ` | json | msg="upstream timeout" or msg=~".*é" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | user=~"u1.*" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json u="user" | u!~"u[0-4].*" | level!="info" [1h]))`,
	})
}

// TestShadowedSameAsRows: a field of the line that is also a label of
// its stream (host, taken as a stream label at ingest and kept in the
// line) is host_extracted after json, and a filter, grouping or unwrap of
// host reads the stream's: the sweep decides host's filters once per
// stream and groups by the stream's value (newFilterState's shadow),
// and answers as the row path does; streams without host (lines without
// it) are swept as before.
func TestShadowedSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	lines := make([]string, 4600)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		host := ""
		if rng.IntN(5) > 0 {
			host = fmt.Sprintf(`,"host":"h%d"`, rng.IntN(4))
		}
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s"%s,"level":"%s","v":%d,"user":"u%d"}`, ts, []string{"api", "web"}[rng.IntN(2)], host,
			[]string{"info", "error", "warn"}[rng.IntN(3)], rng.IntN(100), rng.IntN(1e6))
	}
	all := `{service=~".+"}`
	checkColumnar(t, lines, true, []string{
		`sum by (host) (count_over_time(` + all + ` | json | level="error" [1h]))`,
		`max by (host) (max_over_time(` + all + ` | json | unwrap v [1h]))`,
		`sum by (host, level) (count_over_time(` + all + ` | json | host=~"h[12]" [1h]))`,
		`sum by (host) (sum_over_time(` + all + ` | json | host!="h3" and v > 20 | unwrap v [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | host="h2" | level!="info" [1h]))`,
		`sum by (host) (count_over_time(` + all + ` | json host, level | level="warn" [1h]))`,
		`sum by (host) (count_over_time(` + all + ` | json host, level, user | user=~"u1.*" [1h]))`,
		`min by (host, level) (min_over_time(` + all + ` | json | unwrap v [1h]))`,
	})
	// The field's own label in the series: not swept by the stream's.
	checkColumnar(t, lines, false, []string{
		`sum by (host_extracted) (count_over_time(` + all + ` | json | level="error" [1h]))`,
	})
}

// TestLineNeedleSameAsRows: a line filter right after a line_format of
// one label (stage.Pipeline.LineNeedle) drops the rows whose value holds
// neither its literal nor \u unread, and answers as the row path does:
// values of escaped JSON, distinct (no dictionary), some spelling the
// literal with \u escapes, some with a second field of the name.
func TestLineNeedleSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	lines := make([]string, 4600)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		msg := []string{"payment declined", "payment ok", "pa\\u0079ment \\u0064eclined", "card declined", "declin",
			"caf\\u00e9 declined", "na\\u00efve ok", "\\u00e9\\u0064eclined", "\\u003c declined"}[rng.IntN(9)]
		log := fmt.Sprintf(`{\"id\":%d,\"msg\":\"%s\"}`, rng.IntN(1e9), msg)
		dup := ""
		if rng.IntN(7) == 0 {
			dup = fmt.Sprintf(`,"log":"%s twice %d"`, []string{"declined", "ok"}[rng.IntN(2)], rng.IntN(1000))
		}
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","log":"%s"%s,"level":"%s","zone":"z%d"}`, ts, []string{"api", "web"}[rng.IntN(2)], log, dup, []string{"info", "error"}[rng.IntN(2)], rng.IntN(3))
	}
	all := `{service=~".+"}`
	checkColumnar(t, lines, false, []string{
		`sum by (service) (count_over_time(` + all + ` | json | line_format "{{.log}}" |= "declined" [1h]))`,
		`sum by (level) (count_over_time(` + all + ` | json log, level | line_format "{{.log}}" |= "payment declined" [1h]))`,
		`sum(count_over_time(` + all + ` | json | line_format "{{.log}}" |= "ment" |~ "ok|twice" [1h]))`,
		`sum by (log) (count_over_time(` + all + ` | json | line_format "{{.log}}" |= "declined" [1h]))`, // the value is in the series
		// Kept rows remembered by their other values (zone), the
		// series by stream and value, a text of one byte.
		`sum by (zone, service) (count_over_time(` + all + ` | json | line_format "{{.log}}" |= "declined" [1h]))`,
		`sum by (zone) (count_over_time(` + all + ` | json | line_format "{{.log}}" |= "d" [1h]))`,
		`sum by (zone) (count_over_time(` + all + ` |= "card" | json | line_format "{{.log}}" |= "declined" [1h]))`, // rows a leading filter selects
	})
}

// TestHexPrefixSameAsRows: a prefix filter on a column of hex values
// (trace ids) is decided on the values' bytes (part.Block.HexPrefixBits)
// and answers as the row path does: prefixes of odd and even length,
// one no hex text starts with, one longer than the values, and the
// blocks of a stream whose trace ids are not all hex (columns of strings).
func TestHexPrefixSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	lines := make([]string, 4600)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		id := fmt.Sprintf("%016x%016x", rng.Uint64()&0xf7ffffffffffffff, rng.Uint64())
		svc := []string{"api", "web", "legacy"}[rng.IntN(3)]
		if svc == "legacy" && rng.IntN(3) == 0 {
			id = "not-hex-" + id[:8] // legacy's blocks hold strings
		}
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","trace_id":"%s","level":"%s"}`, ts, svc, id, []string{"info", "error"}[rng.IntN(2)])
	}
	all := `{service=~".+"}`
	checkColumnar(t, lines, true, []string{
		`sum by (service) (count_over_time(` + all + ` | json | trace_id=~"7.*" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | trace_id=~"a3.*" | level="error" [1h]))`,
		`sum(count_over_time(` + all + ` | json trace_id | trace_id=~"(?s)0.*" [1h]))`,
		`sum(count_over_time(` + all + ` | json | trace_id=~"not-.*" or trace_id=~"f.*" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | trace_id="` + idOf(lines[77]) + `" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | trace_id="` + idOf(lines[4501]) + `" [1h]))`,
	})
	// Prefixes no value starts with: no row passes.
	eng, sn := columnStore(t, lines)
	defer sn.Release()
	at := time.Date(2026, 1, 15, 8, 1, 0, 0, time.UTC).UnixNano()
	for _, q := range []string{
		`sum(count_over_time(` + all + ` | json | trace_id=~"7C.*" [1h]))`,                                // hex text is lowercase
		`sum(count_over_time(` + all + ` | json | trace_id=~"00000000000000000000000000000000f.*" [1h]))`, // longer than the ids
		`sum(count_over_time(` + all + ` | json | trace_id="` + strings.ToUpper(idOf(lines[77])) + `" [1h]))`,
		`sum(count_over_time(` + all + ` | json | trace_id="` + idOf(lines[77])[:30] + `" [1h]))`, // shorter than the ids
	} {
		sameAsReference(t, eng, sn, Params{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true})
	}
}

// TestRawMissSameAsRows: a string filter on an escaped value that the
// value's escaped text shows it fails (it lacks the literal the filter
// needs, and no \u escape could write one) is failed unescaped
// (rawMiss), and the answers are the row path's: a literal written by a
// \u escape, next to another escape, in either case, with two filters.
func TestRawMissSameAsRows(t *testing.T) {
	logs := []string{
		`{\"level\":\"ERROR\",\"m\":\"x\"}`, // escaped, holds ERROR
		`{\"level\":\"info\"}`,              // escaped, lacks it
		`ER\u0052OR in \"q\"`,               // ERROR written by \u
		`plain ERROR`,                       // no escape
		`tab\tERR`,                          // escaped, lacks it
		`Error\n lower`,                     // ERROR but for case
	}
	lines := make([]string, 4600)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 19 * time.Millisecond).Format(time.RFC3339Nano)
		// Each value another: a column of strings without ids, whose
		// values are decided one by one.
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","log":"%s #%d"}`, ts, []string{"api", "web"}[i%2], logs[(i/2)%len(logs)], i)
	}
	all := `{service=~".+"}`
	checkColumnar(t, lines, true, []string{
		`sum by (service) (count_over_time(` + all + ` | json | log=~".*ERROR.*" [1h]))`,
		`sum(count_over_time(` + all + ` | json | log=~"(?i).*error.*" [1h]))`,
		`sum(count_over_time(` + all + ` | json | log=~".*ERROR.*", log=~".*level.*" [1h]))`,
		`sum(count_over_time(` + all + ` | json l="log" | l=~".*ERR.*" | l!~".*tab.*" [1h]))`,
		`sum(count_over_time(` + all + ` | json | log!~".*ERROR.*" [1h]))`,
	})
}

// idOf returns the trace id of a line of TestHexPrefixSameAsRows.
func idOf(line string) string {
	_, rest, _ := strings.Cut(line, `"trace_id":"`)
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// TestPushedSameAsRows: JSON lines pushed through Loki's push API keep
// their keys as columns, beside structured metadata (pushLines): queries
// that see none of the metadata's names read them from columns, the
// others read rows, and both answer as the reference does.
func TestPushedSameAsRows(t *testing.T) {
	sn := diffSnapshot(t)
	at := time.Date(2026, 1, 15, 8, 0, 20, 0, time.UTC).UnixNano()
	pushed := `{service="pushed"}`
	for _, c := range []struct {
		q        string
		columnar bool // the metadata's names are not seen: rows from columns
	}{
		{`sum by (service) (count_over_time(` + pushed + ` | json | http_status >= 500 | __error__="" [1h]))`, true},
		{`sum by (service_extracted) (count_over_time(` + pushed + ` | json | __error__="" [1h]))`, true},
		{`sum(count_over_time(` + pushed + ` | json msg | msg=~"m[0-3]" | __error__="" [1h]))`, true},
		{`sum by (method) (count_over_time(` + pushed + ` | json method="http.method" | __error__="" [1h]))`, true},
		{`sum(sum_over_time(` + pushed + ` | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`, true},
		// level is metadata of some rows: the lines' own level is then
		// level_extracted; trace_id and detected_level are metadata.
		{`sum by (level) (count_over_time(` + pushed + ` | json level | __error__="" [1h]))`, false},
		{`sum by (level_extracted) (count_over_time(` + pushed + ` | json | __error__="" [1h]))`, false},
		{`sum by (trace_id) (count_over_time(` + pushed + ` | json | __error__="" [1h]))`, false},
		// Counts by metadata read the metadata's columns (metaCount).
		{`sum by (detected_level) (count_over_time(` + pushed + `[1h]))`, true},
		{`count_over_time(` + pushed + `[1h])`, true},
		{`sum by (level, trace_id) (rate(` + pushed + `[1h]))`, true},
		{`sum by (service) (count_over_time(` + pushed + ` | json | detected_level="error" | __error__="" [1h]))`, false},
		{`count_over_time(` + pushed + ` | json msg | __error__="" [1h])`, false}, // every label is the series'
	} {
		if diff := sameAnswer(sn, c.q, false, false); diff != "" {
			t.Errorf("%s: %s", c.q, diff)
			continue
		}
		p := Params{Tenant: store.DefaultTenant, Query: c.q, Start: at, End: at, Instant: true}
		res, err := (&Engine{workers: 2, limits: DefaultLimits}).Exec(context.Background(), sn, p)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if got := res.Stats.RowsColumnar > 0; got != c.columnar {
			t.Errorf("%s: %d of %d rows read from columns, want columns %v", c.q, res.Stats.RowsColumnar, res.Stats.Rows, c.columnar)
		}
	}
	// The row path: counts from the index and lines read without the
	// metadata where the query sees none of its names, and with it
	// where it does; over steps too; and the same logs read newest
	// first.
	for _, q := range []string{
		`sum by (service) (count_over_time(` + pushed + ` [1h]))`,
		`sum by (trace_id) (count_over_time(` + pushed + ` [1h]))`,
		`sum by (service) (count_over_time(` + pushed + ` |= "m1" [1h]))`,
		`sum by (level) (count_over_time(` + pushed + ` |= "m1" [1h]))`,
		`sum by (service) (count_over_time(` + pushed + ` | logfmt | __error__="" [1h]))`,
		`sum by (level_extracted) (count_over_time(` + pushed + ` | regexp "\"level\":\"(?P<level>[a-z]+)" [1h]))`,
		`sum(count_over_time(` + pushed + ` [2s]))`,
		`sum by (detected_level) (count_over_time(` + pushed + ` [2s]))`,
		`count_over_time(` + pushed + ` [3s])`,
		`sum by (service) (rate(` + pushed + ` | json | http_status >= 400 | __error__="" [3s]))`,
	} {
		if diff := sameAnswer(sn, q, false, false); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}
	}
	for _, q := range []string{pushed + ` | json | http_status >= 500`, pushed + ` | json level | level="error"`} {
		if diff := sameAnswer(sn, q, true, true); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}
	}
}

// TestWorkerStatesOwnTheirLines: the states workers write row by row are
// at least 512 bytes, so that the allocator places them at multiples of
// 64 bytes and no cache line holds two workers' (workerPad).
func TestWorkerStatesOwnTheirLines(t *testing.T) {
	for name, size := range map[string]uintptr{
		"rangeWorker": unsafe.Sizeof(rangeWorker{}),
		"lineEval":    unsafe.Sizeof(lineEval{}),
		"colPlanner":  unsafe.Sizeof(colPlanner{}),
		"filterState": unsafe.Sizeof(filterState{}),
	} {
		if size < 512 {
			t.Errorf("%s is %d bytes: its size class may not be a multiple of 64", name, size)
		}
	}
}

// FuzzEqualBits: the eight-at-a-time comparison of value ids (equalBits)
// and the lookup of each id (gatherBits) set the bits a comparison of
// each id sets, and none past the ids.
func FuzzEqualBits(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 1, 0, 255, 1, 1}, byte(1), false)
	f.Add(bytes.Repeat([]byte{7, 7, 0x80, 7}, 40), byte(7), true)
	f.Add(bytes.Repeat([]byte{0}, 130), byte(0), false)
	f.Fuzz(func(t *testing.T, ids []byte, id byte, negate bool) {
		nw := (len(ids) + 63) / 64
		got := make([]uint64, nw)
		equalBits(got, ids, id, negate)
		var pass [256]byte
		for i := range pass {
			pass[i] = b2u(byte(i) == id != negate)
		}
		gathered := make([]uint64, nw)
		gatherBits(gathered, ids, &pass)
		want := make([]uint64, nw)
		for i, v := range ids {
			if v == id != negate {
				want[i>>6] |= 1 << (i & 63)
			}
		}
		if !slices.Equal(got, want) || !slices.Equal(gathered, want) {
			t.Fatalf("ids %v, id %d, negate %v: equalBits %x, gatherBits %x, want %x", ids, id, negate, got, gathered, want)
		}
	})
}

// TestWholeRestSameAsRows: a question that counts rows and observes one
// json label (a whole state) whose values are in a column of a
// dictionary and the rest (messages, a few frequent and a tail of
// unique ones) decides each entry once and each value of the rest
// alone (wholeBits), and answers as the row path does; every row is
// swept when all the values that pass count in one series, and a
// grouping by the label itself, whose values count in many, still
// answers right.
func TestWholeRestSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	lines := make([]string, 4600)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).Format(time.RFC3339Nano)
		msg := []string{"upstream timeout", "Timeout waiting", "cache miss", "payment declined", "caf\\u00e9 timeout", "slow query"}[rng.IntN(6)]
		switch rng.IntN(5) {
		case 0:
			msg = fmt.Sprintf(`query \"SELECT * FROM t WHERE id=%d\" took %dms\tslow`, rng.IntN(1e9), rng.IntN(5000))
		case 1:
			msg = fmt.Sprintf("call %d TIMEOUT after %dms", rng.IntN(1e9), rng.IntN(5000))
		}
		lines[i] = fmt.Sprintf(`{"ts":"%s","service":"%s","msg":"%s","level":"%s"}`, ts, []string{"api", "web"}[rng.IntN(2)], msg, []string{"info", "error"}[rng.IntN(2)])
	}
	eng, sn := columnStore(t, lines)
	defer sn.Release()
	at := time.Date(2026, 1, 15, 8, 1, 0, 0, time.UTC).UnixNano()
	all := `{service=~".+"}`
	for _, q := range []string{
		`sum by (service) (count_over_time(` + all + ` | json | line_format "{{.msg | ToUpper}}" |= "TIMEOUT" [1h]))`,
		`sum(count_over_time(` + all + ` | json msg | line_format "{{.msg}}" |~ "(?i)timeout|slow" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json msg | label_format m="{{.msg | ToLower}}" | m=~".*(caf|took).*" [1h]))`,
		`sum by (service) (count_over_time(` + all + ` | json | line_format "{{.msg}}" |= "nowhere" [1h]))`,
		`sum by (msg) (count_over_time(` + all + ` | json msg | line_format "{{.msg}}" |= "timeout" [1h]))`,
	} {
		p := Params{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true}
		sameAsReference(t, eng, sn, p)
		res, err := eng.Exec(context.Background(), sn, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(q, "sum by (msg)") && res.Stats.RowsSwept < 4500 {
			t.Errorf("%s: %d rows swept, not the 4,500 of the parts", q, res.Stats.RowsSwept)
		}
		sameAsReference(t, eng, sn, Params{Tenant: store.DefaultTenant, Query: q, Start: at - int64(time.Minute), End: at, Step: 10 * time.Second})
	}
}

// TestBitsIn: bitsIn counts the bits of a range as a look at each does.
func TestBitsIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	bs := make([]uint64, 5)
	for i := range bs {
		bs[i] = rng.Uint64()
	}
	for lo := 0; lo <= 320; lo++ {
		for hi := lo; hi <= 320; hi++ {
			want := 0
			for k := lo; k < hi; k++ {
				want += int(bs[k>>6] >> (k & 63) & 1)
			}
			if got := bitsIn(bs, lo, hi); got != want {
				t.Fatalf("bits [%d, %d): %d, want %d", lo, hi, got, want)
			}
		}
	}
}
