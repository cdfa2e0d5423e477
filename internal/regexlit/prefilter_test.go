package regexlit

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	x := func(s string) Lit { return Lit{Text: s} }
	f := func(s string) Lit { return Lit{Text: s, Fold: true} }
	g := func(ls ...Lit) []Lit { return ls }
	tests := []struct {
		src    string
		groups [][]Lit
		exact  bool
	}{
		{"error", [][]Lit{g(x("error"))}, true},
		{"error|fatal|panic", [][]Lit{g(x("error"), x("fatal"), x("panic"))}, true},
		{"(?i)error", [][]Lit{g(f("error"))}, true},
		{"(?i)ERROR: \\d", [][]Lit{g(f("error: 0"), f("error: 1"), f("error: 2"), f("error: 3"), f("error: 4"), f("error: 5"), f("error: 6"), f("error: 7"), f("error: 8"), f("error: 9"))}, true},
		{"(?i)ERROR: [a-z]", [][]Lit{g(f("error: "))}, false},
		{"(?i)(error|warn)", [][]Lit{g(f("error"), f("warn"))}, true},
		{"[Ee]rror", [][]Lit{g(x("error"), x("Error"))}, true},
		{"err(or|no)", [][]Lit{g(x("error"), x("errno"))}, true},
		{"err|error", [][]Lit{g(x("err"))}, true},
		{"https?://", [][]Lit{g(x("http://"), x("https://"))}, true},
		{".*foo.*bar", [][]Lit{g(x("foo")), g(x("bar"))}, false},
		{"a*foo.*", [][]Lit{g(x("foo"))}, true},
		{"(error|warn).*timeout", [][]Lit{g(x("error"), x("warn")), g(x("timeout"))}, false},
		{"foo(bar|.*baz)", [][]Lit{g(x("foo")), g(x("bar"), x("baz"))}, false},
		{"(foo|bar)(baz|qux)", [][]Lit{g(x("foobaz"), x("fooqux"), x("barbaz"), x("barqux"))}, true},
		{"^error", [][]Lit{g(x("error"))}, false},
		{"\\berror\\b", [][]Lit{g(x("error"))}, false},
		{"(abc)+d", [][]Lit{g(x("abcd"))}, false},
		{"x{3}y", [][]Lit{g(x("xxxy"))}, true},
		{"\\x{FFFD}abc", [][]Lit{g(x("abc"))}, false},
		{"[0-9]+ms", [][]Lit{g(x("0ms"), x("1ms"), x("2ms"), x("3ms"), x("4ms"), x("5ms"), x("6ms"), x("7ms"), x("8ms"), x("9ms"))}, false},
		{"x*", nil, true},
		{"\\d+", [][]Lit{g(x("0"), x("1"), x("2"), x("3"), x("4"), x("5"), x("6"), x("7"), x("8"), x("9"))}, false},
		{"[a-z]+", nil, false},
		{"a|.*", nil, false},
		{"(?i)é", [][]Lit{g(x("é"), x("É"))}, true},
		{"(?i)k", [][]Lit{g(f("k"), x("\u212a"))}, true},
		{"(?i)kafka", [][]Lit{g(f("kafka"), f("kaf\u212aa"), f("\u212aafka"), f("\u212aaf\u212aa"))}, true},
		{"[kK]ey", [][]Lit{g(x("key"), x("Key"))}, true},
		{"(?i)(?:e)rr", [][]Lit{g(f("err"))}, true},
		{"(?i:e)RR", [][]Lit{g(x("eRR"), x("ERR"))}, true},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			p, err := Parse(tc.src, false)
			if err != nil {
				t.Fatal(err)
			}
			if !sameGroups(p.Groups, tc.groups) || p.Exact != tc.exact {
				t.Errorf("got %v exact %v, want %v exact %v", p.Groups, p.Exact, tc.groups, tc.exact)
			}
		})
	}
}

func TestParseAnchored(t *testing.T) {
	x := func(s string) Lit { return Lit{Text: s} }
	f := func(s string) Lit { return Lit{Text: s, Fold: true} }
	tests := []struct {
		src         string
		groups      [][]Lit
		exact, nonl bool
		whole       bool
		equal       []Lit
	}{
		{"info|warn", [][]Lit{{x("info"), x("warn")}}, false, false, true, []Lit{x("info"), x("warn")}},
		{"(?i)error", [][]Lit{{f("error")}}, false, false, true, []Lit{f("error")}},
		{"err|error", [][]Lit{{x("err")}}, false, false, true, []Lit{x("err"), x("error")}},
		{".*timeout.*", [][]Lit{{x("timeout")}}, true, true, false, nil},
		{"(?s).*timeout.*", [][]Lit{{x("timeout")}}, true, false, false, nil},
		{".*(?i)(timeout|refused).*", [][]Lit{{f("timeout"), f("refused"), f("refu\u017fed")}}, true, true, false, nil},
		{"api-.*", [][]Lit{{x("api-")}}, false, false, false, nil},
		{".+", nil, false, false, false, nil},
		{"^info$", [][]Lit{{x("info")}}, false, false, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			p, err := Parse(tc.src, true)
			if err != nil {
				t.Fatal(err)
			}
			if !sameGroups(p.Groups, tc.groups) || p.Exact != tc.exact || p.NoNewline != tc.nonl {
				t.Errorf("got %v exact %v nonl %v, want %v exact %v nonl %v", p.Groups, p.Exact, p.NoNewline, tc.groups, tc.exact, tc.nonl)
			}
			if p.Whole != tc.whole || !sameLits(p.Equal, tc.equal) {
				t.Errorf("got whole %v %v, want %v %v", p.Whole, p.Equal, tc.whole, tc.equal)
			}
		})
	}
}

func TestParseError(t *testing.T) {
	if _, err := Parse("a(b", false); err == nil || !strings.Contains(err.Error(), `"a(b"`) {
		t.Errorf("Parse(a(b): err %v, want one naming the regexp", err)
	}
}

func TestCommon(t *testing.T) {
	for _, tc := range []struct {
		g    []Lit
		want Lit
		ok   bool
	}{
		{[]Lit{{Text: "foo0"}, {Text: "foo1"}}, Lit{Text: "foo"}, true},
		{[]Lit{{Text: "0bar"}, {Text: "1bar"}, {Text: "22bar"}}, Lit{Text: "bar"}, true},
		{[]Lit{{Text: "Error"}, {Text: "error"}}, Lit{Text: "rror"}, true},
		{[]Lit{{Text: "Error: x"}, {Text: "warn: x", Fold: true}}, Lit{Text: ": x", Fold: true}, true},
		{[]Lit{{Text: "Error: 1"}, {Text: "error: 2"}}, Lit{Text: "rror: "}, true},
		{[]Lit{{Text: "error"}, {Text: "panic"}}, Lit{}, false},
	} {
		if got, ok := Common(tc.g); got != tc.want || ok != tc.ok {
			t.Errorf("Common(%v) = %v %v, want %v %v", tc.g, got, ok, tc.want, tc.ok)
		}
	}
}

func sameLits(a, b []Lit) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	cmp := func(x, y Lit) int { return strings.Compare(x.String(), y.String()) }
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

func sameGroups(a, b [][]Lit) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, ga := range a {
		found := false
		for j, gb := range b {
			if !used[j] && sameLits(ga, gb) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// check verifies the prefilters of src, unanchored and anchored, against
// Go's regexp on text and on texts made by putting their literals into
// it: a text the regexp matches passes the prefilter, and an exact
// prefilter (Exact, Whole) answers as the regexp does.
func check(t *testing.T, src, text string) {
	t.Helper()
	re, err := regexp.Compile(src)
	if err != nil {
		return
	}
	// LogQL wraps a label matcher's regexp so; \Q quotes the wrapping.
	anch, err := regexp.Compile("^(?:" + src + ")$")
	if err != nil {
		anch = nil
	}
	p, err := Parse(src, false)
	if err != nil {
		t.Fatalf("%q compiles but Parse fails: %v", src, err)
	}
	pa, err := Parse(src, true)
	if err != nil {
		t.Fatalf("%q compiles but Parse fails: %v", src, err)
	}
	m, ma, eq := p.Matcher(0), pa.Matcher(0), pa.Equals()
	texts := []string{text}
	for _, pf := range []Prefilter{p, pa} {
		for _, g := range pf.Groups {
			for _, l := range g {
				texts = append(texts, l.Text, text[:len(text)/2]+l.Text+text[len(text)/2:], strings.ToUpper(l.Text))
			}
		}
		for _, l := range pf.Equal {
			texts = append(texts, l.Text, strings.ToUpper(l.Text))
		}
	}
	for _, s := range texts {
		b := []byte(s)
		got, want := m == nil || m.Match(b), re.Match(b)
		if want && !got || p.Exact && got != want {
			t.Fatalf("%q on %q: prefilter %v (exact %v) %v, regexp %v", src, s, p.Groups, p.Exact, got, want)
		}
		if anch == nil {
			continue
		}
		got, want = ma == nil || ma.Match(b), anch.Match(b)
		if want && !got || pa.Exact && (!pa.NoNewline || !strings.Contains(s, "\n")) && got != want {
			t.Fatalf("%q anchored on %q: prefilter %v (exact %v, nonl %v) %v, regexp %v", src, s, pa.Groups, pa.Exact, pa.NoNewline, got, want)
		}
		if eq != nil && eq(s) != want {
			t.Fatalf("%q anchored on %q: equal %v: %v, regexp %v", src, s, pa.Equal, eq(s), want)
		}
	}
}

// Pieces of the random regexps and texts: letters in both cases, k and s
// with the runes Unicode folds to them, UTF-8 and invalid bytes,
// newlines, word boundaries.
var (
	atoms = []string{"a", "b", "ab", "err", "or", "k", "s", "E", "é", "\\x{FFFD}", "\\x{212A}", "[ab]", "[Ee]", "[a-c]",
		"[^a]", ".", "\\d", "^", "$", "\\b", "\\B", "(?m:^)", "\\n", " ", "[kK]", "x"}
	textBytes = []string{"a", "b", "e", "E", "r", "R", "o", "k", "K", "s", "S", "\u212a", "\u017f", "é", "É", "\n", " ", "\xff", "\xc3", "x", "1", "\ufffd"}
)

func randomRegexp(r *rand.Rand, depth int) string {
	if depth <= 0 || r.IntN(3) == 0 {
		return atoms[r.IntN(len(atoms))]
	}
	x := randomRegexp(r, depth-1)
	switch r.IntN(11) {
	case 0, 1:
		return x + randomRegexp(r, depth-1)
	case 2:
		return x + "|" + randomRegexp(r, depth-1)
	case 3:
		return "(?:" + x + ")*"
	case 4:
		return "(" + x + ")+"
	case 5:
		return "(?:" + x + ")?"
	case 6:
		return "(?:" + x + "){" + fmt.Sprint(r.IntN(3)) + "," + fmt.Sprint(1+r.IntN(3)) + "}"
	case 7:
		return "(?i:" + x + ")"
	case 8:
		return "(?s:" + x + ")"
	case 9:
		return ".*" + x + ".*"
	}
	return "(?:" + x + "){2}"
}

func randomText(r *rand.Rand) string {
	var sb strings.Builder
	for range r.IntN(10) {
		sb.WriteString(textBytes[r.IntN(len(textBytes))])
	}
	return sb.String()
}

// TestRandom checks random regexps of a small grammar on random texts.
func TestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		src := randomRegexp(r, 4)
		for range 8 {
			check(t, src, randomText(r))
		}
	}
}

// FuzzPrefilter checks the prefilters of any regexp on any text. Seeds in
// testdata/fuzz/FuzzPrefilter; `go test -fuzz FuzzPrefilter` for more.
func FuzzPrefilter(f *testing.F) {
	for _, s := range []string{"error|fatal|panic", "(?i)error", "[Ee]rror", ".*foo.*bar", "(?i)kafka", "https?://", "\\x{FFFD}", ".*timeout.*"} {
		f.Add(s, "an error: timeout at https://kafka")
	}
	f.Fuzz(func(t *testing.T, src, text string) {
		if len(src) > 200 || len(text) > 1000 {
			return
		}
		check(t, src, text)
	})
}
