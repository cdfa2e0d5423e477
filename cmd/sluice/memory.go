package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/sluicelog/sluice/internal/store"
)

// defaultMaxHeadBytes is the memory the heads not yet flushed may hold by
// default: an eighth of the memory, at most 1 GiB (a burst of a few million
// lines is stored at the speed of the WAL, then flushed), and at least the
// two heads a store needs to flush one while the other fills.
func defaultMaxHeadBytes(headBytes int64) int64 {
	budget := int64(1 << 30)
	if m := memoryBytes(); m > 0 {
		budget = min(budget, m/8)
	}
	return max(budget, 2*headBytes)
}

// defaultBlockCacheBytes is the memory the block cache may hold by
// default: a sixteenth of the memory, from 64 MiB to 1 GiB.
func defaultBlockCacheBytes() int64 {
	budget := int64(store.DefaultBlockCacheBytes)
	if m := memoryBytes(); m > 0 {
		budget = min(max(m/16, 64<<20), 1<<30)
	}
	return budget
}

// gcFloor returns a heap allocation of n bytes that the caller keeps and
// never touches: the collector counts it live, so its heap target is at
// least 2n, while its pages, never written, are not resident. The block
// cache is outside the heap; without a floor a server whose live heap is
// a few tens of MB collects every few tens of MB a query allocates, and
// queries that build large maps or clear pointer slices under the write
// barrier ran 20-60% slower (`querycpu -gc-floor 0`). With it, the garbage
// between collections is at most what is live and n.
func gcFloor(n int64) []byte {
	if n <= 0 || os.Getenv("GOGC") != "" { // GOGC set: the user paces the collector
		return nil
	}
	return make([]byte, n)
}

// defaultGCFloor is the heap a server's collector may fill before it
// runs: a quarter of the block cache's budget (256 MiB for the largest
// default cache).
func defaultGCFloor(blockCacheBytes int64) int64 { return max(blockCacheBytes, 0) / 4 }

// paceMemoryLimit sets the Go heap's soft limit every second to base and
// what of the block cache's budget its memory does not hold: the cache is
// outside the heap, and while it is empty (a server that mostly ingests)
// the heap may use its share. With the cache's budget left out, sustained
// ingest past what the heads buffer (`ROUNDS=4 bench/http.sh`) ran at
// 162-172k lines/s against 284-308k, the collector running against the
// limit. Returns when ctx is done.
func paceMemoryLimit(ctx context.Context, base, budget int64, resident func() int64) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		debug.SetMemoryLimit(base + max(budget-resident(), 0))
	}
}

// defaultQueryMemory is the memory one query may hold by default (its
// series, windows and lines, query.Limits.MaxMemory): an eighth of the
// memory, from 512 MiB to 4 GiB. A high-cardinality question (a series per
// user among millions of lines) needs a few hundred MB.
func defaultQueryMemory() int64 {
	budget := int64(1 << 30)
	if m := memoryBytes(); m > 0 {
		budget = min(max(m/8, 512<<20), 4<<30)
	}
	return budget
}

// queryMemory is the query memory limit a flag or key asks for: 0 the
// default, below 0 none.
func queryMemory(v int64) int64 {
	switch {
	case v == 0:
		return defaultQueryMemory()
	case v < 0:
		return 0
	}
	return v
}

// memoryBytes is the memory this process may use: its cgroup's limit
// (v2, then v1) when it has one, else the machine's. 0 when unknown.
func memoryBytes() int64 {
	total := memTotal()
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
		if err != nil || n <= 0 { // "max": no limit
			continue
		}
		if total == 0 || n < total {
			return n
		}
	}
	return total
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
