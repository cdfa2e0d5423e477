package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/protocol/elastic"
	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
)

// encodedBatch is what the Loki and Elasticsearch sinks will send: lines
// with unicode, quotes, backslashes, nothing, invalid UTF-8, structured
// metadata, over several streams, one second apart from qStart.
func encodedBatch(t *testing.T) *record.Batch {
	t.Helper()
	d := loki.Decoder{Limits: loki.DefaultLimits}
	var b record.Batch
	d.Begin(&b)
	lines := []struct {
		app, env, line string
		meta           []string
	}{
		{"api", "prod", "GET /users 200", nil},
		{"api", "prod", `quotes "x" and \backslashes\ and a literal \n`, []string{"trace_id", "abc123"}},
		{"web", "prod", "héllo wörld ✓ 日本語 🎉", []string{"user", `o"brien\`, "k", "日本"}},
		{"api", "dev", "", nil},
		{"web", "prod", "tab\there", nil},
		{"api", "prod", `{"level":"error","msg":"json line"}`, nil},
		{"web", "dev \"q\"", "bad utf8 \xff end", nil},
	}
	for i, l := range lines {
		id, err := d.Stream(&b, record.Labels{{Name: "app", Value: l.app}, {Name: "env", Value: l.env}})
		if err != nil {
			t.Fatal(err)
		}
		var meta [][2][]byte
		for k := 0; k+1 < len(l.meta); k += 2 {
			meta = append(meta, [2][]byte{[]byte(l.meta[k]), []byte(l.meta[k+1])})
		}
		var res loki.Result
		d.Add(&b, id, 1768435201000000000+int64(i)*1e9, []byte(l.line), meta, &res)
		if res.Rejected > 0 {
			t.Fatal(res.Reasons)
		}
	}
	return &b
}

// queryEntry is one value of a categorize-labels answer, with its stream.
type queryEntry struct {
	Stream string
	TS     string
	Line   string
	Meta   string
}

// queried returns every line of a tenant through the query API, with
// stream labels and structured metadata apart, in time order.
func queried(t *testing.T, f *fixture, tenant string) []queryEntry {
	t.Helper()
	code, _, body := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{app=~".+"}`}, "start": {qStart}, "end": {qEnd},
		"direction": {"forward"}, "limit": {"1000"}}, "X-Scope-OrgID", tenant, "X-Loki-Response-Encoding-Flags", "categorize-labels")
	if code != 200 {
		t.Fatalf("query: %d %s", code, body)
	}
	var doc struct {
		Data struct {
			Result []struct {
				Stream map[string]string
				Values [][]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	var out []queryEntry
	for _, s := range doc.Data.Result {
		ls, _ := json.Marshal(s.Stream) // sorted keys
		for _, v := range s.Values {
			var e queryEntry
			e.Stream = string(ls)
			var meta struct {
				StructuredMetadata map[string]string `json:"structuredMetadata"`
			}
			if len(v) != 3 || json.Unmarshal(v[0], &e.TS) != nil || json.Unmarshal(v[1], &e.Line) != nil || json.Unmarshal(v[2], &meta) != nil {
				t.Fatalf("value %s", v)
			}
			m, _ := json.Marshal(meta.StructuredMetadata)
			e.Meta = string(m)
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b queryEntry) int { return cmpString(a.TS, b.TS) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case len(a) != len(b):
		return len(a) - len(b)
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestEncodedPushStored: the Loki encoder's bodies, JSON and snappy
// protobuf, are accepted by the push API, and the query API gives back
// every line, its time, stream labels and structured metadata.
func TestEncodedPushStored(t *testing.T) {
	f := newFixture(t, plainConfig())
	b := encodedBatch(t)
	var want []queryEntry
	for i := range b.Records {
		r := &b.Records[i]
		stream := map[string]string{}
		for _, l := range b.Labels(i) {
			stream[l.Name] = l.Value
		}
		var meta map[string]string // null when none, as the answer's {}
		for _, fl := range loki.AppendMetadata(nil, b, i) {
			if meta == nil {
				meta = map[string]string{}
			}
			meta[b.Name(&fl)] = string(b.Raw(&fl))
		}
		ls, _ := json.Marshal(stream)
		m, _ := json.Marshal(meta)
		// The query API's JSON, as any, has U+FFFD for invalid UTF-8.
		want = append(want, queryEntry{string(ls), fmt.Sprint(r.Time), string([]rune(string(b.Bytes(r.Line)))), string(m)})
	}
	var e loki.Encoder
	for _, tc := range []struct{ name, contentType string }{{"json", "application/json"}, {"proto", "application/x-protobuf"}} {
		t.Run(tc.name, func(t *testing.T) {
			body := e.AppendPushJSON(nil, b)
			if tc.name == "proto" {
				body = e.AppendPushProto(nil, b)
			}
			if code, reply := f.do("POST", "/loki/api/v1/push", body, "Content-Type", tc.contentType, "X-Scope-OrgID", tc.name); code != 204 {
				t.Fatalf("push: %d %s", code, reply)
			}
			if got := queried(t, f, tc.name); !slices.Equal(got, want) {
				t.Errorf("queried\n%q\nwant\n%q", got, want)
			}
		})
	}
	// Protobuf keeps the invalid bytes: the stored line is the one sent.
	if stored := f.stored("proto"); !slices.Contains(stored, `{app="web", env="dev \"q\""} bad utf8 `+"\xff"+` end`) {
		t.Errorf("protobuf: invalid UTF-8 not stored as sent: %q", stored)
	}
}

// TestEncodedBulkStored: the Elasticsearch encoder's body is accepted by
// the bulk API, every item created, and the query API gives back each
// document at its record's time under its record's labels.
func TestEncodedBulkStored(t *testing.T) {
	f := newFixture(t, plainConfig())
	b := encodedBatch(t)
	var e elastic.Encoder
	body := e.AppendBulk(nil, b, "logs-sluice")
	code, reply := f.do("POST", "/_bulk?_stream_fields=app,env&_time_field=@timestamp&_msg_field=message", body,
		"Content-Type", "application/x-ndjson", "X-Scope-OrgID", "es")
	if code != 200 {
		t.Fatalf("bulk: %d %s", code, reply)
	}
	var r struct {
		Errors bool
		Items  []map[string]struct{ Status int }
	}
	if err := json.Unmarshal([]byte(reply), &r); err != nil || r.Errors || len(r.Items) != len(b.Records) {
		t.Fatalf("bulk reply %s (%v)", reply, err)
	}
	for i, it := range r.Items {
		if it["create"].Status != 201 {
			t.Errorf("item %d: %+v", i, it)
		}
	}
	got := queried(t, f, "es")
	if len(got) != len(b.Records) {
		t.Fatalf("%d lines queried, %d sent", len(got), len(b.Records))
	}
	for i := range b.Records {
		stream := map[string]string{}
		for _, l := range b.Labels(i) {
			stream[l.Name] = l.Value
		}
		ls, _ := json.Marshal(stream)
		w := queryEntry{string(ls), fmt.Sprint(b.Records[i].Time), string(e.AppendDoc(nil, b, i)), "null"}
		if got[i] != w {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], w)
		}
	}
}
