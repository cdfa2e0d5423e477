package rules

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling thread has used (the
// goroutine must be locked to it), so that a benchmark can tell a batch's
// own work from the time its goroutine waited for a core.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// threadWait returns how long the calling thread has waited on the
// kernel's run queue (/proc/thread-self/schedstat's second field): time
// it was ready and another thread, of this process or another, had the
// core. 0 when the kernel does not say. The goroutine must be locked to
// its thread.
func threadWait() time.Duration {
	var buf [128]byte
	f, err := os.Open("/proc/thread-self/schedstat")
	if err != nil {
		return 0
	}
	n, _ := f.Read(buf[:])
	f.Close()
	b := buf[:n]
	i := 0
	for i < len(b) && b[i] != ' ' {
		i++
	}
	var v int64
	for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + int64(b[i]-'0')
	}
	return time.Duration(v)
}
