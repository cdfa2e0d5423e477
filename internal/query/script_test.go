package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// The script suite: testdata/*.txt hold cases in a small language.
//
//	# a comment
//	load
//	{app="api"} 1s a line          (stream, time after T0, the line)
//	{app="api"} 1.5s {"level":"error"}
//	{app="api"} 2s meta{trace_id="abc"} a line   (with structured metadata)
//
//	eval log start=0s end=5m limit=100 direction=backward
//	{app="api"} |= "line"
//	==>
//	{app="api"} 1s a line          (stream labels, time, line; in result order)
//
//	eval instant at=1m
//	count_over_time({app="api"}[1m])
//	==>
//	{app="api"} 2                  (labels and value)
//
//	eval range start=0s end=2m step=1m
//	count_over_time({app="api"}[1m])
//	==>
//	{app="api"} 2 _ 1              (a value per step; _ where none)
//
//	eval instant at=1m
//	count_over_time({app="api"}[1m]) +
//	==>
//	error: parse error             (the error must contain this text)
//
//	eval log categorize=1          (Loki's categorize-labels encoding)
//	{app="api"}
//	==>
//	{app="api"} 2s a line meta{trace_id="abc"} parsed{...}
//
// Times are durations after T0 (2026-01-15T00:00:00Z). A blank line ends a
// block. Each load adds to what earlier loads of the file stored; each
// file starts empty. "load tenant=a" loads into tenant a (else the
// default tenant), and "eval ... tenant=a" queries it; "tenant=a|b" makes
// a multi-tenant query.

var t0 = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC).UnixNano()

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

type scriptCase struct {
	line   int
	kind   string // log, instant, range
	args   map[string]string
	query  string
	expect []string
}

func runScript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every case runs twice: on a store whose rows are all in the head,
	// and on one whose every load is flushed to parts.
	head, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	parts, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	defer parts.Close()
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
			load(t, head, tenant, path, i, block)
			load(t, parts, tenant, path, i, block)
			if err := parts.Flush(); err != nil {
				t.Fatal(err)
			}
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
				c.expect = append(c.expect, strings.TrimSpace(lines[i]))
			}
			for _, st := range []struct {
				name string
				s    *store.Store
			}{{"head", head}, {"parts", parts}} {
				t.Run(fmt.Sprintf("line%d/%s", c.line, st.name), func(t *testing.T) {
					sn := st.s.Snapshot()
					defer sn.Release()
					c.run(t, path, sn)
				})
			}
		default:
			t.Fatalf("%s:%d: unexpected %q", path, i+1, l)
		}
	}
}

// load pushes lines through the Loki decoder into the store.
func load(t testing.TB, st *store.Store, tenant, path string, end int, block []string) {
	t.Helper()
	type pushStream struct {
		Stream map[string]string `json:"stream"`
		Values [][]any           `json:"values"`
	}
	var push struct {
		Streams []pushStream `json:"streams"`
	}
	for j, l := range block {
		l = strings.TrimSpace(l)
		close := strings.Index(l, "}")
		if !strings.HasPrefix(l, "{") || close < 0 {
			t.Fatalf("%s:%d: a load line is {labels} time line", path, end-len(block)+j+1)
		}
		ls := parseLabels(t, l[:close+1])
		rest := strings.TrimSpace(l[close+1:])
		ts, line, _ := strings.Cut(rest, " ")
		ns := offset(t, ts)
		m := map[string]string{}
		for _, x := range ls {
			m[x.Name] = x.Value
		}
		value := []any{strconv.FormatInt(ns, 10), line}
		if strings.HasPrefix(line, "meta{") {
			close := strings.Index(line, "}")
			meta := map[string]string{}
			for _, x := range parseLabels(t, line[len("meta"):close+1]) {
				meta[x.Name] = x.Value
			}
			value = []any{value[0], strings.TrimPrefix(line[close+1:], " "), meta}
		}
		push.Streams = append(push.Streams, pushStream{Stream: m, Values: [][]any{value}})
	}
	body, err := json.Marshal(push)
	if err != nil {
		t.Fatal(err)
	}
	var d loki.Decoder
	d.Limits = loki.DefaultLimits
	var b record.Batch
	res, err := d.DecodeJSON(body, &b)
	if err != nil || res.Rejected > 0 {
		t.Fatalf("%s:%d: load: %v %+v", path, end, err, res)
	}
	if err := st.Append(context.Background(), tenant, &b); err != nil {
		t.Fatal(err)
	}
}

// offset reads a time after t0.
func offset(t testing.TB, s string) int64 {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return t0 + int64(d)
}

func parseLabels(t testing.TB, s string) record.Labels {
	t.Helper()
	var ls record.Labels
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}"))
	for s != "" {
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			t.Fatalf("labels %q", s)
		}
		rest = strings.TrimSpace(rest)
		v, err := strconv.QuotedPrefix(rest)
		if err != nil {
			t.Fatalf("labels %q: %v", s, err)
		}
		uq, _ := strconv.Unquote(v)
		ls = append(ls, record.Label{Name: strings.TrimSpace(name), Value: uq})
		s = strings.TrimPrefix(strings.TrimSpace(rest[len(v):]), ",")
		s = strings.TrimSpace(s)
	}
	return ls
}

func (c *scriptCase) arg(t *testing.T, name, def string) string {
	if v, ok := c.args[name]; ok {
		return v
	}
	return def
}

func (c *scriptCase) run(t *testing.T, path string, src Source) {
	p := c.params(t, path)
	res, err := NewEngine(Limits{MaxPoints: 11000}).Exec(context.Background(), src, p)
	if len(c.expect) == 1 && strings.HasPrefix(c.expect[0], "error:") {
		want := strings.TrimSpace(strings.TrimPrefix(c.expect[0], "error:"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s:%d: %s\nerror %v, want one containing %q", path, c.line, c.query, err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s:%d: %s\n%v", path, c.line, c.query, err)
	}
	got := render(res, p)
	if !sameLines(got, c.expect) {
		t.Fatalf("%s:%d: %s\ngot:\n  %s\nwant:\n  %s", path, c.line, c.query, strings.Join(got, "\n  "), strings.Join(c.expect, "\n  "))
	}
}

// params are the query parameters of a case.
func (c *scriptCase) params(t *testing.T, path string) Params {
	p := Params{Tenant: c.arg(t, "tenant", store.DefaultTenant), Query: c.query}
	if ts := strings.Split(p.Tenant, "|"); len(ts) > 1 {
		p.Tenants = ts
	}
	switch c.kind {
	case "log":
		p.Start, p.End = offset(t, c.arg(t, "start", "0s")), offset(t, c.arg(t, "end", "1h"))
		p.Limit, _ = strconv.Atoi(c.arg(t, "limit", "100"))
		if c.arg(t, "direction", "backward") == "forward" {
			p.Direction = Forward
		}
		p.Categorize = c.arg(t, "categorize", "") != ""
	case "instant":
		p.Start = offset(t, c.arg(t, "at", "1m"))
		p.End, p.Instant = p.Start, true
	case "range":
		p.Start, p.End = offset(t, c.arg(t, "start", "0s")), offset(t, c.arg(t, "end", "1h"))
		step, err := time.ParseDuration(c.arg(t, "step", "1m"))
		if err != nil {
			t.Fatal(err)
		}
		p.Step = step
	default:
		t.Fatalf("%s:%d: eval log, instant or range, not %q", path, c.line, c.kind)
	}
	return p
}

// render writes a result as the script's expected lines.
func render(res *Result, p Params) []string {
	var out []string
	since := func(ns int64) string { return time.Duration(ns - t0).String() }
	switch res.Type {
	case "streams":
		for _, s := range res.Streams {
			for _, e := range s.Entries {
				l := fmt.Sprintf("%s %s %s", s.Labels, since(e.Time), e.Line)
				if len(e.Meta) > 0 {
					l += " meta" + e.Meta.String()
				}
				if len(e.Parsed) > 0 {
					l += " parsed" + e.Parsed.String()
				}
				out = append(out, l)
			}
		}
	case "vector":
		for _, s := range res.Vector {
			out = append(out, fmt.Sprintf("%s %s", s.Labels, fmtValue(s.Value)))
		}
	case "scalar":
		out = append(out, fmtValue(res.Scalar.Value))
	case "matrix":
		steps := int((p.End-p.Start)/int64(p.Step)) + 1
		for _, s := range res.Matrix {
			vals := make([]string, steps)
			for i := range vals {
				vals[i] = "_"
			}
			for _, pt := range s.Points {
				vals[(pt.Time-p.Start)/int64(p.Step)] = fmtValue(pt.Value)
			}
			out = append(out, fmt.Sprintf("%s %s", s.Labels, strings.Join(vals, " ")))
		}
	}
	return out
}

func fmtValue(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', 10, 64)
}

// sameLines compares rendered results, numbers within a relative 1e-9.
func sameLines(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] == want[i] {
			continue
		}
		g, w := strings.Fields(got[i]), strings.Fields(want[i])
		if len(g) != len(w) {
			return false
		}
		for j := range g {
			if g[j] == w[j] {
				continue
			}
			a, err1 := strconv.ParseFloat(g[j], 64)
			b, err2 := strconv.ParseFloat(w[j], 64)
			if err1 != nil || err2 != nil || math.Abs(a-b) > 1e-9*math.Max(math.Abs(a), math.Abs(b)) {
				return false
			}
		}
	}
	return true
}
