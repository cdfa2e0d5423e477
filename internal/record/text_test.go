package record

import (
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
