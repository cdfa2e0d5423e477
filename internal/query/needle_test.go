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

// FuzzNeedleDecide: a JSON string's text that needleScan.decide says
// holds the text holds it unescaped, and one it says holds it not holds
// it not; one that needleScan.in says holds neither the text nor `\u`
// holds it not either. The texts are
// of well-formed strings: a Go string as encoding/json writes it (with
// \u for controls and <, > and &), or the fuzzer's bytes when they are
// one.
func FuzzNeedleDecide(f *testing.F) {
	f.Add(`payment declined`, "declined", false)
	f.Add(`caf\u00e9 \u0064eclined`, "00e9", true)
	f.Add(`{\"msg\":\"\\declined\"}`, "declined", true)
	f.Add(`x\ndeclined`, "ndeclined", true)
	f.Add(`\\\declined`, "declined", true)
	f.Add(`a<b & declined`, "b ", false)
	f.Add(`na\u00efve \u0064eclined`, "declined", true)
	f.Add(`na\u00efve declined`, "declined", true)
	f.Add(`\u00e9declined \u003c`, "declined", true)
	f.Add(`\u0064e`, "de", true)
	f.Add(`\ud83d\ude80 caf\u00e9`, "é", true)
	f.Add(`\\u0064eclined`, "u0064", true)
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
		switch ns.decide(v) {
		case needleHit:
			if !holds {
				t.Fatalf("%q in %q: decide says yes, but %q holds it not", text, v, u)
			}
		case needleMiss:
			if holds {
				t.Fatalf("%q in %q: decide says no, but %q holds it", text, v, u)
			}
		}
		if !ns.in(v) && holds {
			t.Fatalf("%q in %q: in says no, but %q holds it", text, v, u)
		}
	})
}

// FuzzNeedleDecideAll: needleScan.decideAll over a column's bytes gives
// each value decide's verdict of it alone (values cut from the fuzzer's
// bytes at each '|', a pair or `\u` across two values included).
func FuzzNeedleDecideAll(f *testing.F) {
	f.Add(`payment de|clined|declined||\u0064ec|x\|u00e9 declined`, "declined")
	f.Add(`e|ee||\e|e\u`, "e")
	f.Add(`rr|or|error|\u0072ror`, "error")
	f.Fuzz(func(t *testing.T, s, text string) {
		if text == "" {
			return
		}
		ns := newNeedleScan(text)
		vals := strings.Split(s, "|")
		var data []byte
		var ends []uint32
		for _, v := range vals {
			data = append(data, v...)
			ends = append(ends, uint32(len(data)))
		}
		got := ns.decideAll(data, ends, nil)
		if len(got) != len(vals) {
			t.Fatalf("%d verdicts for %d values", len(got), len(vals))
		}
		for i, v := range vals {
			if want := ns.decide([]byte(v)); got[i] != want {
				t.Fatalf("%q in value %d %q of %q: %d, want %d", text, i, v, s, got[i], want)
			}
		}
	})
}
