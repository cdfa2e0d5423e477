package e2e

// TestSyslogNGHTTP: syslog-ng 3.38 (unpacked by scripts/e2e-setup.sh) reads
// a file with its file() source and posts the lines to POST /insert/jsonline
// with its http() destination: NDJSON batches (one $(format-json) object per
// line, joined by "\n", no newline after the last), two workers posting at
// once, X-Scope-OrgID and the stream fields as a query argument. The test
// writes half of the file before syslog-ng starts and appends the other half
// while it follows the file, waits (with a deadline, polling /metrics) until
// the server has stored every line, stops syslog-ng and then the server, and
// checks that every line of the file was stored exactly once in the tenant
// named by the header, in the stream {app="e2e-syslog-ng", src="file"},
// with its text (quotes, backslashes, tabs, non-ASCII) intact in "msg".
// syslog-ng must have logged no error (it retries failed posts forever,
// so a failure would show as an error and a wait until the deadline).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const syslogNGConfig = `@version: 3.38
options {
  stats_freq(0);          # 3.38 rejects the 4.x stats(freq()) form
  time_reopen(1);         # retry a failed post after 1 s, not 60
  keep_hostname(yes);
};
source s_in {
  file("{{INPUT}}" flags(no-parse) follow-freq(0.1));
};
destination d_sluice {
  http(
    url("{{URL}}/insert/jsonline?_stream_fields=app,src")
    method("POST")
    headers("X-Scope-OrgID: {{TENANT}}", "Content-Type: application/x-ndjson")
    body('$(format-json --scope none app=e2e-syslog-ng src=file time=${ISODATE} msg=${MESSAGE})')
    batch-lines(100)
    batch-timeout(100)
    workers(2)
  );
};
log { source(s_in); destination(d_sluice); };
`

// syslogNGLine is line i of the input file.
func syslogNGLine(i int) string {
	return fmt.Sprintf("syslog-ng e2e %05d \"quoted\" back\\slash\ttab ünïcode ✓ %s", i, strings.Repeat("x", i%37))
}

func TestSyslogNGHTTP(t *testing.T) {
	skipIfOff(t)
	root := filepath.Join(toolsDir(), "syslog-ng")
	bin := filepath.Join(root, "usr", "sbin", "syslog-ng")
	modules := filepath.Join(root, "usr", "lib", "syslog-ng", "3.38")
	if _, err := os.Stat(filepath.Join(modules, "libhttp.so")); err != nil {
		t.Fatalf("syslog-ng with its http() module is not unpacked in %s: %s", root, setupHint)
	}
	libs := "LD_LIBRARY_PATH=" + filepath.Join(root, "usr", "lib", "syslog-ng")
	version := exec.Command(bin, "--version")
	version.Env = append(os.Environ(), libs)
	if out, err := version.CombinedOutput(); err != nil {
		t.Fatalf("%s --version: %v\n%s\n%s", bin, err, out, setupHint)
	}
	const n, tenant = 2000, "syslogng"
	dir := t.TempDir()
	input := filepath.Join(dir, "input.log")
	var want []string
	var first, second strings.Builder
	for i := range n {
		l := syslogNGLine(i)
		want = append(want, l)
		if i < n/2 {
			first.WriteString(l + "\n")
		} else {
			second.WriteString(l + "\n")
		}
	}
	writeFile(t, dir, "input.log", first.String())

	s := startServer(t)
	conf := strings.NewReplacer("{{INPUT}}", input, "{{URL}}", s.url(""), "{{TENANT}}", tenant).Replace(syslogNGConfig)
	confPath := writeFile(t, dir, "syslog-ng.conf", conf)
	cmd := exec.Command(bin, "-F", "-e", "-f", confPath, "--no-caps",
		"--module-path="+modules,
		"--persist-file="+filepath.Join(dir, "syslog-ng.persist"),
		"--pidfile="+filepath.Join(dir, "syslog-ng.pid"),
		"--control="+filepath.Join(dir, "syslog-ng.ctl"))
	cmd.Env = append(os.Environ(), libs)
	cmd.Dir = dir
	sng := startProc(t, "syslog-ng", cmd)
	running := func() error {
		if sng.exited() {
			return fmt.Errorf("syslog-ng exited (%v). Output:\n%s", sng.err, sng.out)
		}
		return nil
	}

	s.waitStored(t, tenant, n/2, 2*time.Minute, running)
	f, err := os.OpenFile(input, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(second.String()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s.waitStored(t, tenant, n, 2*time.Minute, running)

	if err := sng.stop(t, time.Minute); err != nil {
		t.Errorf("syslog-ng exited with %v after SIGTERM. Output:\n%s", err, sng.out)
	}
	for _, line := range strings.Split(sng.out.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "error") {
			t.Errorf("syslog-ng logged an error: %s", line)
		}
	}
	reqs := s.checkNoFailedRequests(t, "jsonline")
	t.Logf("syslog-ng posted %d lines in %d requests", n, reqs)
	s.checkSeries(t, tenant, 1)
	s.stop(t)

	msg := func(line string) (string, error) {
		var rec struct {
			Msg, App, Src, Time string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return "", err
		}
		if rec.App != "e2e-syslog-ng" || rec.Src != "file" {
			return "", fmt.Errorf("app %q, src %q: not the fields syslog-ng was told to send", rec.App, rec.Src)
		}
		if _, err := time.Parse(time.RFC3339, rec.Time); err != nil {
			return "", fmt.Errorf("time: %v", err)
		}
		return rec.Msg, nil
	}
	checkOnce(t, "tenant "+tenant, export(t, s.data, tenant), want, msg)
	sel := `{app="e2e-syslog-ng", src="file"}`
	checkOnce(t, sel, export(t, s.data, tenant, "--stream", sel), want, msg)
	checkOnce(t, "tenant default", export(t, s.data, "default"), nil, identity)
	checkStats(t, s.data, tenant, n)
}
