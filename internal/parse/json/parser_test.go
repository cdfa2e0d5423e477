package json

import (
	stdjson "encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

func parse(input string) parsetest.Result {
	return parsetest.Run(&Parser{}, record.DefaultConfig(), []byte(input), nil)
}

var parseCases = []struct {
	name, in string
	out      []string
	errs     []string
}{
	{
		name: "flat",
		in:   `{"time":"2026-01-15T08:00:00.5Z","level":"info","msg":"hello","n":42,"f":1.5,"ok":true,"nil":null}`,
		out:  []string{`{"_time":"2026-01-15T08:00:00.500000000Z","_stream":"{}","_msg":"hello","level":"info","n":42,"f":1.5,"ok":true,"nil":null}`},
	},
	{
		name: "nested objects flatten to dotted names",
		in:   `{"ts":1768464000000,"msg":"m","http":{"status":502,"req":{"path":"/a"}},"after":1}`,
		out:  []string{`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"m","http.status":502,"http.req.path":"/a","after":1}`},
	},
	{
		name: "arrays and empty objects kept as JSON text",
		in:   `{"msg":"m","tags":["a", {"b":[1,2]}],"e":{ },"ea":[]}`,
		out:  []string{`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"m","tags":["a", {"b":[1,2]}],"e":{ },"ea":[]}`},
	},
	{
		name: "whitespace between tokens",
		in:   " { \"msg\" : \"m\" ,\t\"a\" : [ 1 , 2 ] , \"b\" :{ \"c\" : -0.5e-3 } } \r\n",
		out:  []string{`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"m","a":[ 1 , 2 ],"b.c":-0.5e-3}`},
	},
	{
		name: "escapes decoded lazily and re-escaped",
		in:   `{"msg":"a\"b\\c\nd\u00e9\ud83d\ude00\ud800x","k\u0065y":"\/"}`,
		out:  []string{`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"a\"b\\c\ndé😀` + "\uFFFD" + `x","key":"/"}`},
	},
	{
		name: "big integers kept exactly",
		in:   `{"a":9223372036854775807,"b":-9223372036854775808,"c":9223372036854775808,"d":123456789012345678901234567890}`,
		out:  []string{`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"","a":9223372036854775807,"b":-9223372036854775808,"c":9223372036854775808,"d":123456789012345678901234567890}`},
	},
	{
		name: "stream labels from stream fields",
		in:   `{"msg":"m","service":"api","host":"h1","x":1}` + "\n" + `{"host":"h2","service":"api"}`,
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{host=\"h1\", service=\"api\"}","_msg":"m","service":"api","host":"h1","x":1}`,
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{host=\"h2\", service=\"api\"}","_msg":"","host":"h2","service":"api"}`,
		},
	},
	{
		name: "time field priority and fallback",
		in:   `{"time":"not a time","ts":1768464000123,"msg":"m"}` + "\n" + `{"_time":"2026-01-15T08:00:00Z","time":"2025-01-01T00:00:00Z"}`,
		out: []string{
			`{"_time":"2026-01-15T08:00:00.123000000Z","_stream":"{}","_msg":"m","time":"not a time"}`,
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"","time":"2025-01-01T00:00:00Z"}`,
		},
	},
	{
		name: "duplicate keys kept",
		in:   `{"a":1,"a":2}`,
		out:  []string{`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"","a":1,"a":2}`},
	},
	{
		name: "non-object values become the message",
		in:   "\"just text\"\n[1,2]\n42\n",
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"just text"}`,
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"[1,2]"}`,
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"42"}`,
		},
	},
	{
		name: "blank and whitespace lines hold no record",
		in:   "\n   \n{\"a\":1}\n\t\n",
		out:  []string{`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"","a":1}`},
	},
	{
		name: "invalid UTF-8 in a string is kept and replaced on output",
		in:   "{\"msg\":\"a\xffb\"}",
		out:  []string{`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"a` + "\uFFFD" + `b"}`},
	},
	{
		name: "bad lines fail alone",
		in: "{\"a\":1}\n" +
			"{\"a\":tru}\n" +
			"{\"a\" 1}\n" +
			"{\"a\":\"x\ty\"}\n" +
			"{\"a\":\"\\q\"}\n" +
			"{\"a\":01}\n" +
			"{\"a\":1,}\n" +
			"{\"a\":1} x\n" +
			"{\"a\":\"unterminated}\n" +
			"{\"a\":{\"b\":[1,2}}\n" +
			"{\"a\":\"\\u12g4\"}\n" +
			"{\"a\":-}\n" +
			"{\"b\":2}",
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"","a":1}`,
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"","b":2}`,
		},
		errs: []string{
			`2:6: json: unexpected 't' in the value of field "a"`,
			`3:6: json: unexpected '1'`,
			`4:8: json: control character 0x09 in string: must be escaped in the value of field "a"`,
			`5:7: json: invalid escape '\q' in string in the value of field "a"`,
			`6:7: json: unexpected '1'`,
			`7:8: json: unexpected '}'`,
			`8:9: json: unexpected 'x' after the JSON value`,
			`9:20: json: unterminated string in the value of field "a"`,
			`10:15: json: unexpected '}'`,
			`11:7: json: invalid \u escape in string: want four hex digits in the value of field "a"`,
			`12:7: json: invalid number in the value of field "a"`,
		},
	},
	{
		name: "too deep",
		in:   `{"a":` + strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat(`}`, 65),
		errs: []string{`1:321: json: nesting deeper than 64`},
	},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			res := parse(tc.in)
			if !slices.Equal(res.Records, tc.out) {
				t.Errorf("records:\n got %q\nwant %q", res.Records, tc.out)
			}
			if !slices.Equal(res.Errors, tc.errs) {
				t.Errorf("errors:\n got %q\nwant %q", res.Errors, tc.errs)
			}
		})
	}
}

func TestLineKeptByteExact(t *testing.T) {
	in := " {\"a\" : 1 }\r\n{\"b\":\"\xff\"}\n"
	res := parse(in)
	want := []string{" {\"a\" : 1 }", "{\"b\":\"\xff\"}"}
	if !slices.Equal(res.Lines, want) {
		t.Fatalf("lines = %q, want %q", res.Lines, want)
	}
}

func TestLineTooLong(t *testing.T) {
	long := `{"msg":"` + strings.Repeat("x", 100) + `"}`
	in := []byte(`{"a":1}` + "\n" + long + "\n" + `{"a":2}`)
	for _, chunks := range [][]int{nil, {30, 30, 30, 30}, {1, 2, 3, 5, 8, 13, 21, 34, 55}} {
		sp := lines.Splitter{MaxLineSize: 50}
		got := parsetest.Feed(&sp, record.DefaultConfig(), in, chunks, func(sp *lines.Splitter, bl *record.Builder, final bool) int {
			return lines.Run(sp, bl, &Parser{}, final)
		})
		if len(got.Records) != 2 || !slices.Equal(got.Errors, []string{"2:51: line longer than 50 bytes"}) {
			t.Errorf("chunks %v: records %q errors %q", chunks, got.Records, got.Errors)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	data, err := os.ReadFile("testdata/app-1000.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	bl := record.NewBuilder(record.DefaultConfig())
	b := &record.Batch{Data: data}
	var sp lines.Splitter
	var p Parser
	run := func() {
		b.Records, b.Fields, b.Errors = b.Records[:0], b.Fields[:0], b.Errors[:0]
		sp.Reset()
		bl.Start(b)
		lines.Run(&sp, bl, &p, true)
	}
	run() // warm: names, streams, buffers
	if len(b.Records) != 1000 || len(b.Errors) != 0 {
		t.Fatalf("records %d, errors %v", len(b.Records), b.Errors)
	}
	if n := testing.AllocsPerRun(5, run); n != 0 {
		t.Errorf("%v allocations per 1000 lines, want 0", n)
	}
}

// TestMatchesEncodingJSON checks every record of the sample corpus against
// encoding/json's reading of the same line.
func TestMatchesEncodingJSON(t *testing.T) {
	data, err := os.ReadFile("testdata/app-1000.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	res := parsetest.Run(&Parser{}, record.Config{}, data, nil)
	src := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(res.Records) != len(src) {
		t.Fatalf("%d records from %d lines", len(res.Records), len(src))
	}
	for i, line := range src {
		var want map[string]any
		if err := stdjson.Unmarshal([]byte(line), &want); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := stdjson.Unmarshal([]byte(res.Records[i]), &got); err != nil {
			t.Fatalf("line %d: output is not JSON: %v\n%s", i+1, err, res.Records[i])
		}
		flat := map[string]any{}
		flatten("", want, flat)
		for _, k := range []string{"_time", "_stream", "_msg"} {
			delete(got, k)
		}
		gb, _ := stdjson.Marshal(got)
		wb, _ := stdjson.Marshal(flat)
		if string(gb) != string(wb) {
			t.Fatalf("line %d:\n got %s\nwant %s", i+1, gb, wb)
		}
	}
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flatten(prefix+k+".", sub, out)
			continue
		}
		out[prefix+k] = v
	}
}

// TestJSONTestSuite runs JSONTestSuite's test_parsing files through
// Validate: y_ must pass, n_ must fail, i_ must not crash or hang.
func TestJSONTestSuite(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "jsontestsuite", "test_parsing")
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		t.Skipf("JSONTestSuite not found at %s (../shared is absent)", dir)
	}
	for _, f := range files {
		name := filepath.Base(f)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, verr := Validate(data)
		std := stdjson.Valid(data)
		switch name[0] {
		case 'y':
			if verr != nil {
				t.Errorf("%s: rejected: %v", name, verr)
			}
		case 'n':
			if verr == nil {
				t.Errorf("%s: accepted %q", name, data)
			}
		}
		// Where encoding/json agrees on a one-line text, the line parser
		// must too (it parses what Validate accepts).
		if !strings.ContainsAny(string(data), "\n") && name[0] != 'i' && !strings.HasPrefix(string(data), "\xEF\xBB\xBF") {
			res := parsetest.Run(&Parser{}, record.Config{}, data, nil)
			accepted := len(res.Errors) == 0
			if accepted != (verr == nil) && strings.TrimSpace(string(data)) != "" {
				t.Errorf("%s: ParseLine accepted=%v, Validate err=%v (encoding/json valid=%v)", name, accepted, verr, std)
			}
		}
	}
}

// TestFloatFastPath checks the parser's own float conversion against
// strconv.ParseFloat, bit for bit, on decimals of every digit count and
// place of the decimal point.
func TestFloatFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var in strings.Builder
	var want []float64
	for range 20000 {
		digits := 1 + r.IntN(17)
		s := strconv.FormatUint(r.Uint64N(uint64(math.Pow10(min(digits, 19)))), 10)
		point := r.IntN(len(s)) + 1
		text := s[:point] + "." + s[point:]
		if point == len(s) {
			text += "0"
		}
		text = strings.TrimLeft(text, "0")
		if text[0] == '.' {
			text = "0" + text
		}
		if r.IntN(2) == 0 {
			text = "-" + text
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, f)
		in.WriteString(`{"v":` + text + "}\n")
	}
	bl := record.NewBuilder(record.Config{})
	b := &record.Batch{Data: []byte(in.String())}
	bl.Start(b)
	var sp lines.Splitter
	lines.Run(&sp, bl, &Parser{}, true)
	if len(b.Fields) != len(want) {
		t.Fatalf("%d fields for %d lines: %v", len(b.Fields), len(want), b.Errors)
	}
	for i, f := range b.Fields {
		if f.Kind != record.Float || math.Float64bits(f.Float()) != math.Float64bits(want[i]) {
			t.Fatalf("%s: got %v (%v), want %v", b.Bytes(f.Raw), f.Float(), f.Kind, want[i])
		}
	}
}

func TestDigitRun(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		n := 1 + r.IntN(18) // with the leading 7, at most 19 digits
		digits := strconv.FormatUint(r.Uint64N(uint64(math.Pow10(n))-1), 10)
		tail := []string{"", ",", "}", " ", ".5", "e3", "x", "\xff", ":"}[r.IntN(9)]
		in := []byte(digits + tail)
		u, got, next := digitRun(in, 0, len(in), 7)
		want, _ := strconv.ParseUint("7"+digits, 10, 64)
		if got != len(digits) || next != len(digits) || u != want {
			t.Fatalf("%q: got %d (%d digits, next %d), want %d (%d digits)", in, u, got, next, want, len(digits))
		}
	}
	for c := 0; c < 256; c++ {
		in := []byte{'1', byte(c), '1', '1', '1', '1', '1', '1', '1'}
		_, n, _ := digitRun(in, 0, len(in), 0)
		if want := 1 + map[bool]int{true: 8, false: 0}[c >= '0' && c <= '9']; n != want {
			t.Fatalf("byte %#x: run of %d, want %d", c, n, want)
		}
	}
}

// TestSpecialIndex checks the vectorized search against a byte loop, for
// every special byte at every position of inputs of every length up to 100
// and at every start offset.
func TestSpecialIndex(t *testing.T) {
	slow := func(b []byte, i, end int) int {
		for ; i < end; i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				return i
			}
		}
		return end
	}
	for n := 0; n <= 100; n++ {
		buf := []byte(strings.Repeat("a", n))
		for start := 0; start <= min(n, 3); start++ {
			if got, want := specialIndex(buf, start, n), slow(buf, start, n); got != want {
				t.Fatalf("n %d start %d, none: got %d want %d", n, start, got, want)
			}
			for pos := start; pos < n; pos++ {
				for _, c := range []byte{'"', '\\', 0, 0x1f, 0x7f, 0x80, 0xff, ' ', '~'} {
					buf[pos] = c
					if got, want := specialIndex(buf, start, n), slow(buf, start, n); got != want {
						t.Fatalf("n %d start %d, %#x at %d: got %d want %d", n, start, c, pos, got, want)
					}
					buf[pos] = 'a'
				}
			}
		}
	}
}
