package loki

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

// fieldsOf renders record i's fields: name=value, with "@" for a field
// of the line and "meta" for structured metadata.
func fieldsOf(t *testing.T, b *record.Batch, i int) string {
	t.Helper()
	r := &b.Records[i]
	if r.Msg != r.Line {
		t.Errorf("record %d: message %v, not its line %v", i, r.Msg, r.Line)
	}
	var out []string
	fs := b.RecordFields(i)
	for k := range fs {
		f := &fs[k]
		where := "meta"
		switch {
		case r.InLine(f):
			if r.IsMetadata(f) {
				t.Errorf("record %d: field %s of the line taken for metadata", i, b.Name(f))
			}
			where = "@" + strconv.Itoa(int(f.Raw.Off-r.Line.Off))
		case !r.IsMetadata(f):
			t.Errorf("record %d: field %s neither in the line nor metadata", i, b.Name(f))
		}
		out = append(out, fmt.Sprintf("%s=%s(%s)%s", b.Name(f), b.Raw(f), f.Kind, where))
	}
	return strings.Join(out, " ")
}

// TestLineFields: a pushed line that is a JSON object keeps its keys as
// fields, spans of the line, ahead of its structured metadata; any other
// line (not JSON, not an object, malformed, too many fields) is text
// alone, and is stored all the same.
func TestLineFields(t *testing.T) {
	lines := []string{
		`{"level":"info","msg":"hi \"you\"","n":7,"http":{"status":503},"ok":true,"tags":["a"]}`,
		`  {"a":1}`,
		`{"a":`,
		`[1,2]`,
		`plain text level=error`,
		`{"a":1,"b":2,"c":3,"d":4}`, // over a limit of 3 fields below
		`{}`,
	}
	want := []string{
		`level=info(string)@10 msg=hi \"you\"(string)@23 n=7(int)@39 http.status=503(int)@58 ok=true(bool)@68 tags=["a"](json)@80 trace=ab(string)meta`,
		`a=1(int)@7`,
		``,
		``,
		``,
		``,
		``,
	}
	var body strings.Builder
	body.WriteString(`{"streams":[{"stream":{"app":"x"},"values":[`)
	for i, l := range lines {
		if i > 0 {
			body.WriteByte(',')
		}
		q := jsonQuote(l)
		fmt.Fprintf(&body, `["%d",%s`, 1768464000000000000+i, q)
		if i == 0 {
			body.WriteString(`,{"trace":"ab"}`)
		}
		body.WriteByte(']')
	}
	body.WriteString(`]}]}`)
	d := Decoder{Limits: DefaultLimits, Fields: LineFields{JSON: true, MaxFields: 6}, Reuse: true}
	for round := range 2 { // the second with the tables of the first, reset
		var b record.Batch
		res, err := d.DecodeJSON([]byte(body.String()), &b)
		if err != nil || res.Rejected > 0 || len(b.Records) != len(lines) {
			t.Fatalf("round %d: %v %+v, %d records", round, err, res, len(b.Records))
		}
		for i := range lines {
			if got := string(b.Bytes(b.Records[i].Line)); got != lines[i] {
				t.Errorf("record %d: line %q, want %q", i, got, lines[i])
			}
			if i == 5 {
				continue // four fields: under the limit of 6
			}
			if got := fieldsOf(t, &b, i); got != want[i] {
				t.Errorf("round %d, line %q: fields\n  %s\nwant\n  %s", round, lines[i], got, want[i])
			}
		}
		if got := fieldsOf(t, &b, 5); !strings.HasPrefix(got, "a=1(int)@5 b=2(int)@11") {
			t.Errorf("round %d: four fields under a limit of 6: %s", round, got)
		}
		// What an encoder sends of them is the line and its metadata.
		roundTrip(t, &b)
	}

	d.Fields.MaxFields = 3
	var b record.Batch
	if _, err := d.DecodeJSON([]byte(body.String()), &b); err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(t, &b, 5); got != "" {
		t.Errorf("four fields over a limit of 3 kept: %s", got)
	}
	if got := fieldsOf(t, &b, 0); got != "trace=ab(string)meta" {
		t.Errorf("six fields over a limit of 3: %s", got)
	}

	d.Fields = LineFields{}
	if _, err := d.DecodeJSON([]byte(body.String()), &b); err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(t, &b, 0); got != "trace=ab(string)meta" {
		t.Errorf("without Fields.JSON: %s", got)
	}
}

// jsonQuote quotes s as a JSON string.
func jsonQuote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range []byte(s) {
		switch c {
		case '"', '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// BenchmarkLineFields: a push of 1,000 JSON lines (the shape of the
// app corpus) decoded as text alone, and with their keys as fields.
//
//	go test -run '^$' -bench LineFields -benchmem ./internal/protocol/loki/
func BenchmarkLineFields(b *testing.B) {
	var body strings.Builder
	body.WriteString(`{"streams":[{"stream":{"app":"shop"},"values":[`)
	for i := range 1000 {
		if i > 0 {
			body.WriteByte(',')
		}
		line := fmt.Sprintf(`{"ts":"2026-01-15T08:00:%02d.%03dZ","level":"%s","service":"api","msg":"GET /api/users/%d 200","http":{"method":"GET","status":200,"latency_ms":%d.%d},"user_id":"u%05d","trace_id":"%016x"}`,
			i%60, i%1000, []string{"info", "warn", "error"}[i%3], i%97, i%300, i%10, i*7919%50000, uint64(i)*0x9e3779b97f4a7c15)
		q := jsonQuote(line)
		fmt.Fprintf(&body, `["%d",%s]`, 1768464000000000000+int64(i)*1e6, q)
	}
	body.WriteString(`]}]}`)
	data := []byte(body.String())
	for _, json := range []bool{false, true} {
		b.Run(fmt.Sprintf("fields=%v", json), func(b *testing.B) {
			d := Decoder{Limits: DefaultLimits, Discover: DefaultDiscovery, Reuse: true}
			if json {
				d.Fields = DefaultLineFields
			}
			var batch record.Batch
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := d.DecodeJSON(data, &batch); err != nil {
					b.Fatal(err)
				}
				d.Clear()
			}
		})
	}
}
