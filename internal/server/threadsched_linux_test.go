package server

import (
	"os"
	"time"
)

// threadSched reads how long one thread has waited on the kernel's run
// queue (/proc/thread-self/schedstat's second field): time it was ready
// to run and another thread, of this process or another, had the core.
// The goroutine that opens it must stay locked to its thread.
type threadSched struct {
	f   *os.File
	buf [128]byte
}

// openThreadSched opens the calling thread's schedstat, or returns nil
// when the kernel has none (a nil *threadSched reads 0).
func openThreadSched() *threadSched {
	f, err := os.Open("/proc/thread-self/schedstat")
	if err != nil {
		return nil
	}
	return &threadSched{f: f}
}

// wait returns the thread's time on the run queue so far; 0 when
// unknown.
func (t *threadSched) wait() time.Duration {
	if t == nil {
		return 0
	}
	n, _ := t.f.ReadAt(t.buf[:], 0) // a short read ends in io.EOF
	b := t.buf[:n]
	// "run wait slices\n": skip run.
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

func (t *threadSched) close() {
	if t != nil {
		t.f.Close()
	}
}
