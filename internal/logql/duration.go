package logql

import (
	"fmt"
	"time"
)

// ParseDuration parses a duration as LogQL writes them: decimal numbers
// with units, Go's (ns us µs ms s m h) and Prometheus' d, w and y, as in
// 1h30m or 7d.
func ParseDuration(s string) (time.Duration, error) {
	d, ok := parseDuration(s)
	if !ok {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return d, nil
}
