package logql_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/logql"
)

func ExampleParse() {
	e, err := logql.Parse(`sum by (host) (rate({app="api"} |= "error" | json | latency > 250ms [5m]))`)
	if err != nil {
		fmt.Println(err)
		return
	}
	agg := e.(*logql.VectorAggregation)
	rng := agg.Expr.(*logql.RangeAggregation).Range
	fmt.Println(agg.Op, agg.Grouping.Labels, rng.Interval, len(rng.Log.Pipeline))
	fmt.Println(e)

	_, err = logql.Parse(`rate({app="api"}[5minutes])`)
	fmt.Println(err)
	// Output:
	// sum [host] 5m0s 3
	// sum by (host) (rate({app="api"} |= "error" | json | latency > 250ms [5m]))
	// parse error at line 1, col 17: not a valid duration string: "5minutes"
}
