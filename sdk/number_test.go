package sdk

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

var intCases = []int64{0, 1, 9, 10, 42, 99, 100, 101, 200, 999, 1000, 12345, 1e6, 1e9 + 7,
	math.MaxInt64, math.MinInt64, -1, -9, -10, -99, -100, -12345}

func TestAppendInt(t *testing.T) {
	for _, n := range intCases {
		if got, want := string(appendInt([]byte("x"), n)), "x"+strconv.FormatInt(n, 10); got != want {
			t.Errorf("appendInt(%d) = %s, want %s", n, got, want)
		}
		u := uint64(n)
		if got, want := string(appendUint(nil, u)), strconv.FormatUint(u, 10); got != want {
			t.Errorf("appendUint(%d) = %s, want %s", u, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		n := int64(r.Uint64()) >> r.IntN(64)
		if got, want := string(appendInt(nil, n)), strconv.FormatInt(n, 10); got != want {
			t.Fatalf("appendInt(%d) = %s, want %s", n, got, want)
		}
	}
}

var floatCases = []float64{0, math.Copysign(0, -1), 0.5, -0.5, 1, -1, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.5, 3.14159,
	1.0 / 3, 2.0 / 3, 0.0001, 0.00012345678, 0.00009999, 1e-5, 123456, 999999, 999999.99999999,
	999999.999999999, 1e6, 1e6 - 1e-9, 1234567, 12345.678, 0.12345678, 0.123456789, 1e21, 1e-300,
	5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(),
	100, 1e5, 99.99, 0.001, 0.01, 1.25e-4, math.Nextafter(1e-4, 0), math.Nextafter(1e6, 0),
	math.Nextafter(1, 2), math.Nextafter(1, 0), math.Nextafter(0.5, 1), 4503599627370496.5}

func TestAppendFloat(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		if got, want := string(appendFloat([]byte("x"), f)), "x"+strconv.FormatFloat(f, 'g', -1, 64); got != want {
			t.Fatalf("appendFloat(%v [%#x]) = %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
	for _, f := range floatCases {
		check(f)
		check(-f)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		// Decimals of a few digits (what logs hold), their neighbours,
		// and any bits.
		d := float64(r.Int64N(1e12)) / math.Pow10(r.IntN(14))
		check(d)
		check(math.Nextafter(d, math.Inf(1)))
		check(math.Nextafter(d, 0))
		check(math.Float64frombits(r.Uint64()))
		check(r.Float64() * math.Pow10(r.IntN(12)-5))
	}
}

func FuzzAppendFloat(f *testing.F) {
	for _, x := range floatCases {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		if got, want := string(appendFloat(nil, x)), strconv.FormatFloat(x, 'g', -1, 64); got != want {
			t.Fatalf("appendFloat(%#x) = %s, want %s", bits, got, want)
		}
	})
}

func BenchmarkAppendFloat(b *testing.B) {
	for _, x := range []float64{0.5, 3.14159, 1.0 / 3, 1e21} {
		b.Run("f="+strconv.FormatFloat(x, 'g', -1, 64), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.Run("impl=sdk", func(b *testing.B) {
				for b.Loop() {
					buf = appendFloat(buf[:0], x)
				}
			})
			b.Run("impl=strconv", func(b *testing.B) {
				for b.Loop() {
					buf = strconv.AppendFloat(buf[:0], x, 'g', -1, 64)
				}
			})
		})
	}
}
