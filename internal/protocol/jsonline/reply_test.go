package jsonline

import "testing"

func TestReplyJSON(t *testing.T) {
	var r Reply
	if got, want := string(r.JSON()), `{"accepted":0,"rejected":0}`+"\n"; got != want {
		t.Errorf("empty reply %q, want %q", got, want)
	}
	r = Reply{Accepted: 2, Rejected: 3, TimeFallbacks: 1}
	for _, e := range []string{"1:1: bad <json>", "2:4: bad", "3:1: bad"} {
		r.AddError(e, 2)
	}
	want := `{"accepted":2,"rejected":3,"errors":["1:1: bad \u003cjson\u003e","2:4: bad"],"time_fallbacks":1}` + "\n"
	if got := string(r.JSON()); got != want {
		t.Errorf("reply %q, want %q", got, want)
	}
}
