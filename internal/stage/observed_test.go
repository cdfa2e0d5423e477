package stage

import (
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
)

// TestObserving: parsers compiled with the labels a query observes set
// those, the first value winning and stream labels suffixed as without
// hints, and errors as before; the names come from the pipeline's
// filters, drop and keep, and formats observe every label.
func TestObserving(t *testing.T) {
	stages := func(q string) []logql.Stage {
		expr, err := logql.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		return expr.(*logql.LogExpr).Pipeline
	}
	for _, c := range []struct{ q, line, want string }{
		{`{app="api"} | json`, `{"level":"error","app":"x","trace":"abc","http":{"status":500}}`, `{app="api", app_extracted="x", http_status="500", level="error"}`},
		{`{app="api"} | json | logfmt`, `{"level":"error","app":"x","trace":"abc"}`, `{app="api", app_extracted="x", level="error"}`},
		{`{app="api"} | logfmt`, `level=info level=error trace=abc http_status=404`, `{app="api", http_status="404", level="info"}`},
		{`{app="api"} | json`, `{"level":"error","trace":`, `{__error__="JSONParserErr", __error_details__="syntax error at offset 25: unexpected end of input, expected a value", app="api", level="error"}`},
		{`{app="api"} | unpack`, `{"level":"warn","_entry":"the line","trace":"abc"}`, `{app="api", level="warn"}`},
	} {
		o := ObservedBy(stages(c.q), []string{"level", "app_extracted", "http_status"})
		p, err := CompileObserving(stages(c.q), o)
		if err != nil {
			t.Fatal(err)
		}
		var lb Labels
		lb.Reset(lbls("app", "api"))
		p.Process(0, []byte(c.line), &lb)
		if got := lb.Copy().String(); got != c.want {
			t.Errorf("%s on %s:\n got %s\nwant %s", c.q, c.line, got, c.want)
		}
	}
	if o := ObservedBy(stages(`{a="b"} | json | line_format "{{.x}}"`), nil); o != nil {
		t.Errorf("line_format: observed %v, want every label", o.Names())
	}
	o := ObservedBy(stages(`{a="b"} | json | x > 1 or y=~"z" | drop d | keep k="v"`), []string{"g"})
	if got, want := o.Names(), []string{"__error__", "__error_details__", "d", "g", "k", "x", "y"}; !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}
