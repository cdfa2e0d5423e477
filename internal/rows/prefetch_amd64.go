package rows

// prefetch asks the CPU to start loading [p, p+n) into its caches; it
// never faults. REQUIRES: n > 0.
//
//go:noescape
func prefetch(p *byte, n int)
