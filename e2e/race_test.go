//go:build race

package e2e

// raceEnabled builds the sluice binary under test with -race too, so that
// the race detector watches the server while real clients drive it.
const raceEnabled = true
