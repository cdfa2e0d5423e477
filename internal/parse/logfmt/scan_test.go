package logfmt

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// swarParser is Parser as it runs on machines without AVX2.
var swarParser = Parser{swar: true}

func TestParseSWAR(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parsetest.Run(swarParser, record.DefaultConfig(), []byte(tc.in), nil)
			check(t, got, tc.records, tc.errors)
		})
	}
	sample, err := os.ReadFile("testdata/sample.log")
	if err != nil {
		t.Fatal(err)
	}
	vec := parsetest.Run(Parser{}, record.DefaultConfig(), sample, nil)
	swar := parsetest.Run(swarParser, record.DefaultConfig(), sample, nil)
	if len(vec.Errors) != 0 || !slices.Equal(vec.Records, swar.Records) {
		t.Error("the sample parsed differently with the SWAR scans")
	}
}

// TestScans checks next, on the masks of structuralGeneric and of
// structural, and the SWAR scanners against a byte-by-byte scan, on lines
// made of the bytes that matter, from every position.
func TestScans(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab=\" \t\\\x80é0"
	stops := [4]func(c byte) bool{
		mStart:  func(c byte) bool { return c > ' ' },
		mSpace:  func(c byte) bool { return c <= ' ' },
		mKeyEnd: func(c byte) bool { return c <= ' ' || c == '=' || c == '"' },
		mQuoted: func(c byte) bool { return c == '"' || c == '\\' },
	}
	// The SWAR scans stop at bytes >= 0x80 too, but for skipSpace.
	scans := [4]func(b []byte, i int) int{
		mStart:  skipSpace,
		mSpace:  scanUnquoted,
		mKeyEnd: scanKey,
		mQuoted: scanQuoted,
	}
	for range 2000 {
		n := r.IntN(300)
		line := make([]byte, n, n+r.IntN(80))
		// Some lines have long runs of plain bytes: tokens that cross one
		// or more blocks.
		plain := r.IntN(4) == 0
		for i := range line {
			if line[i] = alphabet[r.IntN(len(alphabet))]; plain && r.IntN(100) > 0 {
				line[i] = 'a'
			}
		}
		data := line[:cap(line)] // bytes past the line must not matter
		for i := n; i < len(data); i++ {
			data[i] = alphabet[r.IntN(len(alphabet))]
		}
		wantHigh := false
		for _, c := range line {
			wantHigh = wantHigh || c >= 0x80
		}
		m := make([]block, numBlocks(n))
		if high := structuralGeneric(data, n, m); high != wantHigh {
			t.Fatalf("%q: structuralGeneric says high %v, want %v", line, high, wantHigh)
		}
		if useAVX2 {
			vec := make([]block, numBlocks(n))
			if high := structural(data, n, vec); high != wantHigh || !slices.Equal(vec, m) {
				t.Fatalf("%q: structural differs from structuralGeneric", line)
			}
		}
		for x, stop := range stops {
			for i := 0; i <= n+1; i++ {
				want := i
				for want < n && !stop(line[want]) {
					want++
				}
				if got := next(m, x, i); got != want {
					t.Fatalf("%q: next(mask %d, %d) = %d, want %d", line, x, i, got, want)
				}
				want = i
				for want < n && !stop(line[want]) && (x == mStart || line[want] < 0x80) {
					want++
				}
				if got := scans[x](line, i); got != want {
					t.Fatalf("%q: SWAR scan for mask %d from %d = %d, want %d", line, x, i, got, want)
				}
			}
		}
	}
}

// FuzzStructural checks the AVX2 structural pass against structuralGeneric.
func FuzzStructural(f *testing.F) {
	if !useAVX2 {
		f.Skip("no AVX2")
	}
	for _, tc := range cases {
		f.Add([]byte(tc.in), 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, past int) {
		n := len(data) - min(max(past, 0), len(data)) // bytes past the line must not matter
		m1 := make([]block, numBlocks(n))
		m2 := make([]block, numBlocks(n))
		h1 := structural(data, n, m1)
		h2 := structuralGeneric(data, n, m2)
		if h1 != h2 || !slices.Equal(m1, m2) {
			t.Fatalf("%q (line of %d bytes): AVX2 %v %x, generic %v %x", data, n, h1, m1, h2, m2)
		}
	})
}

// TestNoAllocsLong is TestNoAllocs for a line whose masks do not fit on
// the stack, and for the SWAR scans.
func TestNoAllocsLong(t *testing.T) {
	long := strings.Repeat(`k=v url=/a?b=c msg="hello there" `, 40)
	for _, p := range []struct {
		name   string
		parser lines.Parser
	}{{"vec", Parser{}}, {"swar", swarParser}} {
		if n := parsetest.AllocsPerLine(t, p.parser, long); n != 0 {
			t.Errorf("%s: %v allocs per line of %d bytes, want 0", p.name, n, len(long))
		}
	}
}

func TestClassifyWord(t *testing.T) {
	values := []string{
		"0", "1", "-", "-0", "-1", "00", "01", "10", "12345678", "123456789", "-1234567", "-12345678",
		"-123456789", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "18446744073709551616", "1.5", "1.", "1e", "1e3", "1E+3", "-2.5E-3",
		"0.5", "00.5", "-0.5", "-.5", "1e999", "1.5ms", "31.632ms", "2026-01-15T08:00:00Z", "1.5.5",
		"1x", "12345678x", "1234567.8", "t", "true", "truex", "tru", "f", "false", "falsey", "fals",
		"-x", "--1", "1-", "0x10", "1.5e3.", "1e+", "1e-5",
	}
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "0123456789-+.eEx"
	for range 20000 {
		v := make([]byte, 1+r.IntN(24))
		for i := range v {
			v[i] = alphabet[r.IntN(len(alphabet))]
		}
		values = append(values, string(v))
	}
	for _, v := range values {
		if !typed[v[0]] {
			continue
		}
		wantKind, wantNum := classify([]byte(v))
		for _, pad := range []string{"", " ", "\n", "0000000", "1.5e9", "\xff\xff\xff\xff\xff\xff\xff"} {
			buf := []byte(v + pad + "\x00\x00\x00\x00\x00\x00\x00\x00")
			kind, num := classifyWord([]byte(v), binary.LittleEndian.Uint64(buf))
			if kind != wantKind || num != wantNum {
				t.Fatalf("classifyWord(%q) followed by %q = %v, %d; classify: %v, %d", v, pad, kind, num, wantKind, wantNum)
			}
		}
	}
}

// low is the SWAR constant of the low seven bits of each byte.
const low = 0x7f7f7f7f7f7f7f7f

// structuralGeneric is structural eight bytes at a time: the reference
// the AVX2 pass is checked against. Only data[:n] is read.
func structuralGeneric(data []byte, n int, m []block) bool {
	data = data[:n]
	var high uint64
	for k := range m {
		end := ^uint64(0)
		if r := n - 64*k; r >= 64 {
			end = 0
		} else if r > 0 {
			end <<= r
		}
		var space, eqQuote, quoteEsc, hi uint64
		for j := 0; j < 64 && 64*k+j < n; j += 8 {
			var x uint64
			if p := 64*k + j; p+8 <= n {
				x = binary.LittleEndian.Uint64(data[p:])
			} else {
				for q := n - 1; q >= p; q-- {
					x = x<<8 | uint64(data[q])
				}
			}
			space |= gather(^((x&low+(0x7f-' ')*lsb)|x)&msb) << j
			eqQuote |= gather(eqFlags(x, '=')|eqFlags(x, '"')) << j
			quoteEsc |= gather(eqFlags(x, '"')|eqFlags(x, '\\')) << j
			hi |= gather(x&msb) << j
		}
		high |= hi &^ end
		m[k] = block{
			mStart:  ^space | end,
			mSpace:  space | end,
			mKeyEnd: space | eqQuote | end,
			mQuoted: quoteEsc | end,
		}
	}
	return high != 0
}

// eqFlags sets the high bit of each byte of x equal to c, exactly.
func eqFlags(x uint64, c byte) uint64 {
	y := x ^ lsb*uint64(c)
	return ^((y&low + low) | y) & msb
}

// gather packs the high bits of the eight bytes of m into its low byte.
// REQUIRES: m has no bit set but the bytes' high bits.
func gather(m uint64) uint64 {
	return (m >> 7) * 0x0102040810204080 >> 56
}
