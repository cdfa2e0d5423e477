//go:build race

package stage

// raceEnabled: the race detector slows regexps tenfold; the corpus tests
// then take a sample of their lines.
const raceEnabled = true
