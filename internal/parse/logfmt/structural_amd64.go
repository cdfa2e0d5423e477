package logfmt

import "golang.org/x/sys/cpu"

// useAVX2 selects the vectorized structural pass.
var useAVX2 = cpu.X86.HasAVX2

// structuralAVX2 is implemented in structural_amd64.s.
//
//go:noescape
func structuralAVX2(p *byte, rem int, out *block, nblk int) bool
