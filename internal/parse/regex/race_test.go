//go:build race

package regex

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// regexp's pooled matchers allocate and allocation counts mean nothing.
const raceEnabled = true
