package multiline

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/parse/text"
	"github.com/sluicelog/sluice/internal/record"
)

// synthetic returns about n bytes of log4j-style lines, one record in ten
// carrying a Java stack trace or a Python traceback.
func synthetic(n int) []byte {
	var out []byte
	for i := 0; len(out) < n; i++ {
		sec := i / 50
		ts := fmt.Sprintf("2026-01-15 08:%02d:%02d,%03d", sec/60%60, sec%60, i%1000)
		switch i % 20 {
		case 5:
			out = fmt.Appendf(out, "%s ERROR [worker-%d] com.example.App: request failed\n", ts, i%16)
			out = append(out, javaTrace[bytes.IndexByte([]byte(javaTrace), '\n')+1:bytes.LastIndex([]byte(javaTrace), []byte("\n2026"))+1]...)
		case 15:
			out = fmt.Appendf(out, "%s ERROR [worker-%d] worker crashed\n", ts, i%16)
			out = append(out, pyTrace[bytes.IndexByte([]byte(pyTrace), '\n')+1:bytes.LastIndex([]byte(pyTrace), []byte("\n[2026"))+1]...)
		default:
			out = fmt.Appendf(out, "%s INFO [worker-%d] com.example.service.Handler: request completed path=/api/v1/orders status=200\n", ts, i%16)
		}
	}
	return out
}

func BenchmarkParse(b *testing.B) {
	for _, corpus := range []string{"synthetic", "loghub"} {
		b.Run("corpus="+corpus, func(b *testing.B) {
			var in []byte
			if corpus == "loghub" {
				in = parsetest.LoghubCorpus(b)
			} else {
				in = synthetic(4 << 20)
			}
			j, err := New(text.Parser{}, Config{})
			if err != nil {
				b.Fatal(err)
			}
			parsetest.Bench(b, in, record.DefaultConfig(), func(sp *lines.Splitter, bl *record.Builder) int {
				j.Reset()
				return j.Run(sp, bl, true)
			})
		})
	}
}
