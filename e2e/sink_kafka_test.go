package e2e

// TestSinkKafkaKillLoop: a Kafka sink under load while sluice is killed
// with SIGKILL, cycle after cycle, and the broker is killed and started
// again once: every acknowledged line is in the topic exactly once.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/sink/kafka/kafkatest"
)

// TestSinkKafkaKillLoop runs `sluice serve` with a kafka sink (value:
// json, the topic created by the sink) of the tenant "audit" on one data directory, cycle after cycle:
// clients post uniquely numbered lines to the tenants "audit" and "other"
// and the server is killed with SIGKILL at a random moment. In one cycle
// the broker is killed (SIGKILL) while clients post and started again:
// ingest must keep answering 2xx. A last run lets the sink catch up and
// stops with SIGTERM. Then the topic, read back read_committed, must hold
// every acknowledged "audit" line exactly once, no line twice, and no line
// of "other".
//
// SLUICE_SINK_CRASH_CYCLES sets the number of cycles (default 20).
func TestSinkKafkaKillLoop(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("kill -9 loop with a Kafka sink: skipped in -short mode")
	}
	kb := kafkatest.Start(t)
	cycles := int(envNumber(t, "SLUICE_SINK_CRASH_CYCLES", 20))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d cycles", seed, cycles)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "sluice.yaml")
	conf := fmt.Sprintf(`sinks:
  - name: audit-kafka
    type: kafka
    tenant: audit
    batch: 500
    linger: 20ms
    retry: {initial: 10ms, max: 200ms}
    policy: block
    kafka:
      brokers: [%q]
      topic: audit-logs
      partitions: 3
      value: json
      timeout: 10s
`, kb.Addr())
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg, "--head-bytes", "65536"}

	var mu sync.Mutex
	acked := map[string]bool{} // ids of acknowledged audit lines
	sent := map[string]bool{}  // ids of every audit line posted
	var early []string
	outage := rng.IntN(cycles)
	t.Logf("the broker is killed in cycle %d", outage)
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
						body = fmt.Appendf(body, `{"service":"sinktest-%d","id":%q,"msg":"line of the kafka kill loop %s"}`+"\n", i%5, id, tenant)
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
		if c == outage {
			time.Sleep(100 * time.Millisecond)
			kb.Kill()
			time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
			kb.Start()
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
	for i := 0; ; i++ {
		st := sinkStatus(t, s)
		if st.Backlog == 0 && st.OldestAge == 0 {
			break
		}
		if i > 6000 {
			t.Fatalf("the sink did not catch up in two minutes: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := runSluice(t, "sink", "status", "--url", s.url(""))
	if !strings.Contains(out, "audit-kafka") || !strings.Contains(out, "kafka") {
		t.Fatalf("sluice sink status:\n%s", out)
	}
	s.stop(t)

	seen := map[string]int{}
	recs := kafkatest.Committed(t, kb.Addr(), "audit-logs")
	for _, r := range recs {
		var v struct {
			Tenant string `json:"tenant"`
			Fields struct {
				ID string `json:"id"`
			} `json:"fields"`
			Labels map[string]string `json:"labels"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("record at partition %d offset %d: %v: %s", r.Partition, r.Offset, err, r.Value)
		}
		if v.Tenant != "audit" {
			t.Fatalf("a line of tenant %q in the topic", v.Tenant)
		}
		if r.Headers["service"] != v.Labels["service"] || r.Headers["sluice-wal-end"] == "" {
			t.Fatalf("headers %v of a record with labels %v", r.Headers, v.Labels)
		}
		seen[v.Fields.ID]++
	}
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
	t.Logf("%d acknowledged audit lines, %d records, %d distinct (%d lines of unanswered requests)", len(acked), len(recs), len(seen), len(seen)-len(acked))
	byCycle := map[string]int{}
	for _, id := range missing {
		c, _, _ := strings.Cut(id, ".")
		byCycle[c]++
	}
	if len(missing) > 0 || len(twice) > 0 || len(foreign) > 0 || len(acked) == 0 {
		t.Logf("missing by cycle: %v", byCycle)
		t.Fatalf("%d acknowledged lines missing (e.g. %v), %d twice (e.g. %v), %d never sent (e.g. %v)",
			len(missing), first(missing), len(twice), first(twice), len(foreign), first(foreign))
	}
}
