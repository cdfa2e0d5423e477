//go:build !linux

package server

import "time"

// threadSched is the kernel's run queue wait of a thread, known on Linux
// only (threadsched_linux_test.go).
type threadSched struct{}

func openThreadSched() *threadSched { return nil }

func (t *threadSched) wait() time.Duration { return 0 }

func (t *threadSched) close() {}
