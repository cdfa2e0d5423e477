package e2e

// TestSinkFileKillLoop: a file sink (zstd, rotating) under load while
// sluice is killed with SIGKILL: every acknowledged line of the selector is
// in the files exactly once.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// TestSinkFileKillLoop runs `sluice serve` with a file sink taking every
// tenant's lines of the stream {service="filetest"}, zstd-compressed, in
// files of at most 64 KiB; clients post lines of that stream and of
// another; the server is killed with SIGKILL at a random moment, cycle
// after cycle. A last run lets the sink catch up and stops with SIGTERM.
// The files, read as one zstd stream each, must hold every acknowledged
// line of the stream exactly once and nothing of the other.
func TestSinkFileKillLoop(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("kill -9 loop with a file sink: skipped in -short mode")
	}
	cycles := int(envNumber(t, "SLUICE_SINK_CRASH_CYCLES", 20))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d cycles", seed, cycles)
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := filepath.Join(dir, "sluice.yaml")
	conf := fmt.Sprintf(`sinks:
  - name: archive
    type: file
    selector: '{service="filetest"}'
    batch: 300
    linger: 10ms
    file:
      dir: %q
      max_bytes: 65536
      compression: zstd
`, out)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	args := []string{"--config", cfg}
	var mu sync.Mutex
	acked := map[string]bool{}
	sent := map[string]bool{}
	for c := range cycles {
		s := mustStartServerOn(t, data, args...)
		ctx, cancel := context.WithCancel(context.Background())
		client := newLoadClient(2)
		stopped := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for r := 0; ctx.Err() == nil; r++ {
					svc := "filetest"
					if r%3 == 2 {
						svc = "other"
					}
					var body []byte
					var ids []string
					for i := range 1 + (r+w)%25 {
						id := fmt.Sprintf("c%d.w%d.r%d.i%d", c, w, r, i)
						ids = append(ids, id)
						body = fmt.Appendf(body, `{"service":%q,"id":%q,"msg":"line for the file sink"}`+"\n", svc, id)
					}
					if svc == "filetest" {
						mu.Lock()
						for _, id := range ids {
							sent[id] = true
						}
						mu.Unlock()
					}
					a := postTenant(ctx, client, s.url("/insert/jsonline"), fmt.Sprintf("team%d", w), body)
					select {
					case <-stopped:
						continue
					default:
					}
					if !a.ok() || a.accepted != len(ids) {
						t.Errorf("cycle %d: %d %q %v", c, a.code, a.body, a.err)
						return
					}
					if svc == "filetest" {
						mu.Lock()
						for _, id := range ids {
							acked[id] = true
						}
						mu.Unlock()
					}
				}
			})
		}
		time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
		close(stopped)
		s.kill9(t)
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		if t.Failed() {
			t.FailNow()
		}
	}
	s := mustStartServerOn(t, data, args...)
	for i := 0; ; i++ {
		st := sinkStatus(t, s)
		if st.Backlog == 0 && st.OldestAge == 0 {
			break
		}
		if i > 3000 {
			t.Fatalf("the sink did not catch up in a minute: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop(t)

	files, err := filepath.Glob(filepath.Join(out, "archive-*.ndjson.zst"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	seen := map[string]int{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zstd.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		for sc.Scan() {
			var rec struct {
				Labels map[string]string `json:"labels"`
				Fields map[string]any    `json:"fields"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			if rec.Labels["service"] != "filetest" {
				t.Fatalf("%s: a line of another stream: %s", name, sc.Text())
			}
			seen[fmt.Sprint(rec.Fields["id"])]++
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		zr.Close()
		f.Close()
	}
	var missing, twice, foreign int
	for id := range acked {
		if seen[id] == 0 {
			missing++
		}
	}
	for id, n := range seen {
		if n > 1 {
			twice++
		}
		if !sent[id] {
			foreign++
		}
	}
	t.Logf("%d files, %d acknowledged lines, %d in the files", len(files), len(acked), len(seen))
	if missing > 0 || twice > 0 || foreign > 0 || len(acked) == 0 || len(files) < 2 {
		t.Fatalf("%d acknowledged lines missing, %d twice, %d never sent; %d files", missing, twice, foreign, len(files))
	}
}
