package pattern_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/parse/pattern"
	"github.com/sluicelog/sluice/internal/record"
)

func Example() {
	p, err := pattern.Compile(`<time> <level> [<thread>] <logger>: <msg>`)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := "2015-10-18 18:01:47,978 INFO  [main] org.example.App: started\n" +
		"a line of another shape\n"
	res := parsetest.Run(p, record.DefaultConfig(), []byte(in), nil)
	for _, r := range res.Records {
		fmt.Println(r)
	}
	// Output:
	// {"_time":"2015-10-18T18:01:47.978000000Z","_stream":"{}","_msg":"started","level":"INFO","thread":"main","logger":"org.example.App"}
	// {"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"a line of another shape"}
}

func ExampleCompile_error() {
	_, err := pattern.Compile(`<ip> <user><time>`)
	fmt.Println(err)
	// Output:
	// pattern: adjacent captures <user><time> at byte 12: a literal must separate them
}
