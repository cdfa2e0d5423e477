package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// benchStore holds 200,000 JSON lines of a few services and hosts, in
// parts, as the canonical corpus has them.
func benchStore(b *testing.B) *store.Store {
	b.Helper()
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	base := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
	var sb strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&sb, `{"time":"%s","level":"%s","msg":"%s","service":"%s","host":"node-%d","trace_id":"%016x%016x","http":{"method":"%s","path":"/api/v1/%s","status":%d,"latency_ms":%d.%03d}}`+"\n",
			base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), pick("info", "info", "debug", "warn", "error"),
			pick("payment declined", "user logged in", "cache miss", "request completed"), pick("api", "web", "auth", "reports"),
			rng.IntN(8), rng.Uint64(), rng.Uint64(), pick("GET", "POST"), pick("cart", "users", "orders"), 200+100*rng.IntN(4), rng.IntN(500), rng.IntN(1000))
		if sb.Len() > 4<<20 {
			if err := p.Bytes(context.Background(), []byte(sb.String()), func(bt *record.Batch) error { return st.Append(context.Background(), store.DefaultTenant, bt) }); err != nil {
				b.Fatal(err)
			}
			sb.Reset()
		}
	}
	if err := p.Bytes(context.Background(), []byte(sb.String()), func(bt *record.Batch) error { return st.Append(context.Background(), store.DefaultTenant, bt) }); err != nil {
		b.Fatal(err)
	}
	if err := st.Flush(); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkQueries times the benchmark table's kinds of queries on
// stored blocks (bench/query.sh measures them end to end).
func BenchmarkQueries(b *testing.B) {
	st := benchStore(b)
	sn := st.Snapshot()
	defer sn.Release()
	at := time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC).UnixNano()
	all := `{service=~".+"}`
	for _, q := range []struct{ name, query string }{
		{"kind=phrase", `sum(count_over_time(` + all + ` |= "payment declined" [1h]))`},
		{"kind=phrase-fold", `sum(count_over_time(` + all + ` |~ "(?i)payment declined" [1h]))`},
		{"kind=json-level", `sum by (service) (count_over_time(` + all + ` | json level | level="error" [1h]))`},
		{"kind=json-status", `sum(count_over_time(` + all + ` | json s="http.status" | s >= 500 | __error__="" [1h]))`},
		{"kind=quantile", `quantile_over_time(0.99, ` + all + ` | json lat="http.latency_ms" | unwrap lat | __error__="" [1h]) by (service)`},
		{"kind=newest", `{service="reports"} |= "declined"`},
		{"kind=alternation", `sum(count_over_time(` + all + ` |~ "payment declined|cache miss" [1h]))`},
		{"kind=alternation-fold", `sum(count_over_time(` + all + ` |~ "(?i)payment declined|cache miss" [1h]))`},
		{"kind=alternation-chain", `sum(count_over_time(` + all + ` |= "payment declined" or "node-3" [1h]))`},
		{"kind=alternation-newest", `{service="reports"} |~ "declined|cache miss"`},
	} {
		b.Run(q.name, func(b *testing.B) {
			p := Params{Tenant: store.DefaultTenant, Query: q.query, Start: at, End: at, Instant: true}
			if strings.HasPrefix(q.query, "{") { // a log query: the newest 100 of the hour
				p = Params{Tenant: store.DefaultTenant, Query: q.query, Start: at - int64(time.Hour), End: at, Limit: 100}
			}
			e := NewEngine(Limits{})
			var rows int64
			for b.Loop() {
				res, err := e.Exec(context.Background(), sn, p)
				if err != nil {
					b.Fatal(err)
				}
				rows = res.Stats.Rows
			}
			b.ReportMetric(float64(rows), "rows/op")
		})
	}
}
