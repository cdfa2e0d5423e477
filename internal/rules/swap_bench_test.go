package rules

import (
	"context"
	"fmt"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSwapPause measures what a reload costs a goroutine that
// applies batches and never waits on the reload, as an ingest goroutine
// does, in two parts kept apart:
//
//   - the compile (the reload's parse, check and compile, on another
//     goroutine, as Live.Reload runs it): the batches applied while it
//     runs against those applied before it, on the same goroutine
//     (compile-p50-us, compile-max-us against steady-p50-us,
//     steady-max-us). What the compile adds is mostly waiting, not
//     work (cpu-compile-max-us): its allocations start GC cycles whose
//     fractional mark workers (GOMAXPROCS=2 has no dedicated one) take
//     a P for a quarter of the mark phase, in stretches of up to ~30% of
//     its time so far when the P's goroutine ran without scheduling;
//     and the compile itself holds a P between its yields (see
//     yielder) and for the steps that do not yield (the literal gate of
//     all the rules' literals, rebuilt when they all changed).
//   - the swap (one pointer store, after the compile is done): the pause
//     between the last batch under the old set and the first under the
//     new, net of a steady batch: the end of the first new batch less
//     the end of the last old one, less the steady median (pause-us,
//     the mean; pause-max-us). This is what the new set's first batch
//     costs more: an evaluator of its own, the streams' rules decided
//     again, pipelines compiled on first use.
//
// compile-step-max-us is the longest any compile ran without yielding
// (see yielder), in CPU time of the compile's thread: the most the
// compile held a core at once.
//
// Each batch's own CPU time is measured too (its thread's, Linux only):
// cpu-steady-p50-us and cpu-compile-max-us against the batches' wall
// time say whether a slow batch worked longer or waited longer (for a
// core, taken by the compile, by the GC's mark workers or by another
// process). And the time its thread waited on the kernel's run queue
// (Linux): net-steady-max-us and net-compile-max-us are the longest
// batches less that wait, what this process did to them on a machine
// that other processes share. Each batch is a runtime/trace region
// "apply", each compile a region "compile", for -trace.
//
// Each iteration reloads a file of n rules that differs from the
// running one in one rule's literal (change=one) or in every rule's
// (change=all), as BenchmarkCompile's from=prev and from=none.
//
//	go test -run '^$' -bench SwapPause -benchtime 20x ./internal/rules/
func BenchmarkSwapPause(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, all := range []bool{false, true} {
			change := "one"
			if all {
				change = "all"
			}
			b.Run(fmt.Sprintf("rules=%d/change=%s", n, change), func(b *testing.B) { benchSwapPause(b, n, all) })
		}
	}
}

// span is one batch applied: when it started and ended, and under which
// version of the set (a count, not the *Set: holding every version would
// grow the heap the GC marks, and so the mark phases measured, with
// each iteration).
type span struct {
	start, end time.Time
	cpu        time.Duration // the batch's own CPU time
	// osWait is the time the batch's thread waited on the kernel's run
	// queue: a core another process (or thread) had.
	osWait  time.Duration
	version int
}

func benchSwapPause(b *testing.B, n int, all bool) {
	src := genRules(n)
	// Two versions, alternated, made before the loop: making one (a
	// ReplaceAll over the file) inside the compile's window is work the
	// compile does not do.
	var versions [2][]byte
	for k := range versions {
		if all {
			versions[k] = []byte(strings.ReplaceAll(src, `"/path/`, fmt.Sprintf(`"/path/v%d-`, k)))
		} else {
			versions[k] = []byte(strings.Replace(src, `"/path/0"`, fmt.Sprintf(`"/path/v%d"`, k), 1))
		}
	}
	version := func(k int) []byte { return versions[k%2] }
	// The counters a server keeps across reloads, by rule name.
	m := NewMetrics(nil)
	first, err := Compile("rules.yaml", version(0), m)
	if err != nil {
		b.Fatal(err)
	}
	l := &Live{file: "rules.yaml"}
	l.swap(first)
	batch := parseLines(b, genLines(100)...)
	data, recs, fields := batch.Data, batch.Records, batch.Fields

	var mu sync.Mutex
	var spans []span
	var stop atomic.Bool
	// applied counts the batches; waitFor blocks until it reaches k.
	var applied int64
	cond := sync.NewCond(&mu)
	waitFor := func(k int64) {
		mu.Lock()
		for applied < k {
			cond.Wait()
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // for threadCPU
		defer runtime.UnlockOSThread()
		ctx := context.Background()
		c := *batch
		c.Data, c.Records, c.Fields = nil, nil, nil // rules change a batch in place
		var last *Set
		ver := 0
		for !stop.Load() {
			c.Data = append(c.Data[:0], data...)
			c.Records = append(c.Records[:0], recs...)
			c.Fields = append(c.Fields[:0], fields...)
			c.ClearSelection()
			w0 := threadWait()
			start, cpu0 := time.Now(), threadCPU()
			s := l.Current()
			region := trace.StartRegion(ctx, "apply")
			s.Apply(&c)
			region.End()
			end, cpu := time.Now(), threadCPU()-cpu0
			osWait := threadWait() - w0
			if s != last {
				last, ver = s, ver+1
			}
			mu.Lock()
			spans = append(spans, span{start, end, cpu, osWait, ver})
			applied++
			cond.Broadcast()
			mu.Unlock()
		}
	}()
	type window struct{ from, to time.Time } // a compile
	var windows []window
	var step time.Duration // the compiles' longest step (yielder)
	runtime.LockOSThread() // the compiles' thread, for threadCPU
	defer runtime.UnlockOSThread()
	k := 0
	for b.Loop() {
		k++
		mu.Lock()
		target := applied + 50
		mu.Unlock()
		waitFor(target) // steady batches under the running set
		from := time.Now()
		region := trace.StartRegion(context.Background(), "compile")
		y := yielder{clock: threadCPU}
		next, err := compileWith("rules.yaml", version(k), m, l.Current(), &y)
		region.End()
		step = max(step, y.longest)
		to := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		target = applied + 5
		mu.Unlock()
		waitFor(target) // batches between the compile and the swap
		l.swap(next)
		windows = append(windows, window{from, to})
	}
	mu.Lock()
	target := applied + 50
	mu.Unlock()
	waitFor(target)
	stop.Store(true)
	wg.Wait()

	// Each batch is one of: applied while a compile ran; the first under
	// its set (but the very first); or steady.
	var steady, during, pause, cpuSteady, cpuDuring, netSteady, netDuring []time.Duration
	for i, sp := range spans {
		overlaps := false
		for _, w := range windows {
			if sp.start.Before(w.to) && sp.end.After(w.from) {
				overlaps = true
				break
			}
		}
		switch {
		case overlaps:
			during = append(during, sp.end.Sub(sp.start))
			netDuring = append(netDuring, sp.end.Sub(sp.start)-sp.osWait)
			cpuDuring = append(cpuDuring, sp.cpu)
		case i > 0 && spans[i-1].version != sp.version:
			pause = append(pause, sp.end.Sub(spans[i-1].end))
		case i > 0:
			steady = append(steady, sp.end.Sub(sp.start))
			netSteady = append(netSteady, sp.end.Sub(sp.start)-sp.osWait)
			cpuSteady = append(cpuSteady, sp.cpu)
		}
	}
	for _, d := range [][]time.Duration{steady, during, cpuSteady, cpuDuring, netSteady, netDuring} {
		slices.Sort(d)
	}
	med := quantileDur(steady, 0.5)
	for i := range pause {
		pause[i] -= med
	}
	slices.Sort(pause)
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	b.ReportMetric(us(med), "steady-p50-us")
	b.ReportMetric(us(quantileDur(steady, 1)), "steady-max-us")
	b.ReportMetric(us(quantileDur(during, 0.5)), "compile-p50-us")
	b.ReportMetric(us(quantileDur(during, 1)), "compile-max-us")
	b.ReportMetric(us(quantileDur(pause, 0.5)), "pause-p50-us")
	b.ReportMetric(us(quantileDur(pause, 1)), "pause-max-us")
	b.ReportMetric(us(quantileDur(cpuSteady, 0.5)), "cpu-steady-p50-us")
	b.ReportMetric(us(quantileDur(cpuDuring, 1)), "cpu-compile-max-us")
	b.ReportMetric(us(step), "compile-step-max-us")
	b.ReportMetric(us(quantileDur(netSteady, 1)), "net-steady-max-us")
	b.ReportMetric(us(quantileDur(netDuring, 1)), "net-compile-max-us")
}

// quantileDur returns the q-quantile (0 to 1) of sorted durations; 0 for
// none.
func quantileDur(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// BenchmarkFirstBatch reports what the first batch under a new set
// costs (batch=first) against the next one under it (batch=second): a
// reload of a file of 10,000 rules that changed one rule's literal,
// compiled untimed from the running set after it applied a batch, then
// a 100-line batch applied under it. The difference is what the swap
// leaves to the ingest goroutine that takes the new set first.
//
//	go test -run '^$' -bench FirstBatch -benchtime 30x ./internal/rules/
func BenchmarkFirstBatch(b *testing.B) {
	for _, second := range []bool{false, true} {
		name := "batch=first"
		if second {
			name = "batch=second"
		}
		b.Run(name, func(b *testing.B) { benchFirstBatch(b, second) })
	}
}

func benchFirstBatch(b *testing.B, second bool) {
	src := genRules(10000)
	batch := parseLines(b, genLines(100)...)
	data, recs, fields := batch.Data, batch.Records, batch.Fields
	apply := func(s *Set) {
		c := *batch
		c.Data = append([]byte(nil), data...)
		c.Records = append(c.Records[:0:0], recs...)
		c.Fields = append(c.Fields[:0:0], fields...)
		c.ClearSelection()
		s.Apply(&c)
	}
	cur, err := Compile("rules.yaml", []byte(src), nil)
	if err != nil {
		b.Fatal(err)
	}
	apply(cur)
	k := 0
	for b.Loop() {
		b.StopTimer()
		k++
		next, err := compileFrom("rules.yaml", []byte(strings.Replace(src, `"/path/0"`, fmt.Sprintf(`"/path/v%d"`, k), 1)), nil, cur)
		if err != nil {
			b.Fatal(err)
		}
		if second {
			apply(next)
		}
		b.StartTimer()
		apply(next)
		cur = next
	}
}
