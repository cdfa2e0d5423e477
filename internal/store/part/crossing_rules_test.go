package part

import (
	"bytes"
	"testing"
)

// FuzzCrossingRules checks the rules that rule crossings of a value's
// edges out (intoString, outOfString, fitsAlphabet) against every value
// they could be wrong about: each short value over a few bytes, JSON
// string content or of an alphabet, placed between gaps that end with
// the literal's start (start with its end). A rule that says no while
// some such value holds the literal across its edge fails.
func FuzzCrossingRules(f *testing.F) {
	f.Add([]byte(`"status":503`), []byte(`","n`), []byte(`"}`))
	f.Add([]byte(`\"a\"`), []byte(`":"`), []byte(`"`))
	f.Add([]byte(`a"b`), []byte(`x"`), []byte(`"b`))
	f.Add([]byte(`4"`), []byte(`:`), []byte(`",`))
	f.Fuzz(func(t *testing.T, lit, before, after []byte) {
		if len(lit) < 2 || len(lit) > 7 || len(before) > 8 || len(after) > 8 {
			return
		}
		digits := alphabets[encInt]
		for _, vs := range [][]byte{[]byte(`a"\1`), []byte("12-a")} {
			values(vs, len(lit)+1, func(v []byte) {
				str := JSONStringContent(v)
				num := allInAlphabet(v, false, digits)
				for p := 1; p < len(lit); p++ {
					// Into v: the gap before ends with lit[:p].
					g0 := append(append([]byte(nil), before...), lit[:p]...)
					if holdsAt(g0, v, after, len(g0)-p, lit) {
						if str && !intoString(lit, p, after) {
							t.Fatalf("intoString(%q, %d, %q) is false, but %q holds it", lit, p, after, v)
						}
						if num && !fitsAlphabet(&Literal{Text: lit}, p, true, g0, after, digits) {
							t.Fatalf("fitsAlphabet into (%q, %d, %q) is false, but %q holds it", lit, p, after, v)
						}
					}
					// Out of v: the gap after starts with lit[p:].
					g1 := append(append([]byte(nil), lit[p:]...), after...)
					if holdsAt(before, v, g1, len(before)+len(v)-p, lit) {
						if str && !outOfString(lit, p, before) {
							t.Fatalf("outOfString(%q, %d, %q) is false, but %q holds it", lit, p, before, v)
						}
						if num && !fitsAlphabet(&Literal{Text: lit}, p, false, before, g1, digits) {
							t.Fatalf("fitsAlphabet out of (%q, %d, %q) is false, but %q holds it", lit, p, before, v)
						}
					}
				}
			})
		}
	})
}

// holdsAt reports whether g0+v+g1 holds lit at offset at, crossing an
// edge of v (starting in g0 and ending in v or beyond, or starting in v
// or before and ending in g1).
func holdsAt(g0, v, g1 []byte, at int, lit []byte) bool {
	line := append(append(append([]byte(nil), g0...), v...), g1...)
	if at < 0 || at+len(lit) > len(line) || !bytes.Equal(line[at:at+len(lit)], lit) {
		return false
	}
	end := at + len(lit)
	return at < len(g0) && end > len(g0) || at < len(g0)+len(v) && end > len(g0)+len(v)
}

// values calls f with every text of at most n bytes of alphabet.
func values(alphabet []byte, n int, f func(v []byte)) {
	v := make([]byte, 0, n)
	var walk func()
	walk = func() {
		f(v)
		if len(v) == n {
			return
		}
		for _, c := range alphabet {
			v = append(v, c)
			walk()
			v = v[:len(v)-1]
		}
	}
	walk()
}
