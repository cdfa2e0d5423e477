package timestamp

import (
	"strconv"
	"testing"
)

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
			if n := s.Len(ns); n != len(text) {
				t.Errorf("Len = %d, want %d", n, len(text))
			}
		})
	}
	for _, text := range []string{"", "abc", "2026-01-15", "2026-01-15T08:00:00.1234567890Z", "12345678901234567890", "2026-01-15T08:00:00+5"} {
		if s, ok := DetectShape([]byte(text)); ok {
			t.Errorf("DetectShape(%q) = %+v, want false", text, s)
		}
	}
}

// FuzzShapeLen: Len is the length of what Append writes, for any shape
// and time, so that a line's length can be known without its text.
func FuzzShapeLen(f *testing.F) {
	f.Add(uint8(Civil), byte('.'), uint8(3), uint8(ZoneZ), int16(0), int64(1768464000123456789))
	f.Add(uint8(EpochMs), byte(0), uint8(0), uint8(0), int16(0), int64(-1))
	f.Add(uint8(EpochNs), byte(0), uint8(0), uint8(0), int16(0), int64(-1<<63))
	f.Add(uint8(Civil), byte(0), uint8(0), uint8(ZoneColon), int16(-330), int64(0))
	f.Fuzz(func(t *testing.T, kind, fracSep, digits, zone uint8, offset int16, ns int64) {
		s := Shape{Kind: ShapeKind(kind % 6), Sep: 'T', Digits: digits % 10, Zone: ZoneKind(zone % 4), Offset: offset % (100 * 60)}
		if fracSep != 0 {
			s.FracSep = '.'
		}
		if s.Kind == Civil && (ns > 1<<62 || ns < -1<<62) {
			ns /= 4 // the civil arithmetic's range
		}
		if got, want := s.Len(ns), len(s.Append(nil, ns)); got != want {
			t.Fatalf("shape %+v, %d: Len %d, Append wrote %d bytes", s, ns, got, want)
		}
	})
}

// FuzzIntLen: IntLen is the length of the integer's text.
func FuzzIntLen(f *testing.F) {
	for _, v := range []int64{0, 9, 10, -1, -10, 99999, 100000, 1<<63 - 1, -1 << 63, 1e18, 1e18 - 1} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		if got, want := IntLen(v), len(strconv.FormatInt(v, 10)); got != want {
			t.Fatalf("IntLen(%d) = %d, want %d", v, got, want)
		}
	})
}
