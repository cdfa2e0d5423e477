package logql

import (
	"reflect"
	"testing"
)

// TestRoundTrip checks that printing a parsed query and parsing the
// text again gives an equal tree, printed the same.
func TestRoundTrip(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.in, func(t *testing.T) {
			e1, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			s1 := e1.String()
			e2, err := Parse(s1)
			if err != nil {
				t.Fatalf("reparse %s: %v", s1, err)
			}
			if s2 := e2.String(); s2 != s1 {
				t.Errorf("printed %s\nreprinted %s", s1, s2)
			}
			if !reflect.DeepEqual(e1, e2) {
				t.Errorf("trees of %s and %s differ", tc.in, s1)
			}
		})
	}
}

// FuzzParse checks that Parse never panics and that whatever it accepts
// prints to text that parses to an equal tree, printed the same.
func FuzzParse(f *testing.F) {
	for _, tc := range validCases {
		f.Add(tc.in)
	}
	for _, tc := range errorCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e1, err := Parse(src)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error is a %T", err)
			}
			_ = err.Error()
			return
		}
		s1 := e1.String()
		e2, err := Parse(s1)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", src, s1, err)
		}
		if s2 := e2.String(); s2 != s1 {
			t.Fatalf("%q printed as %q, reprinted as %q", src, s1, s2)
		}
		if !reflect.DeepEqual(e1, e2) {
			t.Fatalf("%q printed as %q, which parses to another tree", src, s1)
		}
	})
}

// FuzzSelectorRegexp: a selector's regexp matched without running it
// (.*, .+, alternations of literals) matches what the regexp does.
func FuzzSelectorRegexp(f *testing.F) {
	for _, s := range [][2]string{{".*", "a\nb"}, {".+", ""}, {"api|web", "web"}, {"a||b", ""}, {"\uFFFD", "\xff"}, {"a.c", "abc"}, {"x|y", "xy"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, re, v string) {
		compiled, cerr := anchored(re)
		m, err := newMatcher("l", MatchRegexp, re)
		if (err != nil) != (cerr != nil) {
			t.Fatalf("%q: newMatcher says %v, the regexp %v", re, err, cerr)
		}
		if err != nil {
			return
		}
		if got, want := m.Matches(v), compiled.MatchString(v); got != want {
			t.Fatalf("%q =~ %q: %v, the regexp says %v (fast %d)", v, re, got, want, m.fast)
		}
		n, _ := newMatcher("l", MatchNotRegexp, re)
		if got, want := n.Matches(v), !compiled.MatchString(v); got != want {
			t.Fatalf("%q !~ %q: %v, the regexp says %v", v, re, got, want)
		}
	})
}
