//go:build !amd64

package json

// useAVX2 is false off amd64, so specialBlocks is never called there.
const useAVX2 = false

func specialBlocks(b []byte) int {
	panic("json: specialBlocks called without AVX2 (useAVX2 is false on this architecture)")
}
