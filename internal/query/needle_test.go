package query

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/stage"
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

// FuzzNeedleUnescaped: a JSON string's text that needleScan.unescaped
// says holds the text holds it unescaped; one that needleScan.in says
// holds neither the text nor `\u` holds it not, unescaped. The texts are
// of well-formed strings: a Go string as encoding/json writes it (with
// \u for controls and <, > and &), or the fuzzer's bytes when they are
// one.
func FuzzNeedleUnescaped(f *testing.F) {
	f.Add(`payment declined`, "declined", false)
	f.Add(`caf\u00e9 \u0064eclined`, "00e9", true)
	f.Add(`{\"msg\":\"\\declined\"}`, "declined", true)
	f.Add(`x\ndeclined`, "ndeclined", true)
	f.Add(`\\\declined`, "declined", true)
	f.Add(`a<b & declined`, "b ", false)
	f.Fuzz(func(t *testing.T, s, text string, raw bool) {
		if text == "" || strings.ContainsFunc(text, func(c rune) bool { return c == '"' || c == '\\' || c == '/' || c < 0x20 }) {
			return // LineNeedle takes no such text
		}
		var v []byte
		if raw {
			v = []byte(s)
		} else {
			q, err := json.Marshal(s)
			if err != nil {
				return
			}
			v = q[1 : len(q)-1]
		}
		if !json.Valid([]byte(`"` + string(v) + `"`)) {
			return // not a string's text
		}
		var sc stage.JSONScanner
		u, ok := sc.UnquoteAppend(nil, v)
		if !ok {
			t.Fatalf("%q: valid JSON string text the stage does not unescape", v)
		}
		ns := newNeedleScan(text)
		holds := strings.Contains(string(u), text)
		if ns.unescaped(v) && !holds {
			t.Fatalf("%q in %q: unescaped says yes, but %q holds it not", text, v, u)
		}
		if !ns.in(v) && holds {
			t.Fatalf("%q in %q: in says no, but %q holds it", text, v, u)
		}
	})
}
