package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// The differential test of the engine: random LogQL queries, log and
// metric, built from the grammar, over lines of every shape, answered by
// the engine as it runs (every fast path it has) and by the reference
// engine (every row read whole and run through the pipeline, every label
// set). The two must agree exactly, errors included.

// queryGen builds a query from a stream of choices: the fuzzer's bytes,
// then zeros, so that every input is a query.
type queryGen struct {
	choices []byte
	b       strings.Builder
}

// pick returns a choice in [0, n).
func (g *queryGen) pick(n int) int {
	if len(g.choices) == 0 {
		return 0
	}
	c := int(g.choices[0])
	g.choices = g.choices[1:]
	return c % n
}

func (g *queryGen) one(s ...string) string { return s[g.pick(len(s))] }

var (
	genSelectors = []string{`{service=~"api|web"}`, `{service="api"}`, `{service=~".+"}`, `{service!="web", service=~".+"}`, `{service="lf"}`, `{job="nginx"}`, `{service="pushed"}`}
	genFilters   = []string{`|= "error"`, `!= "debug"`, `|~ "(?i)err(or)?"`, `|~ "m[0-3]"`, `|= "error" or "warn"`, `!~ "declined|ok"`, `|> "<_>error<_>"`, `|= "GET"`, `|~ "status\":5"`, `|= ip("10.0.0.0/8")`,
		// Alternations: exact (the store decides the rows), folding (with
		// an s: the store keeps candidates), a chain, and required
		// alternatives of a regexp that is more than them.
		`|~ "error|warn"`, `|~ "(?i)ERROR|declined"`, `|~ "(?i)payment|GET"`, `|~ "(?i)kafka|ok"`, `|= "m1" or "POST"`, `|~ "error|warn" or "GET"`, `|~ "(error|warn).*m[0-9]"`, `|~ "payment (declined|ok)"`}
	genParsers   = []string{`| json`, `| json`, `| json level`, `| json s="http.status", lat="http.latency_ms"`, `| logfmt`, `| logfmt --strict`, `| regexp "(?P<word>[a-z]+) (?P<rest>.*)"`, `| pattern "<ip> - - <_> \"<method> <path> <_>\" <status> <size>"`, `| unpack`, `| json level, msg`}
	genLabelF    = []string{`| level="error"`, `| level=~"(?i)err.*"`, `| http_status >= 500`, `| s > 300`, `| __error__=""`, `| __error__=""`, `| level!="info" or msg="m1"`, `| status >= 400`, `| lat > 100`, `| http_latency_ms < 50.5`, `| level="" `, `| size > 1KB`}
	genOther     = []string{`| line_format "{{.level}} {{.msg}}"`, `| label_format lvl=level`, `| label_format x="{{.service}}-{{.level}}"`, `| drop trace_id, ts`, `| keep level, service`, `| drop __error__, __error_details__`, `| decolorize`, `| drop level="info"`}
	genRangeOps  = []string{"count_over_time", "rate", "bytes_over_time", "bytes_rate", "absent_over_time", "sum_over_time", "avg_over_time", "max_over_time", "min_over_time", "first_over_time", "last_over_time", "stddev_over_time", "stdvar_over_time", "quantile_over_time", "rate_counter"}
	genVecOps    = []string{"sum", "sum", "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "sort", "sort_desc"}
	genGroupings = []string{` by (level)`, ` by (service)`, ` by (level, service)`, ` without (trace_id)`, ` by ()`, ``, ` by (lvl, s)`, ` by (__error__)`}
)

// pipeline appends 0 to 3 stages.
func (g *queryGen) pipeline() {
	for range g.pick(4) {
		switch g.pick(5) {
		case 0:
			g.b.WriteString(" " + g.one(genFilters...))
		case 1, 2:
			g.b.WriteString(" " + g.one(genParsers...))
		case 3:
			g.b.WriteString(" " + g.one(genLabelF...))
		default:
			g.b.WriteString(" " + g.one(genOther...))
		}
	}
}

// logQuery writes a log query.
func (g *queryGen) logQuery() {
	g.b.WriteString(g.one(genSelectors...))
	g.pipeline()
}

// rangeAgg writes a range aggregation.
func (g *queryGen) rangeAgg() {
	op := g.one(genRangeOps...)
	unwrap := g.pick(3) == 0
	switch op {
	case "sum_over_time", "avg_over_time", "max_over_time", "min_over_time", "first_over_time", "last_over_time",
		"stddev_over_time", "stdvar_over_time", "quantile_over_time", "rate_counter":
		unwrap = true
	case "count_over_time", "bytes_over_time", "bytes_rate", "absent_over_time":
		unwrap = false
	}
	g.b.WriteString(op + "(")
	if op == "quantile_over_time" {
		g.b.WriteString(g.one("0.5", "0.9", "0.99") + ", ")
	}
	g.logQuery()
	if unwrap {
		g.b.WriteString(" " + g.one(`| json lat="http.latency_ms"`, `| json`, `| logfmt`, `| json s="http.status"`))
		g.b.WriteString(" | unwrap " + g.one("lat", "http_latency_ms", "s", "http_status", "duration(lat)", "bytes(size)"))
		if g.pick(2) == 0 {
			g.b.WriteString(` | __error__=""`)
		}
	}
	g.b.WriteString(" [" + g.one("1m", "10m", "1h", "30s") + "])")
	if unwrap && g.pick(3) == 0 {
		g.b.WriteString(g.one(genGroupings...))
	}
}

// sampleExpr writes a metric query, depth levels deep at most.
func (g *queryGen) sampleExpr(depth int) {
	k := 0
	if depth > 0 {
		k = g.pick(6)
	}
	switch k {
	case 0, 1:
		g.rangeAgg()
	case 2, 3:
		op := g.one(genVecOps...)
		g.b.WriteString(op + g.one(genGroupings...) + " (")
		if op == "topk" || op == "bottomk" {
			g.b.WriteString(g.one("1", "2", "5") + ", ")
		}
		g.sampleExpr(depth - 1)
		g.b.WriteString(")")
	case 4:
		g.b.WriteString("(")
		g.sampleExpr(depth - 1)
		g.b.WriteString(" " + g.one("/", "+", "> bool", "and", "or", "unless", "*", "-") + " ")
		if g.pick(2) == 0 {
			g.b.WriteString(g.one("2", "0.5"))
		} else {
			g.sampleExpr(depth - 1)
		}
		g.b.WriteString(")")
	default:
		g.b.WriteString(`label_replace(`)
		g.sampleExpr(depth - 1)
		g.b.WriteString(`, "dst", "$1", "level", "(.*)r")`)
	}
}

// genQuery returns a random query from choices: a log query or a metric
// query.
func genQuery(choices []byte) (string, bool) {
	g := &queryGen{choices: choices}
	if g.pick(4) == 0 {
		g.logQuery()
		return g.b.String(), true
	}
	g.sampleExpr(3)
	return g.b.String(), false
}

// diffLines are lines of every shape: columnLines' JSON, logfmt and
// nginx access lines, text with and without a service.
func diffLines(n int) []string {
	rng := rand.New(rand.NewPCG(11, 12))
	lines := columnLines(n)
	for i := range lines {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Millisecond)
		switch rng.IntN(8) {
		case 0:
			lines[i] = fmt.Sprintf(`{"ts":"%s","job":"nginx","msg":"10.0.%d.%d - - [15/Jan/2026:08:00:00 +0000] \"%s /api/%d HTTP/1.1\" %d %d"}`,
				ts.Format(time.RFC3339Nano), rng.IntN(3), rng.IntN(255), []string{"GET", "POST"}[rng.IntN(2)], rng.IntN(9), 200+100*rng.IntN(4), rng.IntN(5000))
		case 1:
			lines[i] = fmt.Sprintf(`ts=%s service=lf level=%s msg="took %dms" lat=%d size=%dKB status=%d`,
				ts.Format(time.RFC3339Nano), []string{"info", "error", "warn"}[rng.IntN(3)], rng.IntN(900), rng.IntN(900), rng.IntN(4), 200+100*rng.IntN(4))
		case 2:
			// Runes that Unicode folds to k and s: a case-insensitive k
			// or s matches them.
			lines[i] = fmt.Sprintf(`ts=%s service=lf level=%s msg="%s"`,
				ts.Format(time.RFC3339Nano), []string{"info", "error"}[rng.IntN(2)], []string{"\u212aafka ok", "cla\u017fs ERROR", "kafka class", "OK"}[rng.IntN(4)])
		}
	}
	return lines
}

var diffStore struct {
	once sync.Once
	st   *store.Store
	sn   *store.Snapshot
	err  error
}

// closeDiffStore closes the store of diffSnapshot, if it was opened.
func closeDiffStore() {
	if diffStore.sn != nil {
		diffStore.sn.Release()
	}
	if diffStore.st != nil {
		diffStore.st.Close()
	}
}

// diffSnapshot is a store of diffLines, most in parts, the rest in the
// head, shared by the test and the fuzz target.
func diffSnapshot(tb testing.TB) *store.Snapshot {
	diffStore.once.Do(func() {
		st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
		if err != nil {
			diffStore.err = err
			return
		}
		diffStore.st = st
		if diffStore.err = fillDiffStore(st); diffStore.err != nil {
			return
		}
		diffStore.sn = st.Snapshot() // closed by TestMain
	})
	if diffStore.err != nil {
		tb.Fatal(diffStore.err)
	}
	return diffStore.sn
}

// fillDiffStore stores diffLines, most in parts, the rest in the head,
// and columnLines pushed as Loki's API takes them.
func fillDiffStore(st *store.Store) error {
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		return err
	}
	lines := diffLines(3000)
	for i := 0; i < len(lines); i += 500 {
		chunk := strings.Join(lines[i:min(i+500, len(lines))], "\n") + "\n"
		err := p.Bytes(context.Background(), []byte(chunk), func(b *record.Batch) error {
			return st.Append(context.Background(), store.DefaultTenant, b)
		})
		if err == nil && i == 2000 {
			err = st.Flush() // the rest stays in the head
		}
		if err != nil {
			return err
		}
	}
	return pushLines(st, columnLines(1200))
}

// pushLines stores lines as Loki's push API takes them, in stream
// {service="pushed"}: JSON lines keep their keys as fields of the line,
// which are no labels, beside structured metadata (a detected_level on
// each; on some a trace_id, or a level, which makes a line's own level
// level_extracted). Half go to parts, the rest stay in the head.
func pushLines(st *store.Store, lines []string) error {
	var body strings.Builder
	body.WriteString(`{"streams":[{"stream":{"service":"pushed"},"values":[`)
	for i, l := range lines {
		if i > 0 {
			body.WriteByte(',')
		}
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 11 * time.Millisecond).UnixNano()
		q, _ := json.Marshal(l)
		fmt.Fprintf(&body, `["%d",%s`, ts, q)
		switch i % 5 {
		case 1:
			fmt.Fprintf(&body, `,{"trace_id":"t%d"}`, i%7)
		case 2:
			fmt.Fprintf(&body, `,{"level":"%s"}`, []string{"meta", "error"}[i%2])
		}
		body.WriteByte(']')
	}
	body.WriteString(`]}]}`)
	d := loki.Decoder{Limits: loki.DefaultLimits, Discover: loki.Discovery{LogLevels: true}, Fields: loki.DefaultLineFields}
	b := &record.Batch{}
	if res, err := d.DecodeJSON([]byte(body.String()), b); err != nil || res.Rejected > 0 {
		return fmt.Errorf("push: %v %v", err, res.Reasons)
	}
	half := *b
	half.Records = b.Records[:len(b.Records)/2]
	if err := st.Append(context.Background(), store.DefaultTenant, &half); err != nil {
		return err
	}
	if err := st.Flush(); err != nil {
		return err
	}
	rest := *b
	rest.Records = b.Records[len(b.Records)/2:]
	return st.Append(context.Background(), store.DefaultTenant, &rest)
}

// sameAnswer runs q on the engine and on the reference and reports how
// they differ, "" when they agree.
func sameAnswer(sn *store.Snapshot, q string, log bool, backward bool) string {
	for _, p := range diffParams(q, log, backward) {
		want, werr := (&Engine{workers: 2, reference: true, limits: DefaultLimits}).Exec(context.Background(), sn, p)
		firsts := []int{0}
		if log && backward {
			firsts = append(firsts, 5) // blocks read their newest 5 rows first (FirstNewest)
		}
		if log {
			firsts = append(firsts, -1) // columnar blocks swept from the first (sweepAlways)
		}
		for _, first := range firsts {
			got, gerr := (&Engine{workers: 2, limits: DefaultLimits, firstNewest: max(first, 0), sweepAlways: first < 0}).Exec(context.Background(), sn, p)
			if (werr == nil) != (gerr == nil) || werr != nil && errorClass(werr) != errorClass(gerr) {
				return fmt.Sprintf("errors differ:\n  reference: %v\n  engine:    %v", werr, gerr)
			}
			if werr != nil {
				continue
			}
			if w, g := render(want, p), render(got, p); !sameLines(g, w) {
				return fmt.Sprintf("(instant %v, first %d) answers differ:\nreference:\n  %s\nengine:\n  %s", p.Instant, first, strings.Join(w, "\n  "), strings.Join(g, "\n  "))
			}
		}
	}
	return ""
}

// diffParams are the ways sameAnswer asks q: a log query for all lines
// and for the newest (or oldest) few, a metric query at an instant and
// over a range.
func diffParams(q string, log bool, backward bool) []Params {
	at := time.Date(2026, 1, 15, 8, 0, 20, 0, time.UTC).UnixNano()
	var ps []Params
	if log {
		for _, limit := range []int{5000, 7} { // all lines, and the newest (or oldest) few of all streams
			p := Params{Tenant: store.DefaultTenant, Query: q, Start: at - int64(time.Minute), End: at, Limit: limit}
			if !backward { // Backward is the zero value
				p.Direction = Forward
			}
			ps = append(ps, p)
		}
	} else {
		ps = append(ps,
			Params{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true},
			Params{Tenant: store.DefaultTenant, Query: q, Start: at - int64(20*time.Second), End: at, Step: 5 * time.Second})
	}
	return ps
}

// errorClass is an error's message, or "pipeline error" for one: which
// row's error a query reports depends on which worker meets one first,
// and the engine sets only the labels a query observes, so it names
// fewer.
func errorClass(err error) string {
	s := err.Error()
	if strings.Contains(s, "pipeline error: ") {
		return "pipeline error"
	}
	return s
}

// TestEngineSameAsReference: a few hundred random queries agree with the
// reference; FuzzEngineSameAsReference runs on (make fuzz).
func TestEngineSameAsReference(t *testing.T) {
	sn := diffSnapshot(t)
	rng := rand.New(rand.NewPCG(5, 6))
	n := 400
	if testing.Short() {
		n = 60
	}
	parsed := 0
	for range n {
		choices := make([]byte, 64)
		for i := range choices {
			choices[i] = byte(rng.Uint32())
		}
		q, log := genQuery(choices)
		if diff := sameAnswer(sn, q, log, rng.IntN(2) == 0); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}
		if _, err := logql.Parse(q); err == nil {
			parsed++
		}
	}
	if parsed < n/2 {
		t.Errorf("only %d of %d random queries parse: the generator tests little", parsed, n)
	}
}

func FuzzEngineSameAsReference(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 30 {
		seed := make([]byte, 48)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, choices []byte, backward bool) {
		sn := diffSnapshot(t)
		q, log := genQuery(choices)
		if diff := sameAnswer(sn, q, log, backward); diff != "" {
			t.Fatalf("%s: %s", q, diff)
		}
	})
}

// TestAlternationsSameAsReference: line filters the store gives as
// clauses of alternatives, counted and read newest first, each against
// the reference.
func TestAlternationsSameAsReference(t *testing.T) {
	sn := diffSnapshot(t)
	for _, f := range []string{
		`|~ "error|warn"`,
		`|~ "payment declined|m3"`,
		`|~ "(?i)error|declined"`,
		`|~ "(?i)payment|ok"`,
		`|= "GET" or "ERROR plain"`,
		`|~ "error" or "m1|m2"`,
		`|~ "(error|warn).*m[0-9]"`,
		`|~ "\"level\":\"(error|warn)\",\"service\":\"api"`,
		`|~ "api\",\"msg|web\",\"msg"`,
		`|~ "error|warn" |= "api" |~ "m1|m2|m3|payment"`,
		`|~ "error|warn" != "POST"`,
		`|~ "lf|zz|m4"`,
		`|~ "(?i)kafka|class"`,
		`|~ "(?i)ok"`,
		`|~ "(?i)OK|declined" |~ "(?i)ERROR|class"`,
		`|~ "(?i)ka.ka|cla[sx]s"`,
		// Pattern filters: their literals select the lines first.
		`|> "<_>payment declined<_>"`,
		`|> "<_> declined<_>"`,
		`|> "<_>\"level\":\"<_>\"<_>"`,
		`|> "<_>m1<_>" or "<_>ERROR<_>"`,
		`|> "<_>" or "<_>m2<_>"`,
		`!> "<_>declined<_>"`,
		`|> "{<_>"`,
	} {
		for _, q := range []string{
			`sum(count_over_time({service=~".+"} ` + f + ` [1h]))`,
			`sum by (service) (rate({service=~"api|web"} ` + f + ` [10s]))`,
		} {
			if diff := sameAnswer(sn, q, false, false); diff != "" {
				t.Errorf("%s: %s", q, diff)
			}
		}
		q := `{service=~".+"} ` + f
		for _, backward := range []bool{true, false} {
			if diff := sameAnswer(sn, q, true, backward); diff != "" {
				t.Errorf("%s (backward %v): %s", q, backward, diff)
			}
		}
	}
}

// TestHintsSameAsReference: the shapes the engine's hints rewrite, each
// against the reference.
// TestLogColumnarSameAsReference pins the columnar path of log queries
// (log_columns.go): newest first, json and label filters, after line
// filters or not.
func TestLogColumnarSameAsReference(t *testing.T) {
	sn := diffSnapshot(t)
	for _, q := range []string{
		`{service=~".+"} | json lat="http.latency_ms" | lat > 100 | __error__=""`,
		`{service=~".+"} | json lat="http.latency_ms" | lat > 100`,
		`{service=~"api|web"} | json s="http.status", lat="http.latency_ms" | s >= 500 or lat < 50.5`,
		`{service="api"} | json level | level="error"`,
		`{service=~".+"} | json level, msg | __error__!=""`,
		`{service=~".+"} | json msg | msg=~"m[0-3]" | __error__=""`,
		// Number filters that drop rows on the columns' numbers
		// (numVerdict), and forms where the errors they set are not
		// dropped after them (the general path).
		`{service=~"api|web"} | json s="http.status", lat="http.latency_ms" | s >= 500 or lat < 50.5 | __error__=""`,
		`{service=~".+"} | json lat="http.latency_ms" | lat > 100 and lat <= 400 | level="x" or lat > 0 | __error__=""`,
		`{service=~".+"} | json lat="http.latency_ms" | __error__="" | lat > 100`,
		`{service=~".+"} | json lat="http.latency_ms" | lat > 100 | __error__="" | lat < 300`,
		// json without parameters: the filters' labels from the
		// columns, the lines kept run through the whole pipeline.
		`{service=~".+"} | json | level="error"`,
		`{service=~".+"} | json | http_status >= 500 | __error__=""`,
		`{service=~".+"} | json | level=~"e.*" | msg!="m2"`,
		`{service=~".+"} | json`,
		// Line filters before json select the rows first.
		`{service=~".+"} |= "error" | json | level="error"`,
		`{service=~".+"} |~ "(?i)declined" | json lat="http.latency_ms" | lat > 100`,
		`{service=~".+"} |= "m1" |= "GET" | json`,
		`{service=~".+"} != "debug" !~ "(?i)declined|m2" | json | level!="info"`,
		// Stages after the filters, run on the lines kept.
		`{service=~".+"} | json | line_format "{{.msg}}"`,
		`{service=~".+"} | json msg, level | level="error" | line_format "{{.level}}: {{.msg}}" |= "m1"`,
		`{service=~".+"} | json | level=~"e.*" | drop __error__, __error_details__`,
		`{service=~".+"} | json lat="http.latency_ms" | lat > 100 | label_format l=lat | drop lat | keep l, service`,
		`{service=~".+"} |= "GET" | json | http_status >= 400 | line_format "{{.msg}} {{ __line__ | len }}" | logfmt`,
		// Line filters alone: no pipeline (every row, the store's newest),
		// negations selecting a block's rows in its columns.
		`{service=~".+"}`,
		`{service="api"}`,
		`{service=~".+"} != "debug"`,
		`{service=~".+"} |= "GET" !~ "m[12]"`,
		`{service=~".+"} !> "<_>error<_>" != "m3"`,
		`{service=~".+"} |> "<_>declined<_>"`,
		// Pipelines that drop no row: the store's newest rows.
		`{service=~".+"} | logfmt`,
		`{service=~".+"} | decolorize | line_format "{{.service}} {{__line__}}"`,
		`{service=~"api|web"} | json | label_format l=level | drop msg`,
		`{service=~".+"} | regexp "m(?P<m>[0-9])" | keep m, service`,
		`{service=~".+"} | logfmt | level="error"`,
		`{service="lf"} | logfmt | level="error"`,
		`{service=~".+"} | json | label_format level="{{.level}}" | level="error"`,
		`{service=~".+"} | decolorize |= "m1"`,
	} {
		for _, backward := range []bool{true, false} {
			if diff := sameAnswer(sn, q, true, backward); diff != "" {
				t.Errorf("%s (backward %v): %s", q, backward, diff)
			}
		}
	}
}

// TestLogNewestFromParts: the newest few lines of a range whose rows are
// all in parts (the store's newest rows of each block when the pipeline
// drops none, every row otherwise), against the reference.
func TestLogNewestFromParts(t *testing.T) {
	sn := diffSnapshot(t)
	end := time.Date(2026, 1, 15, 8, 0, 10, 0, time.UTC).UnixNano() // the head holds rows from 08:00:17.5
	for _, q := range []string{
		`{service="lf"}`,
		`{service="lf"} | logfmt`,
		`{service="lf"} | logfmt | level="error"`,
		`{service="lf"} | logfmt | label_format l=level | l="info"`,
		`{service=~".+"} | decolorize | line_format "{{.service}} {{__line__}}"`,
		`{service=~".+"} |= "m1" | regexp "m(?P<m>[0-9])"`,
		`{service=~".+"} != "GET"`,
	} {
		for _, limit := range []int{1, 7, 40} {
			p := Params{Tenant: store.DefaultTenant, Query: q, Start: end - int64(time.Minute), End: end, Limit: limit, Direction: Backward}
			want, werr := (&Engine{workers: 2, reference: true, limits: DefaultLimits}).Exec(context.Background(), sn, p)
			got, gerr := (&Engine{workers: 2, limits: DefaultLimits}).Exec(context.Background(), sn, p)
			if werr != nil || gerr != nil {
				t.Fatalf("%s: %v, %v", q, werr, gerr)
			}
			w, g := render(want, p), render(got, p)
			if len(w) == 0 {
				t.Fatalf("%s: no line: the test tests nothing", q)
			}
			if !sameLines(g, w) {
				t.Errorf("%s (limit %d): answers differ:\nreference:\n  %s\nengine:\n  %s", q, limit, strings.Join(w, "\n  "), strings.Join(g, "\n  "))
			}
		}
	}
}

func TestHintsSameAsReference(t *testing.T) {
	sn := diffSnapshot(t)
	for _, q := range []string{
		`sum by (level) (count_over_time({service=~"api|web"} | json [1h]))`,
		`topk(3, sum by (trace_id) (count_over_time({service=~".+"} | json | __error__="" [1h])))`,
		`count(count by (level) (count_over_time({service=~"api|web"} | json [1h])))`,
		`count(count by (http_status) (count_over_time({service=~".+"} | json | __error__="" [10m])))`,
		`count by (service) (count by (service, level) (rate({service=~".+"} | json | __error__="" [10m])))`,
		`count(count by (lvl) (sum_over_time({service="lf"} | logfmt | label_format lvl=level | unwrap lat [1h])))`,
		`sum(count_over_time({service=~".+"}[1h])) by (service)`,
		`count(count by (service) (count_over_time({service=~".+"}[1h])))`,
		// Aggregations over series that are each a group of their own
		// (aggregateSingles).
		`avg by (service) (sum by (service) (count_over_time({service=~".+"} | json | __error__="" [10m])))`,
		`stddev by (level) (sum by (level) (bytes_over_time({service=~"api|web"} | json [1h])))`,
		`max by (service, level) (sum by (service, level) (rate({service=~".+"} | json | __error__="" [10m])))`,
		`min(sum(count_over_time({service=~".+"}[10m])))`,
		// service is every stream's label: json sets service_extracted.
		`sum by (service) (count_over_time({service=~".+"} | json | level="error" [1h]))`,
		`sum by (service, service_extracted) (count_over_time({service=~".+"} | json [1h]))`,
		`sum by (service) (count_over_time({service=~".+"} | logfmt | level="error" [1h]))`,
		// A line_format template that names its labels: the parsers
		// before it set only those.
		`sum by (service) (count_over_time({service=~".+"} | json | line_format "{{.msg}} {{ if .level }}{{.level | upper}}{{end}}" |= "M1" [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json | line_format "level={{.level}} msg={{.msg}}" | logfmt | __error__="" [1h]))`,
		`sum by (service) (count_over_time({service=~".+"} | json | line_format "{{ . }}" [1h]))`,
		// A line filter right after a line_format of one label: a value
		// that holds neither the literal nor \u is dropped unread
		// (LineNeedle); \u0065rror is error, a duplicate key's second
		// value counts, a stream label's value is no field's.
		`sum by (service) (count_over_time({service=~".+"} | json | line_format "{{.esc}}" |= "error" [1h]))`,
		`sum by (service) (count_over_time({service=~".+"} | json | line_format "{{.dup}}" |= "two" [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json | line_format "{{.msg}}" |= "payment d" [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json | line_format "{{.service}}" |= "ap" [1h]))`,
		`sum(count_over_time({job="nginx"} | json | line_format "{{.msg}}" |= "POST" [10s]))`,
		// Templates of labels alone with functions and conditions: the
		// line is made from the columns' values.
		`sum by (service) (count_over_time({service=~".+"} | json | line_format "{{.msg | ToUpper}}" |= "M1" [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json | line_format "{{ if eq .level \"error\" }}{{.msg}}{{ else }}x{{ end }}" != "x" [1h]))`,
		`sum by (service) (count_over_time({service=~".+"} | json | line_format "{{ .msg | trunc 2 }}{{ .nested_deep_k | default \"none\" }}" |~ "m.none" [1h]))`,
		// Number filters decided on columns (range_pred.go).
		`sum by (service) (count_over_time({service=~".+"} | json lat="http.latency_ms" | lat > 100 and lat <= 400 | __error__="" [1h]))`,
		`sum(count_over_time({service=~".+"} | json s="http.status", lat="http.latency_ms" | s >= 500 or lat < 50.5 [1h]))`,
		`sum by (level) (rate({service=~"api|web"} | json s="http.status", level | s != 200 [10m]))`,
		`sum without (s) (count_over_time({service=~".+"} | json s="http.status" | s > 300 | __error__="" [1h]))`,
		`avg_over_time({service=~".+"} | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]) by (service)`,
		`sum by (service) (sum_over_time({service=~".+"} | json lat="http.latency_ms", s="http.status" | s >= 400 | unwrap lat [10m]))`,
		`quantile_over_time(0.9, {service=~"api|web"} | json lat="http.latency_ms" | unwrap lat [1h]) by (service)`,
		`max_over_time({service=~".+"} | json s="http.status" | unwrap s | __error__="" [1h]) without (s)`,
		// A max of max_over_time and a min of min_over_time merge their
		// rows by the outer grouping as they are read.
		`max by (level) (max_over_time({service=~".+"} | json | unwrap http_latency_ms | __error__="" [1h]))`,
		`min(min_over_time({service=~".+"} | json lat="http.latency_ms" | lat > 100 | unwrap lat | __error__="" [10m]))`,
		`topk(2, max by (service) (max_over_time({service=~".+"} | json | unwrap http_status | __error__="" [1h])))`,
		`count(max by (level) (max_over_time({service=~".+"} | json | unwrap http_latency_ms | __error__="" [1h])))`,
		// Several parameters in dictionaries: outcomes remembered by ids.
		`sum by (service) (count_over_time({service=~".+"} | json | level="error" | msg=~"m[0-3]" [1h]))`,
		`sum(count_over_time({service=~".+"} | json level, msg | level!="info" or msg="m1" [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json level, msg | __error__="" [1h]))`,
		// One parameter in a dictionary, windows shorter than a block:
		// rows decided by their entry's outcome in block's loop (fastOne).
		`sum by (level) (count_over_time({service=~"api|web"} | json level [3s]))`,
		`sum by (service) (rate({service=~".+"} | json level | level="error" [4s]))`,
		`sum by (level) (count_over_time({service=~".+"} | json lvl="level" | lvl!="info" [2s] offset 1s))`,
		// Several parameters in dictionaries, windows shorter than a
		// block: rows decided by their ids' outcome in block's loop
		// (fastIDs).
		`sum by (level) (count_over_time({service=~".+"} | json level, msg | level!="info" [3s]))`,
		`sum by (service) (count_over_time({service=~"api|web"} | json | level="error" | msg=~"m[0-3]" [2s]))`,
		// A line_format of labels alone, and stages reading its line,
		// after json read from columns (columnarStages' lineTail).
		`sum by (status) (count_over_time({job="nginx"} | json msg | line_format "{{.msg}}" | pattern "<ip> - - <_> \"<method> <path> <_>\" <status> <size>" | status >= 300 [1h]))`,
		`sum by (method) (count_over_time({job=~".+"} | json msg, job | job_extracted="nginx" | line_format "{{.msg}}" |= "POST" | regexp "\"(?P<method>[A-Z]+) " [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json | line_format "{{.msg}}" | json | __error__="" [1h]))`,
		`sum by (service, job) (count_over_time({job=~".+"} | json msg | line_format "[{{.msg}}] {{.level}}" != "m1" | logfmt | __error__!="" [1h]))`,
		`sum by (job) (sum_over_time({job="nginx"} | json msg | line_format "{{.msg}}" | pattern "<_> - - <_> \"<_> <_> <_>\" <status> <size>" | unwrap size | __error__="" [1h]))`,
		`sum by (level) (count_over_time({service=~".+"} | json level, msg | line_format "level=x {{.msg}}" | logfmt | level="error" [1h]))`,
		`sum by (job) (count_over_time({job="nginx"} | json msg | line_format "{{ __line__ }}{{.msg}}" |= "nginx" [1h]))`,
	} {
		p := Params{Tenant: store.DefaultTenant, Query: q, Start: time.Date(2026, 1, 15, 8, 0, 20, 0, time.UTC).UnixNano(), Instant: true}
		p.End = p.Start
		if _, err := (&Engine{workers: 2, limits: DefaultLimits}).Exec(context.Background(), sn, p); err != nil && strings.Contains(err.Error(), "parse error") {
			t.Errorf("%s: %v", q, err) // a query both sides refuse to parse would compare nothing
		}
		if diff := sameAnswer(sn, q, false, false); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}
	}
}

// TestTopKPreselectedSameAsReference: an instant topk or bottomk over
// every series of a range aggregation, which keeps only the k series it
// answers with (rangeAggregationK), answers as the reference: many
// series, counts that tie (broken by labels), NaN, and the sum that
// leaves the aggregation as it is.
func TestTopKPreselectedSameAsReference(t *testing.T) {
	sn := diffSnapshot(t)
	for _, q := range []string{
		`topk(5, sum by (trace_id) (count_over_time({service=~".+"} | json | __error__="" [1h])))`,
		`bottomk(5, sum by (trace_id) (count_over_time({service=~".+"} | json | __error__="" [1h])))`,
		`topk(3, sum by (level, msg) (count_over_time({service=~".+"} | json | __error__="" [1h])))`,
		`bottomk(2, sum by (level) (count_over_time({service=~".+"} | json level [1h])))`,
		`topk(1, count_over_time({service=~".+"} [1h]))`,
		`topk(4, sum by (service, level) (rate({service=~".+"} | json level [10m])))`,
		`topk(3, sum by (lat) (sum_over_time({service=~".+"} | json lat="http.latency_ms" | unwrap lat | __error__="" [1h])))`,
		`bottomk(3, avg_over_time({service=~".+"} | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]))`,
		`topk(64, sum by (trace_id) (count_over_time({service=~".+"} | json | __error__="" [1h])))`,
		`topk(2, sum(count_over_time({service=~".+"} [1h])))`,
		`topk(3, stdvar_over_time({service=~".+"} | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]) by (service, level))`,
	} {
		if diff := sameAnswer(sn, q, false, false); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}
	}
}

// TestNoViewOutlivesSnapshot: an answer keeps nothing of what its reads
// viewed in the block cache, whose memory is freed (and in a test binary
// poisoned) once evicted and the snapshot that read it released. Random
// queries are answered through a cache far smaller than the data, each in
// a snapshot of its own, rendered only after that snapshot's release and a
// query that evicts everything; they equal the reference's answers
// rendered while their snapshot was held.
func TestNoViewOutlivesSnapshot(t *testing.T) {
	st := openMemWith(t, store.Options{BlockCacheBytes: 64 << 10})
	if err := fillDiffStore(st); err != nil {
		t.Fatal(err)
	}
	ask := func(ref bool, p Params) (*Result, error) {
		sn := st.Snapshot()
		defer sn.Release()
		return (&Engine{workers: 2, reference: ref, limits: DefaultLimits}).Exec(context.Background(), sn, p)
	}
	at := time.Date(2026, 1, 15, 8, 0, 20, 0, time.UTC).UnixNano()
	everything := Params{Tenant: store.DefaultTenant, Query: `{service=~".+"} | json`, Start: at - int64(time.Hour), End: at, Limit: 10000}
	rng := rand.New(rand.NewPCG(9, 10))
	n := 80
	if testing.Short() {
		n = 20
	}
	for range n {
		choices := make([]byte, 64)
		for i := range choices {
			choices[i] = byte(rng.Uint32())
		}
		q, log := genQuery(choices)
		for _, p := range diffParams(q, log, rng.IntN(2) == 0) {
			sn := st.Snapshot()
			want, werr := (&Engine{workers: 2, reference: true, limits: DefaultLimits}).Exec(context.Background(), sn, p)
			var w []string
			if werr == nil {
				w = render(want, p)
			}
			sn.Release()
			got, gerr := ask(false, p)
			if _, err := ask(false, everything); err != nil {
				t.Fatal(err)
			}
			if (werr == nil) != (gerr == nil) || werr != nil && errorClass(werr) != errorClass(gerr) {
				t.Errorf("%s: errors differ:\n  reference: %v\n  engine:    %v", q, werr, gerr)
				continue
			}
			if werr != nil {
				continue
			}
			if g := render(got, p); !sameLines(g, w) {
				t.Errorf("%s (instant %v): the answer read after its snapshot's release differs:\nreference:\n  %s\nengine:\n  %s", q, p.Instant, strings.Join(w, "\n  "), strings.Join(g, "\n  "))
			}
		}
	}
	if st.Stats().BlockCacheBytes == 0 {
		t.Error("nothing cached: the test tests no cache")
	}
}
