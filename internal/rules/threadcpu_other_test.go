//go:build !linux

package rules

import "time"

// threadCPU is not measured here: 0.
func threadCPU() time.Duration { return 0 }

// threadWait is not measured here: 0.
func threadWait() time.Duration { return 0 }
