package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// sinkKillLoop is the kill -9 loop of a sink's end-to-end test: `sluice
// serve` with one sink (sinkYAML, its entry under sinks:) of the tenant
// "audit" on one data directory, cycle after cycle (SLUICE_SINK_CRASH_CYCLES,
// default 20): three clients post uniquely numbered lines (service(i) their
// service) to the tenants "audit" and "other", and the server is killed with
// SIGKILL at a random moment; in one random cycle outage stops the
// destination while clients post and starts it again, and ingest must keep
// answering 2xx taking every line. A last run lets the sink catch up (its
// backlog reaches 0 in GET /api/v1/sinks, within catchUp), `sluice sink
// status` must name it (sinkName, sinkType), and it stops with SIGTERM. It
// returns the ids of the audit lines acknowledged and of every one posted.
func sinkKillLoop(t *testing.T, sinkYAML, sinkName, sinkType string, service func(i int) string, outage func(rng *rand.Rand), catchUp time.Duration) (acked, sent map[string]bool) {
	t.Helper()
	cycles := int(envNumber(t, "SLUICE_SINK_CRASH_CYCLES", 20))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d cycles", seed, cycles)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("sinks:\n"+sinkYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg, "--head-bytes", "65536"}

	var mu sync.Mutex
	acked = map[string]bool{}
	sent = map[string]bool{}
	var early []string
	down := rng.IntN(cycles)
	t.Logf("the destination is stopped in cycle %d", down)
	for c := range cycles {
		s := mustStartServerOn(t, data, args...)
		ctx, cancel := context.WithCancel(context.Background())
		client := newLoadClient(4)
		var wg sync.WaitGroup
		var stopping sync.Once
		stopped := make(chan struct{})
		for w := range 3 {
			wg.Go(func() {
				for r := 0; ctx.Err() == nil; r++ {
					tenant := "audit"
					if r%4 == 3 {
						tenant = "other"
					}
					var body []byte
					var ids []string
					for i := range 1 + (r*7+w)%30 {
						id := fmt.Sprintf("c%d.w%d.r%d.i%d", c, w, r, i)
						ids = append(ids, id)
						body = fmt.Appendf(body, `{"service":%q,"id":%q,"msg":"line of the sink kill loop %s"}`+"\n", service(i), id, tenant)
					}
					if tenant == "audit" {
						mu.Lock()
						for _, id := range ids {
							sent[id] = true
						}
						mu.Unlock()
					}
					a := postTenant(ctx, client, s.url("/insert/jsonline"), tenant, body)
					select {
					case <-stopped:
						continue // answers of a dying server prove nothing
					default:
					}
					mu.Lock()
					if a.ok() && a.accepted == len(ids) {
						if tenant == "audit" {
							for _, id := range ids {
								acked[id] = true
							}
						}
					} else {
						early = append(early, fmt.Sprintf("cycle %d: %d %q %v", c, a.code, a.body, a.err))
					}
					mu.Unlock()
				}
			})
		}
		if c == down {
			time.Sleep(100 * time.Millisecond)
			outage(rng)
		}
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		stopping.Do(func() { close(stopped) })
		s.kill9(t)
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		mu.Lock()
		if len(early) > 0 {
			t.Fatalf("while the server ran, %d answers were not a 2xx taking every line; the first: %s", len(early), early[0])
		}
		mu.Unlock()
	}

	// The last run: the sink catches up.
	s := mustStartServerOn(t, data, args...)
	for deadline := time.Now().Add(catchUp); ; {
		st := sinkStatus(t, s)
		if st.Backlog == 0 && st.OldestAge == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink did not catch up in %v: %+v", catchUp, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := runSluice(t, "sink", "status", "--url", s.url(""))
	if !strings.Contains(out, sinkName) || !strings.Contains(out, sinkType) {
		t.Fatalf("sluice sink status:\n%s", out)
	}
	s.stop(t)
	return acked, sent
}

// checkExactlyOnce fails unless seen (how many times each id arrived)
// holds every acknowledged id once, none twice and none never sent.
func checkExactlyOnce(t *testing.T, acked, sent map[string]bool, seen map[string]int, records int) {
	t.Helper()
	var missing, twice, foreign []string
	for id := range acked {
		if seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	for id, n := range seen {
		if n > 1 {
			twice = append(twice, id)
		}
		if !sent[id] {
			foreign = append(foreign, id)
		}
	}
	t.Logf("%d acknowledged audit lines, %d records, %d distinct (%d lines of unanswered requests)", len(acked), records, len(seen), len(seen)-len(acked))
	if len(missing) > 0 || len(twice) > 0 || len(foreign) > 0 || len(acked) == 0 {
		byCycle := map[string]int{}
		for _, id := range missing {
			c, _, _ := strings.Cut(id, ".")
			byCycle[c]++
		}
		t.Fatalf("%d acknowledged lines missing (e.g. %v; by cycle %v), %d twice (e.g. %v), %d never sent (e.g. %v)",
			len(missing), first(missing), byCycle, len(twice), first(twice), len(foreign), first(foreign))
	}
}
