package e2e

// TestServerKillLoop: `sluice serve` killed with SIGKILL under load, cycle
// after cycle on one data directory, and restarted on it.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestServerKillLoop runs, in each cycle, `sluice serve --head-bytes 65536`
// (a small head, so that flushes and merges run all the time) on the same
// data directory, several HTTP clients posting small NDJSON batches of
// uniquely numbered lines to /insert/jsonline, and stops the server at a
// random moment while they post: with SIGKILL, or, one cycle in five, with
// SIGTERM, which must drain (answer every request it read: no line of an
// unanswered request may be stored by that cycle) and exit 0. One cycle in
// six also kills a server during its start-up (recovery) first. After each cycle the
// directory is checked with `sluice export` and `sluice stats`: every line
// of every request answered 2xx is there exactly once, no line is there
// twice, a line of an unanswered request is there at most once, a line
// exported once is never lost later, and nothing is reported damaged.
// While the server runs, every answer must be a 2xx (the load is far below
// the in-flight limit). A last clean run stores a batch and stops with
// SIGTERM, and the whole directory is checked again.
//
// SLUICE_SERVER_CRASH_CYCLES sets the number of cycles (default 30) and
// SLUICE_SERVER_CRASH_SEED replays the random choices (not the timing).
func TestServerKillLoop(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("kill -9 loop of the server: skipped in -short mode")
	}
	cycles := int(envNumber(t, "SLUICE_SERVER_CRASH_CYCLES", 30))
	seed := uint64(envNumber(t, "SLUICE_SERVER_CRASH_SEED", time.Now().UnixNano()))
	t.Logf("SLUICE_SERVER_CRASH_SEED=%d SLUICE_SERVER_CRASH_CYCLES=%d", seed, cycles)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with: SLUICE_SERVER_CRASH_SEED=%d SLUICE_SERVER_CRASH_CYCLES=%d go test -run TestServerKillLoop ./e2e/", seed, cycles)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0x5e11))
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"--head-bytes", "65536"}
	const clients = 6
	l := newLedger()
	start := time.Now()
	var kills, terms, startupKills int
	var checkTime, serveTime time.Duration
	unacked := 0 // lines of unacknowledged requests in the directory

	for c := range cycles {
		if c > 0 && rng.IntN(6) == 0 {
			// A kill while the server opens the directory (replays the
			// WAL, perhaps before it listens).
			s := spawnServer(t, data, args...)
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			if !s.p.exited() {
				s.kill9(t)
				startupKills++
			} else if s.p.err != nil && !strings.Contains(s.p.out.String(), "address already in use") {
				t.Fatalf("cycle %d: sluice serve exited by itself during start-up: %v\n%s", c, s.p.err, tail(s.p.out.String(), 8<<10))
			}
		}
		t0 := time.Now()
		s := mustStartServerOn(t, data, args...)
		ready := time.Since(t0)
		term := rng.IntN(5) == 0
		delay := 10*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))

		before, codesBefore := l.summary(), l.counts()
		var stopping atomic.Bool // set before the server is stopped
		var early []string       // answers that were not 2xx while it ran
		var mu sync.Mutex
		ctx, cancel := context.WithCancel(context.Background())
		client := newLoadClient(clients)
		url := s.url("/insert/jsonline")
		var wg sync.WaitGroup
		for w := range clients {
			wrng := rand.New(rand.NewPCG(seed, uint64(c*clients+w+1)))
			wg.Go(func() {
				var body []byte
				for ctx.Err() == nil {
					n := 1 + wrng.IntN(40)
					r := l.open(n)
					body = body[:0]
					for i := range n {
						body = appendLine(body, "killloop", w, r, i, "payload of the kill loop")
					}
					a := postNDJSON(ctx, client, url, body)
					l.record(r, a)
					if !stopping.Load() && !(a.ok() && a.accepted == n) {
						mu.Lock()
						early = append(early, fmt.Sprintf("request %d of %d lines: %d %q, %v", r, n, a.code, a.body, a.err))
						mu.Unlock()
					}
					if a.err != nil && stopping.Load() {
						// The server is gone: don't spin on a refused
						// connection until the test notices.
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		time.Sleep(delay)
		stopping.Store(true)
		how := "killed"
		if term {
			how = "SIGTERM"
			s.stop(t)
			terms++
		} else {
			s.kill9(t)
			kills++
		}
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		serveTime += delay
		if len(early) > 0 {
			t.Fatalf("cycle %d: while the server ran, %d answers were not a 2xx accepting every line; the first: %s", c, len(early), early[0])
		}

		after := l.summary()
		chk := l.checkDir(t, fmt.Sprintf("cycle %d (%s after %v)", c, how, delay.Round(time.Millisecond)), data)
		checkTime += chk.took
		if term && chk.unackedPresent > unacked {
			// A drain answers every request it read: a line stored but
			// not acknowledged means a request was cut off.
			t.Errorf("cycle %d: the server drained on SIGTERM, yet %d lines of requests it did not answer 2xx are stored", c, chk.unackedPresent-unacked)
		}
		unacked = chk.unackedPresent
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("cycle %2d: ready in %4v, %-7s after %3v: %4d requests, %4d acked (%5d lines); directory: %6d lines, %3d of unacked requests, %5d replayed from the WAL; other answers: %s",
			c, ready.Round(time.Millisecond), how, delay.Round(time.Millisecond), after.requests-before.requests, after.acked-before.acked,
			after.ackedLines-before.ackedLines, chk.exported, chk.unackedPresent, chk.recovered, countsSince(codesBefore, l.counts()))
	}

	// A last clean run: the directory as the loop left it serves, takes a
	// batch, and stops with SIGTERM.
	s := mustStartServerOn(t, data, args...)
	client := newLoadClient(1)
	for range 3 {
		n := 50
		r := l.open(n)
		var body []byte
		for i := range n {
			body = appendLine(body, "killloop", 99, r, i, "after the loop")
		}
		a := postNDJSON(context.Background(), client, s.url("/insert/jsonline"), body)
		l.record(r, a)
		if a.code != http.StatusOK || a.accepted != n {
			t.Fatalf("after the loop: %d %q, %v", a.code, a.body, a.err)
		}
	}
	client.CloseIdleConnections()
	s.stop(t)
	chk := l.checkDir(t, "after the loop", data)

	sum := l.summary()
	t.Logf("%d cycles (%d SIGKILL, %d SIGTERM, %d more kills during start-up) in %v (%v serving, %v checking)",
		cycles, kills, terms, startupKills, time.Since(start).Round(time.Millisecond), serveTime.Round(time.Millisecond), checkTime.Round(time.Millisecond))
	t.Logf("%d requests, %d acknowledged (%d lines, every one recovered exactly once); %d lines in the directory, %d of them from unacknowledged requests",
		sum.requests, sum.acked, sum.ackedLines, chk.exported, chk.unackedPresent)
	t.Logf("answers: %s", formatCounts(l.counts()))
}
