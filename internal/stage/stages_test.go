package stage

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// stageCase is one row through one stage: the stream's labels and the
// line in, the line, labels and verdict out.
type stageCase struct {
	name   string
	stream record.Labels
	line   string
	want   string // the line out; "" means unchanged
	labels string // record.Labels.String() of the labels out
	drop   bool   // the stage filters the row out
}

// lbls builds a sorted label set from name, value pairs.
func lbls(kv ...string) record.Labels {
	var ls record.Labels
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, record.Label{Name: kv[i], Value: kv[i+1]})
	}
	slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

const testTS = int64(1_700_000_000_123_456_789)

// runRow passes one row through st.
func runRow(st stage, stream record.Labels, line string) (string, record.Labels, bool) {
	lb := &Labels{}
	lb.Reset(stream)
	out, ok := st.process(testTS, []byte(line), lb)
	return string(out), lb.Copy(), ok
}

// runCases runs each case through the stage mk returns, a new stage per
// case, then once more through one stage shared by all cases in order to
// catch state leaking from row to row.
func runCases(t *testing.T, mk func() stage, cases []stageCase) {
	t.Helper()
	check := func(t *testing.T, st stage, c stageCase) {
		t.Helper()
		out, ls, ok := runRow(st, c.stream, c.line)
		if ok == c.drop {
			t.Fatalf("kept = %v, want %v", ok, !c.drop)
		}
		if !ok {
			return
		}
		want := c.want
		if want == "" {
			want = c.line
		}
		if out != want {
			t.Errorf("line = %q, want %q", out, want)
		}
		if got := ls.String(); got != c.labels {
			t.Errorf("labels = %s\n          want %s", got, c.labels)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, mk(), c) })
	}
	t.Run("shared", func(t *testing.T) {
		st := mk()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { check(t, st, c) })
		}
	})
}

// must returns a function that returns a stage or fails the test:
// must(t)(newJSONStage(...)).
func must(t testing.TB) func(stage, error) stage {
	return func(st stage, err error) stage {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// matcher parses one label matcher such as `a=~"x.*"`.
func matcher(t *testing.T, s string) *logql.Matcher {
	t.Helper()
	// A selector needs a matcher that rejects the empty string.
	sel, err := logql.ParseSelector("{" + s + `, zz_test="x"}`)
	if err != nil {
		t.Fatalf("matcher %s: %v", s, err)
	}
	return sel[0]
}

func TestDrop(t *testing.T) {
	stream := lbls("app", "api", "env", "prod")
	mk := func(items ...logql.LabelItem) func() stage {
		return func() stage { return must(t)(newDropStage(&logql.Drop{Items: items})) }
	}
	name := func(n string) logql.LabelItem { return logql.LabelItem{Name: n} }
	match := func(s string) logql.LabelItem {
		m := matcher(t, s)
		return logql.LabelItem{Name: m.Name, Matcher: m}
	}
	withErr := func() stage {
		return &pipelineStage{stages: []stage{
			must(t)(newJSONStage(&logql.JSONParser{})),
			must(t)(newDropStage(&logql.Drop{Items: []logql.LabelItem{name("__error__"), name("__error_details__")}})),
		}}
	}
	t.Run("names", func(t *testing.T) {
		runCases(t, mk(name("env"), name("missing")), []stageCase{
			{name: "stream label", stream: stream, line: "x", labels: `{app="api"}`},
		})
	})
	t.Run("matchers", func(t *testing.T) {
		runCases(t, mk(match(`env="prod"`), match(`app=~"a.*"`), match(`zone!="x"`)), []stageCase{
			{name: "both match", stream: stream, line: "x", labels: `{}`},
			{name: "value differs", stream: lbls("app", "web", "env", "dev"), line: "x", labels: `{app="web", env="dev"}`},
		})
	})
	t.Run("errors", func(t *testing.T) {
		runCases(t, withErr, []stageCase{
			{name: "error dropped", stream: stream, line: "not json", labels: `{app="api", env="prod"}`},
		})
	})
	if _, err := newDropStage(&logql.Drop{}); err == nil {
		t.Error("drop without labels compiled")
	}
}

// stageFunc is a function that runs a row, as a stage (Pipeline.Process).
type stageFunc func(ts int64, line []byte, lb *Labels) ([]byte, bool)

func (f stageFunc) process(ts int64, line []byte, lb *Labels) ([]byte, bool) { return f(ts, line, lb) }

// pipelineStage chains stages, for tests that need a parser first.
type pipelineStage struct{ stages []stage }

func (p *pipelineStage) process(ts int64, line []byte, lb *Labels) ([]byte, bool) {
	for _, s := range p.stages {
		var ok bool
		if line, ok = s.process(ts, line, lb); !ok {
			return nil, false
		}
	}
	return line, true
}

func TestKeep(t *testing.T) {
	stream := lbls("app", "api", "env", "prod")
	keep := func(items ...logql.LabelItem) func() stage {
		return func() stage {
			return &pipelineStage{stages: []stage{
				must(t)(newJSONStage(&logql.JSONParser{})),
				must(t)(newKeepStage(&logql.Keep{Items: items})),
			}}
		}
	}
	name := func(n string) logql.LabelItem { return logql.LabelItem{Name: n} }
	match := func(s string) logql.LabelItem {
		m := matcher(t, s)
		return logql.LabelItem{Name: m.Name, Matcher: m}
	}
	// The examples of Loki's documentation.
	runCases(t, keep(name("level"), match(`method="GET"`)), []stageCase{
		{name: "GET", stream: stream, line: `{"level": "info", "method": "GET", "path": "/", "host": "grafana.net", "status": "200"}`,
			labels: `{level="info", method="GET"}`},
		{name: "POST", stream: stream, line: `{"level": "info", "method": "POST", "path": "/", "host": "grafana.net", "status": "200"}`,
			labels: `{level="info"}`},
		{name: "errors stay", stream: stream, line: `nope`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 0: unexpected 'n', expected a JSON object"}`},
	})
	t.Run("regexp", func(t *testing.T) {
		runCases(t, keep(name("level"), name("tenant"), match(`app=~"some-api.*"`)), []stageCase{
			{name: "match", stream: lbls("job", "varlogs"), line: `{"app": "some-api-service", "level": "info", "method": "GET"}`,
				labels: `{app="some-api-service", level="info"}`},
			{name: "no match", stream: lbls("job", "varlogs"), line: `{"app": "other-service", "level": "info", "method": "GET"}`,
				labels: `{level="info"}`},
		})
	})
	t.Run("stream label", func(t *testing.T) {
		runCases(t, keep(name("env")), []stageCase{
			{name: "kept", stream: stream, line: `{"a":"b"}`, labels: `{env="prod"}`},
		})
	})
	if _, err := newKeepStage(&logql.Keep{}); err == nil {
		t.Error("keep without labels compiled")
	}
}

func TestUnpack(t *testing.T) {
	mk := func() stage { return must(t)(newUnpackStage(&logql.Unpack{})) }
	runCases(t, mk, []stageCase{
		{name: "doc example", stream: lbls("job", "x"),
			line:   `{"container": "myapp", "pod": "pod-3223f", "_entry": "original log message"}`,
			want:   "original log message",
			labels: `{container="myapp", job="x", pod="pod-3223f"}`},
		{name: "escaped entry", stream: lbls("job", "x"),
			line:   `{"_entry":"{\"a\":\"\\u00e9\"}\n","k":"v"}`,
			want:   "{\"a\":\"\\u00e9\"}\n",
			labels: `{job="x", k="v"}`},
		{name: "stream collision", stream: lbls("job", "x"),
			line:   `{"job":"y","_entry":"line"}`,
			want:   "line",
			labels: `{job="x", job_extracted="y"}`},
		{name: "non strings ignored", stream: lbls("job", "x"),
			line:   `{"n":1,"o":{"a":"b"},"l":["x"],"b":true,"z":null,"s":"t","_entry":"e"}`,
			want:   "e",
			labels: `{job="x", s="t"}`},
		{name: "sanitized", stream: nil,
			line:   `{"a-b":"1","_entry":"e"}`,
			want:   "e",
			labels: `{a_b="1"}`},
		{name: "not packed", stream: lbls("job", "x"),
			line:   `{"a":"b"}`,
			labels: `{job="x"}`},
		{name: "empty object", stream: nil, line: `{}`, labels: `{}`},
		{name: "not json", stream: lbls("job", "x"),
			line:   `plain text`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 0: expected a JSON object", job="x"}`},
		{name: "broken", stream: nil,
			line:   `{"a":"b","_entry":"e"`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 21: unexpected end of input, expected ',' or '}'"}`},
	})
}

func TestDecolorize(t *testing.T) {
	mk := func() stage { return must(t)(newDecolorizeStage(&logql.Decolorize{})) }
	runCases(t, mk, []stageCase{
		{name: "plain", line: "no colour here", labels: `{}`},
		{name: "sgr", line: "\x1b[31mred\x1b[0m and \x1b[1;32mbold green\x1b[m", want: "red and bold green", labels: `{}`},
		{name: "256 colours", line: "\x1b[38;5;196mx\x1b[39m", want: "x", labels: `{}`},
		{name: "private mode", line: "\x1b[?25lhidden\x1b[?25h", want: "hidden", labels: `{}`},
		{name: "erase", line: "a\x1b[2Kb\x1b[Hc", want: "abc", labels: `{}`},
		{name: "osc title bel", line: "\x1b]0;my title\x07text", want: "text", labels: `{}`},
		{name: "osc st", line: "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", want: "link", labels: `{}`},
		{name: "charset", line: "\x1b(Bplain", want: "plain", labels: `{}`},
		{name: "c1 csi", line: "\u009b31mred", want: "red", labels: `{}`},
		{name: "unicode kept", line: "héllo \x1b[1mwörld\x1b[0m ✓", want: "héllo wörld ✓", labels: `{}`},
		{name: "cut short", line: "text\x1b[3", want: "text", labels: `{}`},
		{name: "lone esc", line: "text\x1b", want: "text", labels: `{}`},
	})
}

func TestAppendSanitized(t *testing.T) {
	for _, c := range []struct {
		key   string
		first bool
		want  string
	}{
		{"abc", true, "abc"},
		{"a.b", true, "a_b"},
		{"User-Agent", false, "User_Agent"},
		{" padded ", true, "padded"},
		{"1st", true, "_1st"},
		{"1st", false, "1st"},
		{"héllo", true, "h_llo"},
		{"a b:c", true, "a_b_c"},
		{"", true, ""},
		{"日本", true, "__"},
	} {
		if got := string(AppendLabelName(nil, []byte(c.key), c.first)); got != c.want {
			t.Errorf("AppendLabelName(%q, %v) = %q, want %q", c.key, c.first, got, c.want)
		}
	}
}

func TestSetParsed(t *testing.T) {
	lb := &Labels{}
	lb.Reset(lbls("app", "api"))
	var buf rowBuf
	setParsed(lb, &buf, nil, "app", "1")
	setParsed(lb, &buf, nil, "app", "2") // app_extracted is set: first wins
	setParsed(lb, &buf, nil, "a", "x")
	setParsed(lb, &buf, nil, "a", "y")
	setParsed(lb, &buf, nil, "", "z")
	if got, want := lb.Copy().String(), `{a="x", app="api", app_extracted="1"}`; got != want {
		t.Errorf("labels = %s, want %s", got, want)
	}
}

func TestRowBufStringsSurviveGrowth(t *testing.T) {
	var buf rowBuf
	var strs []string
	for i := range 1000 {
		strs = append(strs, buf.str([]byte(strings.Repeat(string(rune('a'+i%26)), i%7+1))))
	}
	for i, s := range strs {
		if want := strings.Repeat(string(rune('a'+i%26)), i%7+1); s != want {
			t.Fatalf("string %d = %q after growth, want %q", i, s, want)
		}
	}
}

// TestPipelineQueries parses whole queries and runs their pipelines, to
// check the stages against the trees the logql parser builds.
func TestPipelineQueries(t *testing.T) {
	stream := lbls("app", "api", "env", "prod")
	for _, c := range []struct {
		query  string
		line   string
		want   string // the line out, "" when unchanged
		labels string // "" when the row is dropped
	}{
		{`{app="api"} |= "metrics.go" | logfmt | duration > 10s and throughput_mb < 500`,
			`caller=metrics.go duration=12.5s throughput_mb=100`, "",
			`{app="api", caller="metrics.go", duration="12.5s", env="prod", throughput_mb="100"}`},
		{`{app="api"} |= "metrics.go" | logfmt | duration > 10s and throughput_mb < 500`,
			`caller=metrics.go duration=2s throughput_mb=100`, "", ""},
		{`{app="api"} | json | status >= 500 | line_format "{{.method}} {{.path}}"`,
			`{"status":503,"method":"GET","path":"/x"}`, "GET /x",
			`{app="api", env="prod", method="GET", path="/x", status="503"}`},
		{`{app="api"} | json | status >= 500`, `{"status":200}`, "", ""},
		{`{app="api"} | json | __error__=""`, `not json`, "", ""},
		{`{app="api"} | json | status >= 500`, `not json`, "", ""},
		{`{app="api"} | json | status >= 500 or __error__!=""`, `not json`, "",
			`{__error__="JSONParserErr", __error_details__="syntax error at offset 0: unexpected 'n', expected a JSON object", app="api", env="prod"}`},
		{`{app="api"} | logfmt --strict | drop __error__, __error_details__, env`, `a=1 =b`, "", `{a="1", app="api"}`},
		{`{app="api"} | logfmt --keep-empty host, fwd_ip="fwd"`, `host fwd="1.2.3.4" x=y`, "",
			`{app="api", env="prod", fwd_ip="1.2.3.4", host=""}`},
		{`{app="api"} | pattern "<ip> - <_>" | ip = ip("10.0.0.0/8")`, `10.1.2.3 - rest`, "",
			`{app="api", env="prod", ip="10.1.2.3"}`},
		{`{app="api"} | pattern "<ip> - <_>" | ip != ip("10.0.0.0/8")`, `10.1.2.3 - rest`, "", ""},
		{"{app=\"api\"} | json first_server=\"servers[0]\", ua=`request.headers[\"User-Agent\"]`", jsonDocLine, "",
			`{app="api", env="prod", first_server="129.0.1.1", ua="curl/7.68.0"}`},
		{`{app="api"} | json servers`, `{"servers":["a","b"]}`, "", `{app="api", env="prod", servers="[\"a\",\"b\"]"}`},
		{`{app="api"} | unpack | json`, `{"pod":"p1","_entry":"{\"level\":\"warn\",\"app\":\"inner\"}"}`, `{"level":"warn","app":"inner"}`,
			`{app="api", app_extracted="inner", env="prod", level="warn", pod="p1"}`},
		{"{app=\"api\"} | decolorize | regexp `(?P<level>\\w+): (?P<msg>.*)`", "\x1b[31mERROR\x1b[0m: boom", "ERROR: boom",
			`{app="api", env="prod", level="ERROR", msg="boom"}`},
		// The template sees the labels after the renames before it.
		{`{app="api"} | label_format foo=env, baz="{{.env}}!{{.foo}}" | keep foo, baz, app`, `x`, "", `{app="api", baz="!prod", foo="prod"}`},
		{`{app="api"} |> "<_> error <_>" or "<_> warn <_>"`, `a warn b`, "", `{app="api", env="prod"}`},
		{`{app="api"} !> "<_> error <_>" or "<_> warn <_>"`, `a warn b`, "", ""},
		{`{app="api"} |~ "a.b"`, "a\nb", "", `{app="api", env="prod"}`},
		{`{app="api"} != ip("192.168.4.5-192.168.4.20") |= "GET"`, `192.168.4.30 GET /`, "", `{app="api", env="prod"}`},
		{`{app="api"} | logfmt | size > 1KB or size < 10B`, `size=2KiB`, "", `{app="api", env="prod", size="2KiB"}`},
		{`{app="api"} | logfmt | (size > 1KB or size < 10B) and env="dev"`, `size=2KiB`, "", ""},
		{`{app="api"} | logfmt | level="info", status=200`, `level=info status=200`, "", `{app="api", env="prod", level="info", status="200"}`},
		{`{app="api"} | logfmt | drop level="info" | keep status, level`, `level=info status=200`, "", `{status="200"}`},
	} {
		t.Run(c.query, func(t *testing.T) {
			le, err := logql.ParseLogExpr(c.query)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(le.Pipeline)
			if err != nil {
				t.Fatal(err)
			}
			out, ls, ok := runRow(stageFunc(p.Process), stream, c.line)
			if ok != (c.labels != "") {
				t.Fatalf("kept = %v, labels %s", ok, ls)
			}
			if !ok {
				return
			}
			want := c.want
			if want == "" {
				want = c.line
			}
			if out != want {
				t.Errorf("line = %q, want %q", out, want)
			}
			if ls.String() != c.labels {
				t.Errorf("labels = %s\n          want %s", ls, c.labels)
			}
		})
	}
}

// TestErrorPrecedence checks whose error a row shows when two stages
// fail: a parser's or a template's replaces an earlier one (Loki's
// SetErr), a label filter's does not.
func TestErrorPrecedence(t *testing.T) {
	pipe := func(stages ...logql.Stage) *Pipeline {
		t.Helper()
		p, err := Compile(stages)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonP := &logql.JSONParser{}
	divZero := &logql.LineFormat{Template: "{{ div 1 0 }}"}
	numFilter := &logql.LabelFilterStage{Filter: &logql.LabelFilterNumber{Name: "a", Op: logql.CmpGt, Value: 1}}
	for _, c := range []struct {
		name string
		p    *Pipeline
		want string
	}{
		{"template after parser", pipe(jsonP, divZero), "TemplateFormatErr"},
		{"parser after template", pipe(divZero, jsonP), "JSONParserErr"},
		{"label filter after parser", pipe(jsonP, numFilter), "JSONParserErr"},
		{"parser after label filter", pipe(numFilter, jsonP), "JSONParserErr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lb := &Labels{}
			lb.Reset(lbls("a", "x"))
			if _, ok := c.p.Process(testTS, []byte("not json"), lb); !ok {
				t.Fatal("row dropped")
			}
			if got := lb.Get(ErrorLabel); got != c.want {
				t.Errorf("__error__ = %q, want %q", got, c.want)
			}
			if lb.Get(ErrorDetailsLabel) == "" {
				t.Error("no __error_details__")
			}
		})
	}
}
