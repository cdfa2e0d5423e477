package e2e

// Helpers of the client tests (otel_test.go, elastic_test.go,
// rsyslog_test.go, syslogng_syslog_test.go): a server with more flags (a
// syslog listener) and checking the time sluice stored for each line.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServerArgs is startServer with more flags: extra is called for each
// attempt (a start that loses a port picked by freeAddr to another process
// is retried, with new ports).
func startServerArgs(t *testing.T, extra func() []string) *server {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		args := append([]string{"serve", "--data", data, "--listen", addr, "--pprof=false"}, extra()...)
		cmd := exec.Command(sluiceBin, args...)
		cmd.Env = sluiceEnv()
		s := &server{data: data, addr: addr, p: startProc(t, "sluice serve", cmd)}
		err := s.waitReady(2 * time.Minute) // only stops a start that hangs
		if err == nil {
			return s
		}
		if s.p.exited() && strings.Contains(s.p.out.String(), "address already in use") && attempt < 3 {
			continue
		}
		s.p.cmd.Process.Kill()
		<-s.p.done
		t.Fatalf("sluice %s: %v. Output:\n%s", strings.Join(args, " "), err, s.p.out)
	}
}

// startSyslogServer starts a server that also receives syslog over TCP
// for tenant (--syslog-tcp, --syslog-tenant) and returns the syslog
// address.
func startSyslogServer(t *testing.T, tenant string) (*server, string) {
	t.Helper()
	var syslogAddr string
	s := startServerArgs(t, func() []string {
		syslogAddr = freeAddr(t)
		return []string{"--syslog-tcp", syslogAddr, "--syslog-tenant", tenant}
	})
	return s, syslogAddr
}

// exportTime formats a time for export's --from and --to.
func exportTime(ts time.Time) string { return ts.UTC().Format(time.RFC3339Nano) }

// checkTimes checks the time sluice stored for the lines of tenant (lines
// is all of them, as exported): timeOf reads the time a line says it has
// (the one the client sent); the lines of every time are grouped, and for
// the earliest, the latest and a few in between, `sluice export --from T
// --to T` must give exactly the lines of T. The whole range, from the
// earliest to the latest, must give every line.
func checkTimes(t *testing.T, data, tenant string, lines []string, timeOf func(string) (time.Time, error)) {
	t.Helper()
	byTime := map[int64][]string{}
	for _, l := range lines {
		ts, err := timeOf(l)
		if err != nil {
			t.Errorf("read the time of %q: %v", l, err)
			return
		}
		byTime[ts.UnixNano()] = append(byTime[ts.UnixNano()], l)
	}
	if len(byTime) == 0 {
		t.Errorf("checkTimes: no lines")
		return
	}
	var times []int64
	for ns := range byTime {
		times = append(times, ns)
	}
	slices.Sort(times)
	first, last := time.Unix(0, times[0]), time.Unix(0, times[len(times)-1])
	all := export(t, data, tenant, "--from", exportTime(first), "--to", exportTime(last))
	checkOnce(t, fmt.Sprintf("export --from %s --to %s", exportTime(first), exportTime(last)), all, lines, identity)
	picks := []int{0, len(times) / 3, len(times) / 2, 2 * len(times) / 3, len(times) - 1}
	picked := map[int]bool{}
	for _, i := range picks {
		if picked[i] {
			continue
		}
		picked[i] = true
		ts := exportTime(time.Unix(0, times[i]))
		got := export(t, data, tenant, "--from", ts, "--to", ts)
		checkOnce(t, "export --from "+ts+" --to "+ts+" (the lines that say they are of that time)", got, byTime[times[i]], identity)
	}
}

// checkNoBlankLines fails t if an export of syslog messages holds empty
// lines: the octet count of a frame includes the LF its sender (rsyslog's
// RSYSLOG_SyslogProtocol23Format, syslog-ng's syslog()) ends the message
// with, and, as rsyslog's imtcp (parser.DropTrailingLFOnReception) and
// syslog-ng's syslog() source do, sluice must drop one trailing LF (and a
// CR before it) before it parses and stores the message. A message stored
// with its LF is exported as its line and an empty one.
func checkNoBlankLines(t *testing.T, sender string, lines []string) {
	t.Helper()
	blank := 0
	for _, l := range lines {
		if l == "" {
			blank++
		}
	}
	if blank > 0 {
		t.Errorf("%s: `sluice export` printed %d empty lines among %d: octet-counted frames were stored with the LF that ends them, "+
			"which sluice must drop (one LF, and a CR before it) as rsyslog's imtcp and syslog-ng's syslog() source do", sender, blank, len(lines))
	}
}

// syslogNGRoot checks that scripts/e2e-setup.sh unpacked syslog-ng and
// returns its binary, its module path and the LD_LIBRARY_PATH setting it
// runs with; it fails t when it is missing.
func syslogNGRoot(t *testing.T) (bin, modules, libs string) {
	t.Helper()
	root := filepath.Join(toolsDir(), "syslog-ng")
	bin = filepath.Join(root, "usr", "sbin", "syslog-ng")
	modules = filepath.Join(root, "usr", "lib", "syslog-ng", "3.38")
	if _, err := os.Stat(filepath.Join(modules, "libafsocket.so")); err != nil {
		t.Fatalf("syslog-ng is not unpacked in %s: %s", root, setupHint)
	}
	libs = "LD_LIBRARY_PATH=" + filepath.Join(root, "usr", "lib", "syslog-ng")
	version := exec.Command(bin, "--version")
	version.Env = append(os.Environ(), libs)
	if out, err := version.CombinedOutput(); err != nil {
		t.Fatalf("%s --version: %v\n%s\n%s", bin, err, out, setupHint)
	}
	return bin, modules, libs
}

// appendFile appends text to the file at path.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// requestCodes returns the server's ingest requests by protocol and status
// code, as /metrics counts them: what to look at when a client failed.
func (s *server) requestCodes(t *testing.T) string {
	t.Helper()
	var rows []string
	for series, v := range s.metrics(t) {
		if name, rest, _ := strings.Cut(series, "{"); name == "sluice_ingest_requests_total" && v > 0 {
			rows = append(rows, fmt.Sprintf("%s %v", "{"+rest, v))
		}
	}
	slices.Sort(rows)
	return strings.Join(rows, ", ")
}

// runClient is runScript for a client that talks to s: when it fails, the
// server's answers (status codes) and its output are given too.
func runClient(t *testing.T, s *server, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || ctx.Err() != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("still running after %v; killed", timeout)
		}
		t.Fatalf("%s %s: %v. Output:\n%s\nThe server's answers: %s\nThe server's output:\n%s",
			name, strings.Join(args, " "), err, tail(string(out), 8<<10), s.requestCodes(t), tail(s.p.out.String(), 4<<10))
	}
	return string(out)
}

// ---- the Loki clients (clients_loki_test.go, clients_otelcol_test.go)

// clientBuild returns the path of what scripts/e2e-setup.sh built for a
// client in toolsDir()/dir (dir is NAME-VERSION, file is inside it), and
// fails t when it is missing.
func clientBuild(t *testing.T, dir, file string) string {
	t.Helper()
	p := filepath.Join(toolsDir(), dir, file)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v): %s", p, err, setupHint)
	}
	return p
}

// lokiEntry is one line of a /loki/api/v1/query_range answer: the labels
// of its stream (with Loki, the stream's labels, the line's structured
// metadata and the labels its pipeline parsed), its time and the line.
type lokiEntry struct {
	labels map[string]string
	time   time.Time
	line   string
}

// queryRange runs a log query of tenant over [start, end] through GET
// /loki/api/v1/query_range, forward, with the largest limit the server
// takes by default (5000, Loki's max_entries_limit_per_query), and returns
// every line of the answer. It fails t unless the answer is a successful
// "streams" result with fewer lines than the limit (so none was cut).
func (s *server) queryRange(t *testing.T, tenant, query string, start, end time.Time) []lokiEntry {
	t.Helper()
	const limit = 5000
	q := url.Values{
		"query":     {query},
		"start":     {strconv.FormatInt(start.UnixNano(), 10)},
		"end":       {strconv.FormatInt(end.UnixNano(), 10)},
		"limit":     {strconv.Itoa(limit)},
		"direction": {"forward"},
	}
	req, err := http.NewRequest(http.MethodGet, s.url("/loki/api/v1/query_range?"+q.Encode()), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Scope-OrgID", tenant)
	c := http.Client{Timeout: time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("query_range %s: %v", query, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("query_range %s (tenant %q): %s %v: %.1000s", query, tenant, resp.Status, err, body)
	}
	var doc struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Stream map[string]string   `json:"stream"`
				Values [][]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Status != "success" || doc.Data.ResultType != "streams" {
		t.Fatalf("query_range %s: %v: %.1000s", query, err, body)
	}
	var entries []lokiEntry
	for _, r := range doc.Data.Result {
		for _, v := range r.Values {
			var ts, line string
			if len(v) < 2 || json.Unmarshal(v[0], &ts) != nil || json.Unmarshal(v[1], &line) != nil {
				t.Fatalf("query_range %s: a value of stream %v is not [\"<ns>\", \"<line>\", ...]: %s", query, r.Stream, v)
			}
			ns, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				t.Fatalf("query_range %s: time %q: %v", query, ts, err)
			}
			entries = append(entries, lokiEntry{labels: r.Stream, time: time.Unix(0, ns), line: line})
		}
	}
	if len(entries) >= limit {
		t.Fatalf("query_range %s: %d lines, the limit: some may be cut", query, len(entries))
	}
	return entries
}

// sentLine is a line a client was told to send, as the test expects to
// find it through the query API.
type sentLine struct {
	key    string            // what the test's key function reads from the stored line
	labels map[string]string // labels its stream must have (others may be there too)
	meta   map[string]string // structured metadata (or parsed fields) it must have
}

// checkClientLines checks what a client sent to tenant through the query
// API, while the server runs:
//   - selector (a stream selector, with a pipeline if need be) over
//     [start, end] gives each sent line exactly once (compared by key, which
//     reads a stored line), in a stream with the line's labels;
//   - for every metadata pair (name, value) of the lines at the indexes
//     picks, `selector <stage> | name="value"` gives exactly the sent lines
//     with that pair, each labelled name=value in its answer (Loki answers
//     a line's structured metadata, and the fields its parsers extract, as
//     labels of its stream). stage is "" for structured metadata, or a
//     parser (`| json`) for fields inside the line.
func (s *server) checkClientLines(t *testing.T, tenant, selector, stage string, start, end time.Time,
	sent []sentLine, key func(string) (string, error), picks ...int) {
	t.Helper()
	got := s.queryRange(t, tenant, selector, start, end)
	checkEntries(t, selector, got, sent, key)
	pairs := map[[2]string]bool{}
	for _, i := range picks {
		for name, value := range sent[i].meta {
			pairs[[2]string{name, value}] = true
		}
	}
	var sorted [][2]string
	for p := range pairs {
		sorted = append(sorted, p)
	}
	slices.SortFunc(sorted, func(a, b [2]string) int { return strings.Compare(a[0]+"="+a[1], b[0]+"="+b[1]) })
	for _, p := range sorted {
		q := selector
		if stage != "" {
			q += " " + stage
		}
		q += fmt.Sprintf(" | %s=%q", p[0], p[1])
		var want []sentLine
		for _, l := range sent {
			if l.meta[p[0]] == p[1] {
				want = append(want, l)
			}
		}
		got := s.queryRange(t, tenant, q, start, end)
		checkEntries(t, q, got, want, key)
		for _, e := range got {
			if e.labels[p[0]] != p[1] {
				t.Errorf("%s: a line is answered with the labels %v, without %s=%q", q, e.labels, p[0], p[1])
				break
			}
		}
	}
}

// checkEntries checks that got holds each of want exactly once (by key)
// and nothing else, each in a stream with its labels.
func checkEntries(t *testing.T, what string, got []lokiEntry, want []sentLine, key func(string) (string, error)) {
	t.Helper()
	lines := make([]string, len(got))
	for i, e := range got {
		lines[i] = e.line
	}
	keys := make([]string, len(want))
	byKey := make(map[string]sentLine, len(want))
	for i, w := range want {
		keys[i] = w.key
		byKey[w.key] = w
	}
	checkOnce(t, what, lines, keys, key)
	bad := 0
	for _, e := range got {
		k, err := key(e.line)
		if err != nil {
			continue // reported by checkOnce
		}
		w, ok := byKey[k]
		if !ok {
			continue
		}
		for name, value := range w.labels {
			if e.labels[name] != value {
				if bad < 3 {
					t.Errorf("%s: line %q is in the stream %v, want %s=%q", what, e.line, e.labels, name, value)
				}
				bad++
				break
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d lines in all in a stream without their labels", what, bad)
	}
}

// multiline is the message of record i of the client programs of
// e2e/testdata/clients: one line, or three when i % 7 == 3 (a stack
// trace, say).
func multiline(prefix string, i int) string {
	m := fmt.Sprintf(`%s %04d "quoted" back\slash ünïcode ✓`, prefix, i)
	if i%7 == 3 {
		m += "\n  at frame 1\n  at frame 2"
	}
	return m
}
