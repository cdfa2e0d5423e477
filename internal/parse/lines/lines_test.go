package lines_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// whole is a line parser that makes each line a record holding it as _msg.
type whole struct{}

func (whole) ParseLine(bl *record.Builder, line record.Span) {
	bl.Begin(line)
	if strings.HasPrefix(string(bl.Batch().Bytes(line)), "bad") {
		bl.Fail(record.ErrSyntax, 2, "bad line")
		return
	}
	bl.SetMsg(line, 0)
	bl.End()
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		lines    []string
		errs     []string
	}{
		{"empty", "", nil, nil},
		{"no final newline", "a\nb", []string{"a", "b"}, nil},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}, nil},
		{"lone cr kept inside", "a\rb\n", []string{"a\rb"}, nil},
		{"blank lines skipped but counted", "\n\r\na\n\nbad\n", []string{"a"}, []string{"5:2: bad line"}},
		{"bom stripped once", "\xEF\xBB\xBFa\n\xEF\xBB\xBFb", []string{"a", "\xEF\xBB\xBFb"}, nil},
		{"only bom", "\xEF\xBB\xBF", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(20) {
				var chunks []int
				if seed > 0 {
					chunks = parsetest.RandomChunks(len(tc.in), seed)
				}
				res := parsetest.Run(whole{}, record.Config{}, []byte(tc.in), chunks)
				if !slices.Equal(res.Lines, tc.lines) || !slices.Equal(res.Errors, tc.errs) {
					t.Fatalf("chunks %v: lines %q errors %q, want %q %q", chunks, res.Lines, res.Errors, tc.lines, tc.errs)
				}
			}
		})
	}
}

func TestTooLong(t *testing.T) {
	in := "ok\n" + strings.Repeat("x", 30) + "\nfine\n" + strings.Repeat("y", 12) + "\r\n" + strings.Repeat("z", 40)
	for seed := range uint64(30) {
		var chunks []int
		if seed > 0 {
			chunks = parsetest.RandomChunks(len(in), seed)
		}
		sp := lines.Splitter{MaxLineSize: 12}
		res := parsetest.Feed(&sp, record.Config{}, []byte(in), chunks, func(sp *lines.Splitter, bl *record.Builder, final bool) int {
			return lines.Run(sp, bl, whole{}, final)
		})
		wantLines := []string{"ok", "fine", strings.Repeat("y", 12)}
		wantErrs := []string{"2:13: line longer than 12 bytes", "5:13: line longer than 12 bytes"}
		if !slices.Equal(res.Lines, wantLines) || !slices.Equal(res.Errors, wantErrs) {
			t.Fatalf("chunks %v: lines %q errors %q", chunks, res.Lines, res.Errors)
		}
		if sp.Lines() != 5 {
			t.Fatalf("chunks %v: %d lines counted, want 5", chunks, sp.Lines())
		}
	}
}

func TestErrorOffsetsAcrossBuffers(t *testing.T) {
	in := "good\nbad one\ngood\nbad two\n"
	res := parsetest.Run(whole{}, record.Config{}, []byte(in), []int{7, 7, 7})
	want := []string{"2:2: bad line", "4:2: bad line"}
	if !slices.Equal(res.Errors, want) {
		t.Fatalf("errors %q, want %q", res.Errors, want)
	}
}
