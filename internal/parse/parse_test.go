package parse

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

func TestNewLineParser(t *testing.T) {
	for _, spec := range []string{"auto", "", "json", "ndjson", "logfmt", "text", "syslog", "pattern=<a> <b>", "regexp=(?P<a>x)"} {
		if _, err := NewLineParser(spec, 0, 0); err != nil {
			t.Errorf("%q: %v", spec, err)
		}
	}
	for spec, want := range map[string]string{
		"yaml":           `unknown format "yaml"`,
		"json=x":         "format json takes no argument",
		"pattern":        "format pattern needs an expression",
		"pattern=<a><b>": "pattern: adjacent captures",
		"regexp=(":       "missing closing )",
	} {
		if _, err := NewLineParser(spec, 0, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", spec, err, want)
		}
	}
}

// TestAuto checks that auto-detection picks each line's format.
func TestAuto(t *testing.T) {
	in := `{"msg":"json line","level":"info"}
ts=2026-01-15T08:00:00Z level=warn msg="logfmt line"
<34>1 2026-01-15T08:00:00Z host app - - - syslog line
2026-01-15 08:00:00,123 ERROR text line
key without equals is text
`
	p, err := NewLineParser("auto", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	res := parsetest.Run(p, record.DefaultConfig(), []byte(in), nil)
	if len(res.Records) != 5 || len(res.Errors) != 0 {
		t.Fatalf("records %q errors %q", res.Records, res.Errors)
	}
	for i, want := range []string{`"_msg":"json line","level":"info"`, `"_msg":"logfmt line"`, `"_msg":"syslog line"`,
		`"_time":"2026-01-15T08:00:00.123000000Z"`, `"_msg":"key without equals is text"`} {
		if !strings.Contains(res.Records[i], want) {
			t.Errorf("line %d: %s does not contain %s", i+1, res.Records[i], want)
		}
	}
}

// TestReadersAgree feeds one input through File (mapped), Bytes and Reader
// (whole, and one byte per read as a slow pipe gives it): each must yield
// the same records and errors.
func TestReadersAgree(t *testing.T) {
	var sb strings.Builder
	for i := range 3000 {
		switch i % 5 {
		case 0:
			sb.WriteString(`{"ts":1768464000123,"service":"api","n":` + strings.Repeat("1", i%7+1) + "}\n")
		case 1:
			sb.WriteString("level=info msg=\"line " + strings.Repeat("x", i%50) + "\"\n")
		case 2:
			sb.WriteString("{broken\n")
		case 3:
			sb.WriteString("\n")
		default:
			sb.WriteString("2026-01-15 08:00:00,123 WARN plain\r\n")
		}
	}
	data := []byte(sb.String())
	path := filepath.Join(t.TempDir(), "in.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	collect := func(read func(p *Parser, fn BatchFunc) error) (parsetest.Result, int64, int64) {
		p, err := New(Options{Record: record.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		var res parsetest.Result
		if err := read(p, func(b *record.Batch) error {
			b.ReceiveTime = parsetest.ReceiveTime // normalize for comparison
			parsetest.Collect(&res, b)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return res, p.Lines(), p.Offset()
	}
	ctx := context.Background()
	want, lines, offset := collect(func(p *Parser, fn BatchFunc) error { return p.File(ctx, path, fn) })
	if lines != 3000 || offset != int64(len(data)) || len(want.Errors) != 600 {
		t.Fatalf("File: %d lines, offset %d of %d, %d errors", lines, offset, len(data), len(want.Errors))
	}
	for name, read := range map[string]func(p *Parser, fn BatchFunc) error{
		"bytes":  func(p *Parser, fn BatchFunc) error { return p.Bytes(ctx, data, fn) },
		"reader": func(p *Parser, fn BatchFunc) error { return p.Reader(ctx, strings.NewReader(string(data)), fn) },
		"one byte": func(p *Parser, fn BatchFunc) error {
			return p.Reader(ctx, iotest.OneByteReader(strings.NewReader(string(data))), fn)
		},
		"half reader": func(p *Parser, fn BatchFunc) error {
			return p.Reader(ctx, iotest.HalfReader(strings.NewReader(string(data))), fn)
		},
	} {
		got, gotLines, gotOffset := collect(read)
		if gotLines != lines || gotOffset != offset || !slices.Equal(got.Lines, want.Lines) || !slices.Equal(got.Errors, want.Errors) {
			t.Errorf("%s: %d lines, offset %d, %d records, %d errors; want %d, %d, %d, %d",
				name, gotLines, gotOffset, len(got.Lines), len(got.Errors), lines, offset, len(want.Lines), len(want.Errors))
		}
	}
}

func TestReaderError(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Reader(context.Background(), iotest.ErrReader(io.ErrUnexpectedEOF), func(*record.Batch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "read input") {
		t.Errorf("got %v, want a read error", err)
	}
}
