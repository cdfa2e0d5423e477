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

// TestDecoderReuse: a decoder with Reuse decodes push after push into
// its reset tables, each batch as a fresh decoder makes it, and the
// label sets of earlier batches stay as they were.
func TestDecoderReuse(t *testing.T) {
	bodies := []string{
		`{"streams":[{"stream":{"app":"a"},"values":[["1","one",{"k":"v1"}]]},{"stream":{"app":"b"},"values":[["2","two"]]}]}`,
		`{"streams":[{"stream":{"svc":"c","app":"z"},"values":[["3","three",{"other":"v2"}]]}]}`,
		`{"streams":[{"stream":{"app":"a"},"values":[["4","four",{"k":"v3"}]]}]}`,
	}
	shape := func(b *record.Batch) string {
		var s string
		for i := range b.Records {
			s += b.Streams.Get(b.Records[i].Stream).String() + " " + string(b.Bytes(b.Records[i].Line))
			for _, f := range b.RecordFields(i) {
				s += " " + b.Name(&f) + "=" + string(b.Raw(&f))
			}
			s += "\n"
		}
		return s
	}
	reused := Decoder{Limits: DefaultLimits, Discover: DefaultDiscovery, Reuse: true}
	var kept []record.Labels
	var want []string
	for i, body := range bodies {
		fresh := Decoder{Limits: DefaultLimits, Discover: DefaultDiscovery}
		var fb, rb record.Batch
		if _, err := fresh.DecodeJSON([]byte(body), &fb); err != nil {
			t.Fatal(err)
		}
		if _, err := reused.DecodeJSON([]byte(body), &rb); err != nil {
			t.Fatal(err)
		}
		if got, w := shape(&rb), shape(&fb); got != w {
			t.Errorf("push %d reused:\n%s\nfresh:\n%s", i, got, w)
		}
		kept = append(kept, rb.Streams.Get(rb.Records[0].Stream))
		want = append(want, fb.Streams.Get(fb.Records[0].Stream).String())
		reused.Clear()
	}
	for i, ls := range kept {
		if ls.String() != want[i] {
			t.Errorf("push %d: its first stream became %s, was %s", i, ls, want[i])
		}
	}
}
