package e2e

// Helpers of the client tests (otel_test.go, elastic_test.go,
// rsyslog_test.go, syslogng_syslog_test.go): a server with more flags (a
// syslog listener) and checking the time sluice stored for each line.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
