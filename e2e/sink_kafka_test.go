package e2e

// TestSinkKafkaKillLoop: a Kafka sink under load while sluice is killed
// with SIGKILL, cycle after cycle, and the broker is killed and started
// again once: every acknowledged line is in the topic exactly once.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
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
	acked, sent := sinkKillLoop(t, fmt.Sprintf(`  - name: audit-kafka
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
`, kb.Addr()), "audit-kafka", "kafka", func(i int) string { return fmt.Sprintf("sinktest-%d", i%5) }, func(rng *rand.Rand) {
		kb.Kill()
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		kb.Start()
	}, 2*time.Minute)

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
	checkExactlyOnce(t, acked, sent, seen, len(recs))
}
