package query

import (
	"bytes"
	"testing"
)

// FuzzNeedleScan: needleScan.in says what bytes.Contains says of the
// text and of `\u`.
func FuzzNeedleScan(f *testing.F) {
	for _, s := range []string{
		`{\"ts\":1768464000001,\"level\":\"info\",\"msg\":\"payment declined\",\"error\":{}}`,
		`{\"level\":\"\u0065rror\"}`, `\\u`, `xxxxxxx\u`, `errorerror`, `err`, "", `\`, `eeeeeeeeeeeeeeeeeerror`,
	} {
		f.Add(s, "error")
		f.Add(s, "e")
		f.Add(s, "or")
	}
	f.Fuzz(func(t *testing.T, v, text string) {
		if text == "" {
			return
		}
		ns := newNeedleScan(text)
		want := bytes.Contains([]byte(v), []byte(text)) || bytes.Contains([]byte(v), []byte(`\u`))
		if got := ns.in([]byte(v)); got != want {
			t.Fatalf("%q in %q: %v, want %v", text, v, got, want)
		}
	})
}

// BenchmarkNeedleScan: a k8s log field holding escaped JSON without the
// text, searched by needleScan and by bytes.Contains.
func BenchmarkNeedleScan(b *testing.B) {
	v := []byte(`{\"ts\":1768464000001,\"level\":\"info\",\"msg\":\"payment declined\",\"service\":\"auth\",\"host\":\"node-37\",\"trace_id\":\"51431193e6c3f3391a2b8f1ff1fd42a2\",\"http\":{\"method\":\"GET\",\"path\":\"/metrics\",\"status\":502,\"latency_ms\":0.416},\"tags\":[\"us-east-2\"]}`)
	b.Run("scan", func(b *testing.B) {
		ns := newNeedleScan("error")
		b.SetBytes(int64(len(v)))
		for b.Loop() {
			if ns.in(v) {
				b.Fatal("found")
			}
		}
	})
	b.Run("contains", func(b *testing.B) {
		b.SetBytes(int64(len(v)))
		for b.Loop() {
			if bytes.Contains(v, []byte("error")) || bytes.Contains(v, []byte(`\u`)) {
				b.Fatal("found")
			}
		}
	})
}
