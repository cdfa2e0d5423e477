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

func TestReplyAppendJSON(t *testing.T) {
	cases := []Reply{
		{},
		{Accepted: 1},
		{Accepted: 2, Rejected: 3, TimeFallbacks: 1},
		{Accepted: 7, Dropped: 4},
		{Accepted: 1 << 40, Rejected: -1, TimeFallbacks: 9, Dropped: 12},
		{Rejected: 2, Errors: []string{"1:1: bad <json>", `2:3: "quoted"`}},
	}
	for _, r := range cases {
		t.Run(string(r.JSON()), func(t *testing.T) {
			if got, want := string(r.AppendJSON([]byte("x"))), "x"+string(r.JSON()); got != want {
				t.Errorf("AppendJSON %q, want %q", got, want)
			}
		})
	}
}

func TestReplyAppendJSONAllocs(t *testing.T) {
	r := Reply{Accepted: 1}
	buf := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() { buf = r.AppendJSON(buf[:0]) }); n != 0 {
		t.Errorf("AppendJSON of a reply without errors: %v allocs, want 0", n)
	}
}
