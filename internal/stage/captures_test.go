package stage

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// FuzzLineCaptures: for any line, a pattern or regexp stage read into a
// table (LineCaptures) gives exactly the labels the stage sets for a
// stream without a label of a capture's name, whatever labels are
// observed; and a value filter decides as the filter's stage does
// whenever ok.
func FuzzLineCaptures(f *testing.F) {
	for _, s := range []string{
		`10.0.0.1 - - [15/Jan/2026:08:00:00 +0000] "GET /api/v1/orders HTTP/1.1" 500 1234 "-" "curl/8.5"`,
		`10.0.0.1 - - [x] "GET /a b" 200`, `GET /x 500 ERROR failed`, `GET /x 5e2 ERROR`, ``, `a b c d e`, `[] ]`,
	} {
		f.Add(s, uint16(5), uint8(0))
		f.Add(s, uint16(0x202), uint8(1))
	}
	parse := func(t *testing.T, q string) []logql.Stage {
		expr, err := logql.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		return expr.(*logql.LogExpr).Pipeline
	}
	stream := lbls("app", "api")
	filters := []string{`status >= 500`, `path=~"/api/.*"`, `method!="GET" or size < 100`, `status="" and path!=""`, `x > 1KB`, `size = ip("10.0.0.0/8")`, `b > 5ms`, `app="api"`, `nope=""`, `status > 300 and method="GET"`}
	f.Fuzz(func(t *testing.T, line string, pick uint16, filter uint8) {
		for _, q := range []string{
			`{app="api"} | pattern "<ip> - - [<_>] \"<method> <path> <_>\" <status> <size> <_>"`,
			`{app="api"} | pattern "<method> <path> <status> <_>"`,
			`{app="api"} | pattern "[<a>]<b>"`,
			`{app="api"} | pattern "<x> <_> <size>"`,
			`{app="api"} | regexp "(?P<method>[A-Z]+) (?P<path>\\S+)(?: (?P<status>\\d+))?"`,
			`{app="api"} | regexp "^(?P<x>\\w+) (?P<size>.*)$"`,
		} {
			stages := parse(t, q)
			var names []string
			for i, n := range []string{"ip", "method", "path", "status", "size", "a", "b", "x", "app", "method_extracted", "path_extracted"} {
				if pick>>i&1 == 1 {
					names = append(names, n)
				}
			}
			o := ObservedBy(nil, names)
			if pick == 0 {
				o = nil // every label
			}
			p, err := CompileObserving(stages, o)
			if err != nil {
				t.Fatal(err)
			}
			var lb Labels
			lb.Reset(stream)
			p.Process(0, []byte(line), &lb)
			want := lb.Copy()
			caps, ok := p.LineCaptures(0)
			if !ok {
				t.Fatalf("%s: no captures", q)
			}
			vals := make([]Value, caps.Len()+1)
			caps.Extract([]byte(line), vals)
			got := append(record.Labels{}, stream...)
			for i := range caps.Len() {
				if caps.Name(i) == "app" {
					t.Fatalf("%s: a stream label's capture sets its own name", q)
				}
				if v := vals[i]; v.Set {
					got = append(got, record.Label{Name: caps.Name(i), Value: v.V})
				}
			}
			slices.SortFunc(got, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
			if got.String() != want.String() {
				t.Fatalf("%s on %q observing %v:\n got %s\nwant %s", q, line, names, got, want)
			}
			// The filter on the table (the stream's label after the
			// captures) against its stage on the labels.
			fq := `{app="api"} | ` + filters[int(filter)%len(filters)]
			fs := parse(t, fq)[0].(*logql.LabelFilterStage).Filter
			vf, err := CompileValueFilter(fs, func(name string) int {
				for i := range caps.Len() {
					if caps.Name(i) == name {
						return i
					}
				}
				if name == "app" {
					return caps.Len()
				}
				return caps.Len() + 1
			})
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals[:caps.Len()], Value{V: "api", Set: true}, Value{})
			pass, ok := vf(vals)
			fp, err := Compile(parse(t, fq))
			if err != nil {
				t.Fatal(err)
			}
			_, stagePass := fp.Process(0, []byte(line), &lb)
			if ok && (pass != stagePass || lb.HasError()) {
				t.Fatalf("%s on %s: table %v, stage %v (labels %s)", fq, want, pass, stagePass, lb.Copy())
			}
			if !ok && !lb.HasError() {
				t.Fatalf("%s on %s: table says a value does not convert, the stage set no error", fq, want)
			}
		}
	})
}
