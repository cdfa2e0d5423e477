package literal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// reference is what a Set must answer: each literal searched in turn.
func reference(lits [][]byte, fold bool, text []byte) bool {
	if fold {
		text = lowerASCII(text)
	}
	for _, l := range lits {
		if fold {
			l = lowerASCII(l)
		}
		if bytes.Contains(text, l) {
			return true
		}
	}
	return false
}

// lowerASCII returns b with ASCII letters lowercased, the other bytes as
// they are (bytes.ToLower would fold UTF-8 letters too).
func lowerASCII(b []byte) []byte {
	out := bytes.Clone(b)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return out
}

// forms builds lits in each form a Set takes: searched one by one
// (folding: in lowered chunks of the text), the dense automaton and the
// sparse one.
func forms(lits [][]byte, fold bool) map[string]*Set {
	m := map[string]*Set{
		"dense":  newSet(lits, fold, 0, maxDenseCells, nil),
		"sparse": newSet(lits, fold, 0, 0, nil),
	}
	m["few"] = newSet(lits, fold, len(lits), maxDenseCells, nil)
	return m
}

func check(t *testing.T, lits [][]byte, fold bool, text []byte) {
	t.Helper()
	want := reference(lits, fold, text)
	for name, s := range forms(lits, fold) {
		if got := s.Match(text); got != want {
			t.Errorf("%s: lits %q fold %v text %q: %v, want %v", name, lits, fold, text, got, want)
		}
	}
}

func split(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Split(s, ",") {
		out = append(out, []byte(f))
	}
	return out
}

var cases = []struct {
	lits, text string
	fold       bool
}{
	{"he,she,his,hers", "ushers", false},
	{"he,she,his,hers", "ahishe", false},
	{"he,she,his,hers", "hxsxhx", false},
	{"abcd,bc", "xabcx", false}, // the shorter one inside a failed longer one
	{"abcd,bcx", "abcx", false}, // found through a failure link
	{"aab,ab", "aaab", false},
	{"error,warn", "WARNING: disk", true},
	{"error,warn", "WARNING: disk", false},
	{"Kelvin,x", "kelvin", true},
	{"a,b", "", false},
	{",b", "", false}, // the empty literal matches everything
	{"\x00\xff,\xff\x00", "a\xff\x00b", false},
	{"ÄÖ,ü", "xäöü", true}, // non-ASCII bytes match exactly
	{"ÄÖ,ü", "xÄÖ", true},
}

func TestSet(t *testing.T) {
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s/%v", tc.lits, tc.text, tc.fold), func(t *testing.T) {
			check(t, split(tc.lits), tc.fold, []byte(tc.text))
		})
	}
}

// Many literals over random texts, in every form; all 256 byte values.
func TestSetRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		alphabet := "abcAB"
		if round%4 == 0 {
			alphabet = string(allBytes())
		}
		word := func(max int) []byte {
			w := make([]byte, 1+r.IntN(max))
			for i := range w {
				w[i] = alphabet[r.IntN(len(alphabet))]
			}
			return w
		}
		lits := make([][]byte, 1+r.IntN(40))
		for i := range lits {
			lits[i] = word(5)
		}
		fold := round%2 == 1
		for range 20 {
			check(t, lits, fold, word(40))
		}
	}
}

// NewSetYielding calls yield as it builds a large set, and builds the
// set NewSet does.
func TestNewSetYielding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lits := make([][]byte, 3*yieldEvery)
	for i := range lits {
		lits[i] = fmt.Appendf(nil, "k%dx%d", r.IntN(100000), i%7)
	}
	for _, fold := range []bool{false, true} {
		yields := 0
		s := NewSetYielding(lits, fold, func() { yields++ })
		if yields < 3 {
			t.Errorf("fold=%v: %d yields building %d literals, want at least 3", fold, yields, len(lits))
		}
		for i := range 200 {
			text := fmt.Appendf(nil, "line %d: K%dX%d end", i, r.IntN(100000), r.IntN(9))
			if i%2 == 0 { // one of the literals, upper case
				text = fmt.Appendf(nil, "line %d: K%s end", i, lits[r.IntN(len(lits))][1:])
			}
			if got, want := s.Match(text), reference(lits, fold, text); got != want {
				t.Errorf("fold=%v: Match(%q) = %v, want %v", fold, text, got, want)
			}
		}
	}
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// FuzzSet checks every form of a Set against each literal searched in
// turn. The input is the literals, then 0xFF, then the text; the first
// byte's low bit asks for folding.
func FuzzSet(f *testing.F) {
	for _, tc := range cases {
		var flag byte
		if tc.fold {
			flag = 1
		}
		f.Add(append(append([]byte{flag}, strings.ReplaceAll(tc.lits, ",", "\x00")...), append([]byte{0xFF}, tc.text...)...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		fold := data[0]&1 == 1
		litPart, text, _ := bytes.Cut(data[1:], []byte{0xFF})
		lits := bytes.Split(litPart, []byte{0})
		if len(lits) > 200 {
			return
		}
		check(t, lits, fold, text)
	})
}

// BenchmarkSet compares the Set with the loop it replaces, on 4 KiB of
// text that contains none of the literals (the common case of a filter
// over many lines, and the worst for both).
func BenchmarkSet(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	text := make([]byte, 4096)
	for i := range text {
		text[i] = "abcdefghijklmnopqrstuvwxyz ,.:="[r.IntN(31)]
	}
	for _, n := range []int{2, 4, 8, 100, 20000} {
		lits := make([][]byte, n)
		for i := range lits {
			lits[i] = fmt.Appendf(nil, "term%05dq", i) // never in text (no digits there)
		}
		run := func(name string, match func([]byte) bool) {
			b.Run(fmt.Sprintf("n=%d/impl=%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					if match(text) {
						b.Fatal("matched")
					}
				}
			})
		}
		run("set", NewSet(lits, false).Match)
		if n <= 100 {
			run("dense", newSet(lits, false, 0, maxDenseCells, nil).Match)
			run("loop", newSet(lits, false, n, 0, nil).Match)
		}
		run("sparse", newSet(lits, false, 0, 0, nil).Match)
		run("fold", NewSet(lits, true).Match)
	}
}

// BenchmarkNewSet reports what building a set costs: the literals of a
// rules file of 10,000 rules (a gate: /path/N of the literal filters,
// "timeout on shard-N" and "refused on shard-N" of the regexps), exact
// and folding case.
func BenchmarkNewSet(b *testing.B) {
	var lits [][]byte
	for i := range 10000 {
		switch {
		case i%10 < 7:
			lits = append(lits, fmt.Appendf(nil, "/path/%d", i))
		case i%10 < 9:
			lits = append(lits, fmt.Appendf(nil, "timeout on shard-%d", i), fmt.Appendf(nil, "refused on shard-%d", i))
		}
	}
	for _, fold := range []bool{false, true} {
		b.Run(fmt.Sprintf("lits=%d/fold=%v", len(lits), fold), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				NewSet(lits, fold)
			}
		})
	}
}

// TestSetFoldChunks: a folding literal searched alone (a folding
// Finder) is found wherever it lies, by its rare byte in a text without
// it, and, in a text full of that byte (mM: the scan gives up), by the
// lowered chunks, across their edges, in texts of several chunks.
func TestSetFoldChunks(t *testing.T) {
	lits := [][]byte{[]byte("TimeOut")}
	for _, fill := range []string{"a", "mM"} {
		for _, n := range []int{foldChunk - 10, 2*foldChunk + 5, 3 * foldChunk} {
			for at := 0; at+7 <= n; at++ {
				text := bytes.Repeat([]byte(fill), n)[:n]
				copy(text[at:], "tIMEOUT")
				check(t, lits, true, text)
				check(t, lits, true, text[:at+6]) // cut one byte short
				if t.Failed() {
					t.Fatalf("%q text of %d bytes, literal at %d", fill, n, at)
				}
			}
		}
	}
	long := bytes.Repeat([]byte("Ab"), foldChunk/2+1) // longer than half a chunk: the automaton
	if s := NewSet([][]byte{long}, true); s.folds != nil {
		t.Fatal("a literal of more than half a chunk is searched in chunks")
	}
	check(t, [][]byte{long}, true, append([]byte("zz"), bytes.ToLower(long)...))
}
