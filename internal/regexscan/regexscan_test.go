package regexscan

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// same checks m against regexp on text: the same match and groups, or
// a fallback.
func same(t *testing.T, expr string, m *Matcher, text []byte) {
	t.Helper()
	re := regexp.MustCompile(expr)
	want := re.FindSubmatchIndex(text)
	got, ok := m.FindSubmatchIndex(nil, text)
	if !ok {
		return // the caller asks regexp
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%q on %q: %v, regexp %v", expr, text, got, want)
	}
	if matched, ok := m.Match(text); ok && matched != (want != nil) {
		t.Fatalf("%q on %q: Match %v, regexp %v", expr, text, matched, want != nil)
	}
	if m.Groups() != re.NumSubexp() {
		t.Fatalf("%q: %d groups, regexp %d", expr, m.Groups(), re.NumSubexp())
	}
}

var chains = []string{
	`"(?P<method>[A-Z]+) (?P<path>[^ ]+) HTTP`,
	`Failed password for (?P<user>\S+) from (?P<ip>[0-9.]+)`,
	`^(?P<ip>\S+) \S+ \S+ \[(?P<ts>[^\]]+)\] "(?P<method>\S+) (?P<path>\S+)`,
	`status=(?P<status>\d+)`,
	`(?P<all>[a-z]*)`,
	`(?P<n>[0-9]{1,3})\.`,
	`a(?P<x>b?)c`,
	`(?P<w>\w+)$`,
	`^(?P<w>[^,]*),`,
	`x(?P<rest>.*)`,
	`(?P<a>(?P<b>[a-c]+)-)(?P<c>[0-9]{2})`,
	`é(?P<x>[^ ]+) `,
	`(?P<s>\S+)`,
}

var texts = []string{
	``, `x`, `GET`, `"GET /a HTTP/1.1"`, `10.0.0.1 - - [26/Nov/2026:05:20:57 +0000] "POST /api/v1/orders HTTP/1.1" 200 512`,
	`Failed password for root from 10.1.2.3 port 22`, `Failed password for invalid user x from 1.2.3.4`,
	`status=200 bytes=3`, `status= status=5`, `1234.5678.`, `12.`, `ac abc abbc`, `hello world`,
	`a,b,c`, `,`, `xx`, `ab-12 ab-1 abc-34`, `é`, `éabc d`, "\xffé\xc3 a b", "naïve café résumé ",
	`"" "GET  HTTP`, `"get / HTTP "GET /x HTTP`,
}

func TestSameAsRegexp(t *testing.T) {
	for _, expr := range chains {
		m, ok := Compile(expr)
		if !ok {
			t.Fatalf("%q: not compiled", expr)
		}
		for _, text := range texts {
			same(t, expr, m, []byte(text))
		}
	}
}

func TestNotChains(t *testing.T) {
	for _, expr := range []string{
		`ab|cd`, `(?i)abc`, `[a-z]+[a-z]`, `\S+ ?x`, `[^é]+`, `.{3}`, `[a-z]+?x`, `\bword`, `(?m)^x`,
		`(?P<e>)x`, `x$y`, `(ab)+`, `a*\x{FFFD}`, `[a-z]*[0-9]*x`,
	} {
		if _, ok := Compile(expr); ok {
			t.Errorf("%q compiled: it is not a chain this package can match", expr)
		}
	}
}

// TestBudget: a line that would make the candidates overlap without end
// is handed back to regexp.
func TestBudget(t *testing.T) {
	m, ok := Compile(`a[^c]*c`)
	if !ok {
		t.Fatal("not compiled")
	}
	line := []byte(strings.Repeat("a", 10000))
	if _, ok := m.FindSubmatchIndex(nil, line); ok {
		t.Fatal("10,000 overlapping candidates scanned within the budget")
	}
	if idx, ok := m.FindSubmatchIndex(nil, []byte("xxac")); !ok || !slices.Equal(idx, []int{2, 4}) {
		t.Fatalf("a short line: %v %v", idx, ok)
	}
}

func FuzzSameAsRegexp(f *testing.F) {
	for i, expr := range chains {
		f.Add(expr, texts[i%len(texts)])
	}
	f.Fuzz(func(t *testing.T, expr, text string) { sameIfChain(t, expr, text) })
}

// sameIfChain checks Compile against regexp on text when expr is a valid
// expression and a chain.
func sameIfChain(t *testing.T, expr, text string) {
	t.Helper()
	if _, err := regexp.Compile(expr); err != nil {
		return
	}
	if m, ok := Compile(expr); ok {
		same(t, expr, m, []byte(text))
	}
}

// FuzzChains builds expressions from the pieces chains are made of, so
// that most of what it tries compiles (random text seldom does).
func FuzzChains(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, "ab cd é1.2")
	f.Add([]byte{9, 17, 33, 2, 40}, `"GET /x HTTP`)
	lits := []string{`a`, `ab`, `é`, ` `, `"`, `-`, `\.`, `x`}
	classes := []string{`[a-c]`, `[^ ]`, `\S`, `\d`, `\w`, `.`, `[0-9.]`, `[^"]`, `\s`}
	quants := []string{``, `+`, `*`, `?`, `{1,3}`, `{2}`}
	f.Fuzz(func(t *testing.T, prog []byte, text string) {
		var sb strings.Builder
		if len(prog) > 0 && prog[0]&1 == 1 {
			sb.WriteString("^")
		}
		open := 0
		for i, op := range prog {
			if i > 12 {
				break
			}
			switch op % 4 {
			case 0:
				sb.WriteString(lits[int(op/4)%len(lits)])
			case 1, 2:
				sb.WriteString(classes[int(op/4)%len(classes)])
				sb.WriteString(quants[int(op/36)%len(quants)])
			case 3:
				if open > 0 && op&4 != 0 {
					sb.WriteString(")")
					open--
				} else {
					sb.WriteString("(?P<g" + strings.Repeat("x", i) + ">")
					open++
				}
			}
		}
		sb.WriteString(strings.Repeat(")", open))
		if len(prog) > 1 && prog[1]&1 == 1 {
			sb.WriteString("$")
		}
		sameIfChain(t, sb.String(), text)
	})
}
