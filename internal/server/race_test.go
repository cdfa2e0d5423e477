//go:build race

package server

// raceEnabled: the race detector makes sync.Pool drop items at random (the
// pooled exchanges, bodies and parsers then allocate), so allocation
// counts mean nothing.
const raceEnabled = true
