package e2e

// TestSinkLokiElasticKill9: Loki push and Elasticsearch _bulk sinks whose
// destination is a second sluice, with sluice A killed with SIGKILL
// during delivery.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
// are counted and logged, not failed on. A third sink, elasticsearch
// into a stand-in that keeps documents by _id as Elasticsearch does,
// must give every acknowledged line exactly once: create with ids.
func TestSinkLokiElasticKill9(t *testing.T) {
	skipIfOff(t)
	cycles := int(envNumber(t, "SLUICE_SINK_PUSH_CYCLES", 10))
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
	// A third sink posts to an Elasticsearch stand-in that keeps
	// documents by _id, as Elasticsearch does: create with ids must give
	// exactly once there, kill -9 or not.
	ids := &idStore{docs: map[string]string{}}
	idsServer := httptest.NewServer(ids)
	defer idsServer.Close()
	ids.URL = idsServer.URL
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
  - name: to-ids
    type: elasticsearch
    selector: '{service="pushtest"}'
    batch: 200
    linger: 10ms
    retry: {initial: 10ms, max: 200ms}
    elasticsearch:
      url: %s
      index: logs-pushtest
`, b.url("/loki/api/v1/push"), b.url("/?_stream_fields=service&_msg_field=message&_time_field=@timestamp"), ids.URL)
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
			// Wait for the sinks to B to have failed against the absent B
			// (the stand-in fails too: it refuses everything until B is
			// up).
			for i := 0; ; i++ {
				failing := 0
				for _, st := range pushSinkStatus(t, a) {
					if st.LastError != "" {
						failing++
					}
				}
				if failing == 3 {
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
			ids.up.Store(true)
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
		t.Logf("%s: %d acknowledged lines, %d distinct at the destination, %d missing; at least once: %d lines came more than once (%d extra copies)",
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

	// The stand-in: each acknowledged line once, under one _id.
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.mismatch != "" {
		t.Fatalf("one _id for two records: %s", ids.mismatch)
	}
	idSeen := map[string]int{}
	for _, lineID := range ids.docs {
		idSeen[sent[lineID]+"/"+lineID]++
	}
	check("elasticsearch create with ids", idSeen)
	twice := 0
	for _, n := range idSeen {
		if n > 1 {
			twice++
		}
	}
	t.Logf("elasticsearch create with ids: %d creates refused with 409 (re-sent after a kill or a refusal, counted as delivered)", ids.conflicts)
	if twice > 0 {
		t.Fatalf("elasticsearch create with ids: %d lines indexed more than once: not exactly once", twice)
	}
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

// idStore is an Elasticsearch _bulk stand-in that keeps documents by _id:
// create of an id it holds answers 409, as Elasticsearch does. Until up,
// it answers 503 to everything.
type idStore struct {
	URL       string
	up        atomic.Bool
	mu        sync.Mutex
	docs      map[string]string // _id: the line's id
	conflicts int
	mismatch  string // an _id seen with two different lines
}

func (s *idStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.up.Load() {
		http.Error(w, "not up yet", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/_bulk" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []string
	for k := 0; k+1 < len(lines); k += 2 {
		var action struct {
			Create struct {
				ID string `json:"_id"`
			} `json:"create"`
		}
		var doc struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(lines[k], &action) != nil || action.Create.ID == "" || json.Unmarshal(lines[k+1], &doc) != nil {
			http.Error(w, "not a create with an _id and a document", http.StatusBadRequest)
			return
		}
		status := 201
		if held, ok := s.docs[action.Create.ID]; ok {
			status = 409
			s.conflicts++
			if held != doc.ID && s.mismatch == "" {
				s.mismatch = fmt.Sprintf("_id %s: lines %s and %s", action.Create.ID, held, doc.ID)
			}
		} else {
			s.docs[action.Create.ID] = doc.ID
		}
		items = append(items, fmt.Sprintf(`{"create":{"_id":%q,"status":%d}}`, action.Create.ID, status))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"errors":false,"items":[%s]}`, strings.Join(items, ","))
}
