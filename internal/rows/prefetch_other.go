//go:build !amd64

package rows

func prefetch(p *byte, n int) {}
