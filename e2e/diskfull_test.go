package e2e

// TestServerDiskFull: `sluice serve` on a small filesystem that fills up.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestServerDiskFull runs `sluice serve` with its data directory on a
// 64 MiB tmpfs, mounted for the test (it skips when mounting is not
// permitted), with a config file setting limits.min_free_bytes to 8 MiB
// and head_bytes to 1 MiB (so that the head is flushed to parts, and parts
// merged, while the disk fills). A 16 MiB filler file is written on the
// tmpfs first. Four clients post NDJSON batches of random (incompressible)
// text, one in eight of 4 MiB, so that requests admitted while the free
// space was above the minimum (the check is cached for a second) run into
// the real ENOSPC of the WAL and of flushes.
//
//  1. Fill: push until the server answers 507, and 100 answers more (the
//     load runs into the real ENOSPC of the WAL and flushes). Every answer
//     must be a 2xx accepting every line, or a 507 or 503 with Retry-After;
//     the server must not exit.
//  2. Free: stop the clients, start one posting small batches, delete the
//     filler; without a restart, ingest must resume (10 requests sent after
//     the deletion answered 2xx). Then the four clients push 40 more
//     requests (the same answers allowed).
//  3. Stop with SIGTERM (exit 0), copy the directory to the normal disk and
//     check the copy with `sluice export` and `sluice stats`: every line of
//     every 2xx request exactly once, no line twice, none of a request the
//     server refused before reading its body.
func TestServerDiskFull(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("disk full on a tmpfs: skipped in -short mode")
	}
	rig := newDiskFullRig(t)
	start := time.Now()

	// 1. fill
	s := rig.start()
	w, stopLoad := rig.startLoad(s, false)
	rig.fillUntil507(s, w, start)
	stopLoad()
	w.failUnexpected(t, "while the disk filled")

	// 2. free space: ingest resumes without a restart. One client posts
	// small batches (the big ones could fill the freed space again before
	// the check sees them through).
	w, stopLoad = rig.startLoad(s, true)
	if err := os.Remove(rig.filler); err != nil {
		t.Fatal(err)
	}
	resumed := w.waitResumed(t, rig.l, s, 5*time.Minute)
	stopLoad()
	t.Logf("2. filler deleted: ingest resumed in %v without a restart; tmpfs: %s", resumed.Round(time.Millisecond), dfOf(rig.mnt))
	w.failUnexpected(t, "after space was freed")
	w, stopLoad = rig.startLoad(s, false)
	w.waitAnswers(t, s, 40) // the full load again: flushes, merges, perhaps full again
	stopLoad()
	w.failUnexpected(t, "under load after space was freed")

	// 3. stop, check a copy
	s.stop(t)
	rig.check("3. stopped cleanly", start)
}

// TestServerDiskFullRestart is TestServerDiskFull's setting with restarts
// on the full disk: the server filled to its minimum free space is stopped
// with SIGTERM and started again on the nearly full disk; then the tmpfs
// is filled to the last byte by a second filler while the clients push,
// the server killed with SIGKILL and started again on the full disk. Each
// time it must come up (a full disk must not become a crash loop: it
// holds every acknowledged line in the WAL already) and answer 507 with
// Retry-After. Once both fillers are deleted ingest must resume without a
// restart, and a copy of the directory must hold every acknowledged line
// exactly once.
func TestServerDiskFullRestart(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("disk full on a tmpfs: skipped in -short mode")
	}
	rig := newDiskFullRig(t)
	start := time.Now()

	s := rig.start()
	w, stopLoad := rig.startLoad(s, false)
	rig.fillUntil507(s, w, start)
	stopLoad()
	w.failUnexpected(t, "while the disk filled")
	s.stop(t)
	t.Logf("2. stopped cleanly on the nearly full disk (tmpfs: %s)", dfOf(rig.mnt))

	s, err := startServerOn(t, rig.data, 2*time.Minute, "--config", rig.config)
	if err != nil {
		t.Fatalf("after a clean stop on a nearly full disk (tmpfs: %s), the server does not start again: %v", dfOf(rig.mnt), err)
	}
	w, stopLoad = rig.startLoad(s, false)
	rig.wait507(s, w)
	t.Logf("3. restarted on the nearly full disk: answers 507")

	filler2 := filepath.Join(rig.mnt, "filler2")
	n, err := writeFiller(filler2, 1<<40)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write %s: %v (%d bytes); want ENOSPC", filler2, err, n)
	}
	rig.wait507(s, w)
	w.stopping.Store(true)
	s.kill9(t)
	stopLoad()
	w.failUnexpected(t, "while the disk was full to the last byte")
	t.Logf("4. disk full to the last byte (tmpfs: %s), server killed", dfOf(rig.mnt))

	s, err = startServerOn(t, rig.data, 2*time.Minute, "--config", rig.config)
	if err != nil {
		t.Fatalf("after a kill -9 on a full disk (tmpfs: %s), the server does not start again: %v", dfOf(rig.mnt), err)
	}
	w, stopLoad = rig.startLoad(s, false)
	rig.wait507(s, w)
	stopLoad()
	w.failUnexpected(t, "after the restart on a full disk")
	w, stopLoad = rig.startLoad(s, true)
	for _, f := range []string{filler2, rig.filler} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	resumed := w.waitResumed(t, rig.l, s, 5*time.Minute)
	t.Logf("5. restarted on the full disk: answers 507; fillers deleted: ingest resumed in %v", resumed.Round(time.Millisecond))
	stopLoad()
	w.failUnexpected(t, "after space was freed")
	s.stop(t)
	rig.check("6. stopped cleanly", start)
}

// diskFullRig is the setting of the disk full tests: a 64 MiB tmpfs with
// a 16 MiB filler file and the data directory, a config file on the normal
// disk, and the ledger of the clients.
type diskFullRig struct {
	t                         *testing.T
	mnt, data, filler, config string
	l                         *ledger
	seed                      uint64
	loads                     int
}

func newDiskFullRig(t *testing.T) *diskFullRig {
	t.Helper()
	work := t.TempDir()
	r := &diskFullRig{t: t, mnt: filepath.Join(work, "small"), l: newLedger(), seed: uint64(time.Now().UnixNano())}
	mountTmpfs(t, r.mnt, 64<<20)
	r.config = writeFile(t, work, "sluice.yaml", "head_bytes: 1048576\nlimits:\n  min_free_bytes: 8388608\n")
	r.data = filepath.Join(r.mnt, "data")
	r.filler = filepath.Join(r.mnt, "filler")
	if n, err := writeFiller(r.filler, 16<<20); err != nil {
		t.Fatalf("write %s: %v (%d bytes)", r.filler, err, n)
	}
	return r
}

func (r *diskFullRig) start() *server {
	r.t.Helper()
	return mustStartServerOn(r.t, r.data, "--config", r.config)
}

// startLoad starts the clients against s: four posting batches of all
// sizes, or, if small, one posting small batches. The function it returns
// stops them; it is called again, to no effect, when the test ends.
func (r *diskFullRig) startLoad(s *server, small bool) (*fullWatch, func()) {
	w := newFullWatch()
	ctx, cancel := context.WithCancel(context.Background())
	client := newLoadClient(4)
	r.loads++
	wait := r.l.push(ctx, diskFullLoad(s, client, w, small), r.seed+uint64(r.loads))
	stop := sync.OnceFunc(func() {
		cancel()
		wait()
		client.CloseIdleConnections()
	})
	r.t.Cleanup(stop)
	return w, stop
}

// fillUntil507 waits until s answers 507, and 100 answers more (the
// clients keep pushing into the real ENOSPC of the WAL and of flushes).
// The deadline only stops a test that hangs.
func (r *diskFullRig) fillUntil507(s *server, w *fullWatch, start time.Time) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if s.p.exited() {
			r.t.Fatalf("sluice serve exited while the disk filled: %v\n%s", s.p.err, tail(s.p.out.String(), 8<<10))
		}
		if _, after := w.since507(); after >= 100 {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no 507 and 100 answers after it in %v of pushing; tmpfs: %s; answers: %s", 5*time.Minute, dfOf(r.mnt), formatCounts(r.l.counts()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	sum := r.l.summary()
	first, _ := w.since507()
	r.t.Logf("1. full after %v: %d requests, %d acked (%d lines); answers: %s; tmpfs: %s",
		first.Sub(start).Round(time.Millisecond), sum.requests, sum.acked, sum.ackedLines, formatCounts(r.l.counts()), dfOf(r.mnt))
}

// wait507 waits until s answers nothing but 507: 20 answers in a row
// that are 507, none 2xx (a 503 for the in-flight limit neither counts
// nor breaks the run). The deadline only stops a test that hangs.
func (r *diskFullRig) wait507(s *server, w *fullWatch) {
	r.t.Helper()
	w.resetRun()
	deadline := time.Now().Add(5 * time.Minute)
	for w.run507() < 20 {
		if s.p.exited() {
			r.t.Fatalf("sluice serve exited on a full disk: %v\n%s", s.p.err, tail(s.p.out.String(), 8<<10))
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the disk is full (tmpfs: %s), and the server does not answer 507 only; answers: %s", dfOf(r.mnt), formatCounts(r.l.counts()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// check copies the data directory (of a stopped server) to the normal
// disk and checks the copy against the ledger.
func (r *diskFullRig) check(what string, start time.Time) {
	r.t.Helper()
	chk := r.l.checkDir(r.t, what, copyToDisk(r.t, r.data))
	sum := r.l.summary()
	r.t.Logf("%s after %v: %d requests, %d acked (%d lines, every one present once); %d lines stored, %d of them from requests not acknowledged; answers: %s",
		what, time.Since(start).Round(time.Millisecond), sum.requests, sum.acked, sum.ackedLines, chk.exported, chk.unackedPresent, formatCounts(r.l.counts()))
}

// diskFullLoad is four clients posting random text to s: batches of 50 to
// 500 lines of 300 bytes, and one in eight of 4 MiB; if small, one client
// posting batches of 100 lines.
func diskFullLoad(s *server, c *http.Client, w *fullWatch, small bool) loadSpec {
	clients := 4
	if small {
		clients = 1
	}
	return loadSpec{
		url: s.url("/insert/jsonline"), client: c, clients: clients, pause: 50 * time.Millisecond,
		lines: func(rng *rand.Rand) int {
			if small {
				return 100
			}
			if rng.IntN(8) == 0 {
				return 4 << 20 / 360
			}
			return 50 + rng.IntN(450)
		},
		line: func(dst []byte, rng *rand.Rand, w, r, i int) []byte {
			var pad [300]byte
			return appendLine(dst, "diskfull", w, r, i, randomText(pad[:0], rng, len(pad)))
		},
		answered: w.answer,
	}
}

// fullWatch follows the answers of a server whose disk fills.
//
// Concurrency: safe for concurrent use.
type fullWatch struct {
	mu          sync.Mutex
	first       time.Time // the first 507
	after507    int       // answers since the first 507
	run         int       // 507s since the last 2xx (or resetRun)
	answers     int       // answers of every kind
	okAfter     int       // 2xx answers to requests numbered from from
	from        int
	unexpected  []string
	nUnexpected int
	stopping    atomic.Bool // set before the server is killed
}

func newFullWatch() *fullWatch { return &fullWatch{from: -1} }

// answer is the loadSpec's answered: it notes 507s and 2xx, and every answer
// that is none of 2xx accepting every line, 507 or 503 with Retry-After.
func (w *fullWatch) answer(_, r, n int, a postAnswer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers++
	if !w.first.IsZero() {
		w.after507++
	}
	switch {
	case a.ok() && a.accepted == n:
		w.run = 0
		if w.from >= 0 && r >= w.from {
			w.okAfter++
		}
		return
	case a.err == nil && (a.code == http.StatusInsufficientStorage || a.code == http.StatusServiceUnavailable) && a.retryAfter != "":
		if a.code == http.StatusInsufficientStorage {
			if w.first.IsZero() {
				w.first = time.Now()
			}
			w.run++
		}
		return
	case errors.Is(a.err, context.Canceled):
		return // the test stopped the load
	}
	if w.stopping.Load() {
		return // the server is being killed
	}
	w.nUnexpected++
	if len(w.unexpected) < 5 {
		w.unexpected = append(w.unexpected, fmt.Sprintf("request %d of %d lines: %d (Retry-After %q) %q %v", r, n, a.code, a.retryAfter, a.body, a.err))
	}
}

// since507 returns when the first 507 came (zero if none has) and how
// many answers came after it.
func (w *fullWatch) since507() (time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first, w.after507
}

func (w *fullWatch) run507() int { w.mu.Lock(); defer w.mu.Unlock(); return w.run }
func (w *fullWatch) resetRun()   { w.mu.Lock(); defer w.mu.Unlock(); w.run = 0 }

// waitAnswers waits until the clients had n more answers, of any kind.
// The deadline only stops a test that hangs.
func (w *fullWatch) waitAnswers(t *testing.T, s *server, n int) {
	t.Helper()
	w.mu.Lock()
	want := w.answers + n
	w.mu.Unlock()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		w.mu.Lock()
		got := w.answers
		w.mu.Unlock()
		if got >= want {
			return
		}
		if s.p.exited() {
			t.Fatalf("sluice serve exited: %v\n%s", s.p.err, tail(s.p.out.String(), 8<<10))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d answers in %v", got-want+n, n, 5*time.Minute)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// failUnexpected fails t if any answer was unexpected.
func (w *fullWatch) failUnexpected(t *testing.T, when string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nUnexpected > 0 {
		t.Errorf("%s: %d answers were neither a 2xx accepting every line nor a 507 or 503 with Retry-After; the first:\n  %s",
			when, w.nUnexpected, strings.Join(w.unexpected, "\n  "))
	}
}

// waitResumed waits until 10 requests sent from now on were answered 2xx,
// and returns how long that took; it fails t at timeout, which only stops
// a test that hangs.
func (w *fullWatch) waitResumed(t *testing.T, l *ledger, s *server, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	l.mu.Lock()
	from := len(l.reqs)
	l.mu.Unlock()
	w.mu.Lock()
	w.from, w.okAfter = from, 0
	w.mu.Unlock()
	for {
		w.mu.Lock()
		ok := w.okAfter
		w.mu.Unlock()
		if ok >= 10 {
			return time.Since(start)
		}
		if s.p.exited() {
			t.Fatalf("sluice serve exited: %v\n%s", s.p.err, tail(s.p.out.String(), 8<<10))
		}
		if time.Since(start) > timeout {
			t.Fatalf("space was freed %v ago, and ingest has not resumed (%d requests answered 2xx since); answers: %s; server output:\n%s",
				timeout, ok, formatCounts(l.counts()), tail(s.p.out.String(), 4<<10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mountTmpfs mounts a tmpfs of size bytes at dir (created) and unmounts it
// when the test ends; it skips t if mounting is not permitted.
func mountTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Only root (or CAP_SYS_ADMIN) may mount: as root a mount that fails
	// is a broken setup, not a reason to skip, and fails the test.
	cannot := t.Skipf
	if os.Geteuid() == 0 {
		cannot = t.Fatalf
	}
	if _, err := exec.LookPath("mount"); err != nil {
		cannot("no mount command to mount a tmpfs for the data directory: %v", err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		cannot("cannot mount a %d MiB tmpfs at %s (it needs root or CAP_SYS_ADMIN; uid %d): %v: %s", size>>20, dir, os.Geteuid(), err, strings.TrimSpace(string(out)))
	}
	// Registered before any server starts, so it runs after they are
	// stopped (cleanups run last first).
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
}

// writeFiller writes up to size bytes of zeros to a new file, synced, in
// 1 MiB writes and then, near a full disk, 4 KiB ones, and returns how
// many it wrote.
func writeFiller(path string, size int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for n < size {
		chunk := buf[:min(int64(len(buf)), size-n)]
		k, err := f.Write(chunk)
		n += int64(k)
		if err != nil {
			if len(buf) > 4096 && errors.Is(err, syscall.ENOSPC) {
				buf = buf[:4096]
				continue
			}
			return n, err
		}
	}
	return n, f.Sync()
}

// dfOf says how full the filesystem of dir is.
func dfOf(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err.Error()
	}
	total, free := st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize)
	return fmt.Sprintf("%s free of %s", fmtMiB(int64(free)), fmtMiB(int64(total)))
}

// copyToDisk copies data to a new directory on the normal disk and returns
// it.
func copyToDisk(t *testing.T, data string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	copyTree(t, data, dst)
	return dst
}
