package literal

import "golang.org/x/sys/cpu"

// useAVX2 selects the vectorized pair search.
var useAVX2 = cpu.X86.HasAVX2

// pairsAVX2 is implemented in pairs_amd64.s.
//
//go:noescape
func pairsAVX2(s []byte, a0, b0, a1, b1, orA0, orB0, orA1, orB1 byte) (at int, found bool)
