package query

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
)

// TestObservedLabels: the parsers of a range aggregation set only the
// labels a sum's grouping, a range grouping and the pipeline read, and
// every label wherever the series themselves reach the answer.
func TestObservedLabels(t *testing.T) {
	for _, c := range []struct{ q, want string }{
		{`sum by (level) (count_over_time({a="b"} | json [1m]))`, `__error__ __error_details__ level`},
		{`sum(rate({a="b"} | logfmt | status >= 500 [1m]))`, `__error__ __error_details__ status`},
		{`sum by (level) (count_over_time({a="b"} | json | drop x | keep y="1" [1m]))`, `__error__ __error_details__ level y`},
		{`avg_over_time({a="b"} | json | unwrap lat | __error__="" [1m]) by (svc)`, `__error__ __error_details__ lat svc`},
		{`quantile_over_time(0.9, {a="b"} | json | unwrap lat [1m]) by (svc)`, `__error__ __error_details__ lat svc`},
		{`topk(5, sum by (level) (count_over_time({a="b"} | json [1m])))`, `__error__ __error_details__ level`},
		{`sum by (level) (bytes_over_time({a="b"} | json | level="x" or msg=~"y" [1m]))`, `__error__ __error_details__ level msg`},
		// Every label: the series reach the answer.
		{`count_over_time({a="b"} | json [1m])`, `all`},
		{`max by (level) (count_over_time({a="b"} | json [1m]))`, `all`},
		{`count by (level) (count_over_time({a="b"} | json [1m]))`, `all`},
		{`sum by (level) (max_over_time({a="b"} | json | unwrap lat [1m]))`, `all`},
		{`sum without (x) (count_over_time({a="b"} | json [1m]))`, `all`},
		{`sum by (level) (count_over_time({a="b"} | json | line_format "{{.x}}" [1m]))`, `__error__ __error_details__ level x`},
		{`sum by (level) (count_over_time({a="b"} | json | line_format "{{ toJson . }}" [1m]))`, `all`},
		{`sum by (level) (count_over_time({a="b"} | json | label_format y="{{.x}}" [1m]))`, `__error__ __error_details__ level x`},
		{`sum by (level) (count_over_time({a="b"} | json | label_format y="{{ range . }}{{ end }}" [1m]))`, `all`},
		{`sum by (level) (label_replace(count_over_time({a="b"} | json [1m]), "d", "$1", "x", "(.*)"))`, `all`},
		{`sum by (level) (count_over_time({a="b"} | json [1m]) / count_over_time({a="b"} | json [1m]))`, `all`},
		{`sum by (level) (absent_over_time({a="b"} | json [1m]))`, `all`},
	} {
		expr, err := logql.Parse(c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		x := expr.(logql.SampleExpr)
		hints := queryHints(x)
		ras := rangeAggs(x, nil)
		got := "all"
		if o := hints[ras[0]].observed; o != nil {
			got = strings.Join(o.Names(), " ")
		}
		if got != c.want {
			t.Errorf("%s: observed %q, want %q", c.q, got, c.want)
		}
	}
}

// TestMaxMemory: a query whose series would hold more than the budget
// stops with the limit named; the same question summed by one label
// holds few series, because its parser sets only that label.
func TestMaxMemory(t *testing.T) {
	sn := diffSnapshot(t)
	at := time.Date(2026, 1, 15, 8, 0, 20, 0, time.UTC).UnixNano()
	e := &Engine{workers: 2, limits: Limits{MaxMemory: 100 << 10}}
	p := Params{Tenant: store.DefaultTenant, Start: at - int64(20*time.Second), End: at, Step: 5 * time.Second}
	p.Query = `count_over_time({service=~"api|web"} | json | __error__="" [10s])`
	_, err := e.Exec(context.Background(), sn, p)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "max_query_memory") {
		t.Fatalf("every series of every trace: %v, want the limit max_query_memory", err)
	}
	p.Query = `sum by (level) (count_over_time({service=~"api|web"} | json | __error__="" [10s]))`
	res, err := e.Exec(context.Background(), sn, p)
	if err != nil {
		t.Fatalf("summed by level: %v", err)
	}
	if len(res.Matrix) == 0 {
		t.Fatal("summed by level: no series")
	}
}

// TestMergedEarly: a sum of a function linear in its rows, a max of
// max_over_time and a min of min_over_time group the rows as they are
// read; any other parent, or a range grouping, does not.
func TestMergedEarly(t *testing.T) {
	for _, c := range []struct{ q, want string }{
		{`sum by (level) (count_over_time({a="b"} | json [1m]))`, `level`},
		{`sum (rate({a="b"} | line_format "x" [1m]))`, ``},
		{`topk(3, sum by (a, b) (bytes_over_time({a="b"}[1m])))`, `a,b`},
		{`max by (level) (count_over_time({a="b"} | json [1m]))`, `none`},
		{`sum by (level) (avg_over_time({a="b"} | json | unwrap x [1m]) by (level))`, `none`},
		{`sum without (level) (count_over_time({a="b"}[1m]))`, `none`},
		{`count(count by (host) (count_over_time({a="b"} | json [1m])))`, `host`},
		{`count by (h) (count by (h, p) (rate({a="b"}[1m])))`, `h,p`},
		{`count by (host) (count_over_time({a="b"} | json [1m]))`, `none`},
		{`count by (x) (count by (host) (count_over_time({a="b"}[1m])))`, `none`},
		{`count(count by (host) (max_over_time({a="b"} | json | unwrap x [1m])))`, `none`},
		{`max by (host) (max_over_time({a="b"} | json | unwrap x [1m]))`, `max host`},
		{`min (min_over_time({a="b"} | json | unwrap x [1m]))`, `min `},
		{`topk(2, max by (h) (max_over_time({a="b"} | json | unwrap x [1m])))`, `max h`},
		{`max by (h) (min_over_time({a="b"} | json | unwrap x [1m]))`, `none`},
		{`min by (h) (sum_over_time({a="b"} | json | unwrap x [1m]))`, `none`},
		{`max without (h) (max_over_time({a="b"} | json | unwrap x [1m]))`, `none`},
	} {
		expr, err := logql.Parse(c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		x := expr.(logql.SampleExpr)
		got := "none"
		if h := queryHints(x)[rangeAggs(x, nil)[0]]; h.mergedBy != nil {
			got = strings.Join(h.mergedBy.Labels, ",")
			if h.mergeOp != "sum" {
				got = h.mergeOp + " " + got
			}
		}
		if got != c.want {
			t.Errorf("%s: grouped early by %q, want %q", c.q, got, c.want)
		}
	}
}

// TestLabelsOfKey: a series' labels are read back from its key, or not
// at all when a value holds the key's separator.
func TestLabelsOfKey(t *testing.T) {
	for _, ls := range []record.Labels{
		{},
		{{Name: "a", Value: ""}},
		{{Name: "a", Value: "1"}, {Name: "b", Value: "x y"}, {Name: "trace_id", Value: "é"}},
	} {
		key := string(stage.AppendLabelsKey(nil, ls))
		got, ok := labelsOfKey(key, len(ls))
		if !ok || got.String() != ls.String() {
			t.Errorf("%s: read back %s, %v", ls, got, ok)
		}
	}
	bad := record.Labels{{Name: "a", Value: "\xff"}}
	if _, ok := labelsOfKey(string(stage.AppendLabelsKey(nil, bad)), 1); ok {
		t.Error("a value with 0xff read back")
	}
}
