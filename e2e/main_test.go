package e2e

// The harness: the sluice binary (built once by TestMain), a server per
// test on a free port of 127.0.0.1, the clients installed by
// scripts/e2e-setup.sh, processes that are always stopped by PID, and the
// checks of what was stored (`sluice export`, `sluice stats`, /metrics).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sluiceBin is the binary under test, built by TestMain.
var sluiceBin string

const setupHint = "run scripts/e2e-setup.sh first (it installs and caches the real clients), or set SLUICE_E2E=off to skip the e2e tests"

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if off() {
		return m.Run() // every test skips
	}
	dir, err := os.MkdirTemp("", "sluice-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	sluiceBin = filepath.Join(dir, "sluice")
	args := []string{"build", "-o", sluiceBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/sluice")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go %s: %v\n%s", strings.Join(args, " "), err, out)
		return 1
	}
	return m.Run()
}

// sluiceEnv is the environment of the sluice processes: a binary built
// with -race sleeps a second at exit (GORACE's atexit_sleep_ms) unless told
// not to, which made each export and stats a second slower.
func sluiceEnv() []string {
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return append(os.Environ(), "GORACE="+gorace)
}

func off() bool { return os.Getenv("SLUICE_E2E") == "off" }

// skipIfOff skips t when SLUICE_E2E=off; otherwise a missing client fails.
func skipIfOff(t *testing.T) {
	t.Helper()
	if off() {
		t.Skip("SLUICE_E2E=off")
	}
}

// toolsDir is where scripts/e2e-setup.sh installs the clients.
func toolsDir() string {
	if d := os.Getenv("SLUICE_E2E_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "sluice-e2e")
	}
	return filepath.Join(home, ".cache", "sluice-e2e")
}

// venvPython returns the virtualenv's python after checking that it can
// import modules; it fails t when it cannot.
func venvPython(t *testing.T, modules ...string) string {
	t.Helper()
	py := filepath.Join(toolsDir(), "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no Python virtualenv at %s: %s", py, setupHint)
	}
	code := "import " + strings.Join(modules, ", ")
	if out, err := exec.Command(py, "-c", code).CombinedOutput(); err != nil {
		t.Fatalf("%s -c %q: %v\n%s\n%s", py, code, err, out, setupHint)
	}
	return py
}

// ---- processes

// proc is a child process that is stopped by PID when the test ends,
// whatever happened.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer // stdout and stderr
	done chan struct{}
	err  error // of Wait, once done is closed
}

// startProc starts cmd, its output collected, and kills it by PID at the
// end of the test if it is still running.
func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	// If the test binary dies, the child dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s (pid %d, %v):\n%s", name, cmd.Process.Pid, p.err, tail(p.out.String(), 8<<10))
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the process to exit by itself (then kills
// it and fails). It returns the error of Wait.
func (p *proc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s still running after %v; killed. Output:\n%s", p.name, timeout, p.out)
		return nil
	}
}

// stop sends SIGTERM and waits up to timeout for the process to exit (then
// kills it and fails). It returns the error of Wait.
func (p *proc) stop(t *testing.T, timeout time.Duration) error {
	t.Helper()
	if !p.exited() {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not exit within %v of SIGTERM; killed. Output:\n%s", p.name, timeout, p.out)
		return nil
	}
}

// tail returns the last max bytes of s, from a line start: a client that
// retries for ever logs a lot.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "[…]\n" + s
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runScript runs a program to completion within timeout and fails t if it
// does not exit 0. It returns the output.
func runScript(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after %v; killed. Output:\n%s", name, strings.Join(args, " "), timeout, out)
	}
	if err != nil {
		t.Fatalf("%s %s: %v. Output:\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ---- the server

// server is one `sluice serve` on 127.0.0.1 with a data directory of its own.
type server struct {
	data string
	addr string // host:port
	p    *proc
}

// startServer starts sluice serve on a free port and waits until GET
// /ready answers. The port is picked by binding :0 and closing it, so
// another process can take it in between: a start that fails on a taken
// address is retried.
func startServer(t *testing.T) *server {
	t.Helper()
	return startServerArgs(t, func() []string { return nil })
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func (s *server) url(path string) string { return "http://" + s.addr + path }

func (s *server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := http.Client{Timeout: time.Second}
	for {
		if s.p.exited() {
			return fmt.Errorf("exited before it was ready: %v", s.p.err)
		}
		resp, err := c.Get(s.url("/ready"))
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// Serving, even when not ready for writes: a server
			// restarted on a full disk says why it is not ready, and
			// the tests of that check its 507s themselves.
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusServiceUnavailable &&
				strings.HasPrefix(string(body), "not ready: ") && !strings.HasPrefix(string(body), "not ready: starting") {
				return nil
			}
			err = fmt.Errorf("GET /ready: %s %s", resp.Status, bytes.TrimSpace(body))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops the server with SIGTERM and checks that it exited cleanly.
// The deadline only stops a server that hangs (the server itself gives
// requests in flight 30 s); a stop slower than 10 s is logged.
func (s *server) stop(t *testing.T) {
	t.Helper()
	start := time.Now()
	if err := s.p.stop(t, 2*time.Minute); err != nil {
		t.Fatalf("sluice serve exited with %v after SIGTERM. Output:\n%s", err, s.p.out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Logf("sluice serve took %v to exit after SIGTERM", took.Round(time.Millisecond))
	}
}

// metrics returns the server's /metrics samples: series (as printed,
// labels included) to value.
func (s *server) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	c := http.Client{Timeout: time.Minute}
	resp, err := c.Get(s.url("/metrics"))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	return m
}

// sum adds the samples of metric whose labels include every one of labels
// (each as name="value").
func sum(m map[string]float64, metric string, labels ...string) float64 {
	var total float64
	for series, v := range m {
		name, rest, _ := strings.Cut(series, "{")
		if name != metric {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// storedLines is the counter of lines the server stored for tenant.
func (s *server) storedLines(t *testing.T, tenant string) int {
	t.Helper()
	return int(sum(s.metrics(t), "sluice_ingest_lines_total", `tenant="`+tenant+`"`))
}

// waitStored polls /metrics until the server has stored want lines for
// tenant, and fails t at the deadline. more, if not nil, is checked at
// each poll (a client that exited early, say) and ends the wait with its
// error.
func (s *server) waitStored(t *testing.T, tenant string, want int, timeout time.Duration, more func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := s.storedLines(t, tenant)
		if got == want {
			return
		}
		if got > want {
			t.Fatalf("the server stored %d lines for tenant %q, more than the %d sent", got, tenant, want)
		}
		if more != nil {
			if err := more(); err != nil {
				t.Fatalf("%v (the server had stored %d of %d lines for tenant %q)", err, got, want, tenant)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the server had stored %d of %d lines for tenant %q", timeout, got, want, tenant)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkNoFailedRequests fails t if the server answered any ingest request
// with a status other than 2xx, and returns the number of requests.
func (s *server) checkNoFailedRequests(t *testing.T, protocol string) int {
	t.Helper()
	m := s.metrics(t)
	var n float64
	for series, v := range m {
		name, rest, _ := strings.Cut(series, "{")
		if name != "sluice_ingest_requests_total" || !strings.Contains(rest, `protocol="`+protocol+`"`) {
			continue
		}
		if !strings.Contains(rest, `code="2`) && v > 0 {
			t.Errorf("the server answered %v %s requests with a failure: %s", v, protocol, series)
		}
		n += v
	}
	return int(n)
}

// ---- reading back what was stored (the server stopped)

// export runs `sluice export --data DIR --tenant T [args...]` and returns
// the lines.
func export(t *testing.T, data, tenant string, args ...string) []string {
	t.Helper()
	args = append([]string{"export", "--data", data, "--tenant", tenant}, args...)
	out := runSluice(t, args...)
	if out == "" {
		return nil
	}
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("sluice %s: output does not end with a newline", strings.Join(args, " "))
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

func runSluice(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = sluiceEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// tenantStats is what `sluice stats` says of one tenant.
type tenantStats struct {
	lines     int // in parts
	headLines int // of the head, all tenants
}

// stats runs `sluice stats` and reads the rows of tenant (summed over days)
// and the head.
func stats(t *testing.T, data, tenant string) tenantStats {
	t.Helper()
	out := runSluice(t, "stats", "--data", data)
	var st tenantStats
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		// tenant day parts streams lines "line bytes" "disk bytes" ratio
		if len(f) == 8 && f[0] == tenant {
			lines, err := strconv.Atoi(f[4])
			if err != nil {
				t.Fatalf("sluice stats: row %q: %v", line, err)
			}
			st.lines += lines
		}
		if rest, ok := strings.CutPrefix(line, "head: "); ok {
			n, _, _ := strings.Cut(rest, " ")
			v, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("sluice stats: %q: %v", line, err)
			}
			st.headLines = v
		}
	}
	return st
}

// checkStats checks what `sluice stats` says of the only tenant of a data
// directory: lines in all, in parts or still in the head (a stopped server
// leaves its head in the WAL, not flushed). The streams are checked
// through the API while the server runs (checkSeries): the head of a
// stopped server has no stream counts in `sluice stats`.
func checkStats(t *testing.T, data, tenant string, lines int) {
	t.Helper()
	st := stats(t, data, tenant)
	if st.lines+st.headLines != lines {
		t.Errorf("sluice stats: %d lines in parts + %d in the head, want %d", st.lines, st.headLines, lines)
	}
}

// checkSeries checks that GET /loki/api/v1/series, over all time, gives
// tenant want streams (heads and parts alike), each once.
func (s *server) checkSeries(t *testing.T, tenant string, want int) {
	t.Helper()
	q := url.Values{"start": {"0"}, "end": {strconv.FormatInt(time.Now().Add(24*time.Hour).UnixNano(), 10)}}
	req, err := http.NewRequest(http.MethodGet, s.url("/loki/api/v1/series?"+q.Encode()), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Scope-OrgID", tenant)
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET /loki/api/v1/series: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /loki/api/v1/series: %s %v: %.500s", resp.Status, err, body)
	}
	var r struct {
		Status string              `json:"status"`
		Data   []map[string]string `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("GET /loki/api/v1/series: %v: %.500s", err, body)
	}
	seen := map[string]bool{}
	for _, ls := range r.Data {
		k := fmt.Sprint(ls) // maps print sorted by key
		if seen[k] {
			t.Errorf("GET /loki/api/v1/series: stream %s twice", k)
		}
		seen[k] = true
	}
	if len(r.Data) != want {
		t.Errorf("GET /loki/api/v1/series: %d streams of tenant %q, want %d: %v", len(r.Data), tenant, want, r.Data)
	}
}

// checkOnce fails t unless got holds each of want exactly once and nothing
// else. key maps a stored line to the value compared with want (the line
// itself, or the message inside it); it returns an error for a line it
// cannot read.
func checkOnce(t *testing.T, what string, got, want []string, key func(string) (string, error)) {
	t.Helper()
	wanted := make(map[string]int, len(want))
	for _, w := range want {
		wanted[w]++
	}
	seen := make(map[string]int, len(got))
	var bad []string
	for _, line := range got {
		k, err := key(line)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", line, err))
			continue
		}
		seen[k]++
	}
	var missing, dup, extra []string
	for w := range wanted {
		switch n := seen[w]; {
		case n == 0:
			missing = append(missing, w)
		case n > wanted[w]:
			dup = append(dup, fmt.Sprintf("%q ×%d", w, n))
		}
	}
	for k := range seen {
		if wanted[k] == 0 {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(dup)+len(extra)+len(bad) == 0 && len(got) == len(want) {
		return
	}
	slices.Sort(missing)
	slices.Sort(dup)
	slices.Sort(extra)
	t.Errorf("%s: %d lines stored, want %d exactly once each: %d missing %s, %d duplicated %s, %d unexpected %s, %d unreadable %s",
		what, len(got), len(want), len(missing), firstFew(missing), len(dup), firstFew(dup), len(extra), firstFew(extra), len(bad), firstFew(bad))
}

func firstFew(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%q…", s[:5])
	}
	return fmt.Sprintf("%q", s)
}

func identity(s string) (string, error) { return s, nil }

// writeFile writes a file of a test's temp dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
