package file

import (
	"fmt"
	"testing"

	"github.com/sluicelog/sluice/internal/sink"
)

// benchBatch is 10,000 records shaped as the canonical corpus's (labels
// and fields as the sink renders them), values varied so that they do
// not compress as one repeated line would.
func benchBatch() *sink.Batch {
	levels := []string{"info", "warn", "error", "debug"}
	paths := []string{"/api/v1/cart/items", "/api/v1/users/42", "/healthz", "/api/v2/orders?limit=50"}
	b := &sink.Batch{}
	for i := range 10000 {
		lab := fmt.Sprintf(`{"host":"node-%d","service":"reports"}`, i%32)
		fields := fmt.Sprintf(`{"level":%q,"trace_id":"%032x","http.method":"PUT","http.path":%q,"http.status":%d,"http.latency_ms":%d.%03d,"http.bytes":%d}`,
			levels[i%4], uint64(i)*0x9e3779b97f4a7c15, paths[i%len(paths)], 200+i%5*100, i%997, i%1000, i*7919%300000)
		line := fmt.Sprintf(`{"ts":%d,"level":%q,"msg":"request %d done","service":"reports","host":"node-%d","trace_id":"%032x","http":{"method":"PUT","path":%q,"status":%d}}`,
			1768464000000+i, levels[i%4], i, i%32, uint64(i)*0x9e3779b97f4a7c15, paths[i%len(paths)], 200+i%5*100)
		b.Records = append(b.Records, sink.Record{Time: int64(1768464000000+i) * 1e6, Tenant: "default",
			LabelsJSON: []byte(lab), FieldsJSON: []byte(fields), Line: []byte(line)})
	}
	return b
}

// BenchmarkEncode: one batch of 10,000 corpus-shaped records rendered as
// NDJSON and compressed as Deliver writes it; ratio is the bytes written
// over the NDJSON's.
func BenchmarkEncode(b *testing.B) {
	batch := benchBatch()
	for _, comp := range []string{"none", "gzip", "zstd"} {
		b.Run("compression="+comp, func(b *testing.B) {
			d, err := New(Config{Sink: "b", Dir: b.TempDir(), Compression: comp})
			if err != nil {
				b.Fatal(err)
			}
			plain, err := (&Dest{cfg: Config{Compression: "none"}}).encode(batch)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(plain)))
			var n int
			for b.Loop() {
				out, err := d.encode(batch)
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n)/float64(len(plain)), "ratio")
		})
	}
}
