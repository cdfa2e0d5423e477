package pattern

import (
	"bytes"
	"os"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// benchParse parses data as one input, over and over, the way sluice's
// readers do: one large buffer, one builder and parser reused.
func benchParse(b *testing.B, p lines.Parser, data []byte) {
	parsetest.Bench(b, data, record.DefaultConfig(), parsetest.Lines(p))
}

// BenchmarkParse measures the nginx combined pattern on 1,000 lines of
// `gen.py nginx 1000 --seed 1` (testdata), every line matched, its
// timestamp parsed. mode=exact uses Loki's byte-exact spaces.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/nginx-1000.log")
	if err != nil {
		b.Fatal(err)
	}
	for _, exact := range []bool{false, true} {
		name := "corpus=nginx/mode=flex"
		if exact {
			name = "corpus=nginx/mode=exact"
		}
		p := compileCase(b, nginxExpr, exact)
		if n := bytes.Count(data, []byte("\n")); !p.Match(data[:bytes.IndexByte(data, '\n')]) || n != 1000 {
			b.Fatal("the corpus does not match the pattern")
		}
		b.Run(name, func(b *testing.B) { benchParse(b, p, data) })
	}
	// No timestamp: what matching costs without the time field.
	p := MustCompile(`<ip> - <user> [<when>] "<method> <path> <proto>" <status> <bytes> "<referer>" "<ua>"`)
	b.Run("corpus=nginx/mode=notime", func(b *testing.B) { benchParse(b, p, data) })
}

// BenchmarkMatch measures matching alone, without the Builder: what the
// pattern costs of BenchmarkParse's time.
func BenchmarkMatch(b *testing.B) {
	data, err := os.ReadFile("testdata/nginx-1000.log")
	if err != nil {
		b.Fatal(err)
	}
	p := MustCompile(nginxExpr)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var out [inline]record.Span
	b.Run("corpus=nginx", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for _, line := range lines {
				if !p.match(line, 0, true, out[:len(p.names)], 0) {
					b.Fatalf("no match: %q", line)
				}
			}
		}
	})
}
