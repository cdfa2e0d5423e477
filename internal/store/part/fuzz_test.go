package part_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// FuzzContains: for any lines and clauses of literals, a read keeping
// the rows whose line holds every clause (one of its literals) keeps
// exactly those, or with a folding literal that a non-ASCII rune may
// match, at least those and no ASCII line more; read without lines,
// counted or for the newest few, it keeps the same (checkClauses).
//
// lits holds the clauses a line each, their literals split by "|";
// with fold, every other literal (the first, the third...) folds case,
// every other of those ASCII case alone (Literal.ASCII); one written
// <_>text<_> is Inner.
func FuzzContains(f *testing.F) {
	f.Add(`{"ts":"2026-01-15T08:00:00Z","msg":"payment declined","n":12}
{"ts":"2026-01-15T08:00:01Z","msg":"ok","n":3}`, "payment", false)
	f.Add(`{"ts":1768464000000,"a":"x","b":"y"}
{"ts":1768464000001,"a":"xx","b":"yy"}`, `x","b`, false)
	f.Add("ts=2026-01-15T08:00:00Z level=INFO msg=\"a b\"\nts=2026-01-15T08:00:02Z level=warn msg=c", "Level=Info", true)
	f.Add("2026-01-15 08:00:00.000 WARN free text \u212a\n2026-01-15 08:00:01.000 INFO k", "k", true)
	f.Add(`{"ts":"2026-01-15T08:00:00Z","level":"error","msg":"upstream timeout","n":12}
{"ts":"2026-01-15T08:00:01Z","level":"info","msg":"payment declined","n":3}
{"ts":"2026-01-15T08:00:02Z","level":"warn","msg":"ok","n":7}`, "upstream timeout|payment declined", false)
	f.Add(`{"ts":"2026-01-15T08:00:00Z","level":"error","msg":"upstream timeout","n":12}
{"ts":"2026-01-15T08:00:01Z","level":"info","msg":"payment declined","n":3}`, "ERROR|warn\ntimeout|\"n\":3", true)
	f.Add(`{"ts":"2026-01-15T08:00:00Z","msg":"said \"status\":503","status":503}
{"ts":"2026-01-15T08:00:01Z","msg":"ok \"","status":200}`, `"status":503|\"status\":5
"msg":"ok|\"","status`, false)
	// One column's values in two spellings of JSON (windows told apart
	// by their edges): the same literals' bits differ by spelling.
	f.Add(`{"a":"x","status":503,"b":1}
{"a":"x","status":200,"b":1}
{"a": "y", "status": 404, "b": 2}
{"a": "y", "status": 503, "b": 2}
{"a": "y", "status": 404, "b": 3}`, `"status":50|"status": 404`, false)
	f.Add(`{"a":"x","status":503,"b":1}
{"a": "y", "status": 503, "b": 2}
{"a":"x","status":5031,"b":1}
{"a": "y", "status": 404, "b": 3}`, `"status":503|"status": 503`, false)
	f.Add("ts=2026-01-15T08:00:00Z level=info msg=a took=5ms\nts=2026-01-15T08:00:01Z level=debug msg=b took=17ms", "o=5|fo\nms|g=d", false)
	// Enough rows for a dictionary-and-rest column (encDictRest): a few
	// messages, and the rest (45%) each different.
	var rest strings.Builder
	for i := range 600 {
		msg := []string{"ok", "payment declined", "Caf\u00e9"}[i%3]
		if i%20 < 9 {
			msg = "id " + strconv.Itoa(i) + " declined"
		}
		rest.WriteString("m=\"" + msg + "\"\n")
	}
	f.Add(rest.String(), "declined", false)
	f.Add(rest.String(), "<_>declined<_>|<_>m=\"ok<_>\n<_>\"<_>", false)
	f.Add("free text line\nline free\na line free text", "<_>free<_>|<_>line<_>", true)
	f.Add(rest.String(), "d 1|caf\u00e9\nok|id", true)
	f.Fuzz(func(t *testing.T, input, lits string, fold bool) {
		if lits == "" || len(input) > 1<<14 || len(lits) > 1<<10 {
			return
		}
		var cs []part.Clause
		n := 0
		for _, line := range strings.Split(lits, "\n") {
			c := part.Clause{}
			for _, alt := range strings.Split(line, "|") {
				if alt == "" {
					continue
				}
				l := part.Literal{Text: []byte(alt), Fold: fold && n%2 == 0, ASCII: fold && n%4 == 2}
				if in, ok := strings.CutPrefix(alt, "<_>"); ok && strings.HasSuffix(in, "<_>") && len(in) > 3 {
					l.Text, l.Inner = []byte(strings.TrimSuffix(in, "<_>")), true
				}
				if l.Fold {
					l.Text = lowerASCII(l.Text)
				}
				c = append(c, l)
				n++
			}
			cs = append(cs, c)
		}
		if len(cs) > 8 || n > 32 {
			return
		}
		fs := vfs.NewMem()
		blocks := encoded(t, "auto", []byte(input+"\n"))
		if len(blocks) == 0 {
			return
		}
		writePart(t, fs, "f.part", blocks)
		rd, err := part.Open(fs, "f.part")
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		for i := range rd.Blocks {
			checkClauses(t, rd, i, cs, nil)
		}
	})
}

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// FuzzJSONStringContent checks JSONStringContent's eight-bytes-at-a-time
// scan against a plain byte loop.
func FuzzJSONStringContent(f *testing.F) {
	for _, s := range []string{"", "plain text of some length", `a \"b\" \u00e9`, "tab\there", `\u12`, `x\`, "ñ and \x80\xff bytes", `"quoted"`, `0123456789abcdef\n`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		want := true
		for i := 0; i < len(v) && want; i++ {
			switch c := v[i]; {
			case c < 0x20 || c == '"':
				want = false
			case c == '\\':
				i++
				switch {
				case i >= len(v):
					want = false
				case strings.IndexByte(`"\/bfnrt`, v[i]) >= 0:
				case v[i] == 'u' && i+4 < len(v) && isHex(v[i+1:i+5]):
					i += 4
				default:
					want = false
				}
			}
		}
		if got := part.JSONStringContent(v); got != want {
			t.Errorf("JSONStringContent(%q) = %v, the byte loop says %v", v, got, want)
		}
	})
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}
