package otlp

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
)

// entries renders a batch as "{stream} line | meta=value ..." lines.
func entries(b *record.Batch) []string {
	var out []string
	for i := range b.Records {
		r := &b.Records[i]
		var meta []string
		for _, f := range b.RecordFields(i) {
			meta = append(meta, b.Names.Get(f.Name)+"="+string(b.Raw(&f)))
		}
		out = append(out, fmt.Sprintf("%s %d %s | %s", b.Streams.Get(r.Stream), r.Time, b.Bytes(r.Line), strings.Join(meta, " ")))
	}
	return out
}

func TestDecodeMapping(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     string
		discover loki.Discovery
		index    []string
		want     []string
	}{{
		name: "labels, metadata and a string body",
		body: `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}},
			{"key":"k8s.pod.name","value":{"stringValue":"p-1"}},{"key":"host.name","value":{"stringValue":"h"}}]},
			"scopeLogs":[{"scope":{"name":"lib","version":"2","attributes":[{"key":"s.a","value":{"intValue":"7"}}]},"logRecords":[
			{"timeUnixNano":"1000","observedTimeUnixNano":"2000","severityNumber":17,"severityText":"ERROR","body":{"stringValue":"boom"},
			 "traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","flags":1,"eventName":"ev",
			 "attributes":[{"key":"event_name","value":{"stringValue":"dropped"}},{"key":"http.status","value":{"intValue":500}},
			  {"key":"ok","value":{"boolValue":false}},{"key":"ratio","value":{"doubleValue":1e21}},{"key":"small","value":{"doubleValue":0.5}}]}]}]}]}`,
		want: []string{`{k8s_pod_name="p-1", service_name="checkout"} 1000 boom | http_status=500 ok=false ratio=1e+21 small=0.5 ` +
			`observed_timestamp=2000 severity_number=17 severity_text=ERROR flags=1 trace_id=5b8efff798038103d269b633813fc60c ` +
			`span_id=eee19b7ec3c1b174 event_name=ev host_name=h s_a=7 scope_name=lib scope_version=2`},
	}, {
		// A map is written as OpenTelemetry's AsString does (Go's JSON):
		// keys sorted, the last of equal keys kept.
		name: "other bodies, times, map attributes and odd names",
		body: `{"resourceLogs":[{"resource":{"attributes":[{"key":"deployment.environment","value":{"stringValue":"prod"}}]},
			"scopeLogs":[{"logRecords":[
			{"observedTimeUnixNano":"3000","body":{"kvlistValue":{"values":[{"key":"z","value":{"arrayValue":{"values":[{"kvlistValue":{"values":[{"key":"y","value":{"boolValue":true}},{"key":"x","value":{"stringValue":"q"}}]}}]}}},{"key":"a","value":{"intValue":"1"}},{"key":"a","value":{"intValue":"2"}}]}},
			 "attributes":[{"key":"req","value":{"kvlistValue":{"values":[{"key":"id","value":{"stringValue":"r1"}},
			  {"key":"h","value":{"kvlistValue":{"values":[{"key":"x-y","value":{"stringValue":"z"}}]}}}]}}},
			  {"key":"9lives","value":{"stringValue":"cat"}},{"key":"_p","value":{"stringValue":"q"}},{"key":"__r","value":{"stringValue":"s"}}]},
			{"timeUnixNano":"4000","body":{"arrayValue":{"values":[{"stringValue":"x"},{"doubleValue":2.5}]}},"traceId":"00000000000000000000000000000000"},
			{"timeUnixNano":"5000","body":{"bytesValue":"AQI="}},
			{"timeUnixNano":"6000"}]}]}]}`,
		want: []string{
			`{deployment_environment="prod"} 3000 {"a":2,"z":[{"x":"q","y":true}]} | req_id=r1 req_h_x_y=z key_9lives=cat key_p=q __r=s`,
			`{deployment_environment="prod"} 4000 ["x",2.5] | `,
			`{deployment_environment="prod"} 5000 AQI= | `,
			`{deployment_environment="prod"} 6000  | `,
		},
	}, {
		name:     "discovery: service_name and detected_level",
		discover: loki.DefaultDiscovery,
		body: `{"resourceLogs":[{"resource":{"attributes":[{"key":"k8s.container.name","value":{"stringValue":"web"}}]},
			"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","severityNumber":13,"body":{"stringValue":"x"}},
			{"timeUnixNano":"2","body":{"stringValue":"level=debug y"}}]}]},
			{"resource":{},"scopeLogs":[{"logRecords":[{"timeUnixNano":"3","body":{"stringValue":"z"}}]}]}]}`,
		want: []string{
			`{k8s_container_name="web", service_name="web"} 1 x | severity_number=13 detected_level=warn`,
			`{k8s_container_name="web", service_name="web"} 2 level=debug y | detected_level=debug`,
			`{service_name="unknown_service"} 3 z | detected_level=unknown`,
		},
	}, {
		name:  "stream labels the request names",
		index: []string{"host.name"},
		body: `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}},{"key":"host.name","value":{"stringValue":"h"}}]},
			"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","body":{"stringValue":"x"}}]}]}]}`,
		want: []string{`{host_name="h"} 1 x | service_name=a`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := loki.Decoder{Limits: loki.DefaultLimits, Discover: tc.discover}
			var b record.Batch
			res, err := Decode(&d, []byte(tc.body), true, &b, tc.index)
			if err != nil || res.Rejected > 0 {
				t.Fatalf("decode: %v %+v", err, res)
			}
			if got := entries(&b); !slices.Equal(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if res.Entries != len(tc.want) {
				t.Errorf("%d entries counted, want %d", res.Entries, len(tc.want))
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	d := loki.Decoder{Limits: loki.DefaultLimits}
	var b record.Batch
	// A resource without a stream label (and discovery off): its records
	// are left out and counted, as Loki reports an invalid stream.
	res, err := Decode(&d, []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"x"}}]}]}]}`), true, &b, nil)
	if err != nil || res.Rejected != 1 || len(res.Reasons) != 1 || !strings.Contains(res.Reasons[0], "no labels") {
		t.Errorf("no labels: %v %+v", err, res)
	}
	// A name that makes no label fails the request, as in Loki.
	_, err = Decode(&d, []byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeLogs":[{"logRecords":[{"attributes":[{"key":"..","value":{"stringValue":"x"}}]}]}]}]}`), true, &b, nil)
	if err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := Decode(&d, []byte(`{"resourceLogs":[`), true, &b, nil); !errors.Is(err, ErrBadRequest) {
		t.Errorf("malformed: %v", err)
	}
}

// FuzzDecode: any body decodes or fails cleanly with ErrBadRequest or a
// label name error, never panics.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","body":{"kvlistValue":{"values":[{"key":"k","value":{"arrayValue":{"values":[{"intValue":2}]}}}]}}}]}]}]}`), true)
	f.Add([]byte{0x0a, 0x04, 0x12, 0x02, 0x12, 0x00}, false)
	f.Fuzz(func(t *testing.T, body []byte, isJSON bool) {
		d := loki.Decoder{Limits: loki.DefaultLimits, Discover: loki.DefaultDiscovery}
		var b record.Batch
		res, err := Decode(&d, body, isJSON, &b, nil)
		if err != nil {
			return
		}
		if len(b.Records)+res.Rejected != res.Entries {
			t.Fatalf("%d records + %d rejected != %d entries", len(b.Records), res.Rejected, res.Entries)
		}
	})
}

func TestLabelName(t *testing.T) {
	for in, want := range map[string]string{"service.name": "service_name", "a-b/c": "a_b_c", "9x": "key_9x", "ok_1": "ok_1",
		"_x": "key_x", "__x": "__x", "ünï": "key_n_", ".": "key_", "__": "__"} {
		if got, err := labelName(in); got != want || err != nil {
			t.Errorf("labelName(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "--", ".."} {
		if got, err := labelName(in); err == nil {
			t.Errorf("labelName(%q) = %q, want an error", in, got)
		}
	}
}
