package query

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLogSweepSameAsReference: a log query's blocks swept by its probe
// (log_sweep.go) give the lines the row path gives: rows stored whole
// among those swept, malformed and escaped lines, values a number
// filter errs on, a stream label of a filter's name, structured
// metadata, line filters before json and stages after the filters, and
// the newest few lines of many.
func TestLogSweepSameAsReference(t *testing.T) {
	st := openMem(t)
	push := lokiPusher(t, st)
	stream := func(labels string, withMeta bool, first int, lines []string) string {
		var vals []string
		for i, l := range lines {
			ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(first+i) * time.Millisecond).UnixNano()
			meta := ""
			if withMeta && i%5 == 2 {
				meta = `,{"level":"fatal"}`
			}
			q, _ := json.Marshal(l)
			vals = append(vals, fmt.Sprintf(`["%d",%s%s]`, ts, q, meta))
		}
		return fmt.Sprintf(`{"stream":%s,"values":[%s]}`, labels, strings.Join(vals, ","))
	}
	trace := func(i int) string { return fmt.Sprintf("%08x7ce42c8218072e8c35bf992d", i/40) }
	var js []string
	for i := range 2400 {
		level := []string{"info", "info", "warn", "error"}[i%4]
		switch {
		case i%97 == 5: // stored whole: its values are a small part of it
			js = append(js, fmt.Sprintf(`{"level":"%s","a_key_long_enough_to_leave_the_line_whole_when_templated_%d":"x","trace_id":"%s"}`, level, i%3, trace(i)))
		case i%89 == 7: // malformed
			js = append(js, fmt.Sprintf(`{"level":"%s","trace_id":"%s",`, level, trace(i)))
		case i%83 == 3: // escaped
			js = append(js, fmt.Sprintf(`{"level":"\u0065rror","trace_id":"\u0030%s","status":"5xx"}`, trace(i)[1:]))
		case i%71 == 1: // a status that is no number
			js = append(js, fmt.Sprintf(`{"level":"%s","trace_id":"%s","status":"n/a","msg":"payment declined"}`, level, trace(i)))
		default:
			js = append(js, fmt.Sprintf(`{"level":"%s","trace_id":"%s","status":%d,"latency_ms":%d.5,"msg":"m%d"}`, level, trace(i), 200+100*(i%4), i%500, i%7))
		}
	}
	for round, part := range [][2]int{{0, 1200}, {1200, 2400}} {
		lo, hi := part[0], part[1]
		push(stream(`{"service":"api"}`, false, lo, js[lo:hi]),
			stream(`{"service":"web"}`, true, lo, js[lo:hi]),
			stream(`{"service":"db","level":"error"}`, false, lo, js[lo:hi]))
		if round == 0 {
			if err := st.Flush(); err != nil { // the rest stays in the head
				t.Fatal(err)
			}
		}
	}
	sn := st.Snapshot()
	defer sn.Release()
	id := trace(1000)
	for _, pipe := range []string{
		`| json | trace_id="` + id + `"`,
		`| json | trace_id=~"` + id[:12] + `.*"`,
		`| json | trace_id="` + trace(88) + `"`, // an escaped line's
		`| json trace_id | trace_id="` + id + `"`,
		`| json t="trace_id" | t="` + id + `"`,
		`| json | level="error"`,
		`| json | level="fatal"`,
		`| json | level!="info", trace_id="` + id + `"`,
		`| json | status >= 500 | __error__=""`,
		`| json | status >= 500`,
		`| json | status > 200 | trace_id="` + id + `"`,
		`| json | __error__!=""`,
		`| json | __error__="" | trace_id="` + id + `"`,
		`| json | trace_id="` + id + `" | line_format "{{.msg}} {{.status}}"`,
		`| json | trace_id="` + id + `" | line_format "{{.msg}}" | json`,
		`|= "error" | json | trace_id="` + id + `"`,
		`!= "m3" | json | level="warn"`,
		`| json | trace_id="none"`,
		`| json | level="error" or trace_id="` + id + `"`,
		// Line filters alone, or none: selected in the columns oldest
		// first (selectedBlock).
		``,
		`|= "m3"`,
		`!= "m3" |~ "error|warn"`,
	} {
		for _, sel := range []string{`{service=~".+"}`, `{service="db"}`, `{service="web"}`} {
			q := sel + " " + pipe
			for _, backward := range []bool{true, false} {
				if diff := sameAnswer(sn, q, true, backward); diff != "" {
					t.Errorf("%s (backward %v): %s", q, backward, diff)
				}
			}
		}
	}
	// The probe sweeps the blocks of a trace's lines.
	p := diffParams(`{service=~".+"} | json | trace_id="`+id+`"`, true, true)[0]
	res, err := (&Engine{workers: 2, limits: DefaultLimits, sweepAlways: true}).Exec(context.Background(), sn, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.RowsSwept == 0 {
		t.Errorf("no row swept: %+v", res.Stats)
	}
}
