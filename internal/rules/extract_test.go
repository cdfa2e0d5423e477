package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

// fieldsOf renders record i's fields, name=value, in order.
func fieldsOf(b *record.Batch, i int) string {
	var out []string
	for _, f := range b.RecordFields(i) {
		out = append(out, b.Name(&f)+"="+string(b.AppendString(nil, &f)))
	}
	return strings.Join(out, " ")
}

func TestExtract(t *testing.T) {
	lines := []string{
		`service=api msg="GET /users 200 12ms" user=bob`,
		`{"service":"web","msg":"POST /login 500 3ms","ctx":{"region":"eu"}}`,
		`{"service":"db","msg":"no numbers here"}`,
	}
	cases := []struct {
		name, rules string
		want        []string // per record: labels | fields
	}{
		{"regexp into fields", `
rules:
  - name: req
    extract: {parser: regexp, expr: '(?P<method>[A-Z]+) (?P<path>/\S*) (?P<status>\d+)'}`, []string{
			`{service="api"} | service=api msg=GET /users 200 12ms user=bob method=GET path=/users status=200`,
			`{service="web"} | service=web msg=POST /login 500 3ms ctx.region=eu method=POST path=/login status=500`,
			`{service="db"} | service=db msg=no numbers here`}},
		{"pattern into labels, only the keys named", `
rules:
  - name: status
    extract: {parser: pattern, expr: '<_> /<_> <status> <_>', into: labels, keys: [status]}`, []string{
			`{service="api", status="200"} | service=api msg=GET /users 200 12ms user=bob`,
			`{service="db"} | service=db msg=no numbers here`,
			`{service="web", status="500"} | service=web msg=POST /login 500 3ms ctx.region=eu`}},
		{"json into labels, nested key", `
rules:
  - name: region
    match: '{service="web"}'
    extract: {parser: json, into: labels, keys: [ctx_region]}`, []string{
			`{service="api"} | service=api msg=GET /users 200 12ms user=bob`,
			`{ctx_region="eu", service="web"} | service=web msg=POST /login 500 3ms ctx.region=eu`,
			`{service="db"} | service=db msg=no numbers here`}},
		{"a field of the same name is replaced", `
rules:
  - name: user
    match: '{service="api"}'
    extract: {parser: regexp, expr: '(?P<user>GET)'}`, []string{
			`{service="api"} | service=api msg=GET /users 200 12ms user=GET`,
			`{service="web"} | service=web msg=POST /login 500 3ms ctx.region=eu`,
			`{service="db"} | service=db msg=no numbers here`}},
		{"extracted values feed the rule's templates", `
rules:
  - name: tag
    match: '{service=~".+"} |~ " [0-9]{3} "'
    extract: {parser: regexp, expr: ' (?P<status>\d{3}) ', keys: [status]}
    set_labels: {class: '{{ .status | substr 0 1 }}xx'}`, []string{
			`{class="2xx", service="api"} | service=api msg=GET /users 200 12ms user=bob status=200`,
			`{class="5xx", service="web"} | service=web msg=POST /login 500 3ms ctx.region=eu status=500`,
			`{service="db"} | service=db msg=no numbers here`}},
		{"a line the parser fails on is left as it was", `
rules:
  - name: j
    extract: {parser: json, into: labels, keys: [service2]}`, []string{
			`{service="api"} | service=api msg=GET /users 200 12ms user=bob`,
			`{service="web"} | service=web msg=POST /login 500 3ms ctx.region=eu`,
			`{service="db"} | service=db msg=no numbers here`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compile(t, c.rules)
			b := parseLines(t, lines...)
			s.Apply(b)
			var got []string
			for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
				got = append(got, b.Labels(i).String()+" | "+fieldsOf(b, i))
			}
			slices.Sort(got)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestExtractThenRedact: a value extracted into a field by one rule is
// redacted by a later one: no copy of it reaches the WAL.
func TestExtractThenRedact(t *testing.T) {
	s := compile(t, `
rules:
  - name: who
    extract: {parser: regexp, expr: 'by (?P<who>\S+)'}
  - name: mail
    redact: {detectors: [email]}`)
	b := parseLines(t, `level=info msg="login by bob@example.com"`)
	s.Apply(b)
	got := fieldsOf(b, 0) + " " + string(b.Bytes(b.Records[0].Line))
	if strings.Contains(got, "bob@example.com") || !strings.Contains(got, "who=<redacted>") {
		t.Errorf("got %s", got)
	}
}

// TestExtractMetaAndTrace: Trace says extracted, the rule counts it, a
// line the keys are not in is matched and left alone.
func TestExtractTrace(t *testing.T) {
	m := NewMetrics(nil)
	s, err := Compile("rules.yaml", []byte(`
rules:
  - name: x
    extract: {parser: logfmt, keys: [a]}
`), m)
	if err != nil {
		t.Fatal(err)
	}
	b := parseLines(t, `a=1 b=2`, `{"c":3}`)
	var steps []string
	s.Trace(b, func(st Step) { steps = append(steps, st.Action.String()) })
	if want := []string{"matched", "extracted", "matched"}; !slices.Equal(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	// The parsed field a is replaced in place, not added twice.
	if got := fieldsOf(b, 0); got != "a=1 b=2" {
		t.Errorf("fields %q, want a=1 b=2", got)
	}
	if c := m.Rule("x"); c.Matched != 2 || c.Extracted != 1 || c.Errors != 0 {
		t.Errorf("counts %+v", c)
	}
}

// TestSharedParseInvalidated: rules that share a parser take the first
// one's parse of a line, but not once an earlier rule changed the labels
// (a parsed name that is now a stream label becomes name_extracted) or
// the line (redacted).
func TestSharedParseInvalidated(t *testing.T) {
	s := compile(t, `
rules:
  - name: parse
    match: '{service="api"} | logfmt'
    metric: {name: seen}
  - name: relabel
    match: '{service="api"}'
    set_labels: {user: fixed}
  - name: sees-new-labels
    match: '{service="api"} | logfmt | user_extracted="bob"'
    set_labels: {saw: extracted}
  - name: mail
    redact: {detectors: [email]}
  - name: sees-new-line
    match: '{service="api"} | logfmt | mail="<redacted>"'
    drop: true
`)
	b := parseLines(t, `service=api user=bob mail=bob@example.com`, `service=api user=bob mail=none`)
	s.Apply(b)
	got := result(b)
	want := []string{`{saw="extracted", service="api", user="fixed"} service=api user=bob mail=none`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestExtractFeedsActions: what extract finds is what the rule's
// rewrite, set_fields and metric unwrap see.
func TestExtractFeedsActions(t *testing.T) {
	m := NewMetrics(nil)
	s, err := Compile("rules.yaml", []byte(`
rules:
  - name: x
    extract: {parser: regexp, expr: 'took=(?P<ms>\d+)', keys: [ms]}
    rewrite: 'took {{.ms}} ms'
    set_fields: {slow: '{{ if gt (int .ms) 100 }}yes{{ end }}'}
    metric: {name: took_ms, type: histogram, unwrap: ms, buckets: [100]}
`), m)
	if err != nil {
		t.Fatal(err)
	}
	b := parseLines(t, `level=info took=250`)
	s.Apply(b)
	if got := string(b.Bytes(b.Records[0].Line)) + " | " + fieldsOf(b, 0); got != "took 250 ms | level=info took=250 ms=250 slow=yes" {
		t.Errorf("got %q", got)
	}
	if c := m.Rule("x"); c.Errors != 0 || c.Rewritten != 1 {
		t.Errorf("counts %+v", c)
	}
	if se := s.rules[0].metric.series[""]; se == nil || se.n.Load() != 1 || se.buckets[0].Load() != 0 {
		t.Errorf("took_ms: %+v, want one observation above 100", se)
	}
}
