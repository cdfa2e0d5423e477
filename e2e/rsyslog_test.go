package e2e

// rsyslog 8.2302 (Debian's rsyslog and rsyslog-elasticsearch, installed by
// scripts/e2e-setup.sh) run in the foreground with a config of its own
// (rsyslogd -n -f CONF -i PIDFILE, checked first with rsyslogd -N1; a work
// directory in the test's temp dir; no system inputs), reading a file with
// imfile. Half of the file is there when rsyslog starts, the other half is
// appended once the server has stored the first: imfile sends what it finds
// at start and then follows the file.
//
// TestRsyslogElasticsearch: omelasticsearch with bulkmode="on" and
// esVersion.major="8" posts POST /_bulk, Content-Type "application/json;
// charset=utf-8", up to queue.dequeueBatchSize documents a request, each
// an action line {"index":{"_index": "..."}} (with "_type":"events" as
// well unless esVersion.major is 8 or more), the document, and a blank
// line. It needs "errors":false in the reply and ignores the status code;
// it retries (action.resumeRetryCount) only when it cannot connect, and
// writes the requests that failed to its errorfile. The template makes a
// JSON document of the line: @timestamp (the line's first field, an RFC
// 3339 time), message (the whole line), app and host (rsyslog's
// localHostName). The test checks that every line is stored once in the
// default tenant (omelasticsearch has no way to send X-Scope-OrgID), at
// the line's time, in the stream {app="e2e-rsyslog-es", host=...}, and
// that rsyslog wrote no errorfile and logged no error.
//
// TestRsyslogSyslogTCP: omfwd over TCP with TCP_Framing="octet-counted"
// and the template RSYSLOG_SyslogProtocol23Format (RFC 5424:
// "<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD MSG\n"; the time is
// when imfile read the line, with microseconds and +00:00) to sluice's
// --syslog-tcp. Note the "\n" the template ends with: the octet count
// includes it. The test checks that every line is stored once in the
// tenant of --syslog-tenant, with the PRI of imfile's facility and
// severity, the hostname and app name (the stream labels sluice derives,
// hostname and app_name), at the time of its header.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rsyslogd returns the rsyslogd binary, after checking that it runs and
// has the modules a test needs; it fails t when it does not.
func rsyslogd(t *testing.T, modules ...string) string {
	t.Helper()
	bin, err := exec.LookPath("rsyslogd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/rsyslogd", "/sbin/rsyslogd"} {
			if _, err2 := os.Stat(p); err2 == nil {
				bin, err = p, nil
				break
			}
		}
	}
	if err != nil {
		t.Fatalf("rsyslogd not found: %s", setupHint)
	}
	if out, err := exec.Command(bin, "-v").CombinedOutput(); err != nil {
		t.Fatalf("%s -v: %v\n%s\n%s", bin, err, out, setupHint)
	}
	for _, m := range modules {
		found := false
		for _, dir := range []string{"/usr/lib/x86_64-linux-gnu/rsyslog", "/usr/lib/aarch64-linux-gnu/rsyslog", "/usr/lib/rsyslog", "/usr/lib64/rsyslog"} {
			if _, err := os.Stat(filepath.Join(dir, m+".so")); err == nil {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("rsyslog has no %s module (package rsyslog-elasticsearch for omelasticsearch): %s", m, setupHint)
		}
	}
	return bin
}

// rsyslogRun validates conf with rsyslogd -N1, then starts rsyslogd in the
// foreground with it.
func rsyslogRun(t *testing.T, bin, dir, conf string) *proc {
	t.Helper()
	confPath := writeFile(t, dir, "rsyslog.conf", conf)
	runScript(t, time.Minute, bin, "-N1", "-f", confPath)
	cmd := exec.Command(bin, "-n", "-f", confPath, "-i", filepath.Join(dir, "rsyslogd.pid"))
	cmd.Dir = dir
	return startProc(t, "rsyslogd", cmd)
}

// rsyslogStop stops rsyslogd and fails t if it, or its internal log,
// reported an error.
func rsyslogStop(t *testing.T, p *proc, internalLog string) {
	t.Helper()
	if err := p.stop(t, time.Minute); err != nil {
		t.Errorf("rsyslogd exited with %v after SIGTERM. Output:\n%s", err, p.out)
	}
	text := p.out.String()
	if b, err := os.ReadFile(internalLog); err == nil {
		text += string(b)
	}
	for _, line := range strings.Split(text, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "error") || strings.Contains(l, "suspended") || strings.Contains(l, "cannot") {
			t.Errorf("rsyslog logged: %s", line)
		}
	}
}

// rsyslogLine is line i of an rsyslog test's input file.
func rsyslogLine(kind string, i int) string {
	return fmt.Sprintf(`rsyslog-%s %05d "quoted" back\slash ünïcode ✓ %s`, kind, i, strings.Repeat("x", i%29))
}

const rsyslogESConfig = `
global(workDirectory="{{DIR}}/work" localHostName="e2e-rsyslog-host")
module(load="imfile")
module(load="omelasticsearch")
template(name="e2e-doc" type="list" option.jsonf="on") {
  property(outname="@timestamp" name="msg" field.delimiter="32" field.number="1" format="jsonf")
  property(outname="message" name="msg" format="jsonf")
  constant(outname="app" value="e2e-rsyslog-es" format="jsonf")
  property(outname="host" name="hostname" format="jsonf")
}
ruleset(name="to-sluice") {
  action(type="omelasticsearch" server="127.0.0.1" serverport="{{PORT}}" searchIndex="e2e-rsyslog"
         template="e2e-doc" bulkmode="on" esVersion.major="8" errorfile="{{DIR}}/es-errors.json"
         queue.type="linkedlist" queue.dequeueBatchSize="100"
         action.resumeRetryCount="-1" action.resumeInterval="1")
}
input(type="imfile" file="{{INPUT}}" tag="e2e-rsyslog-es:" ruleset="to-sluice" freshStartTail="off")
# rsyslog's own messages (errors, suspended actions)
if $syslogfacility-text == "syslog" then action(type="omfile" file="{{DIR}}/internal.log")
`

// rsyslogESBase is the time of the first line: they are a second apart,
// plus 250 ms.
var rsyslogESBase = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

func TestRsyslogElasticsearch(t *testing.T) {
	skipIfOff(t)
	bin := rsyslogd(t, "imfile", "omelasticsearch")
	const n = 2000
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	var first, second strings.Builder
	for i := range n {
		ts := rsyslogESBase.Add(time.Duration(i)*time.Second + 250*time.Millisecond).Format("2006-01-02T15:04:05.000Z")
		l := ts + " " + rsyslogLine("es", i)
		want = append(want, l)
		if i < n/2 {
			first.WriteString(l + "\n")
		} else {
			second.WriteString(l + "\n")
		}
	}
	input := writeFile(t, dir, "input.log", first.String())

	s := startServer(t)
	_, port, _ := strings.Cut(s.addr, ":")
	conf := strings.NewReplacer("{{DIR}}", dir, "{{PORT}}", port, "{{INPUT}}", input).Replace(rsyslogESConfig)
	errorFile := filepath.Join(dir, "es-errors.json")
	rs := rsyslogRun(t, bin, dir, conf)
	running := func() error {
		if rs.exited() {
			return fmt.Errorf("rsyslogd exited (%v). Output:\n%s", rs.err, rs.out)
		}
		// A request that failed is not sent again: its lines are lost.
		if b, err := os.ReadFile(errorFile); err == nil {
			return fmt.Errorf("omelasticsearch wrote failed requests to its errorfile (the server's answers: %s):\n%s",
				s.requestCodes(t), tail(string(b), 4<<10))
		}
		return nil
	}
	start := time.Now()
	s.waitStored(t, "default", n/2, 2*time.Minute, running)
	appendFile(t, input, second.String())
	s.waitStored(t, "default", n, 2*time.Minute, running)
	t.Logf("rsyslog delivered %d lines in %v", n, time.Since(start).Round(time.Millisecond))
	rsyslogStop(t, rs, filepath.Join(dir, "internal.log"))
	if b, err := os.ReadFile(errorFile); err == nil {
		t.Errorf("omelasticsearch wrote failed requests to its errorfile:\n%s", tail(string(b), 4<<10))
	}
	reqs := s.checkNoFailedRequests(t, "elastic")
	t.Logf("omelasticsearch posted %d lines in %d bulk requests", n, reqs)
	if reqs < n/100 {
		t.Errorf("%d bulk requests for %d lines in batches of at most 100", reqs, n)
	}
	s.checkSeries(t, "default", 1)
	s.stop(t)

	doc := func(line string) (string, error) {
		var d struct {
			TS      string `json:"@timestamp"`
			Message string
			App     string
			Host    string
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			return "", err
		}
		if d.App != "e2e-rsyslog-es" || d.Host != "e2e-rsyslog-host" {
			return "", fmt.Errorf("app %q, host %q: not what the template makes", d.App, d.Host)
		}
		if ts, _, _ := strings.Cut(d.Message, " "); ts != d.TS {
			return "", fmt.Errorf("@timestamp %q is not the line's time %q", d.TS, ts)
		}
		return d.Message, nil
	}
	lines := export(t, s.data, "default")
	checkOnce(t, "tenant default", lines, want, doc)
	checkTimes(t, s.data, "default", lines, func(line string) (time.Time, error) {
		var d struct {
			TS string `json:"@timestamp"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			return time.Time{}, err
		}
		return time.Parse(time.RFC3339Nano, d.TS)
	})
	sel := `{app="e2e-rsyslog-es", host="e2e-rsyslog-host"}`
	checkOnce(t, sel, export(t, s.data, "default", "--stream", sel), want, doc)
	checkStats(t, s.data, "default", n)
}

const rsyslogFwdConfig = `
global(workDirectory="{{DIR}}/work" localHostName="e2e-rsyslog-host")
module(load="imfile")
ruleset(name="to-sluice") {
  action(type="omfwd" target="127.0.0.1" port="{{PORT}}" protocol="tcp" TCP_Framing="octet-counted"
         template="RSYSLOG_SyslogProtocol23Format"
         queue.type="linkedlist" action.resumeRetryCount="-1" action.resumeInterval="1")
}
input(type="imfile" file="{{INPUT}}" tag="e2e-rsyslog-fwd:" facility="local3" severity="warning"
      ruleset="to-sluice" freshStartTail="off")
if $syslogfacility-text == "syslog" then action(type="omfile" file="{{DIR}}/internal.log")
`

// rfc5424 matches an RFC 5424 message: PRI, TIMESTAMP, HOSTNAME,
// APP-NAME, PROCID, MSGID, STRUCTURED-DATA, MSG.
var rfc5424 = regexp.MustCompile(`^<(\d{1,3})>1 (\S+) (\S+) (\S+) (\S+) (\S+) (-|\[.*?\]) (.*)$`)

func TestRsyslogSyslogTCP(t *testing.T) {
	skipIfOff(t)
	bin := rsyslogd(t, "imfile")
	const n, tenant = 2000, "rsyslog"
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	var first, second strings.Builder
	for i := range n {
		l := rsyslogLine("fwd", i)
		want = append(want, l)
		if i < n/2 {
			first.WriteString(l + "\n")
		} else {
			second.WriteString(l + "\n")
		}
	}
	input := writeFile(t, dir, "input.log", first.String())

	s, syslogAddr := startSyslogServer(t, tenant)
	_, port, _ := strings.Cut(syslogAddr, ":")
	conf := strings.NewReplacer("{{DIR}}", dir, "{{PORT}}", port, "{{INPUT}}", input).Replace(rsyslogFwdConfig)
	start := time.Now()
	rs := rsyslogRun(t, bin, dir, conf)
	running := func() error {
		if rs.exited() {
			return fmt.Errorf("rsyslogd exited (%v). Output:\n%s", rs.err, rs.out)
		}
		return nil
	}
	s.waitStored(t, tenant, n/2, 2*time.Minute, running)
	appendFile(t, input, second.String())
	s.waitStored(t, tenant, n, 2*time.Minute, running)
	t.Logf("rsyslog delivered %d lines in %v", n, time.Since(start).Round(time.Millisecond))
	rsyslogStop(t, rs, filepath.Join(dir, "internal.log"))
	// The times rsyslog may have stamped (it reads the clock with µs).
	from, to := start.Add(-time.Second), time.Now().Add(time.Second)
	s.checkSeries(t, tenant, 1)
	s.stop(t)

	// local3.warning
	const pri = 19*8 + 4
	timeOf := func(line string) (time.Time, error) {
		m := rfc5424.FindStringSubmatch(line)
		if m == nil {
			return time.Time{}, fmt.Errorf("not RFC 5424")
		}
		return time.Parse(time.RFC3339Nano, m[2])
	}
	msg := func(line string) (string, error) {
		m := rfc5424.FindStringSubmatch(line)
		if m == nil {
			return "", fmt.Errorf("not RFC 5424")
		}
		if m[1] != strconv.Itoa(pri) || m[3] != "e2e-rsyslog-host" || m[4] != "e2e-rsyslog-fwd" || m[5] != "-" || m[6] != "-" || m[7] != "-" {
			return "", fmt.Errorf("PRI %s HOSTNAME %s APP-NAME %s PROCID %s MSGID %s SD %s: not what rsyslog was told to send", m[1], m[3], m[4], m[5], m[6], m[7])
		}
		ts, err := time.Parse(time.RFC3339Nano, m[2])
		if err != nil {
			return "", err
		}
		if ts.Before(from) || ts.After(to) {
			return "", fmt.Errorf("TIMESTAMP %s is not within the run (%s to %s)", m[2], exportTime(from), exportTime(to))
		}
		return m[8], nil
	}
	lines := export(t, s.data, tenant)
	checkNoBlankLines(t, "rsyslog's omfwd (RSYSLOG_SyslogProtocol23Format, octet-counted)", lines)
	checkOnce(t, "tenant "+tenant, lines, want, msg)
	checkTimes(t, s.data, tenant, lines, timeOf)
	sel := `{hostname="e2e-rsyslog-host", app_name="e2e-rsyslog-fwd"}`
	checkOnce(t, sel, export(t, s.data, tenant, "--stream", sel), want, msg)
	checkOnce(t, "tenant default", export(t, s.data, "default"), nil, identity)
	checkStats(t, s.data, tenant, n)
}
