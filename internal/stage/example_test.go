package stage_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
)

func ExamplePipeline() {
	q, err := logql.ParseLogExpr(`{app="api"} |= "status" | logfmt | status >= 500 | line_format "{{.method}} {{.path}}"`)
	if err != nil {
		panic(err)
	}
	p, err := stage.Compile(q.Pipeline)
	if err != nil {
		panic(err)
	}
	stream := record.Labels{{Name: "app", Value: "api"}}
	var lb stage.Labels // one per goroutine, reused for every row
	for _, line := range []string{
		`method=GET path=/users status=200`,
		`method=POST path=/orders status=503`,
		`starting up`,
	} {
		lb.Reset(stream)
		out, keep := p.Process(0, []byte(line), &lb)
		if !keep {
			fmt.Println("dropped:", line)
			continue
		}
		fmt.Println(string(out), lb.Copy())
	}
	// Output:
	// dropped: method=GET path=/users status=200
	// POST /orders {app="api", method="POST", path="/orders", status="503"}
	// dropped: starting up
}
