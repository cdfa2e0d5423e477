package e2e

// TestSinkLokiElasticKill9: Loki push and Elasticsearch _bulk sinks whose
// destination is a second sluice, with sluice A killed with SIGKILL
// during delivery.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSinkLokiElasticKill9 runs sluice B (the destination: it speaks
// Loki push and _bulk; down during the first cycle, so that the sinks
// retry) and sluice A with two sinks to B: loki (each
// record's tenant as X-Scope-OrgID) and elasticsearch (create actions
// with ids, into B's tenant "es"). Clients post lines of the stream
// {service="pushtest"} (and of another, which no sink takes) to A under
// two tenants; A is killed with SIGKILL at a random moment, cycle after
// cycle; a last run lets both sinks catch up. Every acknowledged line
// must then be in B, through B's /loki/api/v1/query_range, for each sink.
// Both sinks are at least once into a sluice (B ignores _id): duplicates
// are counted and logged, not failed on.
func TestSinkLokiElasticKill9(t *testing.T) {
	skipIfOff(t)
	cycles := int(envNumber(t, "SLUICE_SINK_PUSH_CYCLES", 4))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d cycles", seed, cycles)
	rng := rand.New(rand.NewPCG(seed, 3))
	start := time.Now().Add(-time.Minute)
	dir := t.TempDir()
	// B is down during the first cycle: both sinks retry connection
	// errors, then deliver once B is up on the address A was given.
	b := &server{data: filepath.Join(dir, "b"), addr: freeAddr(t)}
	startB := func() {
		cmd := exec.Command(sluiceBin, "serve", "--data", b.data, "--listen", b.addr, "--pprof=false")
		cmd.Env = sluiceEnv()
		b.p = startProc(t, "sluice serve (B, the destination)", cmd)
		if err := b.waitReady(2 * time.Minute); err != nil {
			t.Fatalf("sluice B on %s: %v", b.addr, err)
		}
	}
	cfg := filepath.Join(dir, "a.yaml")
	conf := fmt.Sprintf(`sinks:
  - name: to-loki
    type: loki
    selector: '{service="pushtest"}'
    batch: 200
    linger: 10ms
    retry: {initial: 10ms, max: 200ms}
    loki:
      url: %s
  - name: to-es
    type: elasticsearch
    selector: '{service="pushtest"}'
    batch: 200
    linger: 10ms
    retry: {initial: 10ms, max: 200ms}
    elasticsearch:
      url: %s
      index: logs-pushtest
      org_id: es
`, b.url("/loki/api/v1/push"), b.url("/?_stream_fields=service&_msg_field=message&_time_field=@timestamp"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "a")
	args := []string{"--config", cfg}
	const perCycle = 400 // lines per worker per cycle: every answer fits one query
	var mu sync.Mutex
	acked := map[string]string{} // id: tenant
	sent := map[string]string{}
	for c := range cycles {
		a := mustStartServerOn(t, data, args...)
		ctx, cancel := context.WithCancel(context.Background())
		client := newLoadClient(2)
		stopped := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			tenant := fmt.Sprintf("team%d", w)
			wg.Go(func() {
				n := 0
				for r := 0; ctx.Err() == nil && n < perCycle; r++ {
					svc := "pushtest"
					if r%4 == 3 {
						svc = "other"
					}
					var body []byte
					var ids []string
					for i := range 1 + (r+w)%20 {
						id := fmt.Sprintf("c%d.w%d.r%d.i%d", c, w, r, i)
						ids = append(ids, id)
						body = fmt.Appendf(body, `{"service":%q,"id":%q,"msg":"line for the push sinks"}`+"\n", svc, id)
					}
					mu.Lock()
					for _, id := range ids {
						sent[id] = tenant
					}
					mu.Unlock()
					ans := postTenant(ctx, client, a.url("/insert/jsonline"), tenant, body)
					select {
					case <-stopped:
						continue
					default:
					}
					if !ans.ok() || ans.accepted != len(ids) {
						t.Errorf("cycle %d: %d %q %v", c, ans.code, ans.body, ans.err)
						return
					}
					if svc == "pushtest" {
						n += len(ids)
						mu.Lock()
						for _, id := range ids {
							acked[id] = tenant
						}
						mu.Unlock()
					}
				}
			})
		}
		if c == 0 {
			// Wait for both sinks to have failed against the absent B.
			for i := 0; ; i++ {
				failing := 0
				for _, st := range pushSinkStatus(t, a) {
					if st.LastError != "" {
						failing++
					}
				}
				if failing == 2 {
					break
				}
				if i > 3000 {
					t.Fatalf("the sinks report no error with their destination down: %+v", pushSinkStatus(t, a))
				}
				time.Sleep(20 * time.Millisecond) // polling a status: no event to wait on
			}
			t.Logf("with B down: %+v", pushSinkStatus(t, a))
		}
		time.Sleep(time.Duration(30+rng.IntN(200)) * time.Millisecond)
		close(stopped)
		a.kill9(t)
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		if t.Failed() {
			t.FailNow()
		}
		if c == 0 {
			startB()
		}
	}
	a := mustStartServerOn(t, data, args...)
	for i := 0; ; i++ {
		done := true
		for _, st := range pushSinkStatus(t, a) {
			if st.Backlog != 0 || st.OldestAge != 0 {
				done = false
			}
			if i > 3000 {
				t.Fatalf("sink %s did not catch up in a minute: %+v", st.Name, st)
			}
		}
		if done {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling a status: no event to wait on
	}
	a.stop(t)
	if len(acked) == 0 {
		t.Fatal("no line was acknowledged")
	}

	end := time.Now().Add(time.Minute)
	idOf := func(line string) string {
		var doc struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("a line in B is not the JSON sent: %q: %v", line, err)
		}
		return doc.ID
	}
	check := func(sinkName string, seen map[string]int) {
		t.Helper()
		var missing, twice, extra, foreign int
		for id, tenant := range acked {
			if seen[tenant+"/"+id] == 0 {
				if missing++; missing <= 5 {
					t.Errorf("%s: acknowledged line %s of %s is not in B", sinkName, id, tenant)
				}
			}
		}
		for key, n := range seen {
			if n > 1 {
				twice++
				extra += n - 1
			}
			tenant, id, _ := strings.Cut(key, "/")
			if sent[id] != tenant {
				foreign++
			}
		}
		t.Logf("%s: %d acknowledged lines, %d distinct in B, %d missing; at least once: %d lines came more than once (%d extra copies)",
			sinkName, len(acked), len(seen), missing, twice, extra)
		if missing > 0 || foreign > 0 {
			t.Fatalf("%s: %d acknowledged lines missing, %d lines never sent (or under another tenant)", sinkName, missing, foreign)
		}
	}

	// Loki: each record under its own tenant.
	// One query per cycle and worker, so that no answer reaches the
	// query limit.
	part := func(c, w int) string { return fmt.Sprintf(`{service="pushtest"} |= "\"c%d.w%d."`, c, w) }
	lokiSeen := map[string]int{}
	for w, tenant := range []string{"team0", "team1"} {
		for c := range cycles {
			for _, e := range b.queryRange(t, tenant, part(c, w), start, end) {
				lokiSeen[tenant+"/"+idOf(e.line)]++
			}
		}
		if n := len(b.queryRange(t, tenant, `{service="other"}`, start, end)); n != 0 {
			t.Fatalf("loki: %d lines of a stream no sink takes reached B's tenant %s", n, tenant)
		}
	}
	check("loki", lokiSeen)

	// Elasticsearch: every document into B's tenant es; the tenant of a
	// line is known from its id (worker w posts as team<w>).
	esSeen := map[string]int{}
	for w := range 2 {
		for c := range cycles {
			for _, e := range b.queryRange(t, "es", part(c, w), start, end) {
				id := idOf(e.line)
				esSeen[sent[id]+"/"+id]++
			}
		}
	}
	check("elasticsearch", esSeen)
}

// pushSinkStatus returns every sink's state.
func pushSinkStatus(t *testing.T, s *server) []sinkState {
	t.Helper()
	resp, err := http.Get(s.url("/api/v1/sinks"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Sinks []sinkState `json:"sinks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Sinks) == 0 {
		t.Fatalf("GET /api/v1/sinks: %v %+v", err, st)
	}
	return st.Sinks
}
