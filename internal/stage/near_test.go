package stage

import (
	"bytes"
	"strings"
	"testing"
)

// TestIndexNear: indexNear answers as bytes.Index where its eight-byte
// windows can go wrong: an occurrence across a window's edge or the near
// part's, a byte one above the literal's first right after an occurrence
// of it (where the borrow marks a byte that does not match), candidates
// that fail before the one that matches, and s shorter than a window.
func TestIndexNear(t *testing.T) {
	long := strings.Repeat("x", 40)
	cases := []struct{ s, lit string }{
		{"", " "}, {"a", "a"}, {"ab", "b"}, {"abc", "abcd"}, {"       x", "x"}, {"        x", "x"},
		{"0123456 89", " 8"}, {"0123456 x 8", " 8"}, {"01234567] \"", "] \""}, {"0123456] x] \"", "] \""},
		{" !", "!"}, {"  !!", "!"}, {"\x00\x01\x01\x01", "\x01"}, {"\x01\x00\x00", "\x00\x00"},
		{"aaaaaaaaab", "ab"}, {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "ab"}, {long + " - - [", " - - ["},
		{long[:30] + " - - [", " - - ["}, {long[:31] + "ab", "ab"}, {long[:32] + "ab", "ab"}, {long[:33], "x"},
		{"10.1.2.3 - - [15/Jan/2026:08:00:00 +0000] \"GET / HTTP/1.1\" 200 1", "\" "},
		{"\x80\x7f\xff\xfe", "\xff"}, {"\xff\xff\xfe\xff", "\xfe\xff"},
	}
	for _, c := range cases {
		if got, want := indexNear([]byte(c.s), []byte(c.lit)), bytes.Index([]byte(c.s), []byte(c.lit)); got != want {
			t.Errorf("indexNear(%q, %q) = %d, want %d", c.s, c.lit, got, want)
		}
	}
}

// FuzzIndexNear holds indexNear to bytes.Index, on lines made of few
// distinct bytes so that near misses are common.
func FuzzIndexNear(f *testing.F) {
	f.Add([]byte("10.1.2.3 - - [15/Jan/2026:08:00:00 +0000] \"GET /x HTTP/1.1\" 502 5"), []byte("] \""))
	f.Add([]byte(" ! !! !!! "), []byte("!!!"))
	f.Add([]byte("\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x01"), []byte("\x01\x01"))
	f.Fuzz(func(t *testing.T, s, lit []byte) {
		if len(lit) == 0 {
			return
		}
		if got, want := indexNear(s, lit), bytes.Index(s, lit); got != want {
			t.Fatalf("indexNear(%q, %q) = %d, want %d", s, lit, got, want)
		}
	})
}

// BenchmarkIndexNear: the literals of an nginx pattern, each searched
// from where the capture before it starts, by indexNear and by
// bytes.Index (IndexByte for one byte, as the pattern did before).
func BenchmarkIndexNear(b *testing.B) {
	line := []byte(`10.1.2.3 - - [15/Jan/2026:08:00:00 +0000] "GET /api/v1/orders?id=42 HTTP/1.1" 502 5123 "-" "Mozilla/5.0 (X11; Linux x86_64)"`)
	lits := [][]byte{[]byte(" - - ["), []byte("] \""), []byte(" "), []byte(" "), []byte("\" "), []byte(" "), []byte(" ")}
	walk := func(b *testing.B, index func(s, lit []byte) int) {
		for b.Loop() {
			pos := 0
			for _, lit := range lits {
				j := index(line[pos:], lit)
				if j < 0 {
					b.Fatal("no match")
				}
				pos += j + len(lit)
			}
		}
	}
	b.Run("near", func(b *testing.B) { walk(b, indexNear) })
	b.Run("bytes", func(b *testing.B) {
		walk(b, func(s, lit []byte) int {
			if len(lit) == 1 {
				return bytes.IndexByte(s, lit[0])
			}
			return bytes.Index(s, lit)
		})
	})
}
