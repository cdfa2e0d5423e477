package regex_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/parse/regex"
	"github.com/sluicelog/sluice/internal/record"
)

func Example() {
	p, err := regex.Compile(`^(?P<method>[A-Z]+) (?P<path>\S+) \((?P<status>\d+)\) (?P<duration>\S+)$`)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := "POST /api/prom/api/v1/query_range (200) 1.5s\nsomething else\n"
	res := parsetest.Run(p, record.DefaultConfig(), []byte(in), nil)
	for _, r := range res.Records {
		fmt.Println(r)
	}
	// Output:
	// {"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"POST /api/prom/api/v1/query_range (200) 1.5s","method":"POST","path":"/api/prom/api/v1/query_range","status":"200","duration":"1.5s"}
	// {"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"something else"}
}
