// Command querycpu runs one LogQL question over a store directory in
// this process, several times, and prints the CPU time (user and system)
// each run took: a measure of the engine alone, without HTTP, JSON or a
// client, that resolves a few percent where timed HTTP requests on a
// shared machine do not. bench/ab.sh builds it from two commits and
// alternates them on one question.
//
// The store is opened as the server opens it (it takes the directory's
// lock: use a copy of a server's data directory, or one no server has
// open).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/sluicelog/sluice/internal/query"
	"github.com/sluicelog/sluice/internal/store"
)

func main() {
	data := flag.String("data", "", "the store's directory")
	q := flag.String("query", "", "the LogQL question")
	at := flag.String("time", "2026-01-17T00:00:00Z", "the instant it is asked at (RFC 3339)")
	tenant := flag.String("tenant", store.DefaultTenant, "the tenant")
	runs := flag.Int("runs", 10, "timed runs")
	warm := flag.Int("warm", 2, "untimed runs first (the block cache fills)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the timed runs to this file")
	memProfile := flag.String("memprofile", "", "write a profile of what the timed runs allocated to this file")
	quiet := flag.Bool("q", false, "print only the median and the rows read")
	over := flag.Duration("range", 0, "ask a range query over this long before -time instead (a log query: -limit lines, newest first)")
	limit := flag.Int("limit", 100, "a range log query's lines")
	forward := flag.Bool("forward", false, "a range log query's lines oldest first")
	step := flag.Duration("step", 0, "with -range, a metric query's step")
	cache := flag.Int64("block-cache-bytes", 1<<30, "the block cache's budget (the server's default with 16 GiB of memory or more)")
	var before []string
	beforeAt := flag.String("before-time", "", "the instant the -before questions are asked at (default -time)")
	flag.Func("before", "a question asked once (at -before-time) before the runs, as another user's would fill the block cache first (repeatable)", func(q string) error {
		before = append(before, q)
		return nil
	})
	floor := flag.Int64("gc-floor", 256<<20, "bytes of heap allocated and never touched, as `sluice serve` keeps a quarter of its block cache's budget, so that the collector paces as the server's does (0: none)")
	prefault := flag.Int64("prefault", 512<<20, "bytes of heap touched and freed before the runs, so that the runs reuse memory as a server that has answered for a while does instead of faulting fresh pages in (0: none)")
	flag.Parse()
	ballast := make([]byte, max(*floor, 0))
	defer runtime.KeepAlive(ballast)
	touchHeap(*prefault)
	if *data == "" || *q == "" {
		fmt.Fprintln(os.Stderr, "querycpu: -data and -query are required")
		os.Exit(2)
	}
	t, err := time.Parse(time.RFC3339Nano, *at)
	if err != nil {
		fmt.Fprintf(os.Stderr, "querycpu: -time: %v\n", err)
		os.Exit(2)
	}
	st, err := store.Open(store.Options{Dir: *data, BlockCacheBytes: *cache})
	if err != nil {
		fmt.Fprintf(os.Stderr, "querycpu: open %s: %v\n", *data, err)
		os.Exit(1)
	}
	defer st.Close()
	// A snapshot per question, as the server takes one per request (what
	// a snapshot's reads retire from the block cache waits for its
	// release).
	e := query.NewEngine(query.Limits{})
	exec := func(p query.Params) (*query.Result, error) {
		sn := st.Snapshot()
		defer sn.Release()
		return e.Exec(context.Background(), sn, p)
	}
	p := query.Params{Tenant: *tenant, Query: *q, Start: t.UnixNano(), End: t.UnixNano(), Instant: true}
	if *over > 0 {
		p = query.Params{Tenant: *tenant, Query: *q, Start: t.Add(-*over).UnixNano(), End: t.UnixNano(), Limit: *limit, Direction: query.Backward, Step: *step}
		if *forward {
			p.Direction = query.Forward
		}
	}
	bt := t
	if *beforeAt != "" {
		if bt, err = time.Parse(time.RFC3339Nano, *beforeAt); err != nil {
			fmt.Fprintf(os.Stderr, "querycpu: -before-time: %v\n", err)
			os.Exit(2)
		}
	}
	for _, b := range before {
		bp := query.Params{Tenant: *tenant, Query: b, Start: bt.UnixNano(), End: bt.UnixNano(), Instant: true}
		if _, err := exec(bp); err != nil {
			fmt.Fprintf(os.Stderr, "querycpu: -before %s: %v\n", b, err)
			os.Exit(1)
		}
	}
	var took, walls []time.Duration
	var last *query.Result
	for i := range *warm + *runs {
		if i == *warm && *memProfile != "" {
			runtime.MemProfileRate = 64 << 10
		}
		if i == *warm && *profile != "" {
			stop, err := startProfile(*profile)
			if err != nil {
				fmt.Fprintf(os.Stderr, "querycpu: -cpuprofile: %v\n", err)
				os.Exit(1)
			}
			defer stop()
		}
		c0, w0 := cpuTime(), time.Now()
		res, err := exec(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "querycpu: %v\n", err)
			os.Exit(1)
		}
		last = res
		if i >= *warm {
			took = append(took, cpuTime()-c0)
			walls = append(walls, time.Since(w0))
		}
	}
	if *memProfile != "" {
		if err := writeAllocs(*memProfile); err != nil {
			fmt.Fprintf(os.Stderr, "querycpu: -memprofile: %v\n", err)
			os.Exit(1)
		}
	}
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	slices.Sort(walls)
	if *quiet {
		st := last.Stats
		fmt.Printf("median %.2f ms CPU, %.2f ms wall; rows %d, from columns %d, swept %d\n", ms(sorted[len(sorted)/2]), ms(walls[len(walls)/2]), st.Rows, st.RowsColumnar, st.RowsSwept)
		return
	}
	fmt.Printf("median %.1f ms CPU, runs %v\n", ms(sorted[len(sorted)/2]), took)
}

// writeAllocs writes the heap profile, whose alloc_space counts what was
// allocated since MemProfileRate was set.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile counts allocations up to the last collection
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startProfile starts a CPU profile into path; the function it returns
// stops it and closes the file.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// touchHeap allocates n bytes of heap in 1 MiB pieces, writes a byte of
// every page, and lets the collector free them: the heap then holds that
// much memory already faulted in, as a server's does after its first
// queries. Without it, a question that allocates much pays first-touch
// page faults in every run (the heap grows toward a target that the
// collector floor raises), which a warm server does not: 53 ms of system
// time in a 180 ms run of a count of 400,000 distinct users.
func touchHeap(n int64) {
	pieces := make([][]byte, 0, n>>20)
	for range n >> 20 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		pieces = append(pieces, b)
	}
	runtime.KeepAlive(pieces)
	pieces = nil
	runtime.GC()
}
