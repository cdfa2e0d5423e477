package rules

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// logfmtLines returns n logfmt lines of about 200 bytes, a fifth of them
// with a password= and a token= pair, a tenth with an e-mail address.
func logfmtLines(n int) []string {
	rng := rand.New(rand.NewPCG(7, 8))
	lines := make([]string, n)
	for i := range lines {
		var sb strings.Builder
		fmt.Fprintf(&sb, `ts=2026-01-15T10:%02d:%02d.%03dZ level=info service=auth host=node-%d msg="user login" user=u%d path=/login status=200 duration_ms=%.3f`,
			rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.IntN(40), rng.IntN(1000), rng.Float64()*200)
		switch k := rng.IntN(10); {
		case k < 2:
			fmt.Fprintf(&sb, ` password=hunter%d token="tk-%016x"`, rng.IntN(1000), rng.Uint64())
		case k < 3:
			fmt.Fprintf(&sb, ` email=user%d@example.com`, rng.IntN(1000))
		}
		lines[i] = sb.String()
	}
	return lines
}

// BenchmarkRedact reports the cost per line (ns/op) of one rule that
// redacts every line of the batch with the e-mail and secret_pairs
// detectors, on JSON lines shaped as the corpus's (a tenth with an
// e-mail address) and on logfmt lines (a fifth with password= and
// token= pairs, a tenth with an address).
//
//	go test -run '^$' -bench Redact -benchtime 300000x ./internal/rules/
func BenchmarkRedact(b *testing.B) {
	for _, c := range []struct {
		name  string
		lines []string
	}{{"json", corpusLines(1000)}, {"logfmt", logfmtLines(1000)}} {
		b.Run("lines="+c.name, func(b *testing.B) {
			s := compile(b, "rules:\n  - name: r\n    redact: {detectors: [email, secret_pairs]}\n")
			benchLines(b, s, c.lines)
		})
	}
}

// benchLines applies s to lines, one line per op (a fresh copy of the
// batch each pass over them: rules change it in place).
func benchLines(b *testing.B, s *Set, lines []string) {
	batch := parseLines(b, lines...)
	data, recs, fields := batch.Data, batch.Records, batch.Fields
	b.ReportAllocs()
	b.SetBytes(int64(len(data)) / int64(len(recs)))
	i := 0
	for b.Loop() {
		if i%len(recs) == 0 {
			b.StopTimer()
			batch.Data = append(batch.Data[:0:0], data...)
			batch.Records = append(batch.Records[:0:0], recs...)
			batch.Fields = append(batch.Fields[:0:0], fields...)
			batch.ClearSelection()
			b.StartTimer()
			s.Apply(batch)
		}
		i++
	}
}
