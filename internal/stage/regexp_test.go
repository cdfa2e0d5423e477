package stage

import (
	"regexp"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

func TestRegexpStage(t *testing.T) {
	mk := func(expr string) func() stage {
		return func() stage { return must(t)(newRegexpStage(&logql.RegexpParser{Re: regexp.MustCompile(expr)})) }
	}
	t.Run("doc", func(t *testing.T) {
		runCases(t, mk(`(?P<method>\w+) (?P<path>[\w|/]+) \((?P<status>\d+?)\) (?P<duration>.*)`), []stageCase{
			{name: "example", line: `POST /api/prom/api/v1/query_range (200) 1.5s`,
				labels: `{duration="1.5s", method="POST", path="/api/prom/api/v1/query_range", status="200"}`},
			{name: "no match", stream: lbls("app", "x"), line: `nothing to see`, labels: `{app="x"}`},
		})
	})
	t.Run("groups", func(t *testing.T) {
		runCases(t, mk(`(?P<app>[a-z]+)(?: (?P<opt>\d+))?(?:-(\w+))?`), []stageCase{
			{name: "collision and optional", stream: lbls("app", "stream"), line: `web`,
				labels: `{app="stream", app_extracted="web", opt=""}`},
			{name: "unanchored", line: `123 api 7-x`, labels: `{app="api", opt="7"}`},
			{name: "unicode", line: `ünï api`, labels: `{app="n", opt=""}`},
		})
	})
	for _, bad := range []string{`(\w+)`, `(?P<a>x)(?P<a>y)`, `(?P<1a>x)`} {
		if _, err := newRegexpStage(&logql.RegexpParser{Re: regexp.MustCompile(bad)}); err == nil {
			t.Errorf("regexp %q compiled", bad)
		}
	}
	if _, err := newRegexpStage(&logql.RegexpParser{}); err == nil {
		t.Error("regexp without expression compiled")
	}
}

func TestPatternStage(t *testing.T) {
	mk := func(src string) func() stage {
		return func() stage { return must(t)(newPatternStage(&logql.PatternParser{Pattern: pat(src)})) }
	}
	t.Run("nginx", func(t *testing.T) {
		runCases(t, mk(`<ip> - - <_> "<method> <uri> <_>" <status> <size> <_> "<agent>" <_>`), []stageCase{
			{name: "doc example",
				line:   `0.191.12.2 - - [10/Jun/2021:09:14:29 +0000] "GET /api/plugins/versioncheck HTTP/1.1" 200 2 "-" "Go-http-client/2.0" "13.76.247.102, 34.120.177.193" "TLSv1.2" "US" ""`,
				labels: `{agent="Go-http-client/2.0", ip="0.191.12.2", method="GET", size="2", status="200", uri="/api/plugins/versioncheck"}`},
			{name: "partial: a missing literal ends the match", line: `1.2.3.4 - - [x] "GET /a`,
				labels: `{ip="1.2.3.4", method="GET", uri="/a"}`},
		})
	})
	t.Run("anchored", func(t *testing.T) {
		runCases(t, mk(`<_> msg="<method> <path> (<status>) <latency>"`), []stageCase{
			{name: "doc example",
				line:   `level=debug ts=2021-06-10T09:24:13.472094048Z caller=logging.go:66 traceID=0568b66ad2d9294c msg="POST /loki/api/v1/push (204) 16.652862ms"`,
				labels: `{latency="16.652862ms", method="POST", path="/loki/api/v1/push", status="204"}`},
		})
		runCases(t, mk(`level=<level> <_>`), []stageCase{
			{name: "leading literal must start the line", stream: lbls("app", "x"), line: ` level=info x`, labels: `{app="x"}`},
			{name: "match", line: `level=info x`, labels: `{level="info"}`},
			{name: "capture runs to the end", line: `level=info`, labels: `{level="info"}`},
		})
	})
	t.Run("edges", func(t *testing.T) {
		runCases(t, mk(`<a>:<b>:<c>`), []stageCase{
			{name: "empty captures", line: `::`, labels: `{a="", b="", c=""}`},
			{name: "first occurrence", line: `x:y:z:w`, labels: `{a="x", b="y", c="z:w"}`},
			{name: "trailing literal not required at the end", stream: lbls("a", "s"), line: `1:2`, labels: `{a="s", a_extracted="1", b="2"}`},
		})
		runCases(t, mk(`[<ts>] <_>`), []stageCase{
			{name: "trailing unnamed", line: `[t1] rest`, labels: `{ts="t1"}`},
			{name: "unicode", line: `[日本] ✓`, labels: `{ts="日本"}`},
		})
	})
	for _, bad := range []string{`<_> x`, `<a><b>`, `<a> <a>`, ``} {
		if _, err := newPatternStage(&logql.PatternParser{Pattern: pat(bad)}); err == nil {
			t.Errorf("pattern %q compiled", bad)
		}
	}
}

func TestPatternStageNoAllocs(t *testing.T) {
	st := must(t)(newPatternStage(&logql.PatternParser{Pattern: pat(`<ip> - - <_> "<method> <uri> <_>" <status> <size> <_>`)}))
	lb := &Labels{}
	line := []byte(`0.191.12.2 - - [10/Jun/2021:09:14:29 +0000] "GET /api/plugins/versioncheck HTTP/1.1" 200 2 "-" "Go-http-client/2.0"`)
	run := func() {
		lb.Reset(nil)
		st.process(0, line, lb)
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("pattern allocates %v times per line, want 0", n)
	}
}

// BenchmarkPattern: an nginx line through a pattern stage, every
// capture observed, and only those a metric query reads.
func BenchmarkPattern(b *testing.B) {
	line := []byte(`10.1.2.3 - - [15/Jan/2026:08:00:00 +0000] "GET /api/v1/orders?id=42 HTTP/1.1" 502 5123 "-" "Mozilla/5.0 (X11; Linux x86_64)"`)
	p := &logql.PatternParser{Pattern: pat(`<ip> - - [<_>] "<method> <path> <_>" <status> <size> <_>`)}
	stream := lbls("kind", "nginx")
	for _, c := range []struct {
		name     string
		observed []string
	}{{"all", nil}, {"path-size", []string{"path", "size"}}, {"status", []string{"status"}}} {
		b.Run(c.name, func(b *testing.B) {
			st := must(b)(newPatternStage(p))
			if c.observed != nil {
				st.(*patternStage).observe(ObservedBy(nil, c.observed))
			}
			var lb Labels
			for b.Loop() {
				lb.Reset(stream)
				st.process(0, line, &lb)
			}
		})
	}
}

// BenchmarkPatternCaptures is BenchmarkPattern's line read into a table
// (LineCaptures), as the query engine's lean path reads it.
func BenchmarkPatternCaptures(b *testing.B) {
	line := []byte(`10.1.2.3 - - [15/Jan/2026:08:00:00 +0000] "GET /api/v1/orders?id=42 HTTP/1.1" 502 5123 "-" "Mozilla/5.0 (X11; Linux x86_64)"`)
	for _, c := range []struct {
		name     string
		observed []string
	}{{"all", nil}, {"path-size", []string{"path", "size"}}, {"status", []string{"status"}}} {
		b.Run(c.name, func(b *testing.B) {
			p, err := CompileObserving([]logql.Stage{&logql.PatternParser{Pattern: pat(`<ip> - - [<_>] "<method> <path> <_>" <status> <size> <_>`)}}, observedOrAll(c.observed))
			if err != nil {
				b.Fatal(err)
			}
			caps, _ := p.LineCaptures(0)
			vals := make([]Value, caps.Len())
			for b.Loop() {
				caps.Extract(line, vals)
			}
		})
	}
}

// observedOrAll is the labels names observed, or all when nil.
func observedOrAll(names []string) *Observed {
	if names == nil {
		return nil
	}
	return ObservedBy(nil, names)
}

// TestPatternStageStreamsAndMetadata: one stage, rows of two streams in
// turn, with and without structured metadata, and with a label a stage
// before set: a capture named as a stream label or as metadata becomes
// name_extracted, and one already set keeps its first value, whichever
// stream the stage saw last.
func TestPatternStageStreamsAndMetadata(t *testing.T) {
	st := must(t)(newPatternStage(&logql.PatternParser{Pattern: pat(`<a>:<b>`)}))
	plain, named := lbls("x", "y"), lbls("a", "s")
	for i, c := range []struct {
		stream record.Labels
		meta   [2]string // a metadata name and value, or none
		pre    [2]string // a label set before the stage, or none
		want   string
	}{
		{stream: plain, want: `{a="1", b="2", x="y"}`},
		{stream: named, want: `{a="s", a_extracted="1", b="2"}`},
		{stream: plain, meta: [2]string{"b", "m"}, want: `{a="1", b="m", b_extracted="2", x="y"}`},
		{stream: plain, want: `{a="1", b="2", x="y"}`},
		{stream: plain, pre: [2]string{"a", "pre"}, want: `{a="pre", b="2", x="y"}`},
		{stream: named, want: `{a="s", a_extracted="1", b="2"}`},
		{stream: plain, want: `{a="1", b="2", x="y"}`},
	} {
		var lb Labels
		lb.Reset(c.stream)
		if c.meta[0] != "" {
			lb.SetMeta(c.meta[0], []byte(c.meta[1]), 0)
		}
		if c.pre[0] != "" {
			lb.set(c.pre[0], c.pre[1])
		}
		st.process(testTS, []byte("1:2"), &lb)
		if got := lb.Copy().String(); got != c.want {
			t.Errorf("row %d: labels %s, want %s", i, got, c.want)
		}
	}
}
