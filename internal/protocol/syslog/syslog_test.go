package syslog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sluicelog/sluice/internal/record"
)

// frames reads every frame of in with a limit of max bytes, as
// "fault:message" strings ("message" for a whole one), through a reader
// that gives one byte at a time when split is set.
func frames(t testing.TB, in string, max int, split bool) []string {
	t.Helper()
	var r io.Reader = strings.NewReader(in)
	if split {
		r = iotest.OneByteReader(r)
	}
	fr := NewFramer(bufio.NewReaderSize(r, 16), max)
	var got []string
	for range len(in) + 1 {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("error %v", err)
		}
		if len(f.Msg) > max {
			t.Fatalf("message of %d bytes, more than the limit of %d", len(f.Msg), max)
		}
		s := string(f.Msg)
		if f.Fault != FaultNone {
			s = fmt.Sprintf("%s/%d:%s", f.Fault, f.Size, f.Msg)
		}
		got = append(got, s)
	}
	t.Fatalf("no end after %d frames", len(in)+1)
	return nil
}

var frameCases = []struct {
	name string
	in   string
	want []string
}{
	{
		name: "both framings",
		in:   "plain one\r\n14 <1>octet\ntwo\r\n\n" + "11 <2>counted\n" + "last no newline",
		// An octet-counted frame's final LF (and a CR before it) is
		// dropped; one inside it is kept.
		want: []string{"plain one", "<1>octet\ntwo", "<2>counted", "last no newline"},
	},
	{
		name: "empty lines skipped",
		in:   "\n\r\n<1>a\n\n",
		want: []string{"<1>a"},
	},
	{
		name: "line too long",
		in:   "<1>good\n<1>0123456789abcdefXYZ\r\n<2>good\n",
		want: []string{"<1>good", "too_long/22:<1>0123456789abc", "<2>good"},
	},
	{
		name: "line at the limit",
		in:   "<1>0123456789abc\r\n<1>0123456789abcd\n",
		want: []string{"<1>0123456789abc", "too_long/17:<1>0123456789abc"},
	},
	{
		name: "octet frame too long",
		in:   "<1>good\n23 <1>0123456789abcdefXYZ\n<2>good\n",
		want: []string{"<1>good", "too_long/23:<1>0123456789abc", "<2>good"},
	},
	{
		name: "absurd octet count",
		in:   "<1>good\n999999999 <1>not read\n<2>good\n",
		want: []string{"<1>good", "bad_octet_count/999999999:", "<2>good"},
	},
	{
		name: "count not a number",
		in:   "<1>good\n12x4 <1>junk\n<2>good\n",
		want: []string{"<1>good", "12x4 <1>junk", "<2>good"},
	},
	{
		name: "count without a PRI after it",
		in:   "<1>good\n42 is the answer\n<2>good\n",
		want: []string{"<1>good", "42 is the answer", "<2>good"},
	},
	{
		name: "line starting with a date",
		in:   "2026-01-15 a: hi\n",
		want: []string{"2026-01-15 a: hi"},
	},
	{
		name: "too many digits",
		in:   "1234567890 <1>x\n<2>good\n",
		want: []string{"1234567890 <1>x", "<2>good"},
	},
	{
		name: "digits at the end",
		in:   "<1>good\n123",
		want: []string{"<1>good", "123"},
	},
	{
		name: "stream ends inside an octet frame",
		in:   "<1>good\n20 <1>cut",
		want: []string{"<1>good", "incomplete/20:<1>cut"},
	},
	{
		name: "stream ends after a count",
		in:   "9 <",
		want: []string{"incomplete/9:<"},
	},
	{
		name: "stream ends inside a skipped octet frame",
		in:   "30 <1>0123456789abcdefgh",
		want: []string{"incomplete/30:<1>0123456789abc"},
	},
}

func TestFramer(t *testing.T) {
	for _, tc := range frameCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				if got := frames(t, tc.in, 16, split); !slices.Equal(got, tc.want) {
					t.Errorf("split=%v: frames\n%q\nwant\n%q", split, got, tc.want)
				}
			}
		})
	}
}

// A reader's error other than EOF ends the stream after the frame it cut,
// and is returned from then on.
func TestFramerError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("<1>a\n<1>cut"), iotest.ErrReader(boom))
	fr := NewFramer(bufio.NewReader(r), 0)
	var got []string
	for {
		f, err := fr.Next()
		if err != nil {
			if !errors.Is(err, boom) {
				t.Fatalf("error %v, want %v", err, boom)
			}
			break
		}
		got = append(got, string(f.Msg))
	}
	if want := []string{"<1>a", "<1>cut"}; !slices.Equal(got, want) {
		t.Errorf("frames %q, want %q", got, want)
	}
	if _, err := fr.Next(); !errors.Is(err, boom) {
		t.Errorf("after the error: %v", err)
	}
}

// The whole frame is read however long it is: the default limit holds a
// message of MaxFrame bytes.
func TestFramerDefaultLimit(t *testing.T) {
	msg := "<1>" + strings.Repeat("x", MaxFrame-3)
	in := fmt.Sprintf("%s\n%d %s<2>next\n", msg, len(msg)+1, msg+"x")
	fr := NewFramer(bufio.NewReader(strings.NewReader(in)), 0)
	for i, want := range []struct {
		fault Fault
		n     int
	}{{FaultNone, MaxFrame}, {FaultTooLong, MaxFrame}, {FaultNone, 7}} {
		f, err := fr.Next()
		if err != nil || f.Fault != want.fault || len(f.Msg) != want.n {
			t.Fatalf("frame %d: %v, %d bytes, %v; want %v, %d bytes", i, f.Fault, len(f.Msg), err, want.fault, want.n)
		}
	}
}

// FuzzFramer: any stream frames to its end without a panic, each message
// within the limit, and the same when read one byte at a time.
func FuzzFramer(f *testing.F) {
	for _, tc := range frameCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte("5 hello3 abc\nline\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		whole := frames(t, string(in), 10, false)
		if split := frames(t, string(in), 10, true); !slices.Equal(whole, split) {
			t.Fatalf("whole %q, split %q", whole, split)
		}
	})
}

func TestBatcherTruncated(t *testing.T) {
	bt, err := NewBatcher(record.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	bt.Reset(1)
	bt.Add([]byte("<13>1 2026-01-15T08:00:00Z h a - - - whole"), false)
	bt.Add([]byte("<13>1 2026-01-15T08:00:01Z h a - - - cut"), true)
	bt.Add([]byte("not syslog"), true)
	b := bt.Batch()
	if len(b.Records) != 2 || len(b.Errors) != 1 {
		t.Fatalf("%d records, %d errors", len(b.Records), len(b.Errors))
	}
	for i, want := range []bool{false, true} {
		line := string(b.AppendJSON(nil, i))
		if got := strings.Contains(line, `"truncated":true`); got != want {
			t.Errorf("record %d: %s; truncated %v, want %v", i, line, got, want)
		}
	}
}

// Next returns a frame as soon as its last byte has come, never waiting
// for one past it: a sender that stops after a message has it stored.
func TestFramerNoReadAhead(t *testing.T) {
	for _, frame := range []string{"12\n", "<1>a\n", "6 <1>ab\n", "5 <1>ab", "1234567890\n", "42 x\n"} {
		pr, pw := io.Pipe()
		fr := NewFramer(bufio.NewReader(pr), 0)
		go pw.Write([]byte(frame)) // and nothing more until the frame is read
		f, err := fr.Next()
		if err != nil || len(f.Msg) == 0 {
			t.Errorf("%q: %q, %v", frame, f.Msg, err)
		}
		pw.Close()
	}
}
