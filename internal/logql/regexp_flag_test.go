package logql

import (
	"regexp"
	"testing"
)

// FuzzDotNLFlag checks what the line filter's parser relies on to compile
// a regexp once: a regexp compiles with a leading (?s) exactly when it
// compiles alone.
func FuzzDotNLFlag(f *testing.F) {
	for _, seed := range []string{"", "a", "*", "+a", "(?i)x", ")", "(", "(?s", "a{2,1}", `\`, "[", "(?P<a>x)", "a**", "|*", "^*", "(?:)*", "x{1001}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, errAlone := regexp.Compile(src)
		_, errFlag := regexp.Compile("(?s)" + src)
		if (errAlone == nil) != (errFlag == nil) {
			t.Fatalf("%q: alone %v, with (?s) %v", src, errAlone, errFlag)
		}
	})
}
