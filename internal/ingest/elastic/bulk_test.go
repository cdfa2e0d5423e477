package elastic

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	body := `{"index":{"_index":"logs"}}
{"msg":"one"}

{"create":{}}
{"msg":"two"}
{"delete":{"_index":"x","_id":"1"}}
{"update":{"_id":"2"}}
{"doc":{"a":1}}
not an action
{"swallowed":true}
{"index":{"_index":"last"}}`
	docs, items := Split([]byte(body), "dflt")
	if got, want := string(docs), "{\"msg\":\"one\"}\n{\"msg\":\"two\"}\n"; got != want {
		t.Errorf("docs %q, want %q", got, want)
	}
	want := []Item{
		{Op: "index", Index: "logs", Doc: 1},
		{Op: "create", Index: "dflt", Doc: 2},
		{Op: "delete", Index: "x", ID: "1", Status: 400},
		{Op: "update", Index: "dflt", ID: "2", Status: 400},
		{Index: "dflt", Status: 400},
		{Op: "index", Index: "last", Status: 400},
	}
	if len(items) != len(want) {
		t.Fatalf("%d items, want %d: %+v", len(items), len(want), items)
	}
	for i, w := range want {
		g := items[i]
		if g.Op != w.Op || g.Index != w.Index || g.ID != w.ID || g.Doc != w.Doc || g.Status != w.Status {
			t.Errorf("item %d: %+v, want %+v", i, g, w)
		}
	}
	var reply struct {
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			Status int `json:"status"`
			Error  *struct {
				Type, Reason string
			} `json:"error"`
		} `json:"items"`
	}
	for i := range items {
		if items[i].Status == 0 {
			items[i].Status = 201
		}
	}
	if err := json.Unmarshal(Reply(3*time.Millisecond, items), &reply); err != nil {
		t.Fatal(err)
	}
	if !reply.Errors || len(reply.Items) != len(items) || reply.Items[0]["index"].Status != 201 ||
		reply.Items[2]["delete"].Error == nil || !strings.Contains(reply.Items[2]["delete"].Error.Reason, "retention") {
		t.Errorf("reply %+v", reply)
	}
}

// FuzzSplit: any body splits into items whose documents are in docs.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("{\"index\":{}}\n{\"a\":1}\n{\"delete\":{}}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		docs, items := Split(body, "i")
		lines := 0
		for _, c := range docs {
			if c == '\n' {
				lines++
			}
		}
		for _, it := range items {
			if it.Doc < 0 || it.Doc > lines {
				t.Fatalf("item %+v beyond %d documents", it, lines)
			}
		}
	})
}
