package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
)

func TestFieldsAndRewrite(t *testing.T) {
	lines := []string{
		`{"service":"api","msg":"GET /users","status":200,"user":"bob","token":"t0k"}`,
		`level=error service=db msg="slow query" took=3s`,
	}
	cases := []struct {
		name, rules string
		want        []string // per kept record: labels line | fields
	}{
		{"set_fields from labels and parsed values", `
rules:
  - name: f
    match: '{service=~".+"} | json | logfmt'
    set_fields: {team: 'core-{{.service}}', who: '{{.user}}'}`, []string{
			`{service="api"} {"service":"api","msg":"GET /users","status":200,"user":"bob","token":"t0k"} | service=api msg=GET /users status=200 user=bob token=t0k team=core-api who=bob`,
			`{service="db"} level=error service=db msg="slow query" took=3s | level=error service=db msg=slow query took=3s team=core-db`}},
		{"set_fields replaces a field; an empty value removes it", `
rules:
  - name: f
    match: '{service="api"} | json'
    set_fields: {user: '{{ .user | upper }}', status: ''}`, []string{
			`{service="api"} {"service":"api","msg":"GET /users","status":200,"user":"bob","token":"t0k"} | service=api msg=GET /users user=BOB token=t0k`,
			`{service="db"} level=error service=db msg="slow query" took=3s | level=error service=db msg=slow query took=3s`}},
		{"drop_fields", `
rules:
  - name: f
    drop_fields: [token, took, absent]`, []string{
			`{service="api"} {"service":"api","msg":"GET /users","status":200,"user":"bob","token":"t0k"} | service=api msg=GET /users status=200 user=bob`,
			`{service="db"} level=error service=db msg="slow query" took=3s | level=error service=db msg=slow query`}},
		{"rewrite, and a later rule sees the new line", `
rules:
  - name: short
    match: '{service=~".+"} | json | logfmt'
    rewrite: '{{.service}}: {{.msg}}'
  - name: drop-db
    match: '{service=~".+"} |= "db: slow"'
    drop: true`, []string{
			`{service="api"} api: GET /users | service=api msg=GET /users status=200 user=bob token=t0k`}},
		{"a failing template leaves the line as it was", `
rules:
  - name: bad
    match: '{service="api"}'
    set_labels: {ok: yes}
    set_fields: {n: '{{ div 1 0 }}'}
    rewrite: 'never'`, []string{
			`{service="api"} {"service":"api","msg":"GET /users","status":200,"user":"bob","token":"t0k"} | service=api msg=GET /users status=200 user=bob token=t0k`,
			`{service="db"} level=error service=db msg="slow query" took=3s | level=error service=db msg=slow query took=3s`}},
		{"the message field cannot be dropped", `
rules:
  - name: bad
    drop_fields: [msg]
    set_labels: {ok: "yes"}`, []string{
			`{service="api"} {"service":"api","msg":"GET /users","status":200,"user":"bob","token":"t0k"} | service=api msg=GET /users status=200 user=bob token=t0k`,
			`{service="db"} level=error service=db msg="slow query" took=3s | level=error service=db msg=slow query took=3s`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compile(t, c.rules)
			b := parseLines(t, lines...)
			s.Apply(b)
			var got []string
			for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
				got = append(got, b.Labels(i).String()+" "+string(b.Bytes(b.Records[i].Line))+" | "+fieldsOf(b, i))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestRewriteStored: a rewritten line and changed fields are what the
// WAL's row encoding stores; a rewrite that puts back a value an earlier
// rule redacted (here from the record's fields) is redacted again.
func TestRewriteStored(t *testing.T) {
	m := NewMetrics(nil)
	s, err := Compile("rules.yaml", []byte(`
rules:
  - name: mail
    redact: {detectors: [email]}
  - name: short
    match: '{service="api"}'
    rewrite: 'user {{.user}} did {{.msg}}'
    set_fields: {seen: "yes"}
    drop_fields: [status]
`), m)
	if err != nil {
		t.Fatal(err)
	}
	b := parseLines(t, `{"service":"api","msg":"login","status":200,"user":"bob@example.com"}`)
	// A Loki push record's fields are its structured metadata, which
	// the rewrite's template sees: make this one such a record.
	ln := b.Records[0].Line
	b.Records[0].Msg, b.Records[0].MsgFlags = ln, 0
	fs := b.RecordFields(0)
	keep := fs[:0]
	for _, f := range fs {
		v := append([]byte(nil), b.AppendString(nil, &f)...)
		off := uint32(len(b.Data))
		b.Data = append(b.Data, v...)
		f.Raw, f.Kind, f.Flags, f.Num, f.Role = record.Span{Off: off, Len: uint32(len(v))}, record.String, 0, 0, record.RoleNone
		keep = append(keep, f)
	}
	b.Records[0].NumFields = uint32(len(keep))
	s.Apply(b)

	blk, err := rows.Decode(new(rows.Encoder).Append(nil, "t", b))
	if err != nil {
		t.Fatal(err)
	}
	var r rows.Row
	fields := blk.Row(0, &r, nil)
	got := string(r.Line)
	for _, f := range fields {
		got += " " + blk.Names[f.Name] + "=" + string(f.Value)
	}
	want := `user <redacted> did login service=api msg=login user=<redacted> seen=yes`
	if got != want {
		t.Errorf("stored %q, want %q", got, want)
	}
	if c := m.Rule("short"); c.Rewritten != 1 || c.FieldsSet != 1 || c.Errors != 0 {
		t.Errorf("counts %+v", c)
	}
}
