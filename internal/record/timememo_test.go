package record

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluicelog/sluice/internal/timestamp"
)

// checkTimes builds a record from each value in turn, with one builder,
// and checks that each record's time is what timestamp.Parse reads.
func checkTimes(t testing.TB, values ...string) {
	t.Helper()
	const receive = 42
	bl := NewBuilder(Config{TimeFields: []string{"t"}})
	b := &Batch{ReceiveTime: receive}
	bl.Start(b)
	for i, v := range values {
		build(bl, b, "t", v)
		want, ok := timestamp.Parse([]byte(v), receive)
		if !ok {
			want = receive
		}
		if r := b.Records[i]; r.Time != want || (r.TimeSource == FromData) != ok {
			t.Fatalf("value %d %q (after %q): time %d from data %v, want %d %v",
				i, v, values[max(i-1, 0)], r.Time, r.TimeSource == FromData, want, ok)
		}
	}
}

var timeMemoSeeds = [][2]string{
	{"2026-01-15T08:00:00.000072Z", "2026-01-15T08:00:00.591949Z"},
	{"2026-01-15T08:00:00.000072Z", "2026-01-15T08:00:01.000072Z"},
	{"2026-01-15T08:00:00.1Z", "2026-01-15T08:00:00.9Z"},
	{"2026-01-15T08:00:00.123456789Z", "2026-01-15T08:00:00.987654321Z"},
	{"2026-01-15T08:00:00.123456789Z", "2026-01-15T08:00:00.x87654321Z"},
	{"2026-01-15T08:00:00.12345678Z", "2026-01-15T08:00:00.1234567ZZ"},
	{"2026-01-15T08:00:00.123Z", "2026-01-15T08:00:00.12ZZ"},
	{"2026-01-15T08:00:00.123Z", "2026-01-15T08:00:00.1234"},
	{"2026-01-15T08:00:00.123456", "2026-01-15T08:00:00.654321"},
	{"2026-01-15T08:00:00.123456", "2026-01-15T08:00:00.65432Z"},
	{"2026-01-15 08:00:00.123+05:30", "2026-01-15 08:00:00.999+05:30"},
	{"2026-01-15t08:00:00.123-0700", "2026-01-15t08:00:00.124-0800"},
	{"2026-01-15T08:00:00.123 +0000", "2026-01-15T08:00:00.456 +0000"},
	{"2026-01-15T08:00:00.123 -12 retries", "2026-01-15T08:00:00.456 -12 retries"},
	{"2026-01-15T08:00:60.5Z", "2026-01-15T08:00:60.7Z"},
	{"2026-01-15T08:00:00,5Z", "2026-01-15T08:00:00,7Z"},
	{"2026-01-15T08:00:00.1234567890Z", "2026-01-15T08:00:00.0987654321Z"},
	{"2262-04-11T23:47:16.854775807Z", "2262-04-11T23:47:16.999999999Z"},
	{"9999-12-31T23:59:59.5Z", "9999-12-31T23:59:59.6Z"},
	{"2026-01-15T08:00:00.5Z", "2026-01-15T08:00:00.\xff5Z"},
	{"2026-01-15T08:00:00.55Z", "2026-01-15T08:00:00./5Z"},
}

func TestTimeMemo(t *testing.T) {
	for _, s := range timeMemoSeeds {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) {
			// The memo remembers a value whose length repeats the last one's.
			checkTimes(t, s[0], s[0], s[1], s[0], s[1])
		})
	}
}

// TestTimeMemoRandom reads runs of values that share a second, with
// fractions and zones of random lengths and the odd stray byte.
func TestTimeMemoRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	zones := []string{"", "Z", "z", "+05:30", "-0700", " +0000", "+05", "+05:30:00", "Zx"}
	var values []string
	for range 20000 {
		if rng.IntN(8) == 0 || len(values) == 0 {
			values = append(values, fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02d.",
				1+rng.IntN(12), 1+rng.IntN(31), rng.IntN(25), rng.IntN(60), rng.IntN(61)))
		}
		prefix := values[len(values)-1][:memoFrac]
		digits := []byte(fmt.Sprintf("%010d", rng.Int64N(1e10)))[:1+rng.IntN(10)]
		if rng.IntN(20) == 0 {
			digits[rng.IntN(len(digits))] = "/:a\xff"[rng.IntN(4)]
		}
		values = append(values, prefix+string(digits)+zones[rng.IntN(len(zones))])
	}
	checkTimes(t, values...)
}

// TestTimeMemoHits checks that the memo serves the common case: values of
// one shape within a second.
func TestTimeMemoHits(t *testing.T) {
	bl := NewBuilder(Config{TimeFields: []string{"t"}})
	b := &Batch{}
	bl.Start(b)
	build(bl, b, "t", "2026-01-15T08:00:00.000072Z")
	build(bl, b, "t", "2026-01-15T08:00:00.000073Z")
	if bl.tmemo.n == 0 {
		t.Fatal("nothing remembered")
	}
	want, _ := timestamp.Parse([]byte("2026-01-15T08:00:00.591949Z"), 0)
	if got, ok := bl.tmemo.read([]byte("2026-01-15T08:00:00.591949Z")); !ok || got != want {
		t.Errorf("read %d %v, want %d", got, ok, want)
	}
}

func FuzzTimeMemo(f *testing.F) {
	for _, s := range timeMemoSeeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkTimes(t, a, a, b, a, b)
	})
}
