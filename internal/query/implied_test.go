package query

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

func TestImpliedClauses(t *testing.T) {
	for _, c := range []struct {
		q    string
		want []string // each clause: its labels, then its literals
	}{
		{`{a="b"} | logfmt | path="/login"`, []string{`path: "/login" "\\"`}},
		{`{a="b"} | json | path="/login" | status="404"`, []string{`path: "/login" "\\"`, `status: "404" "\\u"`}},
		{`{a="b"} | pattern "<_> <path> <_>" | path="/login", method="GET"`, []string{`path: " /login"`, `method: "GET"`}},
		{`{a="b"} | regexp "(?P<path>/[a-z]+)" | path=~"/log(in|out)"`, []string{`path: "/login" "/logout"`}},
		// A capture's value in its expression: the literals around it.
		{`{a="b"} | regexp "\"status\":(?P<status>\\d+)" | status="500"`, []string{`status: "\"status\":500"`}},
		{`{a="b"} | pattern "<ip> - <_> \"<method> <path> <_>\" <status> <_>" | status="500"`, []string{`status: "\" 500"`}},
		{`{a="b"} | pattern "<_> level=<level>" | level=~"err.*"`, []string{`level: "err"`}},
		{`{a="b"} | regexp "GET (?P<path>\\S+)" | path!=""`, nil},
		{`{a="b"} | regexp "level=(?P<level>\\w+) path=(?P<path>\\S+)" | level="error"`, []string{`level: "level=error path="`}},
		{`{a="b"} | regexp "x(?P<a>\\d)+" | a="5"`, []string{`a: "5"`}},
		{`{a="b"} | regexp "x(?:,(?P<a>\\d)){2}" | a="5"`, []string{`a: "5"`}},
		// A value another parser may have set, or an unset label passing.
		{`{a="b"} | regexp "a=(?P<x>\\d)" | regexp "b=(?P<x>\\d)" | x="1"`, []string{`x: "1"`}},
		{`{a="b"} | regexp "a=(?P<x>\\d)" | x!="1", x=~".*"`, nil},
		{`{a="b"} | logfmt | level="error" or level="fatal"`, []string{`level,level: "error" "fatal" "\\"`}},
		{`{a="b"} |= "x" | logfmt | drop msg | level="error"`, []string{`level: "error" "\\"`}},
		// No parser before it, or the line or labels changed first: none.
		{`{a="b"} | level="error"`, nil},
		{`{a="b"} | line_format "{{.x}}" | logfmt | level="error"`, nil},
		{`{a="b"} | logfmt | label_format level=msg | level="error"`, nil},
		{`{a="b"} | json | unpack | level="error"`, nil},
		// Filters that no literal decides.
		{`{a="b"} | logfmt | level!="error", level="", status >= 500, __error__="x"`, nil},
		{`{a="b"} | logfmt | level="error" or status > 5`, nil},
	} {
		x, err := logql.Parse(c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		var got []string
		for _, ic := range impliedClauses(x.(*logql.LogExpr).Pipeline) {
			s := strings.Join(ic.labels, ",") + ":"
			for _, l := range ic.clause {
				s += " " + l.String()
			}
			got = append(got, s)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.q, got, c.want)
		}
	}
}

// TestImpliedSameAsReference: the clauses label filters imply rule out
// no row the filters keep: a label of the same name in the stream or in
// structured metadata, a value unescaped from the line, a line changed
// or a label set before the parser.
func TestImpliedSameAsReference(t *testing.T) {
	st := openMem(t)
	push := lokiPusher(t, st)
	stream := func(labels string, withMeta bool, first int, lines ...string) string {
		var vals []string
		for i, l := range lines {
			ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(first+i) * time.Millisecond).UnixNano()
			meta := ""
			if withMeta && i%3 == 1 {
				meta = `,{"path":"/login","level":"error","zone":"meta-only"}` // metadata the filters read instead of the line's (zone: in no line)
			}
			q, _ := json.Marshal(l)
			vals = append(vals, fmt.Sprintf(`["%d",%s%s]`, ts, q, meta))
		}
		return fmt.Sprintf(`{"stream":%s,"values":[%s]}`, labels, strings.Join(vals, ","))
	}
	var lf, js, ng []string
	for i := range 300 {
		path := []string{"/login", `\/login`, "/home", `\u002flogin`}[i%4]
		level := []string{"error", "info", `\u0065rror`}[i%3]
		lf = append(lf, fmt.Sprintf(`level=%s path=%s status=%d msg="%s"`, strings.ReplaceAll(level, `\u0065`, "e"), strings.NewReplacer(`\/`, "/", `\u002f`, "/").Replace(path), 200+100*(i%4), "m"+path))
		lf = append(lf, fmt.Sprintf(`level="%s" path="%s" status=%d`, level, path, 404))
		q := []string{`x\"y`, `x\/y`, "x/y", `x\u002fy`}[i%4] // "x/y" unescaped, but for x"y
		js = append(js, fmt.Sprintf(`{"level":"%s","path":"%s","status":%d,"req":{"path":"%s"},"q":"%s"}`, level, path, 200+100*(i%4), path, q))
		ng = append(ng, fmt.Sprintf(`10.0.0.%d - - [15/Jan/2026] "GET %s HTTP/1.1" %d 12`, i%255, strings.NewReplacer(`\/`, "/", `\u002f`, "/x").Replace(path), 200+100*(i%4)))
	}
	for round, part := range [][2]int{{0, 150}, {150, 300}} {
		lo, hi := part[0], part[1]
		push(stream(`{"service":"lf"}`, false, lo*2, lf[lo*2:hi*2]...),
			stream(`{"service":"lfm"}`, true, lo*2, lf[lo*2:hi*2]...),
			stream(`{"service":"lf2","path":"/login"}`, false, lo*2, lf[lo*2:hi*2]...),
			stream(`{"service":"js"}`, false, lo, js[lo:hi]...),
			stream(`{"service":"jsm"}`, true, lo, js[lo:hi]...),
			stream(`{"service":"js2","level":"error"}`, false, lo, js[lo:hi]...),
			stream(`{"service":"nginx"}`, false, lo, ng[lo:hi]...))
		if round == 0 {
			if err := st.Flush(); err != nil { // the rest stays in the head
				t.Fatal(err)
			}
		}
	}
	sn := st.Snapshot()
	defer sn.Release()
	// A log query's walk takes the implied clauses from its first block.
	impliedAlways = true
	defer func() { impliedAlways = false }()
	for _, pipe := range []string{
		`| logfmt | path="/login"`,
		`| logfmt path, status | path="/login" | status="404"`,
		`| logfmt | level="error"`,
		`| logfmt --strict | level=~"err.*"`,
		`| logfmt | path_extracted="/login"`,
		`| logfmt | path="/login" or level="error"`,
		`| json | path="/login"`,
		`| json | level="error", req_path="/login"`,
		`| json p="req.path" | p="/login"`,
		`| pattern "<_> - - [<_>] \"<_> <path> <_>\" <status> <_>" | path="/login"`,
		`| regexp "\"GET (?P<path>[^ ]+)" | path=~"/log.*"`,
		`| regexp "\"GET (?P<path>[^ ]+)" | path="/login"`,
		`| regexp "(?P<status>\\d+) \\d+$" | status="404"`,
		`| regexp "status=(?P<s>\\d)+" | s="0"`,
		`| regexp "\"status\":(?P<status>\\d+)" | status="404"`,
		`| regexp "(?i)LEVEL=\"?(?P<level>[a-z]+)" | level="error"`,
		`| regexp "path=(?P<path>\\S+)" | regexp "status=(?P<path>\\d+)" | path="/login"`,
		`| pattern "<_> \"<_> <path> <_>\" <status> <_>" | status="404"`,
		`| pattern "<_> path=<path> <_>" | path="/login"`,
		`| pattern "level=<level> path=<path> <_>" | path="/login"`,
		`| logfmt | zone="meta-only"`,
		`| json | zone="meta-only"`,
		`| json | q="x/y"`,
		`| json | q="x\"y"`,
		`| regexp "zone=(?P<zone>\\S+)" | zone="meta-only"`,
		`| label_format path="/login" | logfmt | path="/login"`,
		`| logfmt | label_format path="/login" | path="/login"`,
		`| line_format "path=/login" | logfmt | path="/login"`,
		`| drop path | logfmt | path="/login"`,
		`| json | drop path | path="/login"`,
	} {
		for _, sel := range []string{`{service=~".+"}`, `{service="lf2"}`, `{service="js2"}`} {
			for _, q := range []string{
				sel + " " + pipe,
				`sum by (service) (count_over_time(` + sel + " " + pipe + ` [1m]))`,
			} {
				_, isLog := func() (logql.Expr, bool) {
					x, err := logql.Parse(q)
					_, ok := x.(*logql.LogExpr)
					return x, err == nil && ok
				}()
				if diff := sameAnswer(sn, q, isLog, true); diff != "" {
					t.Errorf("%s: %s", q, diff)
				}
			}
		}
	}
}

// lokiPusher returns a function that appends streams, each a stream of
// a Loki JSON push body, to st.
func lokiPusher(t *testing.T, st *store.Store) func(streams ...string) {
	return func(streams ...string) {
		t.Helper()
		d := loki.Decoder{Limits: loki.DefaultLimits, Fields: loki.DefaultLineFields}
		b := &record.Batch{}
		body := `{"streams":[` + strings.Join(streams, ",") + `]}`
		if res, err := d.DecodeJSON([]byte(body), b); err != nil || res.Rejected > 0 {
			t.Fatalf("push: %v %v", err, res.Reasons)
		}
		if err := st.Append(context.Background(), store.DefaultTenant, b); err != nil {
			t.Fatal(err)
		}
	}
}
