package literal

import (
	"bytes"
	"strings"
	"testing"
)

func TestFinder(t *testing.T) {
	for _, c := range []struct{ s, lit string }{
		{"", ""}, {"abc", ""}, {"", "a"}, {"a", "a"}, {"ab", "abc"},
		{`GET /login HTTP/1.1`, "/login"}, {`/logi /login`, "/login"},
		{"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxy", "xy"},
		{strings.Repeat("/a/b/c/d ", 200) + "/login", "/login"},
		{strings.Repeat("/l", 500), "/login"},
		{"payment declined", "declined"}, {"naïve café", "café"}, {"QQQ", "QQ"},
	} {
		f := NewFinder([]byte(c.lit))
		if got, want := f.Index([]byte(c.s)), strings.Index(c.s, c.lit); got != want {
			t.Errorf("Index(%q) of %q: %d, want %d", c.s, c.lit, got, want)
		}
	}
}

// FuzzFinder: a finder's index is bytes.Index's, whatever byte it scans
// for and whether it falls back.
func FuzzFinder(f *testing.F) {
	f.Add([]byte("GET /login HTTP/1.1"), []byte("/login"))
	f.Add([]byte(strings.Repeat("ab", 300)+"abc"), []byte("abc"))
	f.Add([]byte("xQxQxQ"), []byte("QxQ"))
	f.Fuzz(func(t *testing.T, s, lit []byte) {
		fd := NewFinder(lit)
		if got, want := fd.Index(s), bytes.Index(s, lit); got != want {
			t.Fatalf("Index(%q) of %q: %d, want %d", s, lit, got, want)
		}
	})
}

// BenchmarkFinder: the search of a column's values end to end (nginx
// lines), from each match on, as part.Block.searchValues runs it.
func BenchmarkFinder(b *testing.B) {
	line := `10.0.3.7 - - [15/Jan/2026:08:00:01 +0000] "GET /api/v1/users HTTP/1.1" 200 5123 "-" "curl/8.5.0"` + "\n"
	hit := `10.0.3.7 - - [15/Jan/2026:08:00:01 +0000] "POST /login HTTP/1.1" 302 0 "-" "Mozilla/5.0"` + "\n"
	var text []byte
	for i := range 2000 {
		if i%10 == 0 {
			text = append(text, hit...)
		} else {
			text = append(text, line...)
		}
	}
	lit := []byte("/login")
	run := func(b *testing.B, index func([]byte) int) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			n := 0
			for off := 0; off < len(text); {
				i := index(text[off:])
				if i < 0 {
					break
				}
				n++
				off += i + len(lit)
			}
			if n != 200 {
				b.Fatal(n)
			}
		}
	}
	b.Run("bytes.Index", func(b *testing.B) { run(b, func(s []byte) int { return bytes.Index(s, lit) }) })
	f := NewFinder(lit)
	b.Run("Finder", func(b *testing.B) { run(b, f.Index) })
}
