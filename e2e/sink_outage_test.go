package e2e

// sinkBudgetOutage: a sink's destination down while ingest runs, until
// the sink's budget is spent, with policy block and drop_oldest; used by
// the PostgreSQL, Loki, Elasticsearch and Kafka outage tests.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/sink/kafka/kafkatest"
)

// budgetDest is a destination sinkBudgetOutage stops and starts again.
type budgetDest struct {
	typ string
	// block is the sink's destination block for the sink name (its
	// type's key and what follows, indented under the sink).
	block func(name, policy string) string
	// down stops the destination, up starts it again.
	down, up func()
	// ids returns the id field of every line of the tenant "audit" the
	// destination holds from the sink name, once per copy.
	ids func(t *testing.T, name, policy string) []string
}

// sinkBudgetOutage runs `sluice serve` with one sink of d's type taking the
// tenant "audit", a 64 KiB budget and policy. One line is delivered, then
// d goes down while a client posts 20 lines a request. With policy block,
// ingest of "audit" must answer 503 with Retry-After naming the sink and
// its budget once the budget is spent (another tenant's is still taken),
// and take lines again once d is up. With drop_oldest ingest never fails
// and the sink drops; then d comes up. Either way the sink must catch up,
// and d must then hold every acknowledged line that was not dropped
// exactly once, and no other: the count dropped (GET /api/v1/sinks and
// sluice_sink_dropped_total alike) plus the lines held is the count
// acknowledged.
func sinkBudgetOutage(t *testing.T, d budgetDest, policy string) {
	t.Helper()
	dir := t.TempDir()
	name := d.typ + "-" + strings.ReplaceAll(policy, "_", "-")
	cfg := filepath.Join(dir, "sluice.yaml")
	conf := fmt.Sprintf(`sinks:
  - name: %s
    type: %s
    tenant: audit
    linger: 10ms
    retry: {initial: 10ms, max: 100ms}
    budget_bytes: 65536
    policy: %s
%s`, name, d.typ, policy, d.block(name, policy))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustStartServerOn(t, filepath.Join(dir, "data"), "--config", cfg)
	defer s.stop(t)
	client := newLoadClient(1)
	ackedIDs := map[string]bool{}
	// Ids carry a bucket (q0- to q9-) so that a destination queried
	// through LogQL answers in parts below the query limit.
	line := func(i int) []byte {
		return fmt.Appendf(nil, `{"service":"budget","id":"q%d-%d","msg":"%s"}`+"\n", i%10, i, strings.Repeat("z", 200))
	}
	ack := func(ids ...int) {
		for _, i := range ids {
			ackedIDs[fmt.Sprintf("q%d-%d", i%10, i)] = true
		}
	}
	if a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "audit", line(0)); !a.ok() {
		t.Fatalf("first line: %d %s %v", a.code, a.body, a.err)
	}
	ack(0)
	waitSink(t, s, time.Minute, "the first line delivered", func(st sinkState) bool { return st.Records >= 1 })
	d.down()
	restarted := false
	defer func() {
		if !restarted {
			d.up()
		}
	}()
	var refused *postAnswer
	for i := 1; i <= 3000 && refused == nil; i++ {
		var body []byte
		var ids []int
		for k := range 20 {
			body = append(body, line(i*100+k)...)
			ids = append(ids, i*100+k)
		}
		a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "audit", body)
		switch {
		case a.ok():
			ack(ids...)
		case a.code == http.StatusServiceUnavailable:
			refused = &a
		default:
			t.Fatalf("request %d: %d %q %v", i, a.code, a.body, a.err)
		}
		if policy == "drop_oldest" && len(ackedIDs) > 2000 {
			break
		}
		time.Sleep(time.Millisecond) // let the monitor (every 500 ms) see the backlog
	}
	if policy == "block" {
		if refused == nil || !strings.Contains(refused.body, fmt.Sprintf("sink %q", name)) || !strings.Contains(refused.body, "budget") ||
			refused.retryAfter == "" {
			t.Fatalf("over the budget with block: %+v; status %+v", refused, sinkStatus(t, s))
		}
		if a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "other", line(1)); !a.ok() {
			t.Fatalf("another tenant while the sink blocks: %d %s", a.code, a.body)
		}
		d.up()
		restarted = true
		deadline := time.Now().Add(2 * time.Minute)
		for {
			a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "audit", line(9))
			if a.ok() {
				ack(9)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ingest still refused two minutes after the destination came back: %d %s; status %+v", a.code, a.body, sinkStatus(t, s))
			}
			time.Sleep(10 * time.Millisecond) // polling the gate: no event to wait on
		}
	} else {
		if refused != nil {
			t.Fatalf("drop_oldest refused ingest: %+v", refused)
		}
		waitSink(t, s, time.Minute, "something dropped over the budget", func(sinkState) bool { return sinkStatusDropped(t, s) > 0 })
		d.up()
		restarted = true
	}
	acked := len(ackedIDs)
	waitSink(t, s, 2*time.Minute, "the sink caught up", func(st sinkState) bool {
		return st.Backlog == 0 && st.OldestAge == 0 && st.Records+sinkStatusDropped(t, s) >= float64(acked)
	})
	dropped := int(sinkStatusDropped(t, s))
	if m := s.metrics(t)[fmt.Sprintf(`sluice_sink_dropped_total{sink=%q}`, name)]; int(m) != dropped {
		t.Fatalf("sluice_sink_dropped_total %v, GET /api/v1/sinks says %d dropped", m, dropped)
	}
	got := d.ids(t, name, policy)
	seen := map[string]int{}
	for _, id := range got {
		if !ackedIDs[id] {
			t.Fatalf("line %s at the destination was never acknowledged", id)
		}
		seen[id]++
	}
	t.Logf("%s: %d acknowledged, %d at the destination (%d distinct), %d dropped", policy, acked, len(got), len(seen), dropped)
	if len(got) != len(seen) || len(got)+dropped != acked || (policy == "block") != (dropped == 0) {
		t.Fatalf("%d lines (%d distinct) + %d dropped, want %d acknowledged lines exactly once", len(got), len(seen), dropped, acked)
	}
}

// waitSink polls the sink's state until ok, failing t after within.
func waitSink(t *testing.T, s *server, within time.Duration, what string, ok func(sinkState) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := sinkStatus(t, s)
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %+v", what, within, st)
		}
		time.Sleep(10 * time.Millisecond) // polling a status: no event to wait on
	}
}

// TestSinkBudgetPoliciesLokiElastic: sinkBudgetOutage for the loki and
// elasticsearch sinks, the destination a second sluice (B) stopped with
// SIGTERM and started again on the same address and data. B holds each
// line as its sink pushed it: Loki under the tenant "audit", Elasticsearch
// under the org id "es".
func TestSinkBudgetPoliciesLokiElastic(t *testing.T) {
	skipIfOff(t)
	for _, typ := range []string{"loki", "elasticsearch"} {
		for _, policy := range []string{"block", "drop_oldest"} {
			t.Run(fmt.Sprintf("type=%s/policy=%s", typ, policy), func(t *testing.T) {
				b := &server{data: filepath.Join(t.TempDir(), "b"), addr: freeAddr(t)}
				startB := func() {
					cmd := exec.Command(sluiceBin, "serve", "--data", b.data, "--listen", b.addr, "--pprof=false")
					cmd.Env = sluiceEnv()
					b.p = startProc(t, "sluice serve (B, the destination)", cmd)
					if err := b.waitReady(2 * time.Minute); err != nil {
						t.Fatalf("sluice B on %s: %v", b.addr, err)
					}
				}
				startB()
				defer func() {
					if !b.p.exited() {
						b.stop(t)
					}
				}()
				tenant := "audit"
				d := budgetDest{typ: typ, down: func() { b.stop(t) }, up: startB}
				if typ == "loki" {
					d.block = func(string, string) string {
						return fmt.Sprintf("    loki:\n      url: %s\n      timeout: 5s\n", b.url("/loki/api/v1/push"))
					}
				} else {
					tenant = "es"
					d.block = func(string, string) string {
						return fmt.Sprintf("    elasticsearch:\n      url: %s\n      index: logs-budget\n      org_id: es\n      timeout: 5s\n",
							b.url("/?_stream_fields=service&_msg_field=message&_time_field=@timestamp"))
					}
				}
				start := time.Now().Add(-time.Minute)
				d.ids = func(t *testing.T, _, _ string) []string {
					var ids []string
					for q := range 10 {
						for _, e := range b.queryRange(t, tenant, fmt.Sprintf(`{service="budget"} |= "\"q%d-"`, q), start, time.Now().Add(time.Minute)) {
							var doc struct {
								ID string `json:"id"`
							}
							if err := json.Unmarshal([]byte(e.line), &doc); err != nil {
								t.Fatalf("a line in B is not the JSON sent: %q: %v", e.line, err)
							}
							ids = append(ids, doc.ID)
						}
					}
					return ids
				}
				sinkBudgetOutage(t, d, policy)
			})
		}
	}
}

// TestSinkBudgetPoliciesKafka: sinkBudgetOutage for the kafka sink
// (value: json), the broker killed with SIGKILL and started again; the
// topic is read back read_committed.
func TestSinkBudgetPoliciesKafka(t *testing.T) {
	skipIfOff(t)
	kb := kafkatest.Start(t)
	for _, policy := range []string{"block", "drop_oldest"} {
		t.Run("policy="+policy, func(t *testing.T) {
			topic := "budget-" + strings.ReplaceAll(policy, "_", "-")
			sinkBudgetOutage(t, budgetDest{
				typ: "kafka",
				block: func(string, string) string {
					return fmt.Sprintf("    kafka:\n      brokers: [%q]\n      topic: %s\n      partitions: 2\n      value: json\n      timeout: 5s\n", kb.Addr(), topic)
				},
				down: kb.Kill,
				up:   kb.Start,
				ids: func(t *testing.T, _, _ string) []string {
					var ids []string
					for _, r := range kafkatest.Committed(t, kb.Addr(), topic) {
						var v struct {
							Tenant string `json:"tenant"`
							Fields struct {
								ID string `json:"id"`
							} `json:"fields"`
						}
						if err := json.Unmarshal(r.Value, &v); err != nil || v.Tenant != "audit" {
							t.Fatalf("record at partition %d offset %d: %v: %s", r.Partition, r.Offset, err, r.Value)
						}
						ids = append(ids, v.Fields.ID)
					}
					return ids
				},
			}, policy)
		})
	}
}
