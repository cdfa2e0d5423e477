package loki_test

import (
	"fmt"

	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
)

// A pushed batch, decoded and encoded again: the JSON body, and the
// protobuf body decoded back.
func ExampleEncoder() {
	d := loki.Decoder{Limits: loki.DefaultLimits}
	var b record.Batch
	_, err := d.DecodeJSON([]byte(`{"streams":[{"stream":{"app":"api","env":"prod"},"values":[
		["1768464000000000001","GET /users \"200\""],
		["1768464000000000002","slow",{"trace_id":"abc"}]]}]}`), &b)
	if err != nil {
		panic(err)
	}
	var e loki.Encoder
	fmt.Printf("%s\n", e.AppendPushJSON(nil, &b))

	var back record.Batch
	if _, err := d.DecodeProto(e.AppendPushProto(nil, &b), &back, 1<<20); err != nil {
		panic(err)
	}
	for i := range back.Records {
		fmt.Println(back.Labels(i), back.Records[i].Time, string(back.Bytes(back.Records[i].Line)), len(back.RecordFields(i)))
	}
	// Output:
	// {"streams":[{"stream":{"app":"api","env":"prod"},"values":[["1768464000000000001","GET /users \"200\""],["1768464000000000002","slow",{"trace_id":"abc"}]]}]}
	// {app="api", env="prod"} 1768464000000000001 GET /users "200" 0
	// {app="api", env="prod"} 1768464000000000002 slow 1
}
