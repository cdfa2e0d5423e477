package logfmt

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

// T is the receive time parsetest gives every batch, as rendered.
const T = `"_time":"2026-01-15T12:00:00.000000000Z"`

var cases = []struct {
	name    string
	in      string
	records []string
	errors  []string
}{
	{
		name: "typical",
		in:   `ts=2026-01-15T08:00:00.000072Z level=info msg="cache miss" service=payments status=500 duration=31.632ms`,
		records: []string{
			`{"_time":"2026-01-15T08:00:00.000072000Z","_stream":"{service=\"payments\"}","_msg":"cache miss","level":"info","service":"payments","status":500,"duration":"31.632ms"}`,
		},
	},
	{
		name: "types",
		in:   `i=42 n=-7 z=0 nz=-0 big=18446744073709551616 nbig=-9223372036854775809 min=-9223372036854775808 max=9223372036854775807 f=1.5 e=1e3 ne=-2.5E-3 t=true fa=false q="42" lead=007 plus=+1 dot=1. exp=1e nul=null dash=- inf=1e999`,
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","i":42,"n":-7,"z":0,"nz":0,"big":18446744073709551616,"nbig":-9223372036854775809,"min":-9223372036854775808,"max":9223372036854775807,"f":1.5,"e":1e3,"ne":-2.5E-3,"t":true,"fa":false,"q":"42","lead":"007","plus":"+1","dot":"1.","exp":"1e","nul":"null","dash":"-","inf":"1e999"}`,
		},
	},
	{
		name: "bare and empty",
		in:   `a b= c="" d`,
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","a":"","b":"","c":"","d":""}`,
		},
	},
	{
		name: "duplicates kept",
		in:   `k=1 k=2 k="three"`,
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","k":1,"k":2,"k":"three"}`,
		},
	},
	{
		name: "escapes",
		in:   `msg="say \"hi\"\n\tthere \u00e9 \q" path="C:\\dir"`,
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"say \"hi\"\n\tthere é \\q","path":"C:\\dir"}`,
		},
	},
	{
		name: "lenient unquoted",
		in:   `url=/a?b=c&d="e" x==y`,
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","url":"/a?b=c&d=\"e\"","x":"=y"}`,
		},
	},
	{
		name: "whitespace",
		in:   "  \ta=1\t\tb=2   ",
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","a":1,"b":2}`,
		},
	},
	{
		name: "utf8",
		in:   "ключ=значение msg=\"日本語 ok\" emoji=😀",
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"日本語 ok","ключ":"значение","emoji":"😀"}`,
		},
	},
	{
		name: "bad utf8 values",
		in:   "a=x\xffy b=\"q\xc3(\" c=\xe2\x82",
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","a":"x�y","b":"q�(","c":"��"}`,
		},
	},
	{
		name: "time and stream fields",
		in:   "time=1768464000 app=api host=h1 message=hello\nt=1768464000.5 app=api host=h1 msg=x",
		records: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{app=\"api\", host=\"h1\"}","_msg":"hello","app":"api","host":"h1"}`,
			`{"_time":"2026-01-15T08:00:00.500000000Z","_stream":"{app=\"api\", host=\"h1\"}","_msg":"x","app":"api","host":"h1"}`,
		},
	},
	{
		name: "crlf and blank lines",
		in:   "a=1\r\n\r\n\nb=2\r\n",
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","a":1}`,
			`{` + T + `,"_stream":"{}","_msg":"","b":2}`,
		},
	},
	{
		name:    "only whitespace",
		in:      "   \t",
		records: []string{`{` + T + `,"_stream":"{}","_msg":""}`},
	},
	{
		name: "errors keep neighbours",
		in: "a=1\n" +
			`msg="unterminated` + "\n" +
			"=value\n" +
			`x=1 "q"=2` + "\n" +
			`ke"y=1` + "\n" +
			`k="v"x` + "\n" +
			"k=\"v\\\"\n" +
			"k\xff=1\n" +
			"b=2",
		records: []string{
			`{` + T + `,"_stream":"{}","_msg":"","a":1}`,
			`{` + T + `,"_stream":"{}","_msg":"","b":2}`,
		},
		errors: []string{
			`2:5: logfmt: unterminated quoted value for key "msg"`,
			`3:1: logfmt: '=' with no key before it`,
			`4:5: logfmt: unexpected '"' where a key should start`,
			`5:3: logfmt: unexpected '"' in key "ke"`,
			`6:6: logfmt: unexpected 'x' after the quoted value of key "k"`,
			`7:3: logfmt: unterminated quoted value for key "k"`,
			`8:1: logfmt: key "k\xff" is not valid UTF-8`,
		},
	},
}

func TestParse(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parsetest.Run(Parser{}, record.DefaultConfig(), []byte(tc.in), nil)
			check(t, got, tc.records, tc.errors)
		})
	}
}

func check(t *testing.T, got parsetest.Result, records, errors []string) {
	t.Helper()
	if !slices.Equal(got.Records, records) {
		t.Errorf("records:\n got %q\nwant %q", got.Records, records)
	}
	if !slices.Equal(got.Errors, errors) {
		t.Errorf("errors:\n got %q\nwant %q", got.Errors, errors)
	}
}

func TestFieldFlags(t *testing.T) {
	in := "a=\"x\\\"y\" b=\"plain\" c=\"\xff\\n\" d=\xff e=\"\\\xff\""
	b := record.GetBatch()
	defer record.PutBatch(b)
	b.Data = append(b.Data[:0], in...)
	bl := record.NewBuilder(record.DefaultConfig())
	bl.Start(b)
	var sp lines.Splitter
	lines.Run(&sp, bl, Parser{}, true)
	if len(b.Records) != 1 {
		t.Fatalf("got %d records, errors %v", len(b.Records), b.Errors)
	}
	want := []record.Flags{record.Escaped, 0, record.Escaped | record.BadUTF8, record.BadUTF8, record.Escaped | record.BadUTF8}
	for i, f := range b.RecordFields(0) {
		if f.Flags != want[i] {
			t.Errorf("field %s: flags %b, want %b", b.Name(&f), f.Flags, want[i])
		}
	}
	if b.BadUTF8 != 3 {
		t.Errorf("Batch.BadUTF8 = %d, want 3", b.BadUTF8)
	}
	// A rejected line's values are not counted.
	start := len(b.Data)
	b.Data = append(b.Data, "x=\xff y=\"open"...)
	Parser{}.ParseLine(bl, record.Span{Off: uint32(start), Len: uint32(len(b.Data) - start)})
	if len(b.Errors) != 1 || b.BadUTF8 != 3 {
		t.Errorf("after a rejected line: errors %v, Batch.BadUTF8 = %d, want 3", b.Errors, b.BadUTF8)
	}
}

func TestSample(t *testing.T) {
	in, err := os.ReadFile("testdata/sample.log")
	if err != nil {
		t.Fatal(err)
	}
	whole := parsetest.Run(Parser{}, record.DefaultConfig(), in, nil)
	if len(whole.Errors) != 0 {
		t.Fatalf("errors: %q", whole.Errors[:min(5, len(whole.Errors))])
	}
	if n := strings.Count(string(in), "\n"); len(whole.Records) != n {
		t.Fatalf("got %d records, want %d", len(whole.Records), n)
	}
	for _, r := range whole.Records {
		if !strings.HasPrefix(r, `{"_time":"2026-01-15T08:`) {
			t.Fatalf("time not read: %s", r)
		}
	}
	chunked := parsetest.Run(Parser{}, record.DefaultConfig(), in, parsetest.RandomChunks(len(in), 1))
	if !slices.Equal(whole.Records, chunked.Records) {
		t.Fatal("chunked input parsed differently")
	}
}

func TestNoAllocs(t *testing.T) {
	line := `ts=2026-01-15T08:00:00.000072Z level=info msg="cache \"miss\"" service=payments status=500 f=1.5 big=99999999999999999999 bad=` + "\xff" + ` bare`
	if n := parsetest.AllocsPerLine(t, Parser{}, line); n != 0 {
		t.Errorf("%v allocs per line, want 0", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range cases {
		f.Add([]byte(tc.in), uint64(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		cfg := record.DefaultConfig()
		whole := parsetest.Run(Parser{}, cfg, in, nil)
		chunked := parsetest.Run(Parser{}, cfg, in, parsetest.RandomChunks(len(in), seed))
		if !slices.Equal(whole.Records, chunked.Records) || !slices.Equal(whole.Errors, chunked.Errors) || !slices.Equal(whole.Lines, chunked.Lines) {
			t.Fatalf("chunked differs:\nwhole   %q %q\nchunked %q %q", whole.Records, whole.Errors, chunked.Records, chunked.Errors)
		}
		if swar := parsetest.Run(swarParser, cfg, in, nil); !slices.Equal(whole.Records, swar.Records) || !slices.Equal(whole.Errors, swar.Errors) {
			t.Fatalf("SWAR scans differ:\nvec  %q %q\nswar %q %q", whole.Records, whole.Errors, swar.Records, swar.Errors)
		}
		for _, r := range whole.Records {
			if !json.Valid([]byte(r)) {
				t.Fatalf("record is not valid JSON: %s", r)
			}
		}
	})
}
