//go:build !amd64

package literal

// useAVX2 is false off amd64, so pairsAVX2 is never called there.
var useAVX2 = false

func pairsAVX2(s []byte, a0, b0, a1, b1, orA0, orB0, orA1, orB1 byte) (at int, found bool) {
	panic("literal: pairsAVX2 called without AVX2 (useAVX2 is false on this architecture)")
}
