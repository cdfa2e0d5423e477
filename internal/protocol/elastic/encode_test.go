package elastic

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
)

// receiverConfig is how a sluice reading the bulk bodies is set up:
// @timestamp and message first (see Encoder), and the test's label names
// as stream fields. The batches sent are parsed with it too, so that a
// line sent as it is comes back as the same record.
func receiverConfig() record.Config {
	cfg := record.DefaultConfig()
	cfg.TimeFields = append([]string{"@timestamp"}, record.DefaultTimeFields...)
	cfg.MsgFields = append([]string{"message"}, record.DefaultMsgFields...)
	cfg.StreamFields = append(slices.Clone(record.DefaultStreamFields), "env", "pod", "ünï")
	return cfg
}

// view is a record as the receiver sees it, for comparing.
type view struct {
	Time   int64
	Labels string
	Line   string // only for a line sent as it is
	Msg    string
	Fields string // name=text of the fields other than time and message
}

func fieldsText(b *record.Batch, i int, all bool) string {
	var fs []string
	for _, f := range b.RecordFields(i) {
		if all || f.Role == record.RoleNone {
			fs = append(fs, b.Name(&f)+"="+string(b.AppendString(nil, &f)))
		}
	}
	return fmt.Sprintf("%q", fs)
}

// expect is what the receiver must make of record i of b.
func expect(b *record.Batch, i int, cfg record.Config) view {
	r := &b.Records[i]
	line := b.Bytes(r.Line)
	if selfContained(b, i) && jsonObjectLine(line) {
		return view{r.Time, b.Labels(i).String(), string(line), string(b.AppendMsg(nil, i)), fieldsText(b, i, true)}
	}
	fixed := func(s string) string { return string([]rune(s)) } // invalid bytes to U+FFFD, one each
	seen := map[string]bool{"@timestamp": true, "message": true}
	var fields []string
	var ls record.Labels
	member := func(name, text string) {
		name = fixed(name)
		if seen[name] {
			return
		}
		seen[name] = true
		fields = append(fields, name+"="+text)
		if slices.Contains(cfg.StreamFields, name) && text != "" {
			ls = append(ls, record.Label{Name: name, Value: text})
		}
	}
	for _, l := range b.Labels(i) {
		if l.Value != "" {
			member(l.Name, fixed(l.Value))
		}
	}
	for _, f := range b.RecordFields(i) {
		if f.Role == record.RoleNone {
			member(b.Name(&f), string(b.AppendString(nil, &f)))
		}
	}
	slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	return view{Time: r.Time, Labels: ls.String(), Msg: fixed(string(line)), Fields: fmt.Sprintf("%q", fields)}
}

// received reads a bulk body as the server does: Split, then every
// document parsed as a JSON line.
// Each record is seen both ways: as a written document and as a line
// sent as it is.
func received(t testing.TB, body []byte, index string, cfg record.Config) [][2]view {
	t.Helper()
	docs, items, err := Split(body, "")
	if err != nil {
		t.Fatalf("split: %v\n%s", err, body)
	}
	for k, it := range items {
		if it.Op != "create" || it.Index != index || it.Doc != k+1 || it.Status != 0 {
			t.Fatalf("item %d: %+v", k, it)
		}
	}
	p, err := parse.New(parse.Options{Format: "json", Record: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]view
	err = p.Bytes(context.Background(), docs, func(b *record.Batch) error {
		for _, e := range b.Errors {
			t.Errorf("document %d refused: %v", e.Line, e.Msg)
		}
		for i := range b.Records {
			r := &b.Records[i]
			if r.TimeSource != record.FromData {
				t.Errorf("record %d: no time read from the document", len(got))
			}
			// As a written document, and as a line sent as it is.
			got = append(got, [2]view{
				{r.Time, b.Labels(i).String(), "", string(b.AppendMsg(nil, i)), fieldsText(b, i, false)},
				{r.Time, b.Labels(i).String(), string(b.Bytes(r.Line)), string(b.AppendMsg(nil, i)), fieldsText(b, i, true)},
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("%d records from %d items", len(got), len(items))
	}
	return got
}

func roundTrip(t testing.TB, b *record.Batch, cfg record.Config) {
	t.Helper()
	var e Encoder
	body := e.AppendBulk(nil, b, "logs-sluice")
	if len(b.Records) == 0 {
		if len(body) > 0 {
			t.Fatalf("body %q for no records", body)
		}
		return
	}
	got := received(t, body, "logs-sluice", cfg)
	for i := range b.Records {
		w := expect(b, i, cfg)
		g := got[i][0]
		if w.Line != "" || jsonObjectLine(b.Bytes(b.Records[i].Line)) && selfContained(b, i) {
			g = got[i][1]
		}
		if g != w {
			t.Fatalf("record %d (line %q):\n got %+v\nwant %+v\nbody:\n%s", i, b.Bytes(b.Records[i].Line), g, w, body)
		}
	}
}

// parsed parses input as sluice does, in format.
func parsed(t testing.TB, format, input string, cfg record.Config, fn func(b *record.Batch)) {
	t.Helper()
	p, err := parse.New(parse.Options{Format: format, Record: cfg})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Bytes(context.Background(), []byte(input), func(b *record.Batch) error {
		b.ReceiveTime = 1_800_000_000_000_000_000
		fn(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pushBatch builds records as a Loki or OTLP push decodes them: the line
// is the message, the fields are structured metadata after it in Data.
type pushBatch struct{ b record.Batch }

func newPushBatch() *pushBatch {
	p := &pushBatch{}
	p.b.Names, p.b.Streams = record.NewNames(), record.NewStreams()
	return p
}

func (p *pushBatch) add(t testing.TB, ls record.Labels, ts int64, line string, meta ...string) {
	t.Helper()
	b := &p.b
	var id uint32
	if len(ls) > 0 {
		ls = slices.Clone(ls)
		slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
		var ok bool
		if id, ok = b.Streams.Intern(ls); !ok {
			t.Fatal("stream table full")
		}
	}
	start := uint32(len(b.Data))
	b.Data = append(b.Data, line...)
	r := record.Record{Time: ts, Stream: id, Line: record.Span{Off: start, Len: uint32(len(line))}, FieldStart: uint32(len(b.Fields))}
	if !utf8.ValidString(line) {
		r.MsgFlags = record.BadUTF8
	}
	r.Msg = r.Line
	for k := 0; k+1 < len(meta); k += 2 {
		name, _ := b.Names.Lookup([]byte(meta[k]))
		off := uint32(len(b.Data))
		b.Data = append(b.Data, meta[k+1]...)
		f := record.Field{Name: name, Kind: record.String, Raw: record.Span{Off: off, Len: uint32(len(meta[k+1]))}}
		if !utf8.ValidString(meta[k+1]) {
			f.Flags = record.BadUTF8
		}
		b.Fields = append(b.Fields, f)
	}
	r.NumFields = uint32(len(b.Fields)) - r.FieldStart
	b.Records = append(b.Records, r)
}

func TestEncodeRoundTrip(t *testing.T) {
	cfg := receiverConfig()
	t.Run("json lines as they are", func(t *testing.T) {
		in := `{"@timestamp":"2026-01-15T08:00:00.123456789Z","service":"api","msg":"hello \"q\" \\ é ✓","n":1,"f":1.50,"ok":true,"nil":null,"arr":[1,"x"],"http":{"status":200}}
{"@timestamp":"2026-01-15T08:00:01Z","message":"from beats","host":"h1","env":"prod"}
  {"app":"x","@timestamp":"2026-01-15T09:00:01.5+01:00"}
`
		parsed(t, "json", in, cfg, func(b *record.Batch) {
			for i := range b.Records {
				if !selfContained(b, i) || !jsonObjectLine(b.Bytes(b.Records[i].Line)) {
					t.Errorf("record %d is not sent as it is", i)
				}
			}
			roundTrip(t, b, cfg)
		})
	})
	t.Run("wrapped", func(t *testing.T) {
		// JSON without a time, logfmt, plain text: documents written.
		in := `{"service":"api","msg":"no time"}
{"ts":"2026-01-15T08:00:00.123456789Z","service":"api","msg":"a time, not @timestamp","n":1,"f":1.50,"ok":true,"nil":null,"arr":[1,"x"],"http":{"status":200}}
{"@timestamp":"Jan 15 08:00:00","service":"api","msg":"a @timestamp Elasticsearch does not read"}
{"time":1768464000123,"app":"x"}
ts=2026-01-15T08:00:00.5Z level=warn service=db msg="slow query" ms=1234 ratio=0.25
level=info message=shadowed @timestamp=x service=web
just some text with "quotes" and \backslashes\
`
		parsed(t, "auto", in, cfg, func(b *record.Batch) {
			if len(b.Records) != 7 {
				t.Fatalf("%d records", len(b.Records))
			}
			for i := range b.Records {
				if selfContained(b, i) && jsonObjectLine(b.Bytes(b.Records[i].Line)) {
					t.Errorf("record %d is sent as it is", i)
				}
			}
			roundTrip(t, b, cfg)
		})
	})
	t.Run("push records", func(t *testing.T) {
		p := newPushBatch()
		app := record.Labels{{Name: "app", Value: "api"}, {Name: "env", Value: "prod"}}
		p.add(t, app, 1_768_464_000_123_456_789, "plain")
		p.add(t, app, 1_768_464_000_123_456_790, `quotes "x" and \backslash\`)
		p.add(t, app, 1_768_464_001_000_000_000, "")
		p.add(t, record.Labels{{Name: "ünï", Value: "✓ 日本"}}, 1, "héllo wörld 🎉")
		p.add(t, app, 2, "tab\tnewline\ncr\r nul\x00")
		p.add(t, app, 3, "bad utf8 \xff\xfe and truncated \xe2\x82")
		p.add(t, nil, 4, "no labels")
		p.add(t, app, 5, `{"a":"json line from a push: its time and labels are not in it"}`)
		p.add(t, app, 6, "meta", "trace_id", "abc", "pod", "p-1", "app", "shadowed by the label", "bad", "x\xffy")
		p.add(t, app, 7, "a label named message", "message", "shadowed")
		roundTrip(t, &p.b, cfg)
	})
	t.Run("many streams", func(t *testing.T) {
		p := newPushBatch()
		for i := range 2000 {
			ls := record.Labels{{Name: "app", Value: fmt.Sprint("a", i%257)}, {Name: "pod", Value: fmt.Sprint(i % 13)}}
			p.add(t, ls, int64(i)*1e9+int64(i), fmt.Sprintf("line %d", i), "n", fmt.Sprint(i))
		}
		roundTrip(t, &p.b, cfg)
	})
}

func TestAppendBulkShape(t *testing.T) {
	p := newPushBatch()
	p.add(t, record.Labels{{Name: "app", Value: "a"}}, 1_768_464_000_000_000_001, "x\"y", "k", "v")
	var e Encoder
	got := string(e.AppendBulk(nil, &p.b, `we"ird`))
	want := `{"create":{"_index":"we\"ird"}}` + "\n" +
		`{"@timestamp":"2026-01-15T08:00:00.000000001Z","message":"x\"y","app":"a","k":"v"}` + "\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %s", line)
		}
	}
}

func TestISOTime(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"2026-01-15T08:00:00Z", true}, {"2026-01-15T08:00:00.1Z", true}, {"2026-01-15T08:00:00.123456789Z", true},
		{"2026-01-15T08:00:00+01:00", true}, {"2026-01-15T08:00:00.5-05:30", true},
		{"2026-01-15T08:00:00", false}, {"2026-01-15 08:00:00Z", false}, {"2026-01-15T08:00:00.Z", false},
		{"2026-01-15T08:00:00.1234567890Z", false}, {"2026-01-15T08:00:00+0100", false}, {"Jan 15 08:00:00", false}, {"", false},
	} {
		if got := isoTime([]byte(tc.s)); got != tc.ok {
			t.Errorf("isoTime(%q) = %v, want %v", tc.s, got, tc.ok)
		}
	}
}

func TestCheckIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"logs-sluice", true}, {"logs.2026.01", true}, {"", false}, {".", false}, {"..", false},
		{"Logs", false}, {"a b", false}, {"a/b", false}, {"a*", false}, {"a:b", false},
		{"-x", false}, {"_x", false}, {"+x", false}, {strings.Repeat("a", 256), false},
	} {
		if err := CheckIndex(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckIndex(%.20q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// benchBatch is 1,000 records: JSON lines sent as they are, and logfmt
// lines written as documents, half each.
func benchBatch(t testing.TB) *record.Batch {
	var sb strings.Builder
	for i := range 500 {
		fmt.Fprintf(&sb, `{"@timestamp":"2026-01-15T08:00:00.%06dZ","service":"app-%d","level":"info","msg":"request served","path":"/api/v1/items/%d","status":200,"dur_ms":%d}`+"\n", i, i%20, i, i%97)
		fmt.Fprintf(&sb, `ts=2026-01-15T08:00:00.%06dZ service=app-%d level=info caller=handler.go:123 msg="request served" path=/api/v1/items/%d status=200 dur=%dms`+"\n", i, i%20, i, i%97)
	}
	var out *record.Batch
	parsed(t, "auto", sb.String(), receiverConfig(), func(b *record.Batch) {
		if out != nil {
			t.Fatal("more than one batch")
		}
		// Keep a copy: the parser reuses its batch.
		c := *b
		c.Data, c.Records, c.Fields = slices.Clone(b.Data), slices.Clone(b.Records), slices.Clone(b.Fields)
		out = &c
	})
	return out
}

func BenchmarkAppendBulk(b *testing.B) {
	batch := benchBatch(b)
	var e Encoder
	b.SetBytes(int64(len(batch.Data)))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = e.AppendBulk(buf[:0], batch, "logs-sluice")
	}
}

// FuzzAppendBulk: what the receiver makes of encode(x) is x, for batches
// parsed from the fuzz input by sluice's own formats (JSON lines go as
// they are, the rest as documents) or built as a push decodes them.
func FuzzAppendBulk(f *testing.F) {
	f.Add(false, []byte("{\"@timestamp\":\"2026-01-15T08:00:00.5Z\",\"service\":\"a\",\"x\":[1]}\n{\"ts\":1768464000123,\"service\":\"a\",\"x\":[1]}\nlevel=info ts=2026-01-15T08:00:00Z msg=hi\ntext \"q\" \\ é\n"))
	// Push input: streams-1, then per stream a bitmap of names each
	// followed by its value; then records: stream, 8 bytes of time,
	// line, count of metadata, each name, suffix and value.
	f.Add(true, []byte("\x00\x07\x03api\x04prod\x02p1"+
		"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x05hello\x02\x00\x00\x02v1\x03\x01\x03x\xffy"+
		"\x00\x11\x12\x13\x14\x15\x16\x17\x18\x07{\"a\":1}\x00"))
	f.Add(true, []byte("\x01\x38\x02\xff\xfe\x01\"\x00\x01\x01x"+
		"\x01\x00\x00\x00\x00\x00\x00\x00\x00\x03\\\n\"\x01\x04\x00\x01\xff"))
	cfg := receiverConfig()
	f.Fuzz(func(t *testing.T, push bool, data []byte) {
		if !push {
			if !utf8.Valid(data) {
				// Field names are written as U+FFFD for invalid bytes,
				// and two names may then be one: keep those out of
				// the property, which the push case covers for values.
				return
			}
			parsed(t, "auto", string(data), cfg, func(b *record.Batch) { roundTrip(t, b, cfg) })
			return
		}
		in := fuzzInput{data: data}
		p := newPushBatch()
		names := []string{"app", "env", "pod", "message", "@timestamp", "ünï"}
		streams := make([]record.Labels, 1+in.byte()%4)
		for i := range streams {
			set := in.byte()
			for j, name := range names {
				if set&(1<<j) != 0 {
					streams[i] = append(streams[i], record.Label{Name: name, Value: in.str()})
				}
			}
		}
		for !in.done() {
			ls := streams[int(in.byte())%len(streams)]
			// From 1970 to 2116: sluice takes an earlier time from a
			// document for a mistake.
			ts := int64(binary.LittleEndian.Uint64(in.bytes(8)) >> 2)
			line := in.str()
			var meta []string
			for range in.byte() % 4 {
				meta = append(meta, names[in.byte()%byte(len(names))]+fmt.Sprint(in.byte()%2), in.str())
			}
			p.add(t, ls, ts, line, meta...)
		}
		roundTrip(t, &p.b, cfg)
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

// TestAppendBulkAppends: the body is appended to dst, whatever it holds.
func TestAppendBulkAppends(t *testing.T) {
	b := benchBatch(t)
	var e Encoder
	alone := e.AppendBulk(nil, b, "logs")
	if got := e.AppendBulk([]byte("prefix"), b, "logs"); string(got) != "prefix"+string(alone) {
		t.Error("appended to a prefix, the body differs")
	}
}
