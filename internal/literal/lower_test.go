package literal

import (
	"bytes"
	"testing"
)

// FuzzAppendLower checks AppendLower's eight bytes at a time against a
// byte loop, after text already in dst.
func FuzzAppendLower(f *testing.F) {
	f.Add([]byte("GET /Users HTTP/1.1 @[`{ AZaz"), []byte("pre"))
	f.Add([]byte("\xc3\x89T\xc3\xa9 \xe2\x84\xaaELVIN ZZZZZZZZZZ@@@@@@@@[[[[[[[["), []byte(nil))
	f.Add([]byte{0x41, 0xc1, 0xda, 0x5a, 0x5b, 0x40, 0x61, 0xff, 0x80, 0x7f, 0x60}, []byte("x"))
	f.Fuzz(func(t *testing.T, b, pre []byte) {
		want := append([]byte(nil), pre...)
		for _, c := range b {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			want = append(want, c)
		}
		if got := AppendLower(append([]byte(nil), pre...), b); !bytes.Equal(got, want) {
			t.Fatalf("AppendLower(%q, %q) = %q, want %q", pre, b, got, want)
		}
	})
}

// BenchmarkAppendLower lowers a column's worth of log text.
func BenchmarkAppendLower(b *testing.B) {
	text := bytes.Repeat([]byte(`2026-01-15T08:00:00Z ERROR Payment Declined for user 42 "GET /api/v1/Cart" `), 1000)
	dst := make([]byte, 0, len(text))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		dst = AppendLower(dst[:0], text)
	}
}
