package timestamp

import (
	"math"
	"testing"
	"time"
)

// FuzzParse checks that no input panics, that ParsePrefix, Parse and
// ParseLayout agree with each other and with AppendRFC3339, and that an
// RFC 3339 input Parse accepts means what time.Parse says it means.
func FuzzParse(f *testing.F) {
	for _, fc := range prefixCases {
		for _, c := range fc.cases {
			f.Add([]byte(c.in))
		}
	}
	for _, c := range epochCases {
		f.Add([]byte(c.in))
	}
	for _, c := range badCases {
		f.Add([]byte(c.in))
	}
	for _, c := range layoutCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ns, n, ok := ParsePrefix(b, testRef)
		whole, wholeOK := Parse(b, testRef)
		if wholeOK != (ok && n == len(b)) || wholeOK && whole != ns {
			t.Fatalf("Parse(%q) = %d, %v; ParsePrefix = %d, %d, %v", b, whole, wholeOK, ns, n, ok)
		}
		if ok {
			if n <= 0 || n > len(b) {
				t.Fatalf("ParsePrefix(%q) spans %d bytes", b, n)
			}
			// The timestamp alone reads the same as within its line.
			if got, ok := Parse(b[:n], testRef); !ok || got != ns {
				t.Fatalf("Parse(%q) = %d, %v; ParsePrefix(%q) = %d", b[:n], got, ok, b, ns)
			}
			checkRoundTrip(t, ns)
		}
		if wholeOK && len(b) >= 20 && b[4] == '-' && b[10] == 'T' {
			if tm, err := time.Parse(time.RFC3339Nano, string(b)); err == nil && tm.UnixNano() != ns {
				t.Fatalf("Parse(%q) = %s; time.Parse = %s", b, AppendRFC3339(nil, ns), AppendRFC3339(nil, tm.UnixNano()))
			}
		}
		for l := range numLayouts + 1 {
			if _, n, ok := ParseLayout(b, l, testRef); ok && (n <= 0 || n > len(b)) {
				t.Fatalf("ParseLayout(%q, %v) spans %d bytes", b, l, n)
			}
		}
	})
}

// FuzzAppendRFC3339 checks AppendRFC3339 against package time and the
// print → parse round trip.
func FuzzAppendRFC3339(f *testing.F) {
	for _, ns := range []int64{0, -1, 1, testRef, math.MaxInt64, math.MinInt64, 1768464000_123456789} {
		f.Add(ns)
	}
	f.Fuzz(func(t *testing.T, ns int64) {
		got := AppendRFC3339(nil, ns)
		if want := time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z07:00"); string(got) != want {
			t.Fatalf("AppendRFC3339(%d) = %q; want %q", ns, got, want)
		}
		checkRoundTrip(t, ns)
	})
}

// checkRoundTrip prints ns and reads it back. Parse accepts only years
// 1678–2261, so the ends of the int64 range print but do not read back.
func checkRoundTrip(t *testing.T, ns int64) {
	t.Helper()
	out := AppendRFC3339(nil, ns)
	back, ok := Parse(out, testRef)
	inRange := ns >= minNs && ns < maxNs
	if ok != inRange || ok && back != ns {
		t.Fatalf("Parse(AppendRFC3339(%d) = %q) = %d, %v; want %d, %v", ns, out, back, ok, ns, inRange)
	}
}

var (
	minNs = time.Date(minYear, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	maxNs = time.Date(maxYear+1, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
)
