package rules

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// genRules writes n rules as operators write them: mostly literal line
// filters per service and path, some regexps on error text, a tenth
// redactions (the mix: 70% literal, 20% regexp, 10% redact).
func genRules(n int) string {
	var sb strings.Builder
	sb.WriteString("rules:\n")
	for i := range n {
		svc := fmt.Sprintf("svc%d", i%50)
		fmt.Fprintf(&sb, "  - name: r%d\n", i)
		switch {
		case i%10 < 7:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"} |= \"/path/%d\"'\n    drop: true\n", svc, i)
		case i%10 < 9:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"} |~ \"(timeout|refused) on shard-%d\"'\n    metric: {name: m%d, labels: [service]}\n", svc, i, i)
		default:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"}'\n    redact: {detectors: [email, secret_pairs]}\n", svc)
		}
	}
	return sb.String()
}

func genLines(n int) []string {
	rng := rand.New(rand.NewPCG(3, 4))
	paths := []string{"/users", "/orders", "/healthz", "/path"}
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"service":"svc%d","msg":"GET %s/%d 200","took_ms":%d,"user":"u%d"}`,
			rng.IntN(60), paths[rng.IntN(len(paths))], rng.IntN(1000), rng.IntN(500), rng.IntN(100))
	}
	return lines
}

// BenchmarkApply reports the rule stage's cost per line for 0, 10, 100
// and 1,000 rules (ns/op is per line).
func BenchmarkApply(b *testing.B) { benchApply(b, genLines(1000), genRules) }

// benchApply reports the rule stage's cost per line (ns/op) on lines for
// 0, 10, 100 and 1,000 of the rules rulesOf writes.
func benchApply(b *testing.B, lines []string, rulesOf func(n int) string) {
	for _, n := range []int{0, 10, 100, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			benchLines(b, compile(b, rulesOf(n)), lines)
		})
	}
}

func TestGenRulesCompile(t *testing.T) {
	s := compile(t, genRules(1000))
	b := parseLines(t, genLines(100)...)
	s.Apply(b)
	if b.NumKept() == 0 || b.NumKept() == len(b.Records) {
		t.Errorf("%d of %d kept: the generated rules should drop some lines", b.NumKept(), len(b.Records))
	}
}

// BenchmarkCompile reports the time to load and compile a rules file of
// 1,000 and 10,000 rules (the swap budget: under 200 ms for
// 10,000); the swap itself is one atomic pointer store (Live). from=none
// compiles the file cold (a start); from=prev compiles it as a reload
// does, from the running set of the same file but for one rule's match
// (what the running set compiled of the others is kept).
//
// max-step-us is the longest any compile ran without yielding (see
// yielder), in CPU time of the compile's thread (Linux; 0 elsewhere):
// the most a compile holds a core at once, whoever waits for it.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		src := []byte(genRules(n))
		b.Run(fmt.Sprintf("rules=%d/from=none", n), func(b *testing.B) {
			b.ReportAllocs()
			runtime.LockOSThread() // for threadCPU
			defer runtime.UnlockOSThread()
			var step time.Duration
			for b.Loop() {
				y := yielder{clock: threadCPU}
				if _, err := compileWith("rules.yaml", src, nil, nil, &y); err != nil {
					b.Fatal(err)
				}
				step = max(step, y.longest)
			}
			b.ReportMetric(float64(step)/1e3, "max-step-us")
		})
		b.Run(fmt.Sprintf("rules=%d/from=prev", n), func(b *testing.B) {
			prev, err := Compile("rules.yaml", []byte(strings.Replace(string(src), `"/path/0"`, `"/path/changed"`, 1)), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var step time.Duration
			for b.Loop() {
				y := yielder{clock: threadCPU}
				if _, err := compileWith("rules.yaml", src, nil, prev, &y); err != nil {
					b.Fatal(err)
				}
				step = max(step, y.longest)
			}
			b.ReportMetric(float64(step)/1e3, "max-step-us")
		})
	}
}

// BenchmarkSharedParse reports the cost per line of 20 rules that all
// parse the line as JSON, each with its own label filter: parsed once
// per line for all of them (shared) against once per rule (each), the
// same set with its rules' parseKey cleared.
func BenchmarkSharedParse(b *testing.B) {
	lines := genLines(1000)
	var sb strings.Builder
	sb.WriteString("rules:\n")
	for i := range 20 {
		fmt.Fprintf(&sb, "  - name: r%d\n    match: '{service=~\".+\"} | json | user=\"u%d\"'\n    metric: {name: m%d}\n", i, i, i)
	}
	for _, shared := range []bool{true, false} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			s := compile(b, sb.String())
			if !shared {
				for _, r := range s.rules {
					r.parseKey = ""
				}
			}
			batch := parseLines(b, lines...)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%len(batch.Records) == 0 {
					s.Apply(batch)
				}
				i++
			}
		})
	}
}

// opRules writes rules.sh's rule set of n rules (bench/rules.sh makes the
// same): for the corpus's eight services, 70% literal line filters per
// service and path (drop), 20% regexps on error text (a counter by
// host), 10% redactions gated by a literal.
func opRules(n int) string {
	services := []string{"auth", "checkout", "gateway", "inventory", "notifier", "payments", "reports", "search"}
	paths := []string{"/api/v1/orders", "/api/v1/cart/items", "/api/v1/users", "/api/v2/search", "/static/app.js", "/login", "/healthz"}
	var sb strings.Builder
	sb.WriteString("rules:\n")
	for i := range n {
		svc := services[i%len(services)]
		fmt.Fprintf(&sb, "  - name: r%d\n", i)
		switch k := i % 10; {
		case k < 7:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"} |= \"%s/%d\"'\n    drop: true\n", svc, paths[i%len(paths)], i)
		case k < 9:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"} |~ \"(timeout|refused) (on|from) shard-%d\"'\n", svc, i)
			fmt.Fprintf(&sb, "    metric: {name: shard_errors_%d_total, labels: [host], max_series: 100}\n", i)
		default:
			gate := "@example.com"
			if i >= 80 {
				gate = fmt.Sprintf("password=secret%d", i)
			}
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"} |= \"%s\"'\n    redact: {detectors: [email, secret_pairs]}\n", svc, gate)
		}
	}
	return sb.String()
}

// corpusLines returns n lines shaped as the canonical corpus's (JSON of
// about 400 bytes: service, host, trace id, an HTTP request with a user
// agent; a tenth with a user's e-mail address, some with an error).
func corpusLines(n int) []string {
	rng := rand.New(rand.NewPCG(5, 6))
	services := []string{"auth", "checkout", "gateway", "inventory", "notifier", "payments", "reports", "search"}
	paths := []string{"/api/v1/orders", "/api/v1/cart/items", "/api/v1/users", "/api/v2/search", "/static/app.js", "/login", "/healthz"}
	agents := []string{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "curl/8.5.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko)"}
	lines := make([]string, n)
	for i := range lines {
		var sb strings.Builder
		fmt.Fprintf(&sb, `{"ts":%d,"level":"info","msg":"request completed","service":"%s","host":"node-%d","trace_id":"%016x%016x",`,
			1768464000000+i, services[rng.IntN(len(services))], rng.IntN(40), rng.Uint64(), rng.Uint64())
		fmt.Fprintf(&sb, `"http":{"method":"GET","path":"%s","status":200,"latency_ms":%.3f,"bytes":%d,"user_agent":"%s"}`,
			paths[rng.IntN(len(paths))], rng.Float64()*200, rng.IntN(300000), agents[rng.IntN(len(agents))])
		switch rng.IntN(10) {
		case 0:
			fmt.Fprintf(&sb, `,"user":{"id":%d,"email":"user%d@example.com"}`, rng.IntN(1e7), rng.IntN(1000))
		case 1:
			sb.WriteString(`,"error":{"type":"IOError","message":"failed to call upstream: connection refused"}`)
		}
		sb.WriteString("}")
		lines[i] = sb.String()
	}
	return lines
}

// BenchmarkApplyCorpus is BenchmarkApply with rules.sh's rule set on
// lines shaped as the corpus's: the rule stage's cost per line (ns/op)
// in `sluice ingest` of bench/rules.sh, for 0, 10, 100 and 1,000 rules.
func BenchmarkApplyCorpus(b *testing.B) { benchApply(b, corpusLines(1000), opRules) }
