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

// FuzzFinder: a finder's index is bytes.Index's, whatever byte or pair
// it scans for (with AVX2 and without) and whether it falls back; a
// folding finder's is bytes.Index's of both lowercased.
func FuzzFinder(f *testing.F) {
	f.Add([]byte("GET /login HTTP/1.1"), []byte("/login"))
	f.Add([]byte(strings.Repeat("ab", 300)+"abc"), []byte("abc"))
	f.Add([]byte("xQxQxQ"), []byte("QxQ"))
	f.Add([]byte(strings.Repeat(`{\"level\":\"info\",\"msg\":\"Upstream TimeOut\"} `, 3)), []byte("timeout"))
	f.Fuzz(func(t *testing.T, s, lit []byte) {
		avx2 := useAVX2
		defer func() { useAVX2 = avx2 }()
		for _, on := range []bool{avx2, false} {
			useAVX2 = on
			fd := NewFinder(lit)
			if got, want := fd.Index(s), bytes.Index(s, lit); got != want {
				t.Fatalf("Index(%q) of %q (AVX2 %v): %d, want %d", s, lit, on, got, want)
			}
			ff := NewFoldFinder(lit)
			if got, want := ff.Index(s), bytes.Index(AppendLower(nil, s), AppendLower(nil, lit)); got != want {
				t.Fatalf("folding Index(%q) of %q (AVX2 %v): %d, want %d", s, lit, on, got, want)
			}
		}
	})
}

// BenchmarkFinder: the search of a column's values end to end, from
// each match on, as part.Block.searchValues runs it: nginx lines for
// /login (its rare byte g is rare there), and escaped JSON (a k8s log
// field) for declined, whose bytes are all common.
func BenchmarkFinder(b *testing.B) {
	nginx := func(i int) string {
		if i%10 == 0 {
			return `10.0.3.7 - - [15/Jan/2026:08:00:01 +0000] "POST /login HTTP/1.1" 302 0 "-" "Mozilla/5.0"` + "\n"
		}
		return `10.0.3.7 - - [15/Jan/2026:08:00:01 +0000] "GET /api/v1/users HTTP/1.1" 200 5123 "-" "curl/8.5.0"` + "\n"
	}
	escaped := func(i int) string {
		msg := "payment ok"
		if i%10 == 0 {
			msg = "payment declined"
		}
		return `{\"ts\":1768464000001,\"level\":\"info\",\"msg\":\"` + msg + `\",\"service\":\"auth\",\"host\":\"node-37\",\"trace_id\":\"51431193e6c3f3391a2b8f1ff1fd42a2\"}`
	}
	for _, c := range []struct {
		name string
		line func(int) string
		lit  string
	}{{"nginx", nginx, "/login"}, {"escaped", escaped, "declined"}} {
		var text []byte
		for i := range 2000 {
			text = append(text, c.line(i)...)
		}
		lit := []byte(c.lit)
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
		b.Run(c.name+"/bytes.Index", func(b *testing.B) { run(b, func(s []byte) int { return bytes.Index(s, lit) }) })
		f := NewFinder(lit)
		b.Run(c.name+"/Finder", func(b *testing.B) { run(b, f.Index) })
	}
}
