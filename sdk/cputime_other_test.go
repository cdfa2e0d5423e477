//go:build !linux

package sdk

import "time"

// threadCPU is not measured here.
func threadCPU() (time.Duration, bool) { return 0, false }
