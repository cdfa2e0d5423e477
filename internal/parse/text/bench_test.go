package text

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// synthetic returns about n bytes of log4j-style and Apache-style lines
// with varied levels and messages, deterministic.
func synthetic(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	levels := []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	msgs := []string{
		"request completed path=/api/v1/orders status=200",
		"connection reset by peer while reading response header from upstream",
		"cache miss for key user:1234:profile",
		"retrying request attempt=2 backoff=250ms",
		"Created MRAppMaster for application appattempt_1445144423722_0020_000001",
	}
	var out []byte
	for i := 0; len(out) < n; i++ {
		sec := i / 50
		if i%4 == 3 {
			out = fmt.Appendf(out, "[Thu Jan 15 08:%02d:%02d 2026] [%s] [client 10.0.%d.%d] %s\n",
				sec/60%60, sec%60, []string{"notice", "error", "warn"}[r.IntN(3)], r.IntN(256), r.IntN(256), msgs[r.IntN(len(msgs))])
			continue
		}
		out = fmt.Appendf(out, "2026-01-15 08:%02d:%02d,%03d %s [worker-%d] com.example.service.Handler: %s\n",
			sec/60%60, sec%60, r.IntN(1000), levels[r.IntN(len(levels))], r.IntN(16), msgs[r.IntN(len(msgs))])
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
			parsetest.Bench(b, in, record.DefaultConfig(), parsetest.Lines(Parser{}))
		})
	}
}
