//go:build !amd64

package logfmt

// useAVX2 is false off amd64, so structuralAVX2 is never called there.
const useAVX2 = false

func structuralAVX2(p *byte, rem int, out *block, nblk int) bool {
	panic("logfmt: structuralAVX2 called without AVX2 (useAVX2 is false on this architecture)")
}
