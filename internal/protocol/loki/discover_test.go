package loki

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

func TestDetectLevel(t *testing.T) {
	ls := func(kv ...string) record.Labels {
		var out record.Labels
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, record.Label{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	meta := func(kv ...string) [][2][]byte {
		var out [][2][]byte
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, [2][]byte{[]byte(kv[i]), []byte(kv[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		stream record.Labels
		meta   [][2][]byte
		line   string
		want   string
	}{
		{"stream label", ls("app", "a", "level", "WARNING"), meta("level", "error"), "fatal", "warn"},
		{"stream label, other value kept", ls("severity", "notice"), nil, "error", "notice"},
		{"metadata", nil, meta("lvl", "dbg"), "error", "debug"},
		{"metadata order: level before severity", nil, meta("severity", "error", "level", "info"), "", "info"},
		{"otlp severity number", nil, meta("severity_number", "21"), "info", "fatal"},
		{"otlp severity number 0", nil, meta("severity_number", "0"), "", "unknown"},
		{"json", nil, nil, `{"msg":"error here","level":"Information"}`, "info"},
		{"json nested", nil, nil, ` {"a":{"b":[1,{"c":"d"}],"severity":"ERR"}} `, "error"},
		{"json too deep", nil, nil, `{"a":{"b":{"level":"dbg"}},"m":"x"}`, "unknown"},
		{"json unknown value: keywords", nil, nil, `{"level":"loud","m":"a warning"}`, "warn"},
		{"logfmt", nil, nil, `ts=1 LEVEL=trc msg="an error"`, "trace"},
		{"logfmt quoted", nil, nil, `msg="x y" level="critical"`, "critical"},
		{"keyword, first in the line", nil, nil, "[INFO] retrying after error", "info"},
		{"keyword with a colon after", nil, nil, "Error: disk full", "error"},
		{"not a word", nil, nil, "errors are informative; misc:error", "unknown"},
		{"err", nil, nil, "got err (code 3)", "error"},
		{"nothing", nil, nil, "hello", "unknown"},
		{"empty", nil, nil, "", "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := DetectLevel(tc.stream, tc.meta, []byte(tc.line), nil); got != tc.want {
				t.Errorf("DetectLevel(%v, %q) = %q, want %q", tc.stream, tc.line, got, tc.want)
			}
		})
	}
}

func TestAddServiceName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`app=a, job=j`, `app=a, job=j, service_name=a`},
		{`job=j, container=c`, `container=c, job=j, service_name=c`},
		{`service_name=s, app=a`, `service_name=s, app=a`},
		{`host=h`, `host=h, service_name=unknown_service`},
		{`app=, job=j`, `app=, job=j, service_name=j`},
	} {
		var ls record.Labels
		for _, kv := range strings.Split(tc.in, ", ") {
			n, v, _ := strings.Cut(kv, "=")
			ls = append(ls, record.Label{Name: n, Value: v})
		}
		var got []string
		for _, l := range addServiceName(ls, DefaultServiceNameLabels) {
			got = append(got, l.Name+"="+l.Value)
		}
		if strings.Join(got, ", ") != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, strings.Join(got, ", "), tc.want)
		}
	}
	if got := addServiceName(record.Labels{{Name: "app", Value: "a"}}, nil); len(got) != 1 {
		t.Errorf("no names: %v", got)
	}
}

// TestDecodeDiscovery: the decoder adds service_name and detected_level
// as Loki's distributor does, keeps a detected_level sent (normalized),
// and leaves out empty metadata.
func TestDecodeDiscovery(t *testing.T) {
	d := Decoder{Limits: DefaultLimits, Discover: DefaultDiscovery}
	var b record.Batch
	body := `{"streams":[{"stream":{"app":"x"},"values":[
		["1","level=error boom"],
		["2","calm",{"detected_level":"WRN","trace_id":"t","empty":""}]]}]}`
	res, err := d.DecodeJSON([]byte(body), &b)
	if err != nil || res.Rejected > 0 {
		t.Fatalf("decode: %v %+v", err, res)
	}
	var got []string
	for i := range b.Records {
		r := &b.Records[i]
		var fs []string
		for _, f := range b.RecordFields(i) {
			fs = append(fs, b.Names.Get(f.Name)+"="+string(b.Raw(&f)))
		}
		got = append(got, b.Streams.Get(r.Stream).String()+" "+string(b.Bytes(r.Line))+" | "+strings.Join(fs, " "))
	}
	want := []string{
		`{app="x", service_name="x"} level=error boom | detected_level=error`,
		`{app="x", service_name="x"} calm | detected_level=warn trace_id=t`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzDetectLevel: any line gives a level, never a panic, and the same
// level as a copy of the line in a larger buffer.
func FuzzDetectLevel(f *testing.F) {
	for _, s := range []string{`{"msg":"error here","level":"Information"}`, ` {"a":{"b":[1,{"c":"d"}],"severity":"ERR"}} `,
		`ts=1 LEVEL=trc msg="an error"`, `msg="x y\" level="critical"`, "[INFO] retrying after error", `{"a":"\`, `{"a":[}`, `a="b\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		l, _ := DetectLevel(nil, nil, []byte(line), nil)
		if l == "" {
			t.Fatalf("no level for %q", line)
		}
		if l2, _ := DetectLevel(nil, nil, append([]byte(line), "\x00tail"[:0]...), make([]byte, 3)); l2 != l {
			t.Fatalf("%q then %q", l, l2)
		}
	})
}
