package loki

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
)

// testLimits let every test batch through the decoder.
var testLimits = Limits{MaxLabels: 64, MaxLabelNameLen: 1 << 10, MaxLabelValLen: 1 << 16, MaxLineSize: 1 << 20}

func TestAppendLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		ls   record.Labels
		want string
	}{
		{"plain", record.Labels{{Name: "app", Value: "api"}, {Name: "env", Value: "prod"}}, `{app="api", env="prod"}`},
		{"quote", record.Labels{{Name: "a", Value: `say "hi"`}}, `{a="say \"hi\""}`},
		{"backslash", record.Labels{{Name: "path", Value: `C:\dir\`}}, `{path="C:\\dir\\"}`},
		{"newline tab", record.Labels{{Name: "a", Value: "x\ny\tz\r"}}, `{a="x\ny\tz\r"}`},
		{"unicode", record.Labels{{Name: "a", Value: "héllo ✓ 日本"}}, `{a="héllo ✓ 日本"}`},
		{"control", record.Labels{{Name: "a", Value: "\x00\x7f"}}, `{a="\x00\x7f"}`},
		{"invalid utf8", record.Labels{{Name: "a", Value: "x\xffy"}}, `{a="x\xffy"}`},
		{"empty value left out", record.Labels{{Name: "a", Value: ""}, {Name: "b", Value: "1"}}, `{b="1"}`},
		{"braces and commas", record.Labels{{Name: "a", Value: `}, b="x`}}, `{a="}, b=\"x"}`},
		{"none", nil, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendLabels(nil, tc.ls))
			if got != tc.want {
				t.Fatalf("AppendLabels = %s, want %s", got, tc.want)
			}
			back, err := parseLabels(got)
			if err != nil {
				t.Fatalf("parseLabels(%s): %v", got, err)
			}
			var want record.Labels
			for _, l := range tc.ls {
				if l.Value != "" {
					want = append(want, l)
				}
			}
			if !slices.Equal(back, want) {
				t.Fatalf("read back %q, want %q", back, want)
			}
		})
	}
}

func TestSanitizeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"app", "app"},
		{"_x9", "_x9"},
		{"k8s.pod.name", "k8s_pod_name"},
		{"0day", "_0day"},
		{"a-b c", "a_b_c"},
		{"é", "__"},
		{"", "_"},
	} {
		if got := string(appendSanitized(nil, tc.in)); got != tc.want || !validLabelName(got) {
			t.Errorf("appendSanitized(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// entry is a record as a push carries it, for comparing batches.
type entry struct {
	ts   int64
	line string
	meta string // the name=value pairs, quoted
}

// streamsOf lists b's records by stream label text, in record order, the
// metadata of each sorted if sortMeta.
func streamsOf(b *record.Batch, sortMeta bool) map[string][]entry {
	out := map[string][]entry{}
	for i := range b.Records {
		r := &b.Records[i]
		var meta []string
		for _, f := range b.RecordFields(i) {
			meta = append(meta, b.Name(&f)+"="+string(b.Raw(&f)))
		}
		if sortMeta {
			slices.Sort(meta)
		}
		k := string(AppendLabels(nil, b.Labels(i))) // exact, as String's JSON escapes are not
		out[k] = append(out[k], entry{r.Time, string(b.Bytes(r.Line)), fmt.Sprintf("%q", meta)})
	}
	return out
}

// expected is what decode(encode(b)) must hold: see Encoder for the
// rules. json says which body: its strings hold U+FFFD for invalid
// UTF-8, and its metadata comes back in no order and one per name.
func expected(b *record.Batch, json bool) map[string][]entry {
	text := func(s string) string {
		if json {
			return string([]rune(s)) // each invalid byte becomes U+FFFD, as AppendJSONEscaped does
		}
		return s
	}
	out := map[string][]entry{}
	for i := range b.Records {
		r := &b.Records[i]
		var ls record.Labels
		for _, l := range b.Labels(i) {
			if l.Value != "" {
				ls = append(ls, record.Label{Name: string(appendSanitized(nil, l.Name)), Value: text(l.Value)})
			}
		}
		if len(ls) == 0 {
			ls = unknownService
		}
		slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
		var meta []string
		last := map[string]string{}
		for _, f := range AppendMetadata(nil, b, i) {
			v := string(record.AppendUnescaped(nil, b.Raw(&f), f.Flags&^record.BadUTF8))
			if v == "" {
				continue
			}
			name := b.Name(&f)
			if json {
				last[name] = text(v)
				continue
			}
			meta = append(meta, name+"="+v)
		}
		if json {
			for _, k := range slices.Sorted(maps.Keys(last)) {
				meta = append(meta, k+"="+last[k])
			}
		}
		k := string(AppendLabels(nil, ls))
		out[k] = append(out[k], entry{r.Time, text(string(b.Bytes(r.Line))), fmt.Sprintf("%q", meta)})
	}
	return out
}

// roundTrip encodes b both ways, decodes each body and compares.
func roundTrip(t testing.TB, b *record.Batch) {
	t.Helper()
	var e Encoder
	for _, json := range []bool{false, true} {
		var body []byte
		var got record.Batch
		d := Decoder{Limits: testLimits}
		var res Result
		var err error
		if json {
			body = e.AppendPushJSON(nil, b)
			res, err = d.DecodeJSON(body, &got)
		} else {
			body = e.AppendPushProto(nil, b)
			res, err = d.DecodeProto(body, &got, 1<<30)
		}
		if err != nil || res.Rejected > 0 || res.Entries != len(b.Records) {
			t.Fatalf("json=%v: decode: %v, %+v, %d records sent", json, err, res, len(b.Records))
		}
		g, w := streamsOf(&got, json), expected(b, json)
		if !maps.EqualFunc(g, w, slices.Equal) {
			t.Fatalf("json=%v: decoded\n%+v\nwant\n%+v", json, g, w)
		}
	}
}

// pushBatch builds a batch as the decoder does for a push.
type pushBatch struct {
	d Decoder
	b record.Batch
}

// stream interns ls sorted, as the decoder does, without its checks: a
// batch from sluice's own formats may have any field name for a label,
// and the empty set (stream 0) for records without stream fields.
func (p *pushBatch) stream(ls record.Labels) (uint32, error) {
	if len(ls) == 0 {
		return 0, nil
	}
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	id, ok := p.b.Streams.Intern(ls)
	if !ok {
		return 0, fmt.Errorf("stream table full")
	}
	return id, nil
}

func newPushBatch() *pushBatch {
	p := &pushBatch{d: Decoder{Limits: testLimits}}
	p.d.Begin(&p.b)
	return p
}

func (p *pushBatch) add(t testing.TB, ls record.Labels, ts int64, line string, meta ...string) {
	t.Helper()
	id, err := p.stream(ls)
	if err != nil {
		t.Fatal(err)
	}
	var kv [][2][]byte
	for i := 0; i+1 < len(meta); i += 2 {
		kv = append(kv, [2][]byte{[]byte(meta[i]), []byte(meta[i+1])})
	}
	var res Result
	p.d.Add(&p.b, id, ts, []byte(line), kv, &res)
	if res.Rejected > 0 {
		t.Fatal(res.Reasons)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	app := record.Labels{{Name: "app", Value: "api"}, {Name: "env", Value: "prod"}}
	odd := record.Labels{{Name: "path", Value: `C:\logs\"x"`}, {Name: "ünï", Value: "✓ ünï"}}
	t.Run("lines", func(t *testing.T) {
		p := newPushBatch()
		p.add(t, app, 1_700_000_000_123_456_789, "plain")
		p.add(t, app, 1_700_000_000_123_456_790, `quotes "x" and \backslash\ and \n literal`)
		p.add(t, app, 1_700_000_001_000_000_000, "")
		p.add(t, odd, 1, "héllo wörld ✓ 日本語 🎉")
		p.add(t, odd, 0, "tab\tnewline\ncr\r nul\x00 del\x7f")
		p.add(t, app, -1_500_000_000, "before 1970")
		p.add(t, app, 5, "bad utf8 \xff\xfe and truncated \xe2\x82")
		p.add(t, nil, 7, "no labels")
		roundTrip(t, &p.b)
	})
	t.Run("structured metadata", func(t *testing.T) {
		p := newPushBatch()
		p.add(t, app, 10, "with meta", "trace_id", "abc123", "user", `o"brien\`)
		p.add(t, app, 11, "", "only", "meta")
		p.add(t, app, 12, "unicode meta", "k", "日本 ✓", "bad", "x\xffy")
		p.add(t, app, 13, "empty meta value dropped by the decoder", "e", "")
		roundTrip(t, &p.b)
	})
	t.Run("many streams", func(t *testing.T) {
		p := newPushBatch()
		for i := range 3000 {
			ls := record.Labels{{Name: "app", Value: fmt.Sprint("a", i%257)}, {Name: "pod", Value: fmt.Sprint(i % 13)}}
			p.add(t, ls, int64(i), fmt.Sprintf("line %d", i), "n", fmt.Sprint(i))
		}
		roundTrip(t, &p.b)
	})
	t.Run("label names sanitized", func(t *testing.T) {
		// Labels of sluice's own streams can be any field name.
		var b record.Batch
		b.Names, b.Streams = record.NewNames(), record.NewStreams()
		id, _ := b.Streams.Intern(record.Labels{{Name: "k8s.pod", Value: "p1"}, {Name: "service", Value: "s"}})
		b.Data = append(b.Data, "x"...)
		b.Records = append(b.Records, record.Record{Time: 3, Stream: id, Line: record.Span{Off: 0, Len: 1}, Msg: record.Span{Off: 0, Len: 1}})
		roundTrip(t, &b)
	})
	t.Run("sluice json records", func(t *testing.T) {
		// Fields parsed from the line are not structured metadata: the
		// line alone goes, as it was.
		p, err := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		in := "{\"ts\":1768464000123,\"service\":\"api\",\"msg\":\"hello \\\"q\\\"\",\"n\":1}\n{\"service\":\"db\",\"msg\":\"é\\u00e9\"}\n"
		err = p.Bytes(context.Background(), []byte(in), func(b *record.Batch) error {
			for i := range b.Records {
				if len(AppendMetadata(nil, b, i)) > 0 {
					t.Errorf("record %d: fields of the line taken for metadata", i)
				}
			}
			roundTrip(t, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestEncodeAllocs: a reused Encoder and buffer allocate nothing.
func TestEncodeAllocs(t *testing.T) {
	b := benchBatch(t)
	var e Encoder
	var buf []byte
	for name, enc := range map[string]func(dst []byte, b *record.Batch) []byte{"proto": e.AppendPushProto, "json": e.AppendPushJSON} {
		buf = enc(buf[:0], b)
		if n := testing.AllocsPerRun(20, func() { buf = enc(buf[:0], b) }); n != 0 {
			t.Errorf("%s: %v allocations per batch, want 0", name, n)
		}
	}
}

// benchBatch is 1,000 records in 20 streams, a fifth with metadata.
func benchBatch(t testing.TB) *record.Batch {
	p := newPushBatch()
	for i := range 1000 {
		ls := record.Labels{{Name: "app", Value: fmt.Sprint("app-", i%20)}, {Name: "env", Value: "prod"}, {Name: "host", Value: "node-1.example.com"}}
		line := fmt.Sprintf(`level=info ts=2026-01-15T08:00:00.%06dZ caller=handler.go:123 msg="request served" path="/api/v1/items/%d" status=200 dur=%dms`, i, i, i%97)
		if i%5 == 0 {
			p.add(t, ls, 1_768_464_000_000_000_000+int64(i)*1000, line, "trace_id", fmt.Sprintf("%032x", i))
		} else {
			p.add(t, ls, 1_768_464_000_000_000_000+int64(i)*1000, line)
		}
	}
	return &p.b
}

func BenchmarkEncode(b *testing.B) {
	batch := benchBatch(b)
	for _, format := range []string{"proto", "json"} {
		b.Run("format="+format, func(b *testing.B) {
			var e Encoder
			enc := e.AppendPushProto
			if format == "json" {
				enc = e.AppendPushJSON
			}
			b.SetBytes(int64(len(batch.Data)))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = enc(buf[:0], batch)
			}
		})
	}
}

// FuzzEncode: decode(encode(x)) == x, both bodies, for batches built from
// the fuzz input as a push decodes them.
func FuzzEncode(f *testing.F) {
	f.Add([]byte("\x02\x00app\x00x\x01\x00\x00\x00\x00\x00\x00\x00\x05hello\x01\x01k\x02v1"))
	f.Add([]byte("\x05\x03\xff\xfe\x00\"q\\\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x03\xff\x00\x01a"))
	f.Add([]byte(strings.Repeat("\x01\x02é✓\x07\x00\x00\x00\x00\x00\x00\x00\x03\n\"\\\x02", 20)))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput{data: data}
		p := newPushBatch()
		nstreams := 1 + int(in.byte()%8)
		streams := make([]record.Labels, nstreams)
		names := []string{"app", "env", "k8s.pod", "9lives", "service_name"}
		for i := range streams {
			set := in.byte()
			for j, name := range names {
				if set&(1<<j) != 0 {
					streams[i] = append(streams[i], record.Label{Name: name, Value: in.str()})
				}
			}
			// Sanitized names must stay distinct: "k8s_pod" is not used.
		}
		for !in.done() {
			ls := streams[int(in.byte())%nstreams]
			ts := int64(binary.LittleEndian.Uint64(in.bytes(8))) >> 1
			line := in.str()
			var meta []string
			for range in.byte() % 4 {
				meta = append(meta, fmt.Sprint("m", in.byte()%3), in.str())
			}
			id, err := p.stream(ls)
			if err != nil {
				t.Fatal(err)
			}
			var kv [][2][]byte
			for i := 0; i < len(meta); i += 2 {
				kv = append(kv, [2][]byte{[]byte(meta[i]), []byte(meta[i+1])})
			}
			var res Result
			p.d.Add(&p.b, id, ts, []byte(line), kv, &res)
		}
		roundTrip(t, &p.b)
	})
}

// fuzzInput reads a fuzz input as small values, zeros past its end.
type fuzzInput struct{ data []byte }

func (in *fuzzInput) done() bool { return len(in.data) == 0 }

func (in *fuzzInput) byte() byte {
	if len(in.data) == 0 {
		return 0
	}
	c := in.data[0]
	in.data = in.data[1:]
	return c
}

func (in *fuzzInput) bytes(n int) []byte {
	out := make([]byte, n)
	in.data = in.data[copy(out, in.data):]
	return out
}

func (in *fuzzInput) str() string { return string(in.bytes(int(in.byte() % 32))) }

// TestEncodeMergesStreams: streams sent under the same labels go as one
// stream, their entries in record order.
func TestEncodeMergesStreams(t *testing.T) {
	p := newPushBatch()
	p.add(t, record.Labels{{Name: "app", Value: "x"}, {Name: "env", Value: ""}}, 1, "one")
	p.add(t, record.Labels{{Name: "app", Value: "x"}}, 2, "two")
	p.add(t, record.Labels{{Name: "app", Value: "x"}, {Name: "env", Value: ""}}, 3, "three")
	p.add(t, nil, 4, "four")
	p.add(t, unknownService, 5, "five")
	var e Encoder
	var got record.Batch
	d := Decoder{Limits: testLimits}
	if _, err := d.DecodeProto(e.AppendPushProto(nil, &p.b), &got, 1<<20); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range got.Records {
		lines = append(lines, got.Labels(i).String()+" "+string(got.Bytes(got.Records[i].Line)))
	}
	want := []string{`{app="x"} one`, `{app="x"} two`, `{app="x"} three`,
		`{service_name="unknown_service"} four`, `{service_name="unknown_service"} five`}
	if !slices.Equal(lines, want) {
		t.Fatalf("decoded %q, want %q", lines, want)
	}
}

// TestEncodeJSONMergesFixedValues: label values that differ only in
// invalid UTF-8 are one set in JSON, which has U+FFFD for each, and go
// as one stream there, their entries in record order.
func TestEncodeJSONMergesFixedValues(t *testing.T) {
	p := newPushBatch()
	p.add(t, record.Labels{{Name: "app", Value: "x\xff"}}, 1, "one")
	p.add(t, record.Labels{{Name: "app", Value: "x\xfe"}}, 2, "two")
	p.add(t, record.Labels{{Name: "app", Value: "x\xff"}}, 3, "three")
	var e Encoder
	body := string(e.AppendPushJSON(nil, &p.b))
	want := `{"streams":[{"stream":{"app":"x` + "\uFFFD" + `"},"values":[["1","one"],["2","two"],["3","three"]]}]}`
	if body != want {
		t.Fatalf("body\n%s\nwant\n%s", body, want)
	}
	roundTrip(t, &p.b)
}

// TestEncodeAppends: the bodies are appended to dst, whatever it holds.
func TestEncodeAppends(t *testing.T) {
	b := benchBatch(t)
	var e Encoder
	for name, enc := range map[string]func(dst []byte, b *record.Batch) []byte{"proto": e.AppendPushProto, "json": e.AppendPushJSON} {
		alone := slices.Clone(enc(nil, b))
		got := enc([]byte("prefix"), b)
		if string(got) != "prefix"+string(alone) {
			t.Errorf("%s: appended to a prefix, the body differs", name)
		}
	}
}
