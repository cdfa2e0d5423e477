package elastic

import (
	"encoding/json"
	"testing"
)

func TestFilterPath(t *testing.T) {
	const bulkOK = `{"took":3,"errors":false,"items":[{"index":{"_index":"a","_id":"1","status":201,"result":"created"}},{"create":{"_index":"b","_id":"2","status":201}}]}`
	const bulkErr = `{"took":3,"errors":true,"items":[{"index":{"_index":"a","_id":"1","status":201}},{"create":{"_index":"b","_id":"2","status":400,"error":{"type":"x","reason":"bad <doc>"}}}]}`
	for _, c := range []struct {
		name, filter, doc, want string
	}{
		// What Logstash sends: the reply shrinks to what it reads.
		{"logstash ok", "errors,items.*.error,items.*.status", bulkOK,
			`{"errors":false,"items":[{"index":{"status":201}},{"create":{"status":201}}]}`},
		{"logstash errors", "errors,items.*.error,items.*.status", bulkErr,
			`{"errors":true,"items":[{"index":{"status":201}},{"create":{"status":400,"error":{"type":"x","reason":"bad \u003cdoc\u003e"}}}]}`},
		{"errors only, none", "errors,items.*.error", bulkOK, `{"errors":false}`},
		{"index names", "items.*._index", bulkOK, `{"items":[{"index":{"_index":"a"}},{"create":{"_index":"b"}}]}`},
		{"nothing matched", "nothing", bulkOK, `{}`},
		{"glob in a name", "items.*.res*", bulkOK, `{"items":[{"index":{"result":"created"}}]}`},
		{"double star", "**.status", bulkOK, `{"items":[{"index":{"status":201}},{"create":{"status":201}}]}`},
		{"double star at the end", "items.**", `{"items":[1,2],"x":1}`, `{"items":[1,2]}`},
		{"exclude", "-items,-took", bulkOK, `{"errors":false}`},
		{"exclude deep", "-**._id", bulkOK,
			`{"took":3,"errors":false,"items":[{"index":{"_index":"a","status":201,"result":"created"}},{"create":{"_index":"b","status":201}}]}`},
		{"exclude then include", "items.*.*,-items.*._id,-items.*.result", bulkOK,
			`{"items":[{"index":{"_index":"a","status":201}},{"create":{"_index":"b","status":201}}]}`},
		{"whole object", "version", `{"name":"n","version":{"number":"8.11.0","x":[1]}}`, `{"version":{"number":"8.11.0","x":[1]}}`},
		{"key order kept", "b,a", `{"a":1,"b":2.50,"c":null}`, `{"a":1,"b":2.50}`},
		{"top-level array", "name", `[{"name":"x","v":1},{"v":2}]`, `[{"name":"x"}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseFilterPath(c.filter)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Apply([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestFilterPathErrors(t *testing.T) {
	if f, err := ParseFilterPath(" , "); f != nil || err != nil {
		t.Errorf("empty: %v %v, want nil", f, err)
	}
	for _, bad := range []string{"a..b", "a.[", "-"} {
		if _, err := ParseFilterPath(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	f, _ := ParseFilterPath("a")
	if _, err := f.Apply([]byte(`{"a":`)); err == nil {
		t.Error("truncated document: no error")
	}
}

// FuzzFilterPath: any filter on any document never panics, and a valid
// document filters to valid JSON.
func FuzzFilterPath(f *testing.F) {
	f.Add("errors,items.*.error,items.*.status", `{"took":3,"errors":true,"items":[{"index":{"status":201}},{"create":{"status":400,"error":{"type":"x"}}}]}`)
	f.Add("-**._id,a.**", `{"a":[{"_id":1,"b":{}}],"c":"d"}`)
	f.Add("*.name", `[{"name":"x"},1,"s",null]`)
	f.Fuzz(func(t *testing.T, filter, doc string) {
		fp, err := ParseFilterPath(filter)
		if err != nil || fp == nil {
			return
		}
		out, err := fp.Apply([]byte(doc))
		if err != nil {
			return
		}
		if !json.Valid([]byte(doc)) {
			return // Apply reads only the first value; the rest is not its business
		}
		if !json.Valid(out) {
			t.Fatalf("filter %q on %s gave invalid JSON %s", filter, doc, out)
		}
	})
}
