package elastic

import "testing"

func TestDocReplies(t *testing.T) {
	if got, want := string(DocError(`unexpected "x"`)), `{"error":{"type":"document_parsing_exception","reason":"unexpected \"x\""},"status":400}`; got != want {
		t.Errorf("DocError = %s, want %s", got, want)
	}
	if got, want := string(DocCreated("logs", "a1")), `{"_index":"logs","_id":"a1","_version":1,"result":"created","_shards":{"total":1,"successful":1,"failed":0}}`; got != want {
		t.Errorf("DocCreated = %s, want %s", got, want)
	}
}

// TestItemReplies: the per-item statuses and errors of a bulk reply, as
// Elasticsearch writes them.
func TestItemReplies(t *testing.T) {
	items := []Item{{Op: "create", Index: "logs", ID: "a"}, {Index: "logs", ID: "b"}, {Index: "logs", ID: "c"}}
	items[0].Created()
	items[1].Unreadable(7, `unexpected "}"`)
	items[2].StreamLimited(5000)
	got := string(Reply(0, items))
	want := `{"took":0,"errors":true,"items":[` +
		`{"create":{"_index":"logs","_id":"a","status":201,"result":"created","_version":1,"_shards":{"total":1,"successful":1,"failed":0}}},` +
		`{"index":{"_index":"logs","_id":"b","status":400,"error":{"type":"document_parsing_exception","reason":"column 7: unexpected \"}\""}}},` +
		`{"index":{"_index":"logs","_id":"c","status":429,"error":{"type":"es_rejected_execution_exception","reason":"the tenant is at its limit of 5000 active streams (max_streams_per_tenant): this document's stream is new"}}}]}`
	if got != want {
		t.Errorf("reply\n%s\nwant\n%s", got, want)
	}
	// Created clears an earlier failure.
	items[1].Created()
	if it := items[1]; it.Status != 201 || it.Type != "" || it.Err != "" {
		t.Errorf("after Created: %+v", it)
	}
}
