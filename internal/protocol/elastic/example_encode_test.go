package elastic_test

import (
	"context"
	"fmt"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/protocol/elastic"
	"github.com/sluicelog/sluice/internal/record"
)

// Lines parsed by sluice, as a bulk body: a Beats-like JSON line goes as
// it is, a logfmt line as a document written for it.
func ExampleEncoder() {
	input := `{"@timestamp":"2026-01-15T08:00:00.5Z","service":"api","message":"hello"}
ts=2026-01-15T08:00:01Z service=db level=warn msg="slow query" ms=1234
`
	p, err := parse.New(parse.Options{Format: "auto", Record: record.DefaultConfig()})
	if err != nil {
		panic(err)
	}
	var e elastic.Encoder
	err = p.Bytes(context.Background(), []byte(input), func(b *record.Batch) error {
		fmt.Printf("%s", e.AppendBulk(nil, b, "logs-sluice-default"))
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// {"create":{"_index":"logs-sluice-default"}}
	// {"@timestamp":"2026-01-15T08:00:00.5Z","service":"api","message":"hello"}
	// {"create":{"_index":"logs-sluice-default"}}
	// {"@timestamp":"2026-01-15T08:00:01.000000000Z","message":"ts=2026-01-15T08:00:01Z service=db level=warn msg=\"slow query\" ms=1234","service":"db","level":"warn","ms":1234}
}
