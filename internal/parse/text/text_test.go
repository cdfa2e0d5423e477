package text

import (
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// R is the receive time parsetest gives every batch, as rendered.
const R = `"_time":"2026-01-15T12:00:00.000000000Z"`

var cases = []struct {
	name    string
	in      string
	records []string
}{
	{
		name:    "apache error log",
		in:      "[Mon Mar 02 10:11:12 2009] [error] [client 10.1.2.3] File does not exist: /var/www/favicon.ico",
		records: []string{`{"_time":"2009-03-02T10:11:12.000000000Z","_stream":"{}","_msg":"[Mon Mar 02 10:11:12 2009] [error] [client 10.1.2.3] File does not exist: /var/www/favicon.ico","level":"error"}`},
	},
	{
		name:    "log4j",
		in:      "2021-07-04 09:15:00,250 WARN [worker-3] com.example.Pool: pool exhausted",
		records: []string{`{"_time":"2021-07-04T09:15:00.250000000Z","_stream":"{}","_msg":"2021-07-04 09:15:00,250 WARN [worker-3] com.example.Pool: pool exhausted","level":"WARN"}`},
	},
	{
		name:    "rfc3339 and title case",
		in:      "2026-01-15T08:00:00.5+01:00 Error: disk full",
		records: []string{`{"_time":"2026-01-15T07:00:00.500000000Z","_stream":"{}","_msg":"2026-01-15T08:00:00.5+01:00 Error: disk full","level":"Error"}`},
	},
	{
		name:    "syslog year from receive time",
		in:      "Jan  9 03:04:05 host sshd[42]: Accepted publickey for root",
		records: []string{`{"_time":"2026-01-09T03:04:05.000000000Z","_stream":"{}","_msg":"Jan  9 03:04:05 host sshd[42]: Accepted publickey for root"}`},
	},
	{
		name: "no timestamp",
		in:   "panic: runtime error: index out of range\nhello world",
		records: []string{
			`{` + R + `,"_stream":"{}","_msg":"panic: runtime error: index out of range","level":"panic"}`,
			`{` + R + `,"_stream":"{}","_msg":"hello world"}`,
		},
	},
	{
		name: "not whole words or wrong case",
		in:   "2026-01-15 08:00:00 errors on_error eRRor INFOS xinfo info_x Information",
		records: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"2026-01-15 08:00:00 errors on_error eRRor INFOS xinfo info_x Information"}`,
		},
	},
	{
		name: "first level word wins",
		in:   "level=debug msg=\"an error\" ERR",
		records: []string{
			`{` + R + `,"_stream":"{}","_msg":"level=debug msg=\"an error\" ERR","level":"debug"}`,
		},
	},
	{
		name: "level beyond the window",
		in:   "x aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ERROR",
		records: []string{
			`{` + R + `,"_stream":"{}","_msg":"x aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ERROR"}`,
		},
	},
	{
		name: "every level",
		in:   "TRACE\ndebug\nInfo\nNOTICE\nwarn\nWarning\n[ERROR]\nerr\nCRITICAL\nfatal:\nPanic!",
		records: []string{
			`{` + R + `,"_stream":"{}","_msg":"TRACE","level":"TRACE"}`,
			`{` + R + `,"_stream":"{}","_msg":"debug","level":"debug"}`,
			`{` + R + `,"_stream":"{}","_msg":"Info","level":"Info"}`,
			`{` + R + `,"_stream":"{}","_msg":"NOTICE","level":"NOTICE"}`,
			`{` + R + `,"_stream":"{}","_msg":"warn","level":"warn"}`,
			`{` + R + `,"_stream":"{}","_msg":"Warning","level":"Warning"}`,
			`{` + R + `,"_stream":"{}","_msg":"[ERROR]","level":"ERROR"}`,
			`{` + R + `,"_stream":"{}","_msg":"err","level":"err"}`,
			`{` + R + `,"_stream":"{}","_msg":"CRITICAL","level":"CRITICAL"}`,
			`{` + R + `,"_stream":"{}","_msg":"fatal:","level":"fatal"}`,
			`{` + R + `,"_stream":"{}","_msg":"Panic!","level":"Panic"}`,
		},
	},
	{
		name: "numbers are not epochs",
		in:   "1768464000\n[1768464000] started\n12345 INFO pid line",
		records: []string{
			`{` + R + `,"_stream":"{}","_msg":"1768464000"}`,
			`{` + R + `,"_stream":"{}","_msg":"[1768464000] started"}`,
			`{` + R + `,"_stream":"{}","_msg":"12345 INFO pid line","level":"INFO"}`,
		},
	},
	{
		name: "bracket needs its close",
		in:   "[2026-01-15 08:00:00 oops\n[2026-01-15 08:00:00]x",
		records: []string{
			`{` + R + `,"_stream":"{}","_msg":"[2026-01-15 08:00:00 oops"}`,
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"[2026-01-15 08:00:00]x"}`,
		},
	},
	{
		name: "bad utf8 and crlf",
		in:   "caf\xe9 INFO\r\n\r\n  indented warn\r\n",
		records: []string{
			`{` + R + `,"_stream":"{}","_msg":"caf� INFO","level":"INFO"}`,
			`{` + R + `,"_stream":"{}","_msg":"  indented warn","level":"warn"}`,
		},
	},
}

func TestParse(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parsetest.Run(Parser{}, record.DefaultConfig(), []byte(tc.in), nil)
			if !slices.Equal(got.Records, tc.records) {
				t.Errorf("records:\n got %q\nwant %q", got.Records, tc.records)
			}
			if len(got.Errors) != 0 {
				t.Errorf("errors: %q", got.Errors)
			}
		})
	}
}

func TestNoAllocs(t *testing.T) {
	line := "[Mon Mar 02 10:11:12 2009] [error] [client 10.1.2.3] File does not exist: /var/www/favicon.ico"
	if n := parsetest.AllocsPerLine(t, Parser{}, line); n != 0 {
		t.Errorf("%v allocs per line, want 0", n)
	}
}

func TestBadUTF8Count(t *testing.T) {
	got := parsetest.Run(Parser{}, record.DefaultConfig(), []byte("ok\nbad \xff\n"), nil)
	if len(got.Records) != 2 {
		t.Fatalf("got %d records", len(got.Records))
	}
	b := record.GetBatch()
	defer record.PutBatch(b)
	b.Data = append(b.Data[:0], "bad \xff"...)
	bl := record.NewBuilder(record.DefaultConfig())
	bl.Start(b)
	Parser{}.ParseLine(bl, record.Span{Len: uint32(len(b.Data))})
	if b.BadUTF8 != 1 || b.Records[0].MsgFlags != record.BadUTF8 {
		t.Errorf("BadUTF8 = %d, flags %b", b.BadUTF8, b.Records[0].MsgFlags)
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
		if len(whole.Errors) != 0 && len(in) <= lines.DefaultMaxLineSize {
			t.Fatalf("text never fails a line, got %q", whole.Errors)
		}
	})
}
