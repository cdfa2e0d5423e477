package sdk

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

var escapeCases = []string{"", "a", "GET", "request served", "0123456789abcdef", `say "hi"`, `a\b`,
	"line\nbreak", "tab\there", "\x00\x01\x1f", "\x7f", "héllo wörld", "日本語のテキスト", "\xff", "ab\xc3",
	"\xed\xa0\x80", "\xf4\x90\x80\x80", "\U0010ffff", "12345678\"", "1234567\\", "1234\n", "123\n"}

// escapeRef is what a JSON string of s decodes to: s with each byte
// that is not part of valid UTF-8 replaced by U+FFFD.
func escapeRef(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		b.WriteRune(r)
		s = s[n:]
	}
	return b.String()
}

func checkEscape(t *testing.T, s string) {
	t.Helper()
	out := appendJSONString(nil, s)
	if b := appendJSONString(nil, []byte(s)); string(b) != string(out) {
		t.Fatalf("appendJSONString([]byte(%q)) = %s, want %s", s, b, out)
	}
	var back string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("appendJSONString(%q) = %s: %v", s, out, err)
	}
	if want := escapeRef(s); back != want {
		t.Fatalf("appendJSONString(%q) = %s, reads back as %q, want %q", s, out, back, want)
	}
	if !utf8.Valid(out) {
		t.Fatalf("appendJSONString(%q) = %q: not UTF-8", s, out)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range escapeCases {
		checkEscape(t, s)
	}
	// Every special byte at every position of strings up to 24 bytes.
	special := []byte{0, 0x1f, '"', '\\', 0x7f, 0x80, 0xc3, 0xff, ' ', '~'}
	for n := 1; n <= 24; n++ {
		for pos := range n {
			for _, c := range special {
				b := []byte(strings.Repeat("x", n))
				b[pos] = c
				checkEscape(t, string(b))
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			if r.IntN(8) == 0 {
				b[i] = byte(r.IntN(256))
			} else {
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		checkEscape(t, string(b))
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range escapeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkEscape(t, s) })
}
