package e2e

// Loki's push API (POST /loki/api/v1/push) driven by the two Python logging
// handlers people use, from the virtualenv of scripts/e2e-setup.sh:
//
// TestPythonLoggingLoki: python-logging-loki 0.3.1's LokiHandler with
// version="1" sends one JSON push per log record (requests' json=, so
// Content-Type: application/json, no compression), synchronously, and wants
// 204. It has no option for headers, so the lines go to the default tenant.
// Its labels are the handler's tags, the record's extra "tags", and
// "severity" and "logger", which it adds itself. The test logs N messages
// (quotes, backslashes, non-ASCII) of two kinds and two levels and checks
// that each is stored exactly once, byte-exact, and that each stream
// selector on those labels exports exactly the lines logged with them.
//
// TestLokiLoggerHandler: loki-logger-handler 1.1.2's LokiLoggerHandler
// queues records and sends them from a thread every `timeout` seconds (or
// when its flush_event is set) and once more at exit (atexit): JSON pushes,
// gzip-compressed by default, with additional_headers (X-Scope-OrgID here),
// each line a JSON object of the record ({"message": ..., "timestamp": ...,
// "level": ..., extras}), label_keys promoting extras to labels, and
// structured metadata (the third element of a value) when enabled. The
// script logs half of N records and wakes the flush thread; once the server
// has stored them, the test tells it to log the other half and exit, so
// both paths send. The test checks that each message is stored exactly
// once in the tenant named by the header, with the right stream labels,
// that the default tenant got nothing, and that there were two requests.

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

const pythonLoggingLokiScript = `
import logging
import sys

import logging_loki

url, n = sys.argv[1], int(sys.argv[2])
failures = []


class Handler(logging_loki.LokiHandler):
    # The handler reports a failed push through handleError only (a traceback
    # on stderr); keep them to fail the script.
    def handleError(self, record):
        failures.append(sys.exc_info()[1])
        super().handleError(record)


handler = Handler(url=url, tags={"app": "e2e-pll", "env": "test"}, version="1")
log = logging.getLogger("e2e.pll")
log.setLevel(logging.DEBUG)
log.propagate = False
log.addHandler(handler)
for i in range(n):
    kind = "even" if i % 2 == 0 else "odd"
    level = logging.WARNING if i % 10 == 0 else logging.INFO
    log.log(level, 'pll %04d kind=%s "quoted" back\\slash ünïcode ✓', i, kind, extra={"tags": {"kind": kind}})
if failures:
    print("%d pushes failed, the first: %r" % (len(failures), failures[0]), file=sys.stderr)
    sys.exit(1)
print("sent", n)
`

// pllLine is the message python-logging-loki's script logs as record i
// (the handler's default formatter sends the message alone).
func pllLine(i int) string {
	kind := "even"
	if i%2 == 1 {
		kind = "odd"
	}
	return fmt.Sprintf(`pll %04d kind=%s "quoted" back\slash ünïcode ✓`, i, kind)
}

func TestPythonLoggingLoki(t *testing.T) {
	skipIfOff(t)
	py := venvPython(t, "logging_loki")
	const n = 100
	dir := t.TempDir()
	script := writeFile(t, dir, "pll.py", pythonLoggingLokiScript)
	s := startServer(t)

	runScript(t, 2*time.Minute, py, script, s.url("/loki/api/v1/push"), strconv.Itoa(n))
	// Each push was answered before the next was sent: all are stored.
	if got := s.storedLines(t, "default"); got != n {
		t.Errorf("sluice_ingest_lines_total{tenant=\"default\"} = %d after the client finished, want %d", got, n)
	}
	if reqs := s.checkNoFailedRequests(t, "loki"); reqs != n {
		t.Errorf("%d Loki push requests, want %d (python-logging-loki sends one per record)", reqs, n)
	}
	s.checkSeries(t, "default", 3)
	s.stop(t)

	var all, even, odd, warn, info, evenInfo []string
	for i := range n {
		l := pllLine(i)
		all = append(all, l)
		if i%2 == 0 {
			even = append(even, l)
		} else {
			odd = append(odd, l)
		}
		if i%10 == 0 {
			warn = append(warn, l)
		} else {
			info = append(info, l)
			if i%2 == 0 {
				evenInfo = append(evenInfo, l)
			}
		}
	}
	checkOnce(t, "tenant default", export(t, s.data, "default"), all, identity)
	for _, c := range []struct {
		sel  string
		want []string
	}{
		{`{app="e2e-pll", env="test", logger="e2e.pll"}`, all},
		{`{app="e2e-pll", kind="even"}`, even},
		{`{kind="odd"}`, odd},
		{`{severity="warning"}`, warn},
		{`{severity="info"}`, info},
		{`{severity="info", kind="even"}`, evenInfo},
		{`{app="other"}`, nil},
	} {
		checkOnce(t, c.sel, export(t, s.data, "default", "--stream", c.sel), c.want, identity)
	}
	// Streams: even/warning, even/info, odd/info.
	checkStats(t, s.data, "default", n)
}

const lokiLoggerHandlerScript = `
import atexit
import logging
import os
import sys

from loki_logger_handler.loki_logger_handler import LokiLoggerHandler

url, n, tenant = sys.argv[1], int(sys.argv[2]), sys.argv[3]
handler = None


def check():
    # Registered before the handler's own atexit send, so it runs after it
    # (atexit is last in, first out). A failed send only sets handler.error.
    if handler is not None and handler.error:
        print("the handler reported an error (see above)", file=sys.stderr)
        sys.stderr.flush()
        os._exit(3)


atexit.register(check)
# timeout is how often the flush thread sends; a long one, so that it sends
# only when flush_event wakes it (below), never at the same time as the
# send at exit: the two would drain the one queue at once.
handler = LokiLoggerHandler(
    url=url,
    labels={"app": "e2e-llh"},
    label_keys={"kind"},
    additional_headers={"X-Scope-OrgID": tenant},
    timeout=3600,
    enable_self_errors=True,
    enable_structured_loki_metadata=True,
    loki_metadata={"source": "e2e"},
    loki_metadata_keys=["trace_id"],
)
log = logging.getLogger("e2e.llh")
log.setLevel(logging.DEBUG)
log.propagate = False
log.addHandler(handler)


def send(lo, hi):
    for i in range(lo, hi):
        kind = "even" if i % 2 == 0 else "odd"
        log.info('llh %04d "quoted" ünïcode', i, extra={"kind": kind, "seq": i, "trace_id": "t%04d" % i})


# The first half goes with the flush thread, woken as its timeout would;
# the test reads them back, then says go on (a line on stdin), and the
# second half goes with the send at exit.
send(0, n // 2)
handler.flush_event.set()
print("first half queued", flush=True)
if sys.stdin.readline().strip() != "go":
    sys.exit("stdin closed before the test said go")
send(n // 2, n)
print("sent", n)
`

func TestLokiLoggerHandler(t *testing.T) {
	skipIfOff(t)
	py := venvPython(t, "loki_logger_handler")
	const n, tenant = 200, "team-llh"
	dir := t.TempDir()
	script := writeFile(t, dir, "llh.py", lokiLoggerHandlerScript)
	s := startServer(t)

	cmd := exec.Command(py, script, s.url("/loki/api/v1/push"), strconv.Itoa(n), tenant)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	client := startProc(t, "the loki-logger-handler script", cmd)
	s.waitStored(t, tenant, n/2, 2*time.Minute, func() error {
		if client.exited() {
			return fmt.Errorf("the script exited before its flush thread had sent the first half (%v). Output:\n%s", client.err, client.out)
		}
		return nil
	})
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatalf("tell the script to go on: %v", err)
	}
	stdin.Close()
	if err := client.wait(t, time.Minute); err != nil {
		t.Fatalf("the loki-logger-handler script: %v. Output:\n%s", err, client.out)
	}
	if got := s.storedLines(t, tenant); got != n {
		t.Errorf("sluice_ingest_lines_total{tenant=%q} = %d after the client exited, want %d", tenant, got, n)
	}
	if reqs := s.checkNoFailedRequests(t, "loki"); reqs != 2 {
		t.Errorf("%d Loki push requests, want 2 (one from the flush thread, one at exit)", reqs)
	}
	s.checkSeries(t, tenant, 2)
	s.stop(t)

	var all, even, odd []string
	for i := range n {
		m := fmt.Sprintf(`llh %04d "quoted" ünïcode`, i)
		all = append(all, m)
		if i%2 == 0 {
			even = append(even, m)
		} else {
			odd = append(odd, m)
		}
	}
	// Each line is the record as JSON; its message is what was logged, and
	// its "kind" is the label the line's stream must have.
	message := func(wantKind string) func(string) (string, error) {
		return func(line string) (string, error) {
			var rec struct {
				Message string  `json:"message"`
				Kind    string  `json:"kind"`
				Seq     int     `json:"seq"`
				Level   string  `json:"level"`
				Time    float64 `json:"timestamp"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				return "", err
			}
			if wantKind != "" && rec.Kind != wantKind {
				return "", fmt.Errorf("kind %q in a stream selected by kind=%q", rec.Kind, wantKind)
			}
			if rec.Level != "INFO" || rec.Time < float64(time.Now().Add(-time.Hour).Unix()) {
				return "", fmt.Errorf("level %q, timestamp %v: not the record logged", rec.Level, rec.Time)
			}
			return rec.Message, nil
		}
	}
	checkOnce(t, "tenant "+tenant, export(t, s.data, tenant), all, message(""))
	checkOnce(t, `{app="e2e-llh", kind="even"}`, export(t, s.data, tenant, "--stream", `{app="e2e-llh", kind="even"}`), even, message("even"))
	checkOnce(t, `{kind="odd"}`, export(t, s.data, tenant, "--stream", `{kind="odd"}`), odd, message("odd"))
	checkOnce(t, "tenant default", export(t, s.data, "default"), nil, identity)
	checkStats(t, s.data, tenant, n)
}
