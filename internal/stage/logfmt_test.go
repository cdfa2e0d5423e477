package stage

import (
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

const logfmtDocLine = `at=info method=GET path=/ host=grafana.net fwd="124.133.124.161" service=8ms status=200`

func TestLogfmt(t *testing.T) {
	mk := func() stage { return must(t)(newLogfmtStage(&logql.LogfmtParser{})) }
	stream := lbls("app", "api")
	runCases(t, mk, []stageCase{
		{name: "doc example", stream: stream, line: logfmtDocLine,
			labels: `{app="api", at="info", fwd="124.133.124.161", host="grafana.net", method="GET", path="/", service="8ms", status="200"}`},
		{name: "quoted", line: `msg="hello world" empty="" q="a\"b\\c\n\u00e9"`, labels: `{msg="hello world", q="a\"b\\c\né"}`},
		{name: "empty and standalone dropped", line: `a= b c=1 d`, labels: `{c="1"}`},
		{name: "white space", line: "  a=1\t b=2  \n", labels: `{a="1", b="2"}`},
		{name: "sanitized", line: `user-agent=x 1st=y a.b=z ключ=v`, labels: `{_1st="y", ____="v", a_b="z", user_agent="x"}`},
		{name: "stream collision", stream: stream, line: `app=web x=1`, labels: `{app="api", app_extracted="web", x="1"}`},
		{name: "first wins", line: `a=1 a=2`, labels: `{a="1"}`},
		{name: "utf8 values", line: `msg=héllo✓ x="日本"`, labels: `{msg="héllo✓", x="日本"}`},
		{name: "no pairs", line: `just some words`, labels: `{}`},
		{name: "empty line", line: ``, labels: `{}`},
		{name: "malformed skipped", line: `=value a=1 foo=bar=buzz b=2 fo"o=bar c=3 d="x"y e=4`, labels: `{a="1", b="2", c="3", d="x", e="4"}`},
		{name: "unterminated quote", line: `a=1 b="open c=3`, labels: `{a="1"}`},
		{name: "bad escape", line: `a="\q x" b=2`, labels: `{b="2"}`},
		{name: "quote inside value", line: `a=x"y b=2`, labels: `{b="2"}`},
	})
}

func TestLogfmtKeepEmpty(t *testing.T) {
	mk := func() stage { return must(t)(newLogfmtStage(&logql.LogfmtParser{KeepEmpty: true})) }
	runCases(t, mk, []stageCase{
		{name: "kept", line: `a= b c=1 d e=""`, labels: `{a="", b="", c="1", d="", e=""}`},
		{name: "doc", line: `uname= t=2023 level=info`, labels: `{level="info", t="2023", uname=""}`},
	})
}

func TestLogfmtStrict(t *testing.T) {
	mk := func() stage { return must(t)(newLogfmtStage(&logql.LogfmtParser{Strict: true})) }
	errs := func(pos int, msg string, rest string) string {
		d := `__error__="LogfmtParserErr", __error_details__="logfmt syntax error at pos ` + itoa(pos) + ` : ` + msg + `"`
		if rest == "" {
			return "{" + d + "}"
		}
		return "{" + d + ", " + rest + "}"
	}
	runCases(t, mk, []stageCase{
		{name: "valid", line: `key=value key2="value in double quotes"`, labels: `{key="value", key2="value in double quotes"}`},
		{name: "no key", line: `=value`, labels: errs(1, `unexpected '='`, "")},
		{name: "double equals", line: `a=1 foo=bar=buzz b=2`, labels: errs(12, `unexpected '='`, `a="1"`)},
		{name: "quote in key", line: `fo"o=bar`, labels: errs(3, `unexpected '\"'`, "")},
		{name: "unterminated", line: `a=1 b="x`, labels: errs(9, `unterminated quoted value`, `a="1"`)},
		{name: "text after quote starts a pair", line: `a="x"y=1`, labels: `{a="x", y="1"}`},
		{name: "bad escape", line: `a="\q" b=1`, labels: errs(7, `invalid quoted value`, "")},
		{name: "escaped quote", line: `a="x\"y" b=1`, labels: `{a="x\"y", b="1"}`},
	})
}

func TestLogfmtParams(t *testing.T) {
	params := func(flags logql.LogfmtParser, kv ...string) func() stage {
		for i := 0; i < len(kv); i += 2 {
			flags.Params = append(flags.Params, logql.LabelExtraction{Name: kv[i], Expr: kv[i+1]})
		}
		return func() stage { return must(t)(newLogfmtStage(&flags)) }
	}
	runCases(t, params(logql.LogfmtParser{}, "host", "", "fwd_ip", "fwd"), []stageCase{
		{name: "doc example", line: logfmtDocLine, labels: `{fwd_ip="124.133.124.161", host="grafana.net"}`},
		{name: "missing", line: `a=1`, labels: `{fwd_ip="", host=""}`},
		{name: "missing stream label", stream: lbls("host", "h"), line: `a=1`, labels: `{fwd_ip="", host="h"}`},
		{name: "present stream label", stream: lbls("host", "h"), line: `host=x`, labels: `{fwd_ip="", host="h", host_extracted="x"}`},
	})
	runCases(t, params(logql.LogfmtParser{}, "a", "a", "b", "b", "c", "c", "a2", "a", "app", "app"), []stageCase{
		{name: "standalone and empty requested", stream: lbls("app", "api"), line: `a b= c=3 a=4 app=x`,
			labels: `{a="", a2="", app="api", app_extracted="x", b="", c="3"}`},
	})
	runCases(t, params(logql.LogfmtParser{Strict: true}, "a", "a"), []stageCase{
		{name: "strict", line: `a=1 =x`, labels: `{__error__="LogfmtParserErr", __error_details__="logfmt syntax error at pos 5 : unexpected '='", a="1"}`},
	})
	if _, err := newLogfmtStage(&logql.LogfmtParser{Params: []logql.LabelExtraction{{Name: "a-b", Expr: "x"}}}); err == nil {
		t.Error("invalid label name compiled")
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// realisticLogfmt is a typical logfmt line, as Loki itself writes them.
const realisticLogfmt = `level=info ts=2024-05-01T12:34:56.789012345Z caller=metrics.go:159 component=frontend org_id=12345 ` +
	`traceID=4bf92f3577b34da6 latency=fast query="sum(rate({app=\"api\"} |= \"error\" [5m]))" query_type=metric ` +
	`range_type=range length=1h0m0s step=15s duration=123.456ms status=200 limit=1000 returned_lines=0 ` +
	`throughput=12MB total_bytes=1.5MB lines_per_second=12345 total_lines=1024 cache_chunk_req=10 cache_chunk_hit=8 source=logvolhist`

func TestLogfmtNoAllocs(t *testing.T) {
	st := must(t)(newLogfmtStage(&logql.LogfmtParser{}))
	lb := &Labels{}
	stream := lbls("app", "api", "level", "x")
	line := []byte(realisticLogfmt)
	run := func() {
		lb.Reset(stream)
		if _, ok := st.process(0, line, lb); !ok || lb.HasError() {
			t.Fatal("logfmt failed")
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("logfmt allocates %v times per line, want 0", n)
	}
	if got := lb.Get("query"); got != `sum(rate({app="api"} |= "error" [5m]))` {
		t.Errorf("query = %q", got)
	}
	if got := lb.Get("level_extracted"); got != "info" {
		t.Errorf("level_extracted = %q", got)
	}
}

func BenchmarkLogfmt(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    logql.LogfmtParser
	}{
		{"params=none", logql.LogfmtParser{}},
		{"params=2", logql.LogfmtParser{Params: []logql.LabelExtraction{{Name: "status", Expr: "status"}, {Name: "q", Expr: "query"}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st, err := newLogfmtStage(&bc.p)
			if err != nil {
				b.Fatal(err)
			}
			lb := &Labels{}
			stream := lbls("app", "api")
			line := []byte(realisticLogfmt)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				lb.Reset(stream)
				st.process(0, line, lb)
			}
		})
	}
}

// FuzzLogfmt checks that the stage never panics, that strict and
// non-strict agree on lines strict accepts, and that a line built of
// simple pairs gives back its pairs.
func FuzzLogfmt(f *testing.F) {
	for _, s := range []string{logfmtDocLine, realisticLogfmt, `a="b\"c" d`, `=x a=b=c`, `a="`, `a=1 a=2`} {
		f.Add(s)
	}
	loose, err := newLogfmtStage(&logql.LogfmtParser{})
	if err != nil {
		f.Fatal(err)
	}
	strict, err := newLogfmtStage(&logql.LogfmtParser{Strict: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, l1, _ := runRow(loose, nil, line)
		_, l2, _ := runRow(strict, nil, line)
		if _, bad := l2.Get(ErrorLabel); !bad && !strings.Contains(line, "__error") && l1.String() != l2.String() {
			t.Fatalf("%q: loose %s, strict %s", line, l1, l2)
		}
	})
}

// FuzzLogfmtStopsEarly: logfmt stopping once every parameter, or every
// label observed, has its value sets what it sets reading every pair,
// for any line, stream labels and parameters or hints.
func FuzzLogfmtStopsEarly(f *testing.F) {
	for _, s := range []string{realisticLogfmt, `level=info msg="a \"b\"" service=api level=error`, `level= service service=x`, `a=1 =x level="bad\q" level=ok`, `service=s1 app=a level=l`} {
		f.Add(s, uint8(3))
	}
	stream := record.Labels{{Name: "app", Value: "api"}}
	f.Fuzz(func(t *testing.T, line string, pick uint8) {
		names := []string{"level", "service", "app", "app_extracted", "msg", "nope"}
		var chosen []string
		for i, n := range names {
			if pick>>i&1 == 1 {
				chosen = append(chosen, n)
			}
		}
		var params []logql.LabelExtraction
		for _, n := range chosen {
			params = append(params, logql.LabelExtraction{Name: n, Expr: n})
		}
		for _, mode := range []struct {
			p *logql.LogfmtParser
			o *Observed
		}{
			{&logql.LogfmtParser{Params: params}, nil},
			{&logql.LogfmtParser{KeepEmpty: pick&0x80 != 0}, ObservedBy(nil, chosen)},
			{&logql.LogfmtParser{Params: params}, ObservedBy(nil, chosen[:len(chosen)/2])},
		} {
			if len(mode.p.Params) == 0 && mode.o == nil {
				continue
			}
			mk := func() *logfmtStage {
				st, err := newLogfmtStage(mode.p)
				if err != nil {
					t.Fatal(err)
				}
				s := st.(*logfmtStage)
				s.observed = mode.o
				s.stopEarly()
				return s
			}
			early, every := mk(), mk()
			every.all = 0
			_, got, _ := runRow(early, stream, line)
			_, want, _ := runRow(every, stream, line)
			if got.String() != want.String() {
				t.Fatalf("%q (params %v, observed %v):\n got %s\nwant %s", line, mode.p.Params, chosen, got, want)
			}
		}
	})
}
