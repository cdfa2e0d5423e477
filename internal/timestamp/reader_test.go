package timestamp

import (
	"testing"
)

// TestReaderMatchesParse checks that the date cache never changes a result:
// every input is parsed by Parse and by a Reader that has just read each
// of the others.
func TestReaderMatchesParse(t *testing.T) {
	ref := int64(1768478400) * 1e9
	inputs := []string{
		"2026-01-15T08:00:00Z", "2026-01-15T08:00:00.123456Z", "2026-01-15 08:00:00,123",
		"2026-01-15T23:59:60Z", "2026-01-15T24:00:00Z", "2026-01-15T08:00:00+05:30",
		"2026-01-15T08:00:00 x", "2026-01-15T08:00", "2026-01-15t08:00:00.5z",
		"2026-01-16T08:00:00Z", "2026-01-15-08.00.00.000001", "2026-02-30T00:00:00Z",
		"2026-01-15T08:60:00Z", "2026-01-15T08:00:00.1234567891Z", "2026-01-15T08:00:00-0700",
		"Jan 15 08:00:00", "1768464000123", "2026-01-15T8:00:00Z",
	}
	for _, prev := range inputs {
		for _, in := range inputs {
			var r Reader
			r.Parse([]byte(prev), ref)
			gotNs, gotOK := r.Parse([]byte(in), ref)
			wantNs, wantOK := Parse([]byte(in), ref)
			if gotOK != wantOK || gotOK && gotNs != wantNs {
				t.Errorf("after %q, %q: Reader gives %d %v, Parse %d %v", prev, in, gotNs, gotOK, wantNs, wantOK)
			}
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add("2026-01-15T08:00:00Z", "2026-01-15T09:30:00.25+01:00")
	f.Fuzz(func(t *testing.T, prev, in string) {
		ref := int64(1768478400) * 1e9
		var r Reader
		r.Parse([]byte(prev), ref)
		gotNs, gotOK := r.Parse([]byte(in), ref)
		wantNs, wantOK := Parse([]byte(in), ref)
		if gotOK != wantOK || gotOK && gotNs != wantNs {
			t.Fatalf("after %q, %q: Reader gives %d %v, Parse %d %v", prev, in, gotNs, gotOK, wantNs, wantOK)
		}
	})
}

func BenchmarkReader(b *testing.B) {
	in := []byte("2026-01-15T08:00:00.000870Z")
	var r Reader
	b.ReportAllocs()
	for b.Loop() {
		r.Parse(in, 0)
	}
}
