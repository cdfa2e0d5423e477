package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// linesStore is a store of nginx access lines as text, in three streams
// pushed as Loki's API takes them: {job="web", host="a"}, a stream with a
// label a capture names ({job="web", method="GET"}: the capture is
// method_extracted there), and {job="web", host="b"} whose rows carry
// structured metadata on some (path, or status). Some lines are not
// access lines, some have a size of "-", a status that is no number or a
// duration. Half the rows are in parts, the rest in the head.
func linesStore(t *testing.T) *store.Snapshot {
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rng := rand.New(rand.NewPCG(3, 4))
	line := func() string {
		switch rng.IntN(12) {
		case 0:
			return "upstream timed out while reading response header"
		case 1:
			return fmt.Sprintf(`10.0.0.%d - - [15/Jan/2026:08:00:00 +0000] "GET /health HTTP/1.1" 200 - "-" "probe"`, rng.IntN(9))
		case 2:
			return fmt.Sprintf(`10.0.0.%d - - [15/Jan/2026:08:00:00 +0000] "GET /slow HTTP/1.1" abc %dms "-" "curl"`, rng.IntN(9), rng.IntN(900))
		case 3:
			return fmt.Sprintf(`10.0.0.%d - - [15/Jan/2026:08:00:00 +0000] "GET /big HTTP/1.1" 200 %dKB "-" "curl"`, rng.IntN(9), rng.IntN(90))
		}
		return fmt.Sprintf(`%d.0.%d.%d - - [15/Jan/2026:08:00:00 +0000] "%s /api/%d HTTP/1.1" %d %d "-" "Mozilla/5.0"`,
			[]int{10, 192}[rng.IntN(2)], rng.IntN(3), rng.IntN(255), []string{"GET", "POST", "PUT"}[rng.IntN(3)], rng.IntN(12), 200+100*rng.IntN(4), rng.IntN(5000))
	}
	streams := []struct {
		labels map[string]string
		meta   bool
	}{{map[string]string{"job": "web", "host": "a"}, false}, {map[string]string{"job": "web", "method": "GET"}, false}, {map[string]string{"job": "web", "host": "b"}, true}}
	for half := range 2 {
		var push []any
		for _, s := range streams {
			var values []any
			for i := range 600 {
				ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(half*600+i) * 30 * time.Millisecond).UnixNano()
				e := []any{fmt.Sprint(ts), line()}
				if s.meta && i%3 == 0 {
					k := i % 2
					e = append(e, map[string]string{[]string{"path", "status"}[k]: []string{"/meta", "599"}[k]})
				}
				values = append(values, e)
			}
			push = append(push, map[string]any{"stream": s.labels, "values": values})
		}
		body, err := json.Marshal(map[string]any{"streams": push})
		if err != nil {
			t.Fatal(err)
		}
		d := loki.Decoder{Limits: loki.DefaultLimits}
		b := &record.Batch{}
		if res, err := d.DecodeJSON(body, b); err != nil || res.Rejected > 0 {
			t.Fatalf("push: %v %v", err, res.Reasons)
		}
		if err := st.Append(context.Background(), store.DefaultTenant, b); err != nil {
			t.Fatal(err)
		}
		if half == 0 {
			if err := st.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	sn := st.Snapshot()
	t.Cleanup(sn.Release)
	return sn
}

// TestLineCapturesSameAsReference: range aggregations of a pattern or
// regexp parser (range_lines.go's lean path) agree with the reference,
// errors included, over rows with and without metadata, streams with a
// label a capture names, values that do not convert and lines that do
// not match.
func TestLineCapturesSameAsReference(t *testing.T) {
	sn := linesStore(t)
	const nginx = "`<ip> - - [<_>] \"<method> <path> <_>\" <status> <size> <_>`"
	for _, q := range []string{
		`sum by (path) (sum_over_time({job="web"} | pattern ` + nginx + ` | unwrap size | __error__="" [1h]))`,
		`topk(3, sum by (path) (sum_over_time({job="web"} | pattern ` + nginx + ` | unwrap size | __error__="" [1h])))`,
		`sum(count_over_time({job="web"} | pattern ` + nginx + ` | status >= 500 [1h])) / sum(count_over_time({job="web"}[1h]))`,
		`sum by (status) (count_over_time({job="web"} | pattern ` + nginx + ` | status >= 400 [1h]))`,
		`sum by (status) (count_over_time({job="web"} | pattern ` + nginx + ` | status >= 400 | __error__="" [1h]))`,
		`count_over_time({job="web"} | pattern ` + nginx + ` [1h])`,
		`sum by (method) (count_over_time({job="web"} | pattern ` + nginx + ` | status >= 300 [7s]))`,
		`sum by (path) (sum_over_time({host="a"} | pattern ` + nginx + ` | unwrap size | __error__="" [3s] offset 4s))`,
		`sum by (method, host) (rate({job="web"} | pattern ` + nginx + ` | method=~"P.*" [1m]))`,
		`sum by (method_extracted) (count_over_time({job="web"} | pattern ` + nginx + ` [1h]))`,
		`sum by (path) (bytes_over_time({job="web"} | pattern ` + nginx + ` | path!="/health" [1h]))`,
		`sum by (ip) (count_over_time({job="web"} |= "POST" | pattern ` + nginx + ` | ip = ip("192.0.0.0/8") [1h]))`,
		`avg by (method) (avg_over_time({job="web"} | pattern ` + nginx + ` | unwrap size [1h]))`,
		`max by (method) (max_over_time({job="web"} | pattern ` + nginx + ` | unwrap size | __error__="" [1m]))`,
		`sum(sum_over_time({job="web"} | pattern ` + nginx + ` | unwrap bytes(size) | __error__="" [1h]))`,
		`sum(sum_over_time({job="web"} | pattern ` + nginx + ` | unwrap duration(size) | __error__="" [1h]))`,
		`sum(sum_over_time({job="web"} | pattern ` + nginx + ` | unwrap size | size > 100 or path="/big" [1h]))`,
		`sum by (path) (sum_over_time({job="web"} | pattern ` + nginx + ` | status="200" and method!="GET" | unwrap size | path=~"/api/1.*" [1h]))`,
		`sum(sum_over_time({job="web"} | pattern ` + nginx + ` | unwrap size | size="" [1h]))`,
		`avg_over_time({host="a"} | pattern ` + nginx + ` | unwrap size [1h])`,
		`sum by (path) (count_over_time({host="a"} | pattern ` + nginx + ` | status > 300 [1h]))`,
		`sum by (path, __error__) (sum_over_time({host="a"} | pattern ` + nginx + ` | unwrap size | __error__!="" [1h]))`,
		`quantile_over_time(0.9, {job="web"} | pattern ` + nginx + ` | unwrap size | __error__="" [1h]) by (host)`,
		`sum without (ip) (count_over_time({job="web"} | pattern ` + nginx + ` [1h]))`,
		`sum by (status) (count_over_time({job="web"} | pattern "<_> \"<_>\" <status> <_>" | status > 250ms [1h]))`,
		`sum by (word) (count_over_time({job="web"} | regexp "\"(?P<word>[A-Z]+) (?P<path>/[a-z]+)(?P<rest>/[0-9]+)?" [1h]))`,
		`sum by (rest) (count_over_time({job="web"} | regexp "(?P<path>/[a-z]+)(?P<rest>/[0-9]+)?" | rest="" [1h]))`,
		`sum by (path) (count_over_time({job="web"} != "health" | regexp "(?P<path>/[a-z]+)" [1h]))`,
		`sum(sum_over_time({job="web"} | regexp "\" (?P<status>\\S+) (?P<size>\\S+)" | unwrap size [1h]))`,
	} {
		if diff := sameAnswer(sn, q, false, false); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}
	}
}
