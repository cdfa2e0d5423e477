package logql

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		text string // formatDuration of want
		bad  bool
	}{
		{in: "5m", want: 5 * time.Minute, text: "5m"},
		{in: "1h30m", want: 90 * time.Minute, text: "1h30m"},
		{in: "90m", want: 90 * time.Minute, text: "1h30m"},
		{in: "1.5h", want: 90 * time.Minute, text: "1h30m"},
		{in: ".5s", want: 500 * time.Millisecond, text: "500ms"},
		{in: "2h45m10s5ms6us7ns", want: 2*time.Hour + 45*time.Minute + 10*time.Second + 5*time.Millisecond + 6*time.Microsecond + 7, text: "2h45m10s5ms6us7ns"},
		{in: "3µs", want: 3 * time.Microsecond, text: "3us"},
		{in: "3μs", want: 3 * time.Microsecond, text: "3us"},
		{in: "1d", want: day, text: "1d"},
		{in: "8d", want: 8 * day, text: "8d"},
		{in: "14d", want: 14 * day, text: "2w"},
		{in: "1w2d", want: 9 * day, text: "9d"},
		{in: "1y", want: 365 * day, text: "1y"},
		{in: "1y1d", want: 366 * day, text: "366d"},
		{in: "0s", want: 0, text: "0s"},
		{in: "292y", want: 292 * 365 * day, text: "292y"},
		{in: "300y", bad: true},
		{in: "9223372036854775808ns", bad: true},
		{in: "5", bad: true},
		{in: "m", bad: true},
		{in: "5minutes", bad: true},
		{in: "5M", bad: true},
		{in: "1.2.3s", bad: true},
		{in: "-5s", bad: true},
		{in: "", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseDuration(tc.in)
			if ok == tc.bad {
				t.Fatalf("parseDuration(%q) ok=%v", tc.in, ok)
			}
			if tc.bad {
				return
			}
			if got != tc.want {
				t.Errorf("parseDuration(%q) = %v, want %v", tc.in, got, tc.want)
			}
			if s := formatDuration(got); s != tc.text {
				t.Errorf("formatDuration(%v) = %s, want %s", got, s, tc.text)
			}
			if back, ok := parseDuration(formatDuration(got)); !ok || back != got {
				t.Errorf("%s reads back as %v", formatDuration(got), back)
			}
		})
	}
	if s := formatDuration(math.MaxInt64); s != "106751d23h47m16s854ms775us807ns" {
		t.Errorf("formatDuration(max) = %s", s)
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		text string // formatBytes of want
		bad  bool
	}{
		{in: "20MB", want: 20e6, text: "20MB"},
		{in: "20mb", want: 20e6, text: "20MB"},
		{in: "42kB", want: 42e3, text: "42kB"},
		{in: "42KB", want: 42e3, text: "42kB"},
		{in: "1.5KiB", want: 1536, text: "1536B"},
		{in: "1024B", want: 1024, text: "1KiB"},
		{in: "3GiB", want: 3 << 30, text: "3GiB"},
		{in: "2TB", want: 2e12, text: "2TB"},
		{in: "2TiB", want: 2 << 40, text: "2TiB"},
		{in: "1PiB", want: 1 << 50, text: "1PiB"},
		{in: "1EB", want: 1e18, text: "1EB"},
		{in: "15EiB", want: 15 << 60, text: "15EiB"},
		{in: "0B", want: 0, text: "0B"},
		{in: "1.1B", want: 1, text: "1B"},
		{in: "16EiB", bad: true},
		{in: "20XB", bad: true},
		{in: "20", bad: true},
		{in: "B", bad: true},
		{in: "1.2.3B", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseBytes(tc.in)
			if ok == tc.bad {
				t.Fatalf("parseBytes(%q) ok=%v", tc.in, ok)
			}
			if tc.bad {
				return
			}
			if got != tc.want {
				t.Errorf("parseBytes(%q) = %d, want %d", tc.in, got, tc.want)
			}
			if s := formatBytes(got); s != tc.text {
				t.Errorf("formatBytes(%d) = %s, want %s", got, s, tc.text)
			}
		})
	}
}

func TestLexTokens(t *testing.T) {
	toks := lex("{a=~`x`} |= \"y\" != \"z\" |~ \"w\" !~ \"v\" |> \"u\" !> \"t\" | logfmt --keep-empty # c\n" +
		"== != > >= < <= + - * / % ^ , ( ) [1m] 5m 20MB 1.5e3 ident")
	var kinds []tokKind
	for _, tk := range toks {
		kinds = append(kinds, tk.kind)
	}
	want := []tokKind{
		tLBrace, tIdent, tRe, tString, tRBrace, tPipeEq, tString, tNeq, tString, tPipeRe, tString,
		tNre, tString, tPipePat, tString, tNpa, tString, tPipe, tIdent, tFlag,
		tCmpEq, tNeq, tGt, tGte, tLt, tLte, tAdd, tSub, tMul, tDiv, tMod, tPow, tComma, tLParen, tRParen,
		tRange, tDuration, tBytes, tNumber, tIdent, tEOF,
	}
	if len(kinds) != len(want) {
		t.Fatalf("got %d tokens %v, want %d", len(kinds), kinds, len(want))
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("token %d (%q) is kind %d, want %d", i, toks[i].text, kinds[i], want[i])
		}
	}
}

func TestParseDurationExported(t *testing.T) {
	if d, err := ParseDuration("1h30m"); err != nil || d != 90*time.Minute {
		t.Errorf("ParseDuration(1h30m) = %v, %v", d, err)
	}
	if _, err := ParseDuration("5minutes"); err == nil {
		t.Error("ParseDuration(5minutes): no error")
	}
}

// The parser lexes as it goes: a long query it refuses early costs
// nothing like its length (lexed whole first, these took 180-450 times
// their size).
func TestParseLexesLazily(t *testing.T) {
	n := 1 << 20
	for _, src := range []string{strings.Repeat("(", n), strings.Repeat("} ", n/2)} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse(src)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%.10s...: parsed", src)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(n/8) {
			t.Errorf("%.10s... (%d bytes): allocated %d bytes to refuse it", src, n, got)
		}
	}
}
