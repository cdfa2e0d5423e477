package sink

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/wal"
)

// BenchmarkAppendBlock: a WAL record of 1,000 lines shaped as the
// canonical corpus's, decoded and turned into records (the sink's fill
// without the WAL read).
func BenchmarkAppendBlock(b *testing.B) {
	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf(`{"ts":%d,"level":"error","msg":"retrying request","service":"reports","host":"node-%d",`+
			`"trace_id":"7ce42c8218072e8c35bf992dc9e9c616","http":{"method":"PUT","path":"/api/v1/cart/items","status":502,`+
			`"latency_ms":42.078,"bytes":201105,"user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},`+
			`"error":{"type":"SQLException","message":"failed to call upstream: payment declined","stack":"Traceback (most recent call last):\n  File \"app.py\", line 739, in handler\n    raise\n"}}`,
			1768464000000+i, i%32))
	}
	cfg := record.DefaultConfig()
	cfg.StreamFields = []string{"service", "host"}
	p, err := parse.New(parse.Options{Format: "json", Record: cfg})
	if err != nil {
		b.Fatal(err)
	}
	var enc rows.Encoder
	var data []byte
	err = p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(rb *record.Batch) error {
		data = enc.Append(nil, "default", rb)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var batch Batch
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		blk, err := rows.Decode(data)
		if err != nil {
			b.Fatal(err)
		}
		batch.Reset()
		if n := batch.appendBlock(&filter{}, blk, wal.Pos{}); n != len(lines) {
			b.Fatalf("%d records, want %d", n, len(lines))
		}
	}
}
