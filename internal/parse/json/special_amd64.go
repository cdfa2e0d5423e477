package json

import "golang.org/x/sys/cpu"

// useAVX2 selects the vectorized special-byte search.
var useAVX2 = cpu.X86.HasAVX2

// specialBlocks is implemented in special_amd64.s.
//
//go:noescape
func specialBlocks(b []byte) int
