package server

import (
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
	want := []string{
		`{service_name="checkout"} {"time":"2026-01-15T08:00:00.123Z","severity_text":"INFO","severity_number":9,"body":"order placed",` +
			`"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b174","service_name":"checkout","scope_name":"app.logger",` +
			`"scope_version":"1.0","order_id":42,"vip":true,"items":["a",1.5]}`,
		`{service_name="checkout"} {"time":"2026-01-15T08:00:01Z","observed_time":"2026-01-15T08:00:01Z","body":{"k":"v"},` +
			`"service_name":"checkout","scope_name":"app.logger","scope_version":"1.0"}`,
	}
	if got := f.stored("default"); !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
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
	want := []string{`{service_name="api"} {"time":"2026-01-15T08:00:00Z","severity_text":"WARN","body":"disk \"full\"","service_name":"api"}`}
	if got := f.stored("default"); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	if code, _ := f.do("POST", "/v1/logs", []byte{0x0a, 0xff, 0x01}, "Content-Type", "application/x-protobuf"); code != 400 {
		t.Errorf("malformed: %d, want 400", code)
	}
}
