package parse_test

import (
	"context"
	"fmt"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
)

// Parsing an input of mixed formats into batches: each record's timestamp,
// stream and fields, and each rejected line with its position.
func Example() {
	input := []byte(`{"ts":1768464000123,"service":"api","msg":"hello","http":{"status":200}}
level=warn service=api msg="slow request" duration_ms=1234
{"broken":
`)
	p, err := parse.New(parse.Options{Format: "auto", Record: record.DefaultConfig()})
	if err != nil {
		panic(err)
	}
	err = p.Bytes(context.Background(), input, func(b *record.Batch) error {
		for i := range b.Records {
			fmt.Printf("%s %s %q\n", b.Labels(i), b.AppendMsg(nil, i), b.RecordFields(i)[len(b.RecordFields(i))-1].Kind)
		}
		for _, e := range b.Errors {
			fmt.Println("rejected", e.Error())
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// {service="api"} hello "int"
	// {service="api"} slow request "int"
	// rejected 3:11: json: unexpected end of line
}
