package timestamp

import "testing"

func TestShapeRoundTrip(t *testing.T) {
	for _, text := range []string{
		"2026-01-15T08:00:00.123Z", "2026-01-15T08:00:00Z", "2026-01-15T08:00:00.000870Z",
		"2026-01-15T08:00:00.123456789+05:30", "2026-01-15T08:00:00-0800", "2026-01-15 08:00:00,123",
		"2026-01-15 08:00:00.5", "1768464000", "1768464000123", "1768464000123456", "1768464000123456789",
		"1969-12-31T23:59:59.999Z",
	} {
		t.Run(text, func(t *testing.T) {
			ns, ok := Parse([]byte(text), 0)
			if !ok {
				t.Fatalf("Parse failed")
			}
			s, ok := DetectShape([]byte(text))
			if !ok {
				t.Fatalf("DetectShape failed")
			}
			if got := string(s.Append(nil, ns)); got != text {
				t.Errorf("Append = %q (shape %+v)", got, s)
			}
		})
	}
	for _, text := range []string{"", "abc", "2026-01-15", "2026-01-15T08:00:00.1234567890Z", "12345678901234567890", "2026-01-15T08:00:00+5"} {
		if s, ok := DetectShape([]byte(text)); ok {
			t.Errorf("DetectShape(%q) = %+v, want false", text, s)
		}
	}
}
