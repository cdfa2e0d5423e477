package record

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestAppendUnescaped(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		flags     Flags
		want      string
	}{
		{"plain", `abc`, 0, "abc"},
		{"simple escapes", `a\"b\\c\/d\b\f\n\r\t`, Escaped, "a\"b\\c/d\b\f\n\r\t"},
		{"unicode", `\u00e9\u4e2d`, Escaped, "é中"},
		{"surrogate pair", `\ud83d\ude00`, Escaped, "😀"},
		{"lone high surrogate", `\ud83dx`, Escaped, "\uFFFDx"},
		{"lone low surrogate", `\ude00`, Escaped, "\uFFFD"},
		{"reversed pair", `\ude00\ud83d`, Escaped, "\uFFFD\uFFFD"},
		{"unknown escape kept", `a\qb`, Escaped, `a\qb`},
		{"unknown escape before multibyte", `\é`, Escaped, `\é`},
		{"bad hex kept", `\u12`, Escaped, `\u12`},
		{"trailing backslash", `a\`, Escaped, `a\`},
		{"invalid utf8", "a\xffb\xc3", BadUTF8, "a\uFFFDb\uFFFD"},
		{"valid utf8 with flag", "héllo", BadUTF8, "héllo"},
		{"escapes not decoded without the flag", `a\nb`, 0, `a\nb`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendUnescaped([]byte("x"), []byte(tc.raw), tc.flags))
			if got != "x"+tc.want {
				t.Errorf("got %q, want %q", got, "x"+tc.want)
			}
		})
	}
}

func TestAppendJSONEscaped(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "ctl\x00\x01\x1f\n\r\t", "é中😀", "bad\xff\xfe", "\u2028"} {
		got := `"` + string(AppendJSONEscaped(nil, s)) + `"`
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("%q: output %s is not a JSON string: %v", s, got, err)
		}
		want := s
		if !utf8.ValidString(s) {
			want = string([]rune(s)) // invalid bytes become U+FFFD
		}
		if back != want {
			t.Errorf("%q: round trip gave %q", s, back)
		}
		if b := string(AppendJSONEscaped(nil, []byte(s))); b != got[1:len(got)-1] {
			t.Errorf("%q: []byte and string forms differ", s)
		}
	}
}

func FuzzAppendUnescaped(f *testing.F) {
	f.Add([]byte(`a\u00e9\ud83d\ude00\n`))
	f.Add([]byte("\xff\\"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := AppendUnescaped(nil, raw, Escaped|BadUTF8)
		if !utf8.Valid(out) {
			t.Fatalf("output %q is not valid UTF-8", out)
		}
		esc := AppendJSONEscaped(nil, out)
		var back string
		if err := json.Unmarshal([]byte(`"`+string(esc)+`"`), &back); err != nil || back != string(out) {
			t.Fatalf("escape round trip of %q: %q, %v", out, back, err)
		}
	})
}

func TestAppendUnescapedSD(t *testing.T) {
	got := string(AppendUnescaped(nil, []byte(`a\]b\"c\\d\ne C:\new \é`), SDEscaped))
	if want := `a]b"c\d\ne C:\new \é`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestConstant(t *testing.T) {
	b := &Batch{Data: []byte("input")}
	f := Field{Kind: String, Flags: Const, Raw: testConst}
	if got := string(b.AppendString(nil, &f)); got != "warning" {
		t.Errorf("got %q", got)
	}
}

var testConst = Constant("warning")

// appendJSONEscapedRef is AppendJSONEscaped as it was, byte by byte: the
// reference the word-at-a-time version must agree with.
func appendJSONEscapedRef(dst []byte, s []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

var jsonEscapeCases = []string{
	"", "plain", "exactly8", "sixteen bytes ok", "q\"b\\s", "ctl\x00\x01\x1f\n\r\t", "é中😀", "bad\xff\xfe", "\u2028",
	"a long plain run of ASCII text, then a quote\" and more plain text after it\\",
	"12345678\"", "1234567\"8", "\x7f\x20\x1f!#[]", "abcdefg\x80", "abcdefgh\xc3\xa9ijklmnop", "\x00\x00\x00\x00\x00\x00\x00\x00",
	`{"ts":1768464000000,"level":"error","msg":"retrying request","service":"reports"}`,
}

func TestAppendJSONEscapedMatchesByteByByte(t *testing.T) {
	for _, s := range jsonEscapeCases {
		// Every offset, so that each byte meets the eight-byte path at
		// each position in a word.
		for off := range min(len(s), 9) {
			in := s[off:]
			want := string(appendJSONEscapedRef([]byte("x"), []byte(in)))
			if got := string(AppendJSONEscaped([]byte("x"), in)); got != want {
				t.Errorf("%q: got %q, want %q", in, got, want)
			}
			if got := string(AppendJSONEscaped([]byte("x"), []byte(in))); got != want {
				t.Errorf("%q ([]byte): got %q, want %q", in, got, want)
			}
		}
	}
	// Each byte value alone, at each position of a word and after it.
	for c := range 256 {
		for at := range 10 {
			in := []byte("0123456789")
			in[at] = byte(c)
			want := string(appendJSONEscapedRef(nil, in))
			if got := string(AppendJSONEscaped(nil, in)); got != want {
				t.Errorf("byte %#x at %d: got %q, want %q", c, at, got, want)
			}
		}
	}
}

func FuzzAppendJSONEscaped(f *testing.F) {
	for _, s := range jsonEscapeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		want := appendJSONEscapedRef(nil, s)
		if got := AppendJSONEscaped(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, want %q", s, got, want)
		}
		if got := AppendJSONEscaped(nil, string(s)); !bytes.Equal(got, want) {
			t.Fatalf("%q (string): got %q, want %q", s, got, want)
		}
	})
}

func BenchmarkAppendJSONEscaped(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"kind=line", `{"ts":1768464000000,"level":"error","msg":"retrying request","service":"reports","host":"node-24","trace_id":"7ce42c8218072e8c35bf992dc9e9c616","http":{"method":"PUT","path":"/api/v1/cart/items","status":502,"latency_ms":42.078,"bytes":201105,"user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"}}`},
		{"kind=label", "node-24"},
		{"kind=text", "failed to call upstream: payment declined while retrying the request to the cart service"},
		{"kind=utf8", "délai dépassé pour la requête vers le service «panier» — nouvelle tentative"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.s)))
			dst := make([]byte, 0, 4*len(bc.s))
			for b.Loop() {
				dst = AppendJSONEscaped(dst[:0], bc.s)
			}
		})
	}
}
