package server

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestOTLPJSON(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}]},
"scopeLogs":[{"scope":{"name":"app.logger","version":"1.0"},"logRecords":[
 {"timeUnixNano":"1768464000123000000","severityNumber":9,"severityText":"INFO","body":{"stringValue":"order placed"},
  "traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174",
  "attributes":[{"key":"order.id","value":{"intValue":"42"}},{"key":"vip","value":{"boolValue":true}},
   {"key":"items","value":{"arrayValue":{"values":[{"stringValue":"a"},{"doubleValue":1.5}]}}}]},
 {"observedTimeUnixNano":1768464001000000000,"body":{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}}
]}]}]}`
	code, reply := f.do("POST", "/v1/logs", []byte(body), "Content-Type", "application/json")
	if code != 200 || reply != "{}" {
		t.Fatalf("export: %d %s", code, reply)
	}
	// Stored as Loki 3 stores OTLP: the body as the line, service.name as
	// a stream label, the rest as structured metadata.
	want := []string{`{service_name="checkout"} order placed`, `{service_name="checkout"} {"k":"v"}`}
	if got := f.stored("default"); !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, _, reply = get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{service_name="checkout"}`}, "start": {"1768464000000000000"},
		"end": {"1768464002000000000"}, "direction": {"forward"}}, "X-Loki-Response-Encoding-Flags", "categorize-labels")
	wantValues := `"values":[` +
		`["1768464000123000000","order placed",{"structuredMetadata":{"detected_level":"info","items":"[\"a\",1.5]","order_id":"42",` +
		`"scope_name":"app.logger","scope_version":"1.0","severity_number":"9","severity_text":"INFO","span_id":"eee19b7ec3c1b174",` +
		`"trace_id":"5b8efff798038103d269b633813fc60c","vip":"true"}}],` +
		`["1768464001000000000","{\"k\":\"v\"}",{"structuredMetadata":{"detected_level":"unknown","scope_name":"app.logger","scope_version":"1.0"}}]]`
	if !strings.Contains(reply, `"result":[{"stream":{"service_name":"checkout"},`+wantValues+"}]") {
		t.Errorf("query: %s\nwant values %s", reply, wantValues)
	}
	// Metadata is queryable as labels.
	_, _, reply = get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{service_name="checkout"} | trace_id="5b8efff798038103d269b633813fc60c" | order_id > 40`},
		"start": {"1768464000000000000"}, "end": {"1768464002000000000"}})
	if !strings.Contains(reply, `"order placed"`) || strings.Contains(reply, `{\"k\"`) {
		t.Errorf("metadata filter: %s", reply)
	}
	if code, reply := f.do("POST", "/v1/logs", []byte(`{"resourceLogs":[`), "Content-Type", "application/json"); code != 400 || !strings.Contains(reply, `"code":3`) {
		t.Errorf("malformed: %d %s", code, reply)
	}
}

func TestOTLPProto(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	str := func(s string) []byte {
		var v []byte
		v = protowire.AppendTag(v, 1, protowire.BytesType)
		return protowire.AppendString(v, s)
	}
	kv := func(k string, v []byte) []byte {
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, k)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	var res []byte
	res = protowire.AppendTag(res, 1, protowire.BytesType)
	res = protowire.AppendBytes(res, kv("service.name", str("api")))
	var rec []byte
	rec = protowire.AppendTag(rec, 1, protowire.Fixed64Type)
	rec = protowire.AppendFixed64(rec, 1768464000000000000)
	rec = protowire.AppendTag(rec, 3, protowire.BytesType)
	rec = protowire.AppendString(rec, "WARN")
	rec = protowire.AppendTag(rec, 5, protowire.BytesType)
	rec = protowire.AppendBytes(rec, str("disk \"full\""))
	var scope []byte
	scope = protowire.AppendTag(scope, 2, protowire.BytesType)
	scope = protowire.AppendBytes(scope, rec)
	var rl []byte
	rl = protowire.AppendTag(rl, 1, protowire.BytesType)
	rl = protowire.AppendBytes(rl, res)
	rl = protowire.AppendTag(rl, 2, protowire.BytesType)
	rl = protowire.AppendBytes(rl, scope)
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, rl)
	code, reply := f.do("POST", "/v1/logs", req, "Content-Type", "application/x-protobuf")
	if code != 200 || reply != "" {
		t.Fatalf("export: %d %q", code, reply)
	}
	want := []string{`{service_name="api"} disk "full"`}
	if got := f.stored("default"); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	if code, _ := f.do("POST", "/v1/logs", []byte{0x0a, 0xff, 0x01}, "Content-Type", "application/x-protobuf"); code != 400 {
		t.Errorf("malformed: %d, want 400", code)
	}
}
