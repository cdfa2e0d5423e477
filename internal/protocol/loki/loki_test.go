package loki

import (
	"errors"
	"testing"

	"github.com/klauspost/compress/snappy"

	"github.com/sluicelog/sluice/internal/record"
)

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: `{app="a", env="p\"q"}`, want: `{app="a", env="p\"q"}`},
		{in: ` { job = "x" } `, want: `{job="x"}`},
		{in: `{}`, want: `{}`},
		{in: `app="a"`, err: "want {"},
		{in: `{app=a}`, err: "not quoted"},
		{in: `{app="a"`, err: "want {"},
		{in: `{app="a" env="b"}`, err: "expected ','"},
	} {
		ls, err := parseLabels(tc.in)
		if tc.err != "" {
			if err == nil {
				t.Errorf("%s: no error, want %q", tc.in, tc.err)
			}
			continue
		}
		if err != nil || ls.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.in, ls, err, tc.want)
		}
	}
}

// FuzzDecode: any body decodes or fails cleanly, and what decodes is
// within its batch.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"streams":[{"stream":{"app":"x"},"values":[["1","l",{"k":"v"}]]}]}`), false)
	f.Add(snappy.Encode(nil, []byte{0x0a, 0x05, 0x0a, 0x03, '{', '}', 0x20}), true)
	f.Fuzz(func(t *testing.T, body []byte, proto bool) {
		d := Decoder{Limits: DefaultLimits}
		var b record.Batch
		var err error
		if proto {
			_, err = d.DecodeProto(body, &b, 1<<20)
		} else {
			_, err = d.DecodeJSON(body, &b)
		}
		if err != nil && !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error %v is neither ErrBadRequest nor ErrTooLarge", err)
		}
		for _, r := range b.Records {
			if r.Line.End() > uint32(len(b.Data)) || int(r.Stream) >= b.Streams.Len() {
				t.Fatalf("record out of its batch: %+v", r)
			}
		}
	})
}

// TestDecodeJSONMetadataOrder: a JSON push's structured metadata, an
// object, is stored sorted by name, the same every time (it came in a
// map's random order, which made TestDecodeDiscovery flaky).
func TestDecodeJSONMetadataOrder(t *testing.T) {
	body := []byte(`{"streams":[{"stream":{"app":"x"},"values":[["1","l",{"z":"1","b":"2","m":"3","a":"4","q":"5"}]]}]}`)
	for range 20 {
		d := Decoder{Limits: DefaultLimits}
		var b record.Batch
		if _, err := d.DecodeJSON(body, &b); err != nil {
			t.Fatal(err)
		}
		var names string
		for _, f := range b.RecordFields(0) {
			names += b.Name(&f)
		}
		if names != "abmqz" {
			t.Fatalf("metadata in order %q, want abmqz", names)
		}
	}
}
