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
