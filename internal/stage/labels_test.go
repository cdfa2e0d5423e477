package stage

import (
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// TestLabelsMeta checks what a caller that feeds structured metadata
// (query from stored rows, rules from a batch) relies on: escaped values
// are decoded, a name of the stream gets _extracted, an empty value is no
// label, and the categories tell the three kinds apart.
func TestLabelsMeta(t *testing.T) {
	lb := &Labels{}
	lb.Reset(lbls("app", "api", "env", "prod"))
	lb.SetMeta("trace_id", []byte(`a\"b`), record.Escaped)
	lb.SetMeta("env", []byte("meta-env"), 0)
	lb.SetMeta("empty", nil, 0)
	if got, want := lb.Copy().String(), `{app="api", env="prod", env_extracted="meta-env", trace_id="a\"b"}`; got != want {
		t.Errorf("labels = %s, want %s", got, want)
	}
	if !lb.IsMeta("trace_id") || !lb.IsMeta("env_extracted") || lb.IsMeta("env") {
		t.Error("IsMeta does not name the metadata")
	}
	p, err := Compile([]logql.Stage{&logql.LogfmtParser{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Process(0, []byte("trace_id=x level=info env=dev"), lb); !ok {
		t.Fatal("row dropped")
	}
	stream, meta, parsed := lb.Categories()
	for _, c := range []struct {
		name string
		got  record.Labels
		want string
	}{
		{"stream", stream, `{app="api", env="prod"}`},
		{"meta", meta, `{env_extracted="meta-env", trace_id="a\"b"}`},
		// A parsed name that is metadata's gets _extracted too; the first
		// value of a name wins (env_extracted is the metadata's).
		{"parsed", parsed, `{level="info", trace_id_extracted="x"}`},
	} {
		if c.got.String() != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}

	// The next row starts clean: no metadata, no decoded values.
	lb.Reset(lbls("app", "web"))
	if got := lb.Copy().String(); got != `{app="web"}` || lb.IsMeta("trace_id") {
		t.Errorf("after Reset: %s", got)
	}
}

// TestLabelsDeleteFunc: a deleted label is no metadata any more, so a
// later stage that sets the name sets a plain label.
func TestLabelsDeleteFunc(t *testing.T) {
	lb := &Labels{}
	lb.Reset(lbls("app", "api"))
	lb.SetMeta("user", []byte("ann"), 0)
	lb.SetMeta("trace_id", []byte("abc"), 0)
	lb.DeleteFunc(func(l record.Label) bool { return l.Name == "user" })
	if got := lb.Copy().String(); got != `{app="api", trace_id="abc"}` {
		t.Errorf("labels = %s", got)
	}
	if lb.IsMeta("user") || !lb.IsMeta("trace_id") {
		t.Error("metadata not updated by DeleteFunc")
	}
}

// TestLabelsErrors: ReplaceError replaces an earlier error and its
// details, the label filters' setError keeps the first.
func TestLabelsErrors(t *testing.T) {
	lb := &Labels{}
	lb.Reset(nil)
	lb.setError(errLabelFilt, "first")
	lb.setError(errJSON, "second")
	if lb.Get(ErrorLabel) != errLabelFilt || lb.Get(ErrorDetailsLabel) != "first" {
		t.Errorf("setError replaced the first error: %s", lb.Copy())
	}
	lb.ReplaceError("SampleExtractionErr", "")
	if !lb.HasError() || lb.Get(ErrorLabel) != "SampleExtractionErr" {
		t.Errorf("ReplaceError kept the old error: %s", lb.Copy())
	}
	if _, ok := lb.lookup(ErrorDetailsLabel); ok {
		t.Errorf("ReplaceError without details kept the old ones: %s", lb.Copy())
	}
}
