package elastic

import (
	"encoding/json"
	"errors"
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
{"index":{"_index":"last"}}
{"msg":"three"}`
	docs, items, err := Split([]byte(body), "dflt")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(docs), "{\"msg\":\"one\"}\n{\"msg\":\"two\"}\n{\"msg\":\"three\"}\n"; got != want {
		t.Errorf("docs %q, want %q", got, want)
	}
	want := []Item{
		{Op: "index", Index: "logs", Doc: 1},
		{Op: "create", Index: "dflt", Doc: 2},
		{Op: "delete", Index: "x", ID: "1", Status: 400},
		{Op: "update", Index: "dflt", ID: "2", Status: 400},
		{Op: "index", Index: "last", Doc: 3},
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

// TestSplitRefusesWhole: a malformed action refuses the whole body, as
// Elasticsearch does, naming the line.
func TestSplitRefusesWhole(t *testing.T) {
	for _, c := range []struct {
		name, body string
		line       int
		reason     string
	}{
		{"not json", "{\"index\":{}}\n{\"a\":1}\nnot an action\n{\"b\":2}\n", 3, "Malformed action/metadata line [3]"},
		{"two actions", "{\"index\":{},\"create\":{}}\n{\"a\":1}\n", 1, "Malformed action/metadata line [1]"},
		{"not an object", "[1]\n{\"a\":1}\n", 1, "expected an object"},
		{"unknown action", "\n{\"upsert\":{}}\n{\"a\":1}\n", 2, "but found [upsert]"},
		{"no document", "{\"index\":{}}\n{\"a\":1}\n{\"create\":{}}\n\n", 3, "create without a document line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs, items, err := Split([]byte(c.body), "i")
			var re *RequestError
			if !errors.As(err, &re) || re.Line != c.line || !strings.Contains(re.Reason, c.reason) {
				t.Fatalf("err %v, want a RequestError at line %d with %q", err, c.line, c.reason)
			}
			if docs != nil || items != nil {
				t.Errorf("docs %q, items %v: want none", docs, items)
			}
			var reply struct {
				Error struct {
					Type, Reason string
				}
				Status int
			}
			if err := json.Unmarshal(ErrorReply("illegal_argument_exception", re.Reason, 400), &reply); err != nil ||
				reply.Status != 400 || reply.Error.Reason != re.Reason {
				t.Errorf("reply %+v, %v", reply, err)
			}
		})
	}
}

// TestSplitValidation: an action with no index anywhere, or a body with
// no action, fails the whole request as Elasticsearch's validation does,
// every missing index numbered.
func TestSplitValidation(t *testing.T) {
	for _, c := range []struct {
		name, body, index, want string
	}{
		{"no index", "{\"index\":{}}\n{\"a\":1}\n{\"index\":{\"_index\":\"x\"}}\n{\"b\":2}\n{\"delete\":{\"_id\":\"1\"}}\n", "",
			"Validation Failed: 1: index is missing;2: index is missing;"},
		{"empty body", "\n\n", "i", "Validation Failed: 1: no requests added;"},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs, items, err := Split([]byte(c.body), c.index)
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Reason != c.want {
				t.Fatalf("err %v, want a ValidationError %q", err, c.want)
			}
			if docs != nil || items != nil {
				t.Errorf("docs %q, items %v: want none", docs, items)
			}
		})
	}
	// The URL's index serves actions without one.
	if _, items, err := Split([]byte("{\"index\":{}}\n{\"a\":1}\n"), "url"); err != nil || items[0].Index != "url" {
		t.Errorf("with the URL's index: %v %+v", err, items)
	}
}

// FuzzSplit: any body splits into items whose documents are in docs.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("{\"index\":{}}\n{\"a\":1}\n{\"delete\":{}}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		docs, items, err := Split(body, "i")
		if err != nil {
			var re *RequestError
			var ve *ValidationError
			if !errors.As(err, &ve) && (!errors.As(err, &re) || re.Line < 1) {
				t.Fatalf("error %v is neither a ValidationError nor a RequestError with a line", err)
			}
			return
		}
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
