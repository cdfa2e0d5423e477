package rules

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
)

// parseLines parses lines (JSON, logfmt or text: auto) into one batch of
// tenant "t", copied so that the test may keep it.
func parseLines(t testing.TB, lines ...string) *record.Batch {
	t.Helper()
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var out *record.Batch
	data := []byte(strings.Join(lines, "\n") + "\n")
	err = p.Bytes(context.Background(), data, func(b *record.Batch) error {
		if out != nil {
			return errors.New("more than one batch")
		}
		c := *b
		c.Data = slices.Clone(b.Data)
		c.Records = slices.Clone(b.Records)
		c.Fields = slices.Clone(b.Fields)
		out = &c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out.Tenant = "t"
	return out
}

func compile(t testing.TB, src string) *Set {
	t.Helper()
	s, err := Compile("rules.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// result renders what is stored of b: "labels line" per kept record.
func result(b *record.Batch) []string {
	var out []string
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		out = append(out, b.Labels(i).String()+" "+string(b.Bytes(b.Records[i].Line)))
	}
	return out
}

func TestActions(t *testing.T) {
	lines := []string{
		`{"service":"api","msg":"GET /healthz 200"}`,
		`{"service":"api","msg":"GET /users 200","trace":"t1"}`,
		`{"service":"web","msg":"POST /login 500 bob@example.com","level":"error"}`,
		`service=db msg="slow query" took=3s`,
	}
	cases := []struct {
		name, rules string
		want        []string
	}{
		{"drop", `
rules:
  - name: health
    match: '{service="api"} |= "/healthz"'
    drop: true`, []string{
			`{service="api"} {"service":"api","msg":"GET /users 200","trace":"t1"}`,
			`{service="web"} {"service":"web","msg":"POST /login 500 bob@example.com","level":"error"}`,
			`{service="db"} service=db msg="slow query" took=3s`}},
		{"keep stops later rules", `
rules:
  - name: keep-web
    match: '{service="web"}'
    keep: true
  - name: drop-all
    drop: true`, []string{
			`{service="web"} {"service":"web","msg":"POST /login 500 bob@example.com","level":"error"}`}},
		{"redact", `
rules:
  - name: mail
    match: '{service=~".+"} | json | level="error"'
    redact: {detectors: [email], replacement: "<email>"}`, []string{
			`{service="api"} {"service":"api","msg":"GET /healthz 200"}`,
			`{service="api"} {"service":"api","msg":"GET /users 200","trace":"t1"}`,
			`{service="web"} {"service":"web","msg":"POST /login 500 <email>","level":"error"}`,
			`{service="db"} service=db msg="slow query" took=3s`}},
		{"set and drop labels", `
rules:
  - name: tag
    match: '{service=~"api|db"} | logfmt | json'
    set_labels: {team: 'core-{{.service}}', env: prod}
  - name: untag
    match: '{service="db"}'
    drop_labels: [env]`, []string{
			`{env="prod", service="api", team="core-api"} {"service":"api","msg":"GET /healthz 200"}`,
			`{env="prod", service="api", team="core-api"} {"service":"api","msg":"GET /users 200","trace":"t1"}`,
			`{service="web"} {"service":"web","msg":"POST /login 500 bob@example.com","level":"error"}`,
			`{service="db", team="core-db"} service=db msg="slow query" took=3s`}},
		{"labels set by a rule select for later rules", `
rules:
  - name: tag
    match: '{service="db"}'
    set_labels: {tier: slow}
  - name: drop-slow
    match: '{tier="slow"}'
    drop: true`, []string{
			`{service="api"} {"service":"api","msg":"GET /healthz 200"}`,
			`{service="api"} {"service":"api","msg":"GET /users 200","trace":"t1"}`,
			`{service="web"} {"service":"web","msg":"POST /login 500 bob@example.com","level":"error"}`}},
		{"sample 0 and 1", `
rules:
  - name: none-of-api
    match: '{service="api"}'
    sample: {rate: 0}
  - name: all-of-web
    match: '{service="web"}'
    sample: {rate: 1, by: trace}`, []string{
			`{service="web"} {"service":"web","msg":"POST /login 500 bob@example.com","level":"error"}`,
			`{service="db"} service=db msg="slow query" took=3s`}},
		{"tenant", `
rules:
  - name: other
    tenant: someone-else
    drop: true`, []string{
			`{service="api"} {"service":"api","msg":"GET /healthz 200"}`,
			`{service="api"} {"service":"api","msg":"GET /users 200","trace":"t1"}`,
			`{service="web"} {"service":"web","msg":"POST /login 500 bob@example.com","level":"error"}`,
			`{service="db"} service=db msg="slow query" took=3s`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compile(t, c.rules)
			b := parseLines(t, lines...)
			s.Apply(b)
			if got := result(b); !slices.Equal(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestRedactFields(t *testing.T) {
	s := compile(t, `
rules:
  - name: secrets
    redact: {detectors: [email, secret_pairs, card]}`)
	b := parseLines(t,
		`{"msg":"hi bob@example.com","user":{"mail":"alice@corp.io","password":"hunter2"},"card":4111111111111111,"n":7}`,
		`level=info msg="pay 4111 1111 1111 1111" token=abc123`)
	s.Apply(b)
	joined := string(b.Bytes(b.Records[0].Line)) + string(b.Bytes(b.Records[1].Line))
	for i := range b.Records {
		joined += string(b.AppendMsg(nil, i))
		for _, f := range b.RecordFields(i) {
			joined += " " + b.Name(&f) + "=" + string(b.AppendString(nil, &f))
		}
	}
	for _, secret := range []string{"bob@example.com", "alice@corp.io", "hunter2", "4111111111111111", "4111 1111 1111 1111", "abc123"} {
		if strings.Contains(joined, secret) {
			t.Errorf("%q survived: %s", secret, joined)
		}
	}
	for _, kept := range []string{"n=7", "level=info", "hi <redacted>"} {
		if !strings.Contains(joined, kept) {
			t.Errorf("%q lost: %s", kept, joined)
		}
	}
}

// TestRedactEscaped: a secret the line hides behind JSON escapes is
// found in the decoded field and replaced in the line too.
func TestRedactEscaped(t *testing.T) {
	s := compile(t, "rules:\n  - name: m\n    redact: {detectors: [email]}\n")
	b := parseLines(t, `{"msg":"mail bob\u0040example.com now","to":"x\u0040corp.io"}`)
	s.Apply(b)
	line := string(b.Bytes(b.Records[0].Line))
	if strings.Contains(line, "u0040") || !strings.Contains(line, `"msg":"mail <redacted> now"`) || !strings.Contains(line, `"to":"<redacted>"`) {
		t.Errorf("line %s", line)
	}
	for _, f := range b.RecordFields(0) {
		if v := string(b.AppendString(nil, &f)); strings.Contains(v, "@") {
			t.Errorf("field %s=%s", b.Name(&f), v)
		}
	}
}

// TestRedactKeepsNeighbours checks that a redacted record's new bytes
// leave every other record byte-exact, and that appending never writes
// into the producer's buffer past the batch's data.
func TestRedactKeepsNeighbours(t *testing.T) {
	s := compile(t, "rules:\n  - name: m\n    redact: {detectors: [email]}\n")
	b := parseLines(t, `a@b.io one`, `two`, `c@d.io three`)
	buf := make([]byte, len(b.Data), len(b.Data)+100)
	copy(buf, b.Data)
	for i := len(b.Data); i < cap(buf); i++ {
		buf[:cap(buf)][i] = '#'
	}
	b.Data = buf
	s.Apply(b)
	if got := result(b); !slices.Equal(got, []string{"{} <redacted> one", "{} two", "{} <redacted> three"}) {
		t.Errorf("got %q", got)
	}
	for i, c := range buf[:cap(buf)][len(buf):] {
		if c != '#' {
			t.Fatalf("byte %d past the batch's data was written", i)
		}
	}
}

func TestMetricAndCounters(t *testing.T) {
	m := NewMetrics(nil)
	s, err := Compile("r.yaml", []byte(`
rules:
  - name: errors
    match: '{service=~".+"} |= "error"'
    metric: {name: errors_total, labels: [service], max_series: 2}
  - name: drop-debug
    match: '{service=~".+"} |= "debug"'
    drop: true
`), m)
	if err != nil {
		t.Fatal(err)
	}
	b := parseLines(t, `service=a msg=error`, `service=b msg=error`, `service=c msg=error`, `service=a msg="error again"`, `service=a msg=debug`)
	s.Apply(b)
	u := s.rules[0].metric
	if got := u.series["a"].n.Load(); got != 2 {
		t.Errorf("errors_total{service=a} = %d, want 2", got)
	}
	if len(u.series) != 2 || u.overflow.Load() != 1 {
		t.Errorf("%d series, overflow %d; want 2 and 1", len(u.series), u.overflow.Load())
	}
	if c := m.Rule("drop-debug"); c.Dropped != 1 || c.Matched != 1 {
		t.Errorf("drop-debug counted %+v", c)
	}
	if c := m.Rule("errors"); c.Matched != 4 {
		t.Errorf("errors counted %+v", c)
	}
	// A reload with the same metric keeps counting into it.
	s2, err := Compile("r.yaml", []byte("rules:\n  - name: errors\n    metric: {name: errors_total, labels: [service], max_series: 2}\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	if s2.rules[0].metric != u {
		t.Error("a reload of the same metric started a new one")
	}
}

func TestTemplateErrorLeavesLine(t *testing.T) {
	m := NewMetrics(nil)
	s, err := Compile("r.yaml", []byte(`
rules:
  - name: bad
    match: '{service=~".+"}'
    set_labels: {x: '{{ div 1 0 }}'}
    redact: {detectors: [email]}
`), m)
	if err != nil {
		t.Fatal(err)
	}
	b := parseLines(t, `service=a msg=a@b.io`)
	s.Apply(b)
	if got := result(b); !slices.Equal(got, []string{`{service="a"} service=a msg=a@b.io`}) {
		t.Errorf("got %q", got)
	}
	if c := m.Rule("bad"); c.Errors != 1 {
		t.Errorf("counted %+v, want one error", c)
	}
	// A value past MaxLabelValue fails the rule too.
	s, err = Compile("r.yaml", []byte(`
rules:
  - name: long
    match: '{service=~".+"} | logfmt'
    set_labels: {x: '{{ .msg }}'}
`), m)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("y", MaxLabelValue+1)
	b = parseLines(t, `service=a msg=short`, `service=a msg=`+long)
	s.Apply(b)
	if got := result(b); !slices.Equal(got, []string{`{service="a", x="short"} service=a msg=short`, `{service="a"} service=a msg=` + long}) {
		t.Errorf("got %q", got)
	}
	if c := m.Rule("long"); c.Errors != 1 || c.Relabeled != 1 {
		t.Errorf("counted %+v, want one error, one relabeled", c)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"rules: [", "rules.yaml:1:1: yaml:"},
		{"rulez: []", `rules.yaml:1:1: unknown key "rulez"`},
		{"rules:\n  - match: '{a=\"b\"}'\n    drop: true", "rules.yaml:2:5: rule 1: name: missing"},
		{"rules:\n  - name: x\n    match: '{a=\"b\"'\n    drop: true", "rules.yaml:3:12: rule 1 (x): match: parse error"},
		{"rules:\n  - name: x\n    dorp: true", `rules.yaml:3:5: rule 1 (x): unknown key "dorp"`},
		// Line filters that checkStages does not compile: refused by
		// the parser.
		{"rules:\n  - name: x\n    match: '{a=\"b\"} |= \"ok\" |~ ip(\"10.0.0.1\")'\n    drop: true", "rules.yaml:3:12: rule 1 (x): match: parse error at line 1, col 20: ip line filter only supports |= and !="},
		{"rules:\n  - name: x\n    match: '{a=\"b\"} |= ip(\"10.0.0.300\")'\n    drop: true", `rules.yaml:3:12: rule 1 (x): match: parse error at line 1, col 15: invalid ip filter "10.0.0.300"`},
		{"rules:\n  - name: x\n    match: '{a=\"b\"} |~ \"(a\"'\n    drop: true", "rules.yaml:3:12: rule 1 (x): match: parse error"},
		{"rules:\n  - name: x\n    route: []", "rules.yaml:3:12: rule 1 (x): route: an empty list (want the names of sinks)"},
		{"rules:\n  - name: x\n    route: [pg, pg]", `rules.yaml:3:17: rule 1 (x): route: sink "pg" is named twice`},
		{"rules:\n  - name: x\n    route: ['a b']", `rules.yaml:3:13: rule 1 (x): route: "a b" is not a sink name`},
		{"rules:\n  - name: x\n    route: {pg: 1}", "rule 1 (x): route: want a string"},
		{"rules:\n  - name: x\n    drop: true\n    continue: true", "rules.yaml:4:5: rule 1 (x): continue: belongs to route"},
		{"rules:\n  - name: x\n    route: pg\n    continue: yes", "rule 1 (x): continue: want true or false"},
		{"rules:\n  - name: x\n    route: pg\n    keep: true\n    continue: true", "rule 1 (x): continue: true and keep/stop"},
		{"rules:\n  - name: x\n    route: pg\n    drop: true", "rules.yaml:2:5: rule 1 (x): drop and route: a dropped line is neither stored nor routed"},
		{"rules:\n  - name: x\n    rate_limit: {by: [service]}", "rule 1 (x): rate_limit: names neither lines nor bytes (per second)"},
		{"rules:\n  - name: x\n    rate_limit: {lines: -1}", `rules.yaml:3:25: rule 1 (x): rate_limit.lines: want a number above 0, not "-1"`},
		{"rules:\n  - name: x\n    rate_limit: {lines: 10, burst_lines: 0.5}", "rule 1 (x): rate_limit.burst_lines: below 1, no line would pass"},
		{"rules:\n  - name: x\n    rate_limit: {lines: 10, max_sets: 0}", "rule 1 (x): rate_limit.max_sets: want a whole number"},
		{"rules:\n  - name: x\n    rate_limit: {lines: 10, per: [a]}", `rule 1 (x): rate_limit: unknown key "per"`},
		{"rules:\n  - name: x\n    drop: true\n    rate_limit: {lines: 1}", "rule 1 (x): drop and rate_limit"},
		{"rules:\n  - name: x\n    extract: {json: [a]}", `rule 1 (x): extract: unknown key "json" (want parser, expr, into, keys)`},
		{"rules:\n  - name: x\n    extract: {parser: xml}", `rules.yaml:3:23: rule 1 (x): extract.parser: unknown parser "xml" (want json, logfmt, regexp, pattern)`},
		{"rules:\n  - name: x\n    extract: {into: fields}", "rule 1 (x): extract.parser: missing"},
		{"rules:\n  - name: x\n    extract: {parser: regexp}", "rule 1 (x): extract.expr: missing (the regexp to run)"},
		{"rules:\n  - name: x\n    extract: {parser: json, expr: a}", "rule 1 (x): extract.expr: json takes no expr"},
		{"rules:\n  - name: x\n    extract: {parser: json, into: labels}", "rule 1 (x): extract.keys: missing (into: labels sets only the labels it names)"},
		{"rules:\n  - name: x\n    extract: {parser: json, into: stream}", `rule 1 (x): extract.into: "stream" (want fields or labels)`},
		{"rules:\n  - name: x\n    extract: {parser: json, into: labels, keys: [__name__]}", `rule 1 (x): extract.keys: "__name__" is not a label name a rule may set`},
		{"rules:\n  - name: x\n    extract: {parser: regexp, expr: '(?P<a'}", "rules.yaml:3:14: rule 1 (x): extract: expr: invalid regexp"},
		{"rules:\n  - name: x\n    extract: {parser: pattern, expr: 'no captures'}", "rule 1 (x): extract: expr:"},
		{"rules:\n  - name: x\n    rewrite: '{{.a'", "rules.yaml:3:14: rule 1 (x): rewrite:"},
		{"rules:\n  - name: x\n    rewrite: '{{range .a}}x{{end}}'", "rule 1 (x): rewrite: range is not allowed"},
		{"rules:\n  - name: x\n    rewrite: ''", "rule 1 (x): rewrite: empty (to drop the line, drop: true)"},
		{"rules:\n  - name: x\n    set_fields: {a-b: c}", `rule 1 (x): set_fields: "a-b" is not a field name a rule may set`},
		{"rules:\n  - name: x\n    set_fields: {a: '{{.b'}", "rule 1 (x): set_fields.a:"},
		{"rules:\n  - name: x\n    set_fields: [a]", "rule 1 (x): set_fields: want a mapping of field name to template"},
		{"rules:\n  - name: x\n    drop_fields: a", "rule 1 (x): drop_fields: want a list of field names"},
		{"rules:\n  - name: x\n    drop_fields: ['']", "rule 1 (x): drop_fields: an empty field name"},
		{"rules:\n  - name: x\n    drop: true\n  - name: x\n    drop: true", `rules.yaml:4:5: rule 2 (x): name: "x" is also the name of rule 1`},
		{"rules:\n  - name: x", "rule 1 (x): no action"},
		{"rules:\n  - name: x\n    drop: true\n    keep: true", "rule 1 (x): drop and keep/stop"},
		{"rules:\n  - name: x\n    drop: yes please", "rules.yaml:3:11: rule 1 (x): drop: want true or false"},
		{"rules:\n  - name: x\n    sample: {rate: 2}", "rules.yaml:3:20: rule 1 (x): sample.rate: want a number from 0 to 1"},
		{"rules:\n  - name: x\n    sample: {by: a}", "rule 1 (x): sample.rate: missing"},
		{"rules:\n  - name: x\n    redact: {detectors: [emails]}", `rule 1 (x): redact.detectors: unknown detector "emails"`},
		{"rules:\n  - name: x\n    redact: {patterns: [{regex: '('}]}", "rule 1 (x): redact.patterns[0].regex: error parsing regexp"},
		{"rules:\n  - name: x\n    redact: {}", "rule 1 (x): redact: names no detectors and no patterns"},
		{"rules:\n  - name: x\n    set_labels: {__name__: a}", `rule 1 (x): set_labels: "__name__" is not a label name a rule may set`},
		{"rules:\n  - name: x\n    set_labels: {a: '{{.b'}", "rule 1 (x): set_labels.a:"},
		{"rules:\n  - name: x\n    metric: {name: sluice_lines}", `rule 1 (x): metric.name: "sluice_lines": names starting with sluice_`},
		{"rules:\n  - name: x\n    metric: {name: a-b}", `rule 1 (x): metric.name: "a-b" is not a Prometheus metric name`},
		{"rules:\n  - name: x\n    metric: {name: a, type: histogram}", "rule 1 (x): metric.unwrap: missing (a histogram needs a number"},
		{"rules:\n  - name: x\n    metric: {name: a, type: summary}", `rule 1 (x): metric.type: "summary" (want counter, gauge or histogram)`},
		{"rules:\n  - name: x\n    metric: {name: a, buckets: [1]}", "rule 1 (x): metric.buckets: only a histogram has buckets"},
		{"rules:\n  - name: x\n    metric: {name: a, type: histogram, unwrap: t, buckets: [1, 1]}", "rule 1 (x): metric.buckets: 1 after 1: want them ascending"},
		{"rules:\n  - name: x\n    metric: {name: a, type: gauge, unwrap: 9}", `rule 1 (x): metric.unwrap: "9" is not a label name`},
		{"rules:\n  - name: x\n    drop_labels: [a]\n    on_error: never", `rule 1 (x): on_error: "never" (want keep`},
		{"rules:\n  - name: x\n    metric: {name: a, max_series: 0}", "rule 1 (x): metric.max_series: want a whole number"},
		{"rules:\n  - name: x\n    metric: {name: a}\n  - name: y\n    metric: {name: a}", `rule 2 (y): metric.name: "a" is also the metric of rule x`},
		{"rules:\n  - name: x\n    metric: {name: a, labels: [9]}", `rule 1 (x): metric.labels: "9" is not a label name`},
		{"rules:\n  - name: x\n    drop: true\n    drop: false", "rule 1 (x): drop: given twice"},
		{"rules:\n  - 3", "rule 1: want a mapping"},
		{"rules:\n  - name: x\n    set_labels: {a: '{{range 1000000000}}x{{end}}'}", "rule 1 (x): set_labels.a: range is not allowed"},
		{"rules:\n  - name: x\n    set_labels: {a: '{{ repeat 1000000000 .b }}'}", "rule 1 (x): set_labels.a: repeat is not allowed"},
	}
	for _, c := range cases {
		_, err := Compile("rules.yaml", []byte(c.src), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.src, err, c.want)
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Errorf("%q: error %T, want *Error", c.src, err)
		}
	}
	if _, err := Compile("r", nil, nil); err == nil || !strings.Contains(err.Error(), "r: the file is empty") {
		t.Errorf("empty file: %v", err)
	}
	// An empty list is no rules.
	for _, src := range []string{"rules:", "rules: []"} {
		if s, err := Compile("r", []byte(src), nil); err != nil || s.Len() != 0 {
			t.Errorf("%q: %v", src, err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"rules:\n  - name: x\n    match: '{a=\"b\"} |= \"c\" | json | d > 1'\n    drop: true",
		"rules:\n  - name: x\n    redact: {detectors: [email], patterns: [{regex: 'a(b)', replace: '$1'}]}\n    set_labels: {a: '{{.b}}'}",
		"rules:\n  - name: x\n    sample: {rate: 0.5, by: t}\n    metric: {name: m, labels: [a]}",
		"rules: [{name: a, keep: true}, {name: b, drop_labels: [c]}]",
		"rules:\n  - name: x\n    extract: {parser: regexp, expr: '(?P<a>\\d+)', into: labels, keys: [a]}\n    set_fields: {f: '{{.a}}'}\n    drop_fields: [g]",
		"rules:\n  - name: x\n    extract: {parser: pattern, expr: '<_> <b> <_>'}\n    rewrite: '{{.b}}'\n    on_error: drop",
		"rules:\n  - name: x\n    rate_limit: {by: [a], lines: 2, bytes: 100, burst_lines: 3, max_sets: 2}",
		"rules:\n  - name: x\n    metric: {name: h, type: histogram, unwrap: took, buckets: [1, 2.5]}\n  - name: y\n    metric: {name: g, type: gauge, unwrap: took}",
		"rules:\n  - name: x\n    match: '{a=\"b\"} |= \"c\"'\n    route: [pg, files]\n    continue: true\n  - name: y\n    route: files",
		"rules:\n  - name: x\n    route: pg\n    sample: {rate: 0.5}",
		"rules: {",
		"- a\n- b",
		"rules:\n  - name: &a x\n    drop: *a",
		// Line filters checkStages does not compile, secret_pairs, and a
		// file decoded by runs whose scalar runs across a rule's start.
		"rules:\n  - name: x\n    match: '{a=~\".+\"} |~ \"(?i)err(or)?\" != \"debug\" !~ \"x+y\"'\n    redact: {detectors: [secret_pairs, bearer]}\n  - name: y\n    match: '{a=\"b\"} |= ip(\"10.0.0.0/8\")'\n    drop: true",
		"rules:\n  - name: x\n    rewrite: \"a\n  - name: y\"\n  - name: z\n    redact: {detectors: [secret_pairs]}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Compile("f.yaml", data, nil)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				if !strings.HasPrefix(err.Error(), "f.yaml") {
					t.Fatalf("error does not name the file: %v", err)
				}
				return
			}
			for _, p := range e.Problems {
				if p.Msg == "" {
					t.Fatalf("empty problem in %v", err)
				}
				// Every problem has its place, but a YAML syntax error
				// the parser gives none for, and an empty file.
				if p.Line == 0 && !strings.HasPrefix(p.Msg, "yaml: ") && !strings.HasPrefix(p.Msg, "the file is empty") {
					t.Fatalf("problem without a line: %v", err)
				}
			}
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// What loads runs.
		b := parseLines(t, `{"service":"api","msg":"a@b.io password=x"}`, `plain line`)
		s.Apply(b)
	})
}

func TestTrace(t *testing.T) {
	s := compile(t, `
rules:
  - name: a
    match: '{service="x"} |= "y"'
    metric: {name: c}
  - name: b
    sample: {rate: 0}
`)
	b := parseLines(t, `service=x msg=y`)
	var got []string
	s.Trace(b, func(st Step) { got = append(got, fmt.Sprintf("%d %s %s", st.Record, st.Rule, st.Action)) })
	want := []string{"0 a matched", "0 a counted", "0 b matched", "0 b sampled_out"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestStreamsKept checks the streams an evaluator keeps decided across
// batches: by tenant as well as labels, and past maxStreams, when it
// forgets them all (those of the batch under way too) and decides again.
func TestStreamsKept(t *testing.T) {
	s := compile(t, `
rules:
  - name: a-only
    tenant: a
    match: '{service=~"s1-.*"} |= "x"'
    metric: {name: a_only}
  - name: all
    match: '{service=~"s2-.*"}'
    metric: {name: all_tenants}
`)
	for _, n := range []int{300, maxStreams + 1000} {
		// Every stream twice, the second time after all the others.
		lines := make([]string, 2*n)
		want := map[string]int{}
		for i := range n {
			lines[i] = fmt.Sprintf("service=s%d-%d x", i%3, i)
			lines[n+i] = lines[i]
			switch i % 3 {
			case 1:
				want["a-only"] += 2
			case 2:
				want["all"] += 2
			}
		}
		wantB := map[string]int{"all": want["all"]}
		for round, tenant := range []string{"a", "b", "a", "b"} {
			b := parseLines(t, lines...)
			b.Tenant = tenant
			got := map[string]int{}
			s.Trace(b, func(st Step) {
				if st.Action == Matched {
					got[st.Rule]++
				}
			})
			w := want
			if tenant == "b" {
				w = wantB
			}
			if !maps.Equal(got, w) {
				t.Errorf("%d streams, batch %d, tenant %s: matched %v, want %v", n, round, tenant, got, w)
			}
		}
	}
}

func TestCommonSubstring(t *testing.T) {
	cases := []struct {
		lits []string
		want string
	}{
		{[]string{"timeout on shard-7", "timeout from shard-7", "refused on shard-7", "refused from shard-7"}, " shard-7"},
		{[]string{"abcdef", "xxbcdeyy"}, "bcde"},
		{[]string{"abc", "abc"}, ""}, // shorter than mustMin
		{[]string{"error", "fatal"}, ""},
		{[]string{"same words", "same words"}, "same words"},
	}
	for _, c := range cases {
		var lits [][]byte
		for _, l := range c.lits {
			lits = append(lits, []byte(l))
		}
		if got := string(commonSubstring(lits)); got != c.want {
			t.Errorf("%q: %q, want %q", c.lits, got, c.want)
		}
	}
}

// TestRedactPushedJSON: a redacted JSON line of a Loki push, whose keys
// are fields of the line, keeps its structured metadata as metadata and
// none of its parsed keys becomes one (they go with the old line).
func TestRedactPushedJSON(t *testing.T) {
	s := compile(t, "rules:\n  - name: m\n    redact: {detectors: [email]}\n")
	d := loki.Decoder{Limits: loki.DefaultLimits, Fields: loki.DefaultLineFields}
	b := &record.Batch{}
	body := `{"streams":[{"stream":{"app":"x"},"values":[["1","{\"msg\":\"mail bob@example.com\",\"n\":7}",{"trace":"t1","owner":"carol@corp.io"}],["2","{\"msg\":\"nothing here\"}",{"trace":"t2"}]]}]}`
	if _, err := d.DecodeJSON([]byte(body), b); err != nil {
		t.Fatal(err)
	}
	s.Apply(b)
	want := []string{"owner=<redacted> trace=t1", "msg=nothing here@ trace=t2"}
	for i := range b.Records {
		r := &b.Records[i]
		line := string(b.Bytes(r.Line))
		if strings.Contains(line, "@example.com") || !r.MsgIsLine() {
			t.Errorf("record %d: line %s", i, line)
		}
		var got []string
		for _, f := range b.RecordFields(i) {
			v := b.Name(&f) + "=" + string(b.AppendString(nil, &f))
			if r.InLine(&f) {
				v += "@"
			} else if !r.IsMetadata(&f) {
				t.Errorf("record %d: field %s neither in the line nor metadata", i, v)
			}
			got = append(got, v)
		}
		if strings.Join(got, " ") != want[i] {
			t.Errorf("record %d: fields %q, want %q", i, strings.Join(got, " "), want[i])
		}
	}
}
