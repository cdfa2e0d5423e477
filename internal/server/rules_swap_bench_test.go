package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/rules"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// swapRules writes n rules as operators write them (literal filters per
// service and path, some regexps, a few redactions), the last of which
// tags every line with version v. With all, every rule's literal says v
// too, so that no match of one version is the other's.
func swapRules(n int, v string, all bool) string {
	lit := ""
	if all {
		lit = "-" + v
	}
	var sb strings.Builder
	sb.WriteString("rules:\n")
	for i := range n - 1 {
		svc := fmt.Sprintf("svc%d", i%50)
		fmt.Fprintf(&sb, "  - name: r%d\n", i)
		switch {
		case i%10 < 7:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"} |= \"/path/%d%s\"'\n    drop: true\n", svc, i, lit)
		case i%10 < 9:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"} |~ \"(timeout|refused) on shard-%d%s\"'\n    metric: {name: m%d, labels: [service]}\n", svc, i, lit, i)
		default:
			fmt.Fprintf(&sb, "    match: '{service=\"%s\"}'\n    redact: {detectors: [email]}\n", svc)
		}
	}
	fmt.Fprintf(&sb, "  - name: version\n    set_labels: {v: %s}\n", v)
	return sb.String()
}

// BenchmarkIngestAcrossSwap measures what swapping a 10,000-rule file
// costs the ingest requests in flight (the target: none paused
// by more than 10 ms). Four clients (clients=4), or one (clients=1),
// push 100-line /insert/jsonline
// requests flat out through the handler (no network) while each
// iteration replaces the rules with PUT /api/v1/rules through the same
// handler (read the body, compile, write the file, one pointer store,
// answer), alternating two versions, then lets each client answer 20
// requests more before the next (not timed). It reports the longest
// request that overlapped a swap (max-ms-swap), the longest that did not
// (max-ms-other), the 99th percentile of each (p99-ms-swap,
// p99-ms-other), and the swap's own time (ms/swap).
//
// The clients are not locked to their threads (as a kernel-side measure
// of each request's run queue wait would need): in traces of this
// benchmark a locked client sat runnable for 100-175 ms while a P was
// idle, a wait no handler of a server has. On a machine others use, read
// the figures with runtime/trace (requests and swaps are regions): a
// request's time runnable while the compile or a GC worker held a P is
// what the swap did to it.
// Four clients keep a machine of two cores busy: every request waits for
// the others' (the steady p99 is over 10 ms here with no swap at all),
// and the compile's CPU, however it yields, takes a share of the cores
// from all of them. One client leaves a core to the compile and the GC:
// what a swap adds to its requests is the interference itself (waits for
// a P the compile or the GC's workers hold, assists, locks), the figure
// to hold to 10 ms.
// change=one: the versions differ in the last rule (a reload keeps what
// the running set compiled of the others); change=all: in every rule's
// literal (the whole file compiled, as at a start).
//
// swap=false is the control: the same PUTs with ?dry_run=1, which
// compile the same file from the same running set (the same CPU and the
// same allocations) but neither write nor swap it. What swap=true adds
// over it is the swap's own cost (and the file's write); what the
// control adds over the requests that overlap nothing is the compile's:
// its share of the cores and its allocations' GC assists.
//
//	go test -run '^$' -bench IngestAcrossSwap -benchtime 20x ./internal/server/
func BenchmarkIngestAcrossSwap(b *testing.B) {
	for _, all := range []bool{false, true} {
		for _, clients := range []int{4, 1} {
			for _, swap := range []bool{true, false} {
				name := "change=one"
				if all {
					name = "change=all"
				}
				name += fmt.Sprintf("/clients=%d/swap=%v", clients, swap)
				b.Run(name, func(b *testing.B) { benchIngestAcrossSwap(b, all, clients, swap) })
			}
		}
	}
}

func benchIngestAcrossSwap(b *testing.B, all bool, clients int, swap bool) {
	const rulesN, perRequest = 10000, 100
	file := filepath.Join(b.TempDir(), "rules.yaml")
	versions := [2][]byte{[]byte(swapRules(rulesN, "a", all)), []byte(swapRules(rulesN, "b", all))}
	if err := os.WriteFile(file, versions[0], 0o644); err != nil {
		b.Fatal(err)
	}
	live, err := rules.Open(file, rules.NewMetrics(nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	// The WAL's segments are small: in vfs.Mem a segment is a slice
	// grown by appends, regrown and copied as it grows (and held twice,
	// written and synced). With the default 64 MB, traces of this
	// benchmark showed the WAL's goroutine running 50-140 ms in
	// memFile.Write now and then, and every request waiting for its
	// commit, swap or not, waiting as long.
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data", Logger: quiet, WALSegmentSize: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cfg := plainConfig()
	cfg.Rules = live
	h := New(cfg, st, quiet, prometheus.NewRegistry()).Handler()

	var body bytes.Buffer
	for i := range perRequest {
		fmt.Fprintf(&body, `{"service":"svc%d","msg":"GET /users/%d 200 from bob@example.com","took_ms":%d}`+"\n", i%60, i, i)
	}
	// swapping is the number of swaps under way; a request that saw it
	// above 0 at its start or end, or saw swaps change, overlapped one.
	var swapping, swaps atomic.Int64
	var mu sync.Mutex
	// The latencies of the requests that overlapped a swap and of the
	// others: the longest of each is one request, which on a shared
	// machine a neighbour's burst or the store's flush can make; their
	// 99th percentiles say what the swap does to the many.
	var swapLat, otherLat []time.Duration
	var failed atomic.Value
	// done counts the requests answered; after each swap the benchmark
	// waits for a few per client, so that requests that overlap no swap
	// are measured too.
	var done int64
	doneCond := sync.NewCond(&mu)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n0, s0 := swaps.Load(), swapping.Load()
				start := time.Now()
				rec := httptest.NewRecorder()
				region := trace.StartRegion(context.Background(), "request")
				h.ServeHTTP(rec, httptest.NewRequest("POST", "/insert/jsonline", bytes.NewReader(body.Bytes())))
				region.End()
				d := time.Since(start)
				if rec.Code != 200 {
					failed.Store(fmt.Sprintf("push: %d %s", rec.Code, rec.Body))
					mu.Lock()
					doneCond.Broadcast()
					mu.Unlock()
					return
				}
				overlapped := s0 > 0 || swapping.Load() > 0 || swaps.Load() != n0
				mu.Lock()
				if overlapped {
					swapLat = append(swapLat, d)
				} else {
					otherLat = append(otherLat, d)
				}
				done++
				doneCond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	var swapTime time.Duration
	k := 0
	for b.Loop() {
		k++
		swapping.Add(1)
		start := time.Now()
		v, target := versions[k%2], "/api/v1/rules"
		if !swap {
			v = versions[1] // the other version than the running one (a)
			target += "?dry_run=1"
		}
		region := trace.StartRegion(context.Background(), "swap")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("PUT", target, bytes.NewReader(v)))
		region.End()
		swapTime += time.Since(start)
		swaps.Add(1)
		swapping.Add(-1)
		var reply struct{ Changed bool }
		if err := json.Unmarshal(rec.Body.Bytes(), &reply); rec.Code != 200 || err != nil || reply.Changed != swap {
			b.Fatalf("swap %d: %d %.200s", k, rec.Code, rec.Body)
		}
		b.StopTimer()
		mu.Lock()
		for target := done + 20*int64(clients); done < target && failed.Load() == nil; {
			doneCond.Wait()
		}
		mu.Unlock()
		b.StartTimer()
	}
	close(stop)
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		b.Fatal(msg)
	}
	slices.Sort(swapLat)
	slices.Sort(otherLat)
	b.ReportMetric(ms(quantile(swapLat, 1)), "max-ms-swap")
	b.ReportMetric(ms(quantile(otherLat, 1)), "max-ms-other")
	b.ReportMetric(ms(quantile(swapLat, 0.99)), "p99-ms-swap")
	b.ReportMetric(ms(quantile(otherLat, 0.99)), "p99-ms-other")
	b.ReportMetric(float64(swapTime)/1e6/float64(k), "ms/swap")
}

// quantile returns the q-quantile (0 to 1) of sorted latencies; 0 for
// none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
