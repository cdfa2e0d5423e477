package main

import "testing"

func TestDefaultMaxHeadBytes(t *testing.T) {
	if memTotal() <= 0 {
		t.Fatal("MemTotal not read from /proc/meminfo")
	}
	m := memoryBytes()
	got := defaultMaxHeadBytes(64 << 20)
	if want := max(min(1<<30, m/8), 128<<20); got != want {
		t.Errorf("defaultMaxHeadBytes(64 MiB) = %d with %d bytes of memory, want %d", got, m, want)
	}
	if got := defaultMaxHeadBytes(1 << 30); got != 2<<30 {
		t.Errorf("defaultMaxHeadBytes(1 GiB) = %d, want twice the head", got)
	}
}
