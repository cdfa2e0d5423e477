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
	flag.Parse()
	if *data == "" || *q == "" {
		fmt.Fprintln(os.Stderr, "querycpu: -data and -query are required")
		os.Exit(2)
	}
	t, err := time.Parse(time.RFC3339Nano, *at)
	if err != nil {
		fmt.Fprintf(os.Stderr, "querycpu: -time: %v\n", err)
		os.Exit(2)
	}
	st, err := store.Open(store.Options{Dir: *data})
	if err != nil {
		fmt.Fprintf(os.Stderr, "querycpu: open %s: %v\n", *data, err)
		os.Exit(1)
	}
	defer st.Close()
	sn := st.Snapshot()
	defer sn.Release()
	e := query.NewEngine(query.Limits{})
	p := query.Params{Tenant: *tenant, Query: *q, Start: t.UnixNano(), End: t.UnixNano(), Instant: true}
	var took []time.Duration
	for i := range *warm + *runs {
		c0 := cpuTime()
		if _, err := e.Exec(context.Background(), sn, p); err != nil {
			fmt.Fprintf(os.Stderr, "querycpu: %v\n", err)
			os.Exit(1)
		}
		if i >= *warm {
			took = append(took, cpuTime()-c0)
		}
	}
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	fmt.Printf("median %.1f ms CPU, runs %v\n", ms(sorted[len(sorted)/2]), took)
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
