package loki

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

// decodeJSONStd is DecodeJSON as it was with encoding/json: the
// reference that DecodeJSON must agree with (TestDecodeJSONDiff,
// FuzzDecodeJSONDiff).
func (d *Decoder) decodeJSONStd(body []byte, b *record.Batch) (Result, error) {
	var res Result
	var req struct {
		Streams []struct {
			Stream map[string]string `json:"stream"`
			Values []json.RawMessage `json:"values"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return res, fmt.Errorf("%w: JSON: %v", ErrBadRequest, err)
	}
	d.batch(b)
	for si, s := range req.Streams {
		res.Entries += len(s.Values)
		ls := make(record.Labels, 0, len(s.Stream))
		for k, v := range s.Stream {
			ls = append(ls, record.Label{Name: k, Value: v})
		}
		id, err := d.stream(b, ls)
		if err != nil {
			res.reject(len(s.Values), "stream %d: %v", si, err)
			continue
		}
		for vi, raw := range s.Values {
			var parts []json.RawMessage
			var tsText, line string
			var meta map[string]string
			err := json.Unmarshal(raw, &parts)
			if err == nil && (len(parts) < 2 || len(parts) > 3) {
				err = fmt.Errorf("%d elements, want [timestamp, line] or [timestamp, line, {metadata}]", len(parts))
			}
			if err == nil {
				err = json.Unmarshal(parts[0], &tsText)
			}
			if err == nil {
				err = json.Unmarshal(parts[1], &line)
			}
			if err == nil && len(parts) == 3 {
				err = json.Unmarshal(parts[2], &meta)
			}
			var ts int64
			if err == nil {
				ts, err = strconv.ParseInt(tsText, 10, 64)
				if err != nil {
					err = fmt.Errorf("timestamp %q is not Unix nanoseconds as a string", tsText)
				}
			}
			if err != nil {
				res.reject(1, "stream %d, entry %d: %v", si, vi, err)
				continue
			}
			d.meta = d.meta[:0]
			for k, v := range meta {
				d.meta = append(d.meta, [2][]byte{[]byte(k), []byte(v)})
			}
			slices.SortFunc(d.meta, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
			d.add(b, id, ts, []byte(line), d.meta, &res)
		}
	}
	return res, nil
}

// decoded is what a decode gave, as text: accepted or not, the counts,
// and each record's stream, time, line and fields.
func decoded(b *record.Batch, res Result, err error) string {
	if err != nil {
		return "error"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "entries %d, rejected %d, reasons %d, bad UTF-8 %d\n", res.Entries, res.Rejected, len(res.Reasons), b.BadUTF8)
	for i := range b.Records {
		r := &b.Records[i]
		fmt.Fprintf(&s, "%s %d %q flags %d", b.Streams.Get(r.Stream), r.Time, b.Bytes(r.Line), r.MsgFlags)
		for _, f := range b.RecordFields(i) {
			fmt.Fprintf(&s, " %s=%q/%d", b.Name(&f), b.Raw(&f), f.Flags)
		}
		s.WriteByte('\n')
	}
	return s.String()
}

// jsonCases are bodies, valid and not, that DecodeJSON and encoding/json
// must take the same way; err, when set, is part of DecodeJSON's error.
var jsonCases = []struct {
	name, body, err string
}{
	{name: "one line", body: `{"streams":[{"stream":{"job":"x"},"values":[["1768435200000000000","hello"]]}]}`},
	{name: "metadata", body: `{"streams":[{"stream":{"job":"x","env":"p"},"values":[["1","a",{"z":"1","b":"2"}],["2","b"]]}]}`},
	{name: "several streams", body: `{"streams":[{"stream":{"a":"1"},"values":[["1","x"]]},{"stream":{"a":"2"},"values":[["2","y"],["3","z"]]}]}`},
	{name: "white space", body: " \t\r\n{ \"streams\" : [ { \"stream\" : { \"a\" : \"b\" } , \"values\" : [ [ \"1\" , \"l\" ] ] } ] } \n"},
	{name: "escapes", body: `{"streams":[{"stream":{"a":"\u00e9\n\"\\\/"},"values":[["\u0031","tab\there \ud83d\ude00 \ud800 lone \udc00x \ud800\u0041"]]}]}`},
	{name: "bad UTF-8 in a string", body: "{\"streams\":[{\"stream\":{\"a\":\"b\"},\"values\":[[\"1\",\"x\xffy\xc3\",{\"k\":\"\xe2\x82\"}]]}]}"},
	{name: "key folding", body: `{"STREAMS":[{"Stream":{"a":"b"},"VALUES":[["1","x"]]}],"ſtreams":[{"ſtream":{"c":"d"}}]}`},
	{name: "kelvin", body: `{"streams":[{"stream":{"a":"b"},"values":[["1","x"]]}],"\u212a":1}`},
	{name: "escaped key", body: `{"\u0073treams":[{"stre\u0061m":{"a":"b"},"values":[["1","x"]]}]}`},
	{name: "unknown keys", body: `{"x":[1,{"y":[true,false,null,-1.5e+3]}],"streams":[{"z":{},"stream":{"a":"b"},"values":[["1","x"]]}],"w":"v"}`},
	{name: "null body", body: `null`},
	{name: "null streams", body: `{"streams":null}`},
	{name: "null stream", body: `{"streams":[null,{"stream":null,"values":[["1","x"]]}]}`},
	{name: "null labels and values", body: `{"streams":[{"stream":{"a":null},"values":null}]}`},
	{name: "null entry", body: `{"streams":[{"stream":{"a":"b"},"values":[null,["1","x"]]}]}`},
	{name: "null parts", body: `{"streams":[{"stream":{"a":"b"},"values":[[null,"x"],["1",null],["2","y",null],["3","z",{"k":null,"j":"v"}]]}]}`},
	{name: "repeated keys", body: `{"streams":[{"stream":{"a":"1","a":"2","b":"x"},"stream":{"c":"3","b":"y"},"values":[["1","x"]],"values":[["2","y",{"k":"1","k":"2"}]]}]}`},
	{name: "repeated streams", body: `{"streams":[{"stream":{"a":"1"},"values":[["1","x"]]},{"stream":{"a":"2"}}],"streams":[{"stream":{"b":"3"}}]}`},
	{name: "repeated streams longer", body: `{"streams":[{"stream":{"a":"1"}}],"streams":[null,{"stream":{"b":"2"},"values":[["1","x"]]}]}`},
	{name: "labels moved", body: `{"streams":[{"stream":{"a":"1"}},{"stream":{"b":"2"},"values":[["1","x"]]}],"streams":[{"stream":{"c":"3"},"values":[["2","y"]]}]}`},
	{name: "entry of one element", body: `{"streams":[{"stream":{"a":"b"},"values":[["1"],["1","x","{}","y"],[],["2","ok"]]}]}`},
	{name: "entry not an array", body: `{"streams":[{"stream":{"a":"b"},"values":["1",{"a":1},7,true,["2","ok"]]}]}`},
	{name: "entry of wrong types", body: `{"streams":[{"stream":{"a":"b"},"values":[[1,"x"],["1",2],["1","x",[]],["1","x",{"k":1}],["3","ok"]]}]}`},
	{name: "bad timestamp", body: `{"streams":[{"stream":{"a":"b"},"values":[["x","a"],["","b"],["+5","c"],["-7","d"],["99999999999999999999","e"],["0x1","f"],["1_0","g"]]}]}`},
	{name: "stream refused", body: `{"streams":[{"stream":{},"values":[["1","x"]]},{"stream":{"1a":"b"},"values":[["1","x"]]},{"values":[["1","x"]]},{"stream":{"a":"b"},"values":[["1","x"]]}]}`},
	{name: "empty", body: ``, err: "unexpected end of JSON input"},
	{name: "not an object", body: `[1,2]`, err: "an array, want an object holding streams at byte 0"},
	{name: "string body", body: `"streams"`, err: "want an object"},
	{name: "streams not an array", body: `{"streams":{}}`, err: "streams: an object, want an array of streams at byte 11"},
	{name: "stream not an object", body: `{"streams":[1]}`, err: "streams[0]: a number, want a stream object at byte 12"},
	{name: "labels not an object", body: `{"streams":[{"stream":[]}]}`, err: "streams[0].stream: an array, want an object of labels at byte 22"},
	{name: "label not a string", body: `{"streams":[{"stream":{"a":1}}]}`, err: `streams[0].stream: label "a" is a number, want a string at byte 27`},
	{name: "values not an array", body: `{"streams":[{"stream":{"a":"b"},"values":"x"}]}`, err: "streams[0].values: a string, want an array of entries at byte 41"},
	{name: "trailing comma", body: `{"streams":[{"stream":{"a":"b"},"values":[["1","x"],]}]}`, err: "streams[0].values[1]: invalid character ']' (looking for beginning of value) at byte 52"},
	{name: "trailing data", body: `{"streams":[]} x`, err: "invalid character 'x' (after top-level value) at byte 15"},
	{name: "two values", body: `{}{}`, err: "after top-level value"},
	{name: "cut short", body: `{"streams":[{"stream":{"a":"b"},"values":[["1","x"`, err: "unexpected end of JSON input"},
	{name: "bad escape", body: `{"streams":[{"stream":{"a":"b"},"values":[["1","\x"]]}]}`, err: "streams[0].values[0]: invalid character 'x' (in string escape code) at byte 49"},
	{name: "bad unicode escape", body: `{"streams":[{"stream":{"a":"b\u12g4"}}]}`, err: "in \\u hexadecimal"},
	{name: "control byte", body: "{\"streams\":[{\"stream\":{\"a\":\"b\x01\"}}]}", err: "byte 0x01"},
	{name: "bad number in skipped value", body: `{"x":01,"streams":[]}`, err: "after object key:value pair"},
	{name: "bad number exponent", body: `{"x":1e,"streams":[]}`, err: "in exponent"},
	{name: "bad number fraction", body: `{"x":1.,"streams":[]}`, err: "after decimal point"},
	{name: "bad literal", body: `{"x":tru,"streams":[]}`, err: "in literal true"},
	{name: "bad literal in entry", body: `{"streams":[{"stream":{"a":"b"},"values":[["1","x",nul]]}]}`, err: "in literal null"},
	{name: "syntax error after a type error", body: `{"streams":[{"stream":{"a":"b"},"values":[[1,"x"]]}],}`, err: "looking for beginning of object key string"},
	{name: "missing colon", body: `{"streams" []}`, err: "after object key"},
	{name: "key not a string", body: `{streams:[]}`, err: "looking for beginning of object key string"},
	{name: "byte order mark", body: "\xef\xbb\xbf{}", err: "byte 0xef"},
	{name: "too deep", body: `{"x":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`, err: "exceeded max depth"},
	{name: "deep enough", body: `{"x":` + strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1) + `}`},
}

// TestDecodeJSONDiff: DecodeJSON takes every case as encoding/json did
// (accepted or not, the same entries, labels, times, lines and
// metadata), and its errors name the field and the byte.
func TestDecodeJSONDiff(t *testing.T) {
	for _, tc := range jsonCases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := diffJSON([]byte(tc.body))
			if got != want {
				t.Fatalf("DecodeJSON:\n%s\nencoding/json:\n%s", got, want)
			}
			var d Decoder
			d.Limits = DefaultLimits
			var b record.Batch
			_, err := d.DecodeJSON([]byte(tc.body), &b)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one holding %q", err, tc.err)
			case err != nil && !errors.Is(err, ErrBadRequest):
				t.Fatalf("error %v is not ErrBadRequest", err)
			}
		})
	}
}

// diffJSON decodes body with DecodeJSON (a decoder reused, as the
// server's are) and with encoding/json, and returns both as text.
func diffJSON(body []byte) (got, want string) {
	var std, ours Decoder
	std.Limits, ours.Limits = DefaultLimits, DefaultLimits
	std.Discover, ours.Discover = DefaultDiscovery, DefaultDiscovery
	ours.Reuse = true
	var sb, ob record.Batch
	// Twice, the first time on a copy: a reused decoder's state of one
	// body must not leak into the next.
	first := bytes.Clone(body)
	ours.DecodeJSON(first, &ob)
	ours.Clear()
	clear(first)
	res, err := ours.DecodeJSON(body, &ob)
	got = decoded(&ob, res, err)
	res, err = std.decodeJSONStd(body, &sb)
	return got, decoded(&sb, res, err)
}

// FuzzDecodeJSONDiff: any body is taken by DecodeJSON as encoding/json
// took it.
//
//	go test -run '^$' -fuzz FuzzDecodeJSONDiff ./internal/protocol/loki/
func FuzzDecodeJSONDiff(f *testing.F) {
	for _, tc := range jsonCases {
		if len(tc.body) < 1000 {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if repeatedStreams(body) {
			t.Skip("the top-level streams key three times: see json.go")
		}
		got, want := diffJSON(body)
		if got != want {
			t.Fatalf("body %q\nDecodeJSON:\n%s\nencoding/json:\n%s", body, got, want)
		}
	})
}

// repeatedStreams reports whether body may hold the streams key three
// times at its top level, where encoding/json reuses stale elements.
func repeatedStreams(body []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		return false
	}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if k, ok := tok.(string); ok && isKey([]byte(k), "streams") {
			n++
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return n >= 3
}

// TestDecodeJSONAllocs: a one-line push allocates no more as JSON than
// as protobuf, the decoder reused: the label text of its stream, and what
// the batch's tables allocate for either.
func TestDecodeJSONAllocs(t *testing.T) {
	body := []byte(`{"streams":[{"stream":{"job":"sluice-bench"},"values":[["1768435200000000000","{\"level\":\"info\",\"msg\":\"GET /api/users 200\",\"status\":200}"]]}]}`)
	d := Decoder{Limits: DefaultLimits, Discover: DefaultDiscovery, Reuse: true}
	var b record.Batch
	if _, err := d.DecodeJSON(body, &b); err != nil {
		t.Fatal(err)
	}
	var e Encoder
	proto := e.AppendPushProto(nil, &b)
	allocs := func(decode func() (Result, error)) float64 {
		return testing.AllocsPerRun(100, func() {
			if res, err := decode(); err != nil || res.Rejected > 0 {
				t.Fatal(res, err)
			}
			d.Clear()
		})
	}
	j := allocs(func() (Result, error) { return d.DecodeJSON(body, &b) })
	p := allocs(func() (Result, error) { return d.DecodeProto(proto, &b, 1<<20) })
	t.Logf("allocations per push: JSON %v, protobuf %v", j, p)
	if j > p {
		t.Errorf("JSON push: %v allocations, more than the protobuf push's %v", j, p)
	}
}

// BenchmarkDecodeJSON: a one-line push and a push of 100 lines in 4
// streams, by DecodeJSON and by encoding/json.
//
//	go test -run '^$' -bench DecodeJSON -benchmem ./internal/protocol/loki/
func BenchmarkDecodeJSON(b *testing.B) {
	one := `{"streams":[{"stream":{"job":"sluice-bench"},"values":[["1768435200000000000","{\"level\":\"info\",\"msg\":\"GET /api/users 200\",\"status\":200}"]]}]}`
	var many strings.Builder
	many.WriteString(`{"streams":[`)
	for s := range 4 {
		if s > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"stream":{"job":"api","pod":"api-%d"},"values":[`, s)
		for i := range 25 {
			if i > 0 {
				many.WriteByte(',')
			}
			fmt.Fprintf(&many, `["17684352000000%05d","GET /api/users/%d 200 12ms",{"trace_id":"%016x"}]`, i, i, i)
		}
		many.WriteString(`]}`)
	}
	many.WriteString(`]}`)
	for _, body := range []struct{ name, text string }{{"one", one}, {"many", many.String()}} {
		for _, impl := range []string{"sluice", "encoding-json"} {
			b.Run("body="+body.name+"/impl="+impl, func(b *testing.B) {
				data := []byte(body.text)
				d := Decoder{Limits: DefaultLimits, Discover: DefaultDiscovery, Reuse: true}
				var batch record.Batch
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					var err error
					if impl == "sluice" {
						_, err = d.DecodeJSON(data, &batch)
					} else {
						_, err = d.decodeJSONStd(data, &batch)
					}
					if err != nil {
						b.Fatal(err)
					}
					d.Clear()
				}
			})
		}
	}
}
