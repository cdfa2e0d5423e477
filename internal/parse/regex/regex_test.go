package regex

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

const nginxExpr = `^(?P<ip>\S+) - (?P<user>\S+) \[(?P<time>[^\]]+)\] "(?P<method>\S+) (?P<path>\S+) (?P<proto>[^"]+)" (?P<status>\d+) (?P<bytes>\d+) "(?P<referer>[^"]*)" "(?P<ua>[^"]*)"`

// rt is parsetest.ReceiveTime as the normalized output prints it.
const rt = `"_time":"2026-01-15T12:00:00.000000000Z"`

var compileErrors = []struct {
	name, expr, want string
}{
	{"syntax", `(?P<a>x`, "regex: error parsing regexp: missing closing ): `(?P<a>x`"},
	{"duplicate", `(?P<a>x)(?P<a>y)`, `regex: duplicate group name "a" in "(?P<a>x)(?P<a>y)"`},
	{"no named group", `(a)(b)`, `regex: no named group in "(a)(b)": at least one (?P<name>...) is required`},
	{"no group", `abc`, `regex: no named group in "abc": at least one (?P<name>...) is required`},
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range compileErrors {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.expr)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Compile(%q) error = %v, want %q", tc.expr, err, tc.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	p := MustCompile(`(?P<a>x)(y)(?<b>z)`)
	if got, want := p.Names(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
}

var parseCases = []struct {
	name string
	expr string
	in   string
	want []string
}{
	{
		name: "nginx combined",
		expr: nginxExpr,
		in:   `217.32.130.31 - - [15/Jan/2026:08:00:00 +0000] "HEAD /api/v1/payments/authorize HTTP/1.1" 304 42702 "-" "python-requests/2.32.3"` + "\n",
		want: []string{`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"217.32.130.31 - - [15/Jan/2026:08:00:00 +0000] \"HEAD /api/v1/payments/authorize HTTP/1.1\" 304 42702 \"-\" \"python-requests/2.32.3\"","ip":"217.32.130.31","user":"-","method":"HEAD","path":"/api/v1/payments/authorize","proto":"HTTP/1.1","status":"304","bytes":"42702","referer":"-","ua":"python-requests/2.32.3"}`},
	},
	{
		name: "unmatched line kept as message between matched ones",
		expr: `^(?P<level>[A-Z]+): (?P<msg>.*)`,
		in:   "INFO: one\nno colon here\r\nWARN: two",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"one","level":"INFO"}`,
			`{` + rt + `,"_stream":"{}","_msg":"no colon here"}`,
			`{` + rt + `,"_stream":"{}","_msg":"two","level":"WARN"}`,
		},
	},
	{
		name: "unanchored",
		expr: `status=(?P<status>\d+)`,
		in:   "GET / status=200 took 3ms\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"GET / status=200 took 3ms","status":"200"}`},
	},
	{
		name: "group not taking part adds no field",
		expr: `^(?:(?P<a>a+)|(?P<b>b+))(?P<rest>.*)$`,
		in:   "aaX\nbbY\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"aaX","a":"aa","rest":"X"}`,
			`{` + rt + `,"_stream":"{}","_msg":"bbY","b":"bb","rest":"Y"}`,
		},
	},
	{
		name: "empty group is a field",
		expr: `^"(?P<referer>[^"]*)"`,
		in:   `""` + "\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"\"\"","referer":""}`},
	},
	{
		name: "unnamed groups and the (?<name>) form",
		expr: `^(\w+) (?<host>\S+) (?P<msg>.*)$`,
		in:   "x web1 hello world\n",
		want: []string{`{` + rt + `,"_stream":"{host=\"web1\"}","_msg":"hello world","host":"web1"}`},
	},
	{
		name: "time group",
		expr: `^(?P<time>\S+ \S+) (?P<level>\S+)`,
		in:   "2015-10-18 18:01:47,978 INFO [main]\n",
		want: []string{`{"_time":"2015-10-18T18:01:47.978000000Z","_stream":"{}","_msg":"2015-10-18 18:01:47,978 INFO [main]","level":"INFO"}`},
	},
	{
		name: "invalid UTF-8",
		expr: `^(?P<a>\S+) (?P<b>.*)$`,
		in:   "ok \xff\xfe\nnospace\xff\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"ok ` + "\uFFFD\uFFFD" + `","a":"ok","b":"` + "\uFFFD\uFFFD" + `"}`,
			`{` + rt + `,"_stream":"{}","_msg":"nospace` + "\uFFFD" + `"}`,
		},
	},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got := parsetest.Run(MustCompile(tc.expr), record.DefaultConfig(), []byte(tc.in), nil)
			if len(got.Errors) != 0 {
				t.Errorf("errors: %q", got.Errors)
			}
			if !slices.Equal(got.Records, tc.want) {
				t.Errorf("records:\n got %s\nwant %s", strings.Join(got.Records, "\n     "), strings.Join(tc.want, "\n     "))
			}
		})
	}
}

func TestBadUTF8Count(t *testing.T) {
	p := MustCompile(`^(?P<a>\S+) (?P<b>.*)$`)
	bl := record.NewBuilder(record.DefaultConfig())
	b := &record.Batch{Data: []byte("\xff \xfe\nx y\nno\xff")}
	bl.Start(b)
	var sp lines.Splitter
	lines.Run(&sp, bl, p, true)
	if len(b.Records) != 3 || b.BadUTF8 != 3 {
		t.Fatalf("records %d, BadUTF8 %d; want 3 and 3", len(b.Records), b.BadUTF8)
	}
}

// TestParseAllocs pins the allocations per line: exactly one for a
// matched line (regexp's FindSubmatchIndex result), none for an unmatched
// one.
func TestParseAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	p := MustCompile(nginxExpr)
	for _, tc := range []struct {
		name string
		line string
		want float64
	}{
		{"matched", `217.32.130.31 - - [15/Jan/2026:08:00:00 +0000] "HEAD /api/v1/payments/authorize HTTP/1.1" 304 42702 "-" "python-requests/2.32.3"`, 1},
		{"unmatched", `something else entirely`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bl := record.NewBuilder(record.DefaultConfig())
			b := &record.Batch{Data: []byte(tc.line), ReceiveTime: parsetest.ReceiveTime}
			bl.Start(b)
			var sp lines.Splitter
			run := func() {
				b.Records, b.Fields, b.Errors = b.Records[:0], b.Fields[:0], b.Errors[:0]
				sp.Reset()
				lines.Run(&sp, bl, p, true)
			}
			run()
			if len(b.Records) != 1 {
				t.Fatalf("warm-up parsed %d records", len(b.Records))
			}
			if n := testing.AllocsPerRun(100, run); n != tc.want {
				t.Fatalf("%v allocations per line, want %v", n, tc.want)
			}
		})
	}
}

// FuzzParse checks that no input panics, that feeding an input in random
// chunks gives exactly what feeding it whole gives, and that every record
// renders as JSON.
func FuzzParse(f *testing.F) {
	for i, tc := range parseCases {
		f.Add(uint8(i), []byte(tc.in), uint64(i))
	}
	f.Fuzz(func(t *testing.T, which uint8, in []byte, seed uint64) {
		p := MustCompile(parseCases[int(which)%len(parseCases)].expr)
		cfg := record.DefaultConfig()
		whole := parsetest.Run(p, cfg, in, nil)
		split := parsetest.Run(p, cfg, in, parsetest.RandomChunks(len(in), seed))
		if !slices.Equal(whole.Records, split.Records) || !slices.Equal(whole.Errors, split.Errors) {
			t.Fatalf("whole and split differ:\nwhole %q %q\nsplit %q %q", whole.Records, whole.Errors, split.Records, split.Errors)
		}
		if len(whole.Errors) != 0 {
			t.Fatalf("errors: %q", whole.Errors)
		}
		for _, r := range whole.Records {
			if !json.Valid([]byte(r)) {
				t.Fatalf("normalized output is not JSON: %q", r)
			}
		}
	})
}

// BenchmarkParse measures the nginx combined expression on 1,000 lines of
// `gen.py nginx 1000 --seed 1` (testdata), every line matched, its
// timestamp parsed.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/nginx-1000.log")
	if err != nil {
		b.Fatal(err)
	}
	p := MustCompile(nginxExpr)
	b.Run("corpus=nginx", func(b *testing.B) {
		bl := record.NewBuilder(record.DefaultConfig())
		batch := &record.Batch{Data: data}
		var sp lines.Splitter
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			sp.Reset()
			batch.Records, batch.Fields, batch.Errors = batch.Records[:0], batch.Fields[:0], batch.Errors[:0]
			bl.Start(batch)
			lines.Run(&sp, bl, p, true)
			if len(batch.Records) != 1000 || len(batch.RecordFields(999)) != 10 {
				b.Fatalf("%d records; the corpus does not match", len(batch.Records))
			}
		}
	})
}
