package sink

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
)

// jsonStringCases are raw values as a JSON or logfmt line holds them
// (with Escaped), and whether they may be copied into a JSON string as
// they are.
var jsonStringCases = []struct {
	raw  string
	copy bool
}{
	{``, true},
	{`plain ascii, eight at a time and more`, true},
	{`Traceback (most recent call last):\n  File \"app.py\", line 739\n`, true},
	{`a\/b\\c\bd\fe\rf\tg`, true},
	{`héllo wörld ✓ 𝄞`, true},
	{`\u00e9`, false},        // decoded: copying keeps it escaped, but \u is never trusted
	{`\ud800`, false},        // a lone surrogate: U+FFFD when decoded
	{`\u0000`, false},        // jsonb refuses it
	{`a\qb`, false},          // logfmt's lenient escape: the backslash is a literal
	{`ends in \`, false},     // a lone backslash at the end
	{`say "hi"`, false},      // an unescaped quote
	{"tab\there", false},     // a raw control byte
	{"12345678\x01", false},  // one after a plain word
	{"bad \xff utf8", false}, // invalid UTF-8
	{"bad utf8 at the end \xe2\x9c", false},
	{"\x7f delete is fine in JSON", true},
}

// TestJSONStringContent: jsonStringContent says yes exactly for the
// values that, between quotes, are a JSON string meaning what
// AppendUnescaped decodes; and appendFieldsJSON renders both kinds of
// value as that text.
func TestJSONStringContent(t *testing.T) {
	for _, c := range jsonStringCases {
		t.Run(c.raw, func(t *testing.T) {
			if got := jsonStringContent([]byte(c.raw)); got != c.copy {
				t.Fatalf("jsonStringContent(%q) = %v, want %v", c.raw, got, c.copy)
			}
			checkFieldJSON(t, []byte(c.raw))
		})
	}
}

// checkFieldJSON renders raw as an Escaped string field and checks that
// the JSON decodes to the value's text (invalid UTF-8 as U+FFFD), and that
// it is raw as it is where jsonStringContent allows it, the text escaped
// again where not.
func checkFieldJSON(t *testing.T, raw []byte) {
	t.Helper()
	var keys jsonKeys
	keys.buf = append(keys.buf, `"k":`...)
	keys.ends = append(keys.ends, len(keys.buf))
	var scratch []byte
	out := appendFieldsJSON(nil, &keys, []rows.Field{{Name: 0, Kind: record.String, Flags: record.Escaped, Value: raw}}, &scratch)
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("raw %q rendered %s: not JSON: %v", raw, out, err)
	}
	want := string(record.AppendUnescaped(nil, raw, record.Escaped|record.BadUTF8))
	if got["k"] != want {
		t.Fatalf("raw %q rendered %s: decodes to %q, want %q", raw, out, got["k"], want)
	}
	text := `{"k":"` + string(record.AppendJSONEscaped(nil, want)) + `"}`
	if jsonStringContent(raw) {
		text = `{"k":"` + string(raw) + `"}`
	}
	if string(out) != text {
		t.Fatalf("raw %q rendered %s, want %s", raw, out, text)
	}
}

// FuzzJSONStringContent: whatever the raw value, the fields JSON decodes
// to its text, copied or re-escaped.
func FuzzJSONStringContent(f *testing.F) {
	for _, c := range jsonStringCases {
		f.Add([]byte(c.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFieldJSON(t, raw)
	})
}

// TestAppendTime: AppendTime writes what time's RFC3339Nano formatting of
// the UTC time writes, for the ends of int64, whole seconds, every count
// of trailing zeros, and a spread of values.
func TestAppendTime(t *testing.T) {
	ns := []int64{0, 1, -1, 999_999_999, 1_000_000_000, -1_000_000_000, 1768464000000000000, 1768464000123000000,
		1768464000000870000, 1768464000100000000, math.MaxInt64, math.MinInt64, 951782400_000000000 /* 2000-02-29 */}
	for p := int64(1); p <= 1e9; p *= 10 {
		ns = append(ns, 1768464000000000000+p, 1768464000000000000+7*p, -1768464000000000000+3*p)
	}
	for i := range 10000 {
		ns = append(ns, int64(uint64(i)*0x9e3779b97f4a7c15))
	}
	for _, v := range ns {
		want := time.Unix(0, v).UTC().Format(time.RFC3339Nano)
		if got := string(AppendTime([]byte("x"), v)); got != "x"+want {
			t.Fatalf("%d: %q, want %q", v, got, "x"+want)
		}
	}
}
