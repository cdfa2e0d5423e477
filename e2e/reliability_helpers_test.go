package e2e

// Helpers of the reliability tests (killloop_test.go, diskfull_test.go,
// overload_test.go): a server started with flags on a data directory the
// test chooses, HTTP clients that post NDJSON batches of uniquely numbered
// lines and keep a ledger of what the server answered, the check of a data
// directory against that ledger (`sluice export` and `sluice stats`), and
// the resident memory of a process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ---- the server

// spawnServer starts `sluice serve --data data args...` on a free port of
// 127.0.0.1 and returns at once, not waiting for it to be ready.
func spawnServer(t *testing.T, data string, args ...string) *server {
	t.Helper()
	addr := freeAddr(t)
	argv := append([]string{"serve", "--data", data, "--listen", addr, "--pprof=false"}, args...)
	cmd := exec.Command(sluiceBin, argv...)
	cmd.Env = sluiceEnv()
	return &server{data: data, addr: addr, p: startProc(t, "sluice serve", cmd)}
}

// startServerOn starts `sluice serve --data data args...` on a free port
// of 127.0.0.1 and waits up to ready for GET /ready. Unlike startServer it
// takes the data directory and flags from the test, and returns an error
// rather than failing t when the server does not come up (a test may
// expect that), having stopped it.
func startServerOn(t *testing.T, data string, ready time.Duration, args ...string) (*server, error) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		s := spawnServer(t, data, args...)
		err := s.waitReady(ready)
		if err == nil {
			return s, nil
		}
		if s.p.exited() && strings.Contains(s.p.out.String(), "address already in use") && attempt < 3 {
			continue
		}
		s.p.cmd.Process.Kill()
		<-s.p.done
		return nil, fmt.Errorf("sluice serve on %s: %v. Output:\n%s", s.addr, err, tail(s.p.out.String(), 8<<10))
	}
}

// mustStartServerOn is startServerOn failing t.
func mustStartServerOn(t *testing.T, data string, args ...string) *server {
	t.Helper()
	s, err := startServerOn(t, data, 2*time.Minute, args...) // only stops a start that hangs
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// kill9 kills the server with SIGKILL and waits for it. It fails t if the
// server had exited by itself before (a crash, not our kill).
func (s *server) kill9(t *testing.T) {
	t.Helper()
	if s.p.exited() {
		t.Fatalf("sluice serve exited by itself (%v) before it was killed. Output:\n%s", s.p.err, tail(s.p.out.String(), 8<<10))
	}
	s.p.cmd.Process.Kill()
	<-s.p.done
	var ee *exec.ExitError
	if errors.As(s.p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return
		}
	}
	t.Fatalf("sluice serve ended with %v, not by our SIGKILL. Output:\n%s", s.p.err, tail(s.p.out.String(), 8<<10))
}

// pid is the server's process id.
func (s *server) pid() int { return s.p.cmd.Process.Pid }

// ---- the lines and the ledger

// ledger numbers the requests the clients send and records what the
// server answered to each. Line i of request r carries the id "r.i", so
// that an exported line names the request it came from.
//
// Concurrency: safe for concurrent use.
type ledger struct {
	mu   sync.Mutex
	reqs []reqEntry // indexed by request number
	// persisted[r][i]: line i of request r was exported by an earlier
	// check; a later check must find it again, acknowledged or not.
	persisted [][]bool
	codes     map[string]int // answers by status ("200", "503 in flight", "error: ...")
}

type reqEntry struct {
	lines int32
	acked bool // answered 2xx with every line accepted
	// absent: the answer says the server never read the body (503 over
	// the in-flight limit, 507 before reading), so no line of it may be
	// stored.
	absent bool
}

func newLedger() *ledger { return &ledger{codes: map[string]int{}} }

// open numbers a new request of n lines.
func (l *ledger) open(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, reqEntry{lines: int32(n)})
	return len(l.reqs) - 1
}

// record notes the answer to request r.
func (l *ledger) record(r int, a postAnswer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := &l.reqs[r]
	e.acked = a.ok() && a.accepted == int(e.lines)
	e.absent = a.bodyUnread()
	l.codes[a.class()]++
}

// counts returns the answers by class.
func (l *ledger) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.codes)
}

// ledgerSummary is what a ledger holds.
type ledgerSummary struct {
	requests, acked, ackedLines, lines int
}

func (l *ledger) summary() ledgerSummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s ledgerSummary
	for _, e := range l.reqs {
		s.requests++
		s.lines += int(e.lines)
		if e.acked {
			s.acked++
			s.ackedLines += int(e.lines)
		}
	}
	return s
}

// appendLine appends line i of request r: one NDJSON object with a
// stream (service, host), the id and a message padded with pad.
func appendLine[P string | []byte](dst []byte, service string, host, r, i int, pad P) []byte {
	dst = append(dst, `{"service":"`...)
	dst = append(dst, service...)
	dst = append(dst, `","host":"h`...)
	dst = strconv.AppendInt(dst, int64(host), 10)
	dst = append(dst, `","id":"`...)
	dst = strconv.AppendInt(dst, int64(r), 10)
	dst = append(dst, '.')
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `","_msg":"line `...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, ' ')
	dst = append(dst, pad...)
	dst = append(dst, "\"}\n"...)
	return dst
}

// parseLineID reads the request and line numbers of a line built by appendLine.
func parseLineID(line []byte) (r, i int, ok bool) {
	_, rest, found := bytes.Cut(line, []byte(`"id":"`))
	if !found {
		return 0, 0, false
	}
	id, _, found := bytes.Cut(rest, []byte(`"`))
	if !found {
		return 0, 0, false
	}
	rs, is, found := bytes.Cut(id, []byte("."))
	if !found {
		return 0, 0, false
	}
	r, err1 := strconv.Atoi(string(rs))
	i, err2 := strconv.Atoi(string(is))
	return r, i, err1 == nil && err2 == nil
}

// ---- posting

// postAnswer is the outcome of one POST.
type postAnswer struct {
	code       int
	retryAfter string
	accepted   int
	body       string // the first bytes
	err        error  // no HTTP answer at all
}

func (a postAnswer) ok() bool { return a.err == nil && a.code/100 == 2 }

// bodyUnread: the server answered before it read the body, so that it
// stored nothing of it. These are the 503s of the in-flight limits (of
// requests, "too many ingest requests in flight; retry", and of their
// memory, "too much ingest in flight; retry") and the 507 of the low free
// space check.
func (a postAnswer) bodyUnread() bool {
	return a.err == nil && (a.code == http.StatusServiceUnavailable && strings.Contains(a.body, " in flight; retry") ||
		a.code == http.StatusInsufficientStorage && strings.Contains(a.body, "disk is nearly full"))
}

// class names the answer for the counts: the status, with what kind of
// 503 or 507 it was; or the transport error.
func (a postAnswer) class() string {
	switch {
	case a.err != nil:
		return "error: " + errClass(a.err)
	case a.code == http.StatusServiceUnavailable && strings.Contains(a.body, "too many ingest requests in flight"):
		return "503 in flight"
	case a.code == http.StatusServiceUnavailable && strings.Contains(a.body, "too much ingest in flight"):
		return "503 in-flight memory"
	case a.code == http.StatusInsufficientStorage && strings.Contains(a.body, "disk is nearly full"):
		return "507 low space"
	case a.code == http.StatusInsufficientStorage:
		return "507 store"
	}
	return strconv.Itoa(a.code)
}

// errClass shortens a transport error to its kind.
func errClass(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if strings.Contains(err.Error(), "server closed idle connection") {
		return "server closed idle connection"
	}
	return err.Error()
}

// newLoadClient returns an HTTP client keeping up to conns connections.
func newLoadClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
}

// postNDJSON sends body to the server's /insert/jsonline and reads the answer.
func postNDJSON(ctx context.Context, c *http.Client, url string, body []byte) postAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return postAnswer{err: err}
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := c.Do(req)
	if err != nil {
		return postAnswer{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a := postAnswer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(data)}
	if err != nil {
		// The status line came, the body did not: no answer to rely on.
		return postAnswer{err: fmt.Errorf("read the answer (%s): %w", resp.Status, err)}
	}
	if a.ok() {
		var reply struct {
			Accepted int `json:"accepted"`
			Rejected int `json:"rejected"`
		}
		if err := json.Unmarshal(data, &reply); err == nil {
			a.accepted = reply.Accepted
		}
	}
	return a
}

// loadSpec describes the clients of ledger.push.
type loadSpec struct {
	url     string
	client  *http.Client
	clients int
	// lines returns the number of lines of the next batch.
	lines func(rng *rand.Rand) int
	// line appends line i of request r of client w.
	line func(dst []byte, rng *rand.Rand, w, r, i int) []byte
	// pause after an answer that is not a 2xx (a test cannot wait as long
	// as Retry-After says).
	pause time.Duration
	// answered, if not nil, sees every answer (from many goroutines).
	answered func(w, r, n int, a postAnswer)
	// stop, if not nil, ends the load gently: once it is closed no request
	// is started, and those under way are answered (ctx ends it at once).
	stop <-chan struct{}
}

// push runs ld.clients goroutines posting batches until ctx is done or
// ld.stop closed, each request numbered and its answer recorded in l. The
// returned function waits for them.
func (l *ledger) push(ctx context.Context, ld loadSpec, seed uint64) (wait func()) {
	var wg sync.WaitGroup
	for w := range ld.clients {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			var body []byte
			for ctx.Err() == nil && !chanClosed(ld.stop) {
				n := ld.lines(rng)
				r := l.open(n)
				body = body[:0]
				for i := range n {
					body = ld.line(body, rng, w, r, i)
				}
				a := postNDJSON(ctx, ld.client, ld.url, body)
				l.record(r, a)
				if ld.answered != nil {
					ld.answered(w, r, n, a)
				}
				if !a.ok() && ld.pause > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(ld.pause):
					}
				}
			}
		})
	}
	return wg.Wait
}

// chanClosed reports whether c is closed; a nil c never is.
func chanClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// randomText appends n random characters of the base64 alphabet (no
// compressor shrinks them much).
func randomText(dst []byte, rng *rand.Rand, n int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for n > 0 {
		v := rng.Uint64()
		for k := 0; k < 10 && n > 0; k++ {
			dst = append(dst, alphabet[v&63])
			v >>= 6
			n--
		}
	}
	return dst
}

// ---- checking a data directory against the ledger

// dirCheck is what checkDir found.
type dirCheck struct {
	exported       int // lines
	ackedLines     int // lines of acknowledged requests (all found)
	unackedPresent int // lines of unacknowledged requests found
	recovered      int // records `sluice stats` says were replayed from the WAL
	took           time.Duration
}

// checkDir exports every tenant of data (a stopped server's directory)
// and checks it against l: every line of an acknowledged request exactly
// once; no line twice; no line never sent; none of a request whose body
// the server never read; every line exported by an earlier check still
// there. Then `sluice stats` must report no damage, and count as many
// lines as export gave. what prefixes the errors.
func (l *ledger) checkDir(t *testing.T, what, data string) dirCheck {
	t.Helper()
	start := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := make([][]uint8, len(l.reqs))
	for len(l.persisted) < len(l.reqs) {
		l.persisted = append(l.persisted, nil)
	}
	var c dirCheck
	var problems []string
	nproblems := 0
	problem := func(format string, args ...any) {
		nproblems++
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		} else if len(problems) == 10 {
			problems = append(problems, "…")
		}
	}
	stderr := streamSluice(t, func(line []byte) {
		c.exported++
		r, i, ok := parseLineID(line)
		if !ok || r < 0 || r >= len(l.reqs) || i < 0 || i >= int(l.reqs[r].lines) {
			problem("a line never sent: %.200q", line)
			return
		}
		if seen[r] == nil {
			seen[r] = make([]uint8, l.reqs[r].lines)
		}
		if seen[r][i]++; seen[r][i] == 2 {
			problem("line %d of request %d (acknowledged: %v) is stored twice or more", i, r, l.reqs[r].acked)
		}
	}, "export", "--data", data)
	if strings.Contains(stderr, "level=ERROR") {
		t.Errorf("%s: sluice export logged errors:\n%s", what, tail(stderr, 4<<10))
	}
	for r, e := range l.reqs {
		for i := range int(e.lines) {
			n := uint8(0)
			if seen[r] != nil {
				n = seen[r][i]
			}
			was := l.persisted[r] != nil && l.persisted[r][i]
			switch {
			case n == 0 && e.acked:
				problem("line %d of request %d was acknowledged but is lost", i, r)
			case n == 0 && was:
				problem("line %d of request %d (not acknowledged) was exported by an earlier check but is lost now", i, r)
			case n > 0 && e.absent:
				problem("line %d of request %d is stored, but the server answered before reading the body", i, r)
			}
			if n > 0 {
				if e.acked {
					c.ackedLines++
				} else {
					c.unackedPresent++
				}
				if l.persisted[r] == nil {
					l.persisted[r] = make([]bool, e.lines)
				}
				l.persisted[r][i] = true
			}
		}
	}
	if nproblems > 0 {
		t.Errorf("%s: %d problems in the exported lines:\n  %s", what, nproblems, strings.Join(problems, "\n  "))
	}

	// stats opens the directory as export left it and must agree.
	sout, serr := runSluiceErr(t, "stats", "--data", data)
	if strings.Contains(string(sout), "damage") || strings.Contains(serr, "level=ERROR") {
		t.Errorf("%s: sluice stats reports damage:\n%s%s", what, sout, serr)
	}
	parts, head, recovered := statsNumbers(t, string(sout))
	if parts+head != c.exported {
		t.Errorf("%s: sluice stats counts %d lines in parts and %d in the head; export gave %d\n%s", what, parts, head, c.exported, sout)
	}
	c.recovered = recovered
	err := filepath.WalkDir(data, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".corrupt") {
			t.Errorf("%s: %s was set aside as corrupt", what, p)
		}
		return err
	})
	if err != nil {
		t.Errorf("%s: walk %s: %v", what, data, err)
	}
	c.took = time.Since(start)
	return c
}

// runSluiceErr runs the sluice binary to completion (within two minutes)
// and returns its stdout and stderr; it fails t if it does not exit 0.
func runSluiceErr(t *testing.T, args ...string) ([]byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.Env = sluiceEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 8<<10))
	}
	return out, stderr.String()
}

// streamSluice runs the sluice binary to completion (within two minutes),
// passing each line of its stdout, without the newline, to fn; it returns
// its stderr, and fails t if it does not exit 0 or its output does not
// end with a newline.
func streamSluice(t *testing.T, fn func(line []byte), args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.Env = sluiceEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("sluice %s: %v", strings.Join(args, " "), err)
	}
	br := bufio.NewReaderSize(out, 1<<20)
	var rerr error
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it.
			long := slices.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == nil {
			fn(line[:len(line)-1])
			continue
		}
		if err != io.EOF {
			rerr = err
		} else if len(line) > 0 {
			rerr = fmt.Errorf("output ends without a newline: %.200q", line)
		}
		break
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 8<<10))
	}
	if rerr != nil {
		t.Fatalf("sluice %s: %v", strings.Join(args, " "), rerr)
	}
	return stderr.String()
}

// statsNumbers reads the totals of `sluice stats`: lines in parts, in the
// head, and records recovered from the WAL at open.
func statsNumbers(t *testing.T, out string) (parts, head, recovered int) {
	t.Helper()
	num := func(line, prefix string) int {
		rest, _ := strings.CutPrefix(line, prefix)
		f, _, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(strings.TrimSuffix(f, ","))
		if err != nil {
			t.Errorf("sluice stats: %q: %v", line, err)
		}
		return n
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "parts: "):
			// parts: N, L lines, ...
			_, rest, _ := strings.Cut(line, ", ")
			parts = num(rest, "")
		case strings.HasPrefix(line, "head: "):
			head = num(line, "head: ")
		case strings.HasPrefix(line, "recovered at open: "):
			recovered = num(line, "recovered at open: ")
		}
	}
	return parts, head, recovered
}

// copyTree copies the directory tree src to dst (regular files and
// directories only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// ---- memory

// rssSampler polls a process's VmRSS until stopped and keeps the peak.
type rssSampler struct {
	pid  int
	peak atomic.Int64 // bytes
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if v, err := procStatusBytes(pid, "VmRSS"); err == nil && v > s.peak.Load() {
				s.peak.Store(v)
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// finish stops the sampling and returns the peak seen.
func (s *rssSampler) finish() int64 {
	close(s.stop)
	<-s.done
	return s.peak.Load()
}

// procStatusBytes reads a "kB" field of /proc/PID/status (VmRSS, VmHWM).
func procStatusBytes(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: %q", pid, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n << 10, err
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// ---- settings

// envNumber reads an integer setting from the environment (def when unset).
func envNumber(t *testing.T, name string, def int64) int64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// ---- reporting

// formatCounts prints answer counts sorted by class.
func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, m[k])
	}
	return b.String()
}

// countsSince returns the answers of now that are not in before, but for
// the 2xx ones.
func countsSince(before, now map[string]int) string {
	d := map[string]int{}
	for k, v := range now {
		if v > before[k] && k[0] != '2' {
			d[k] = v - before[k]
		}
	}
	if len(d) == 0 {
		return "none"
	}
	return formatCounts(d)
}

func fmtMiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
