package e2e

// TestSyslogNGSyslogTCP: syslog-ng 3.38 (unpacked by scripts/e2e-setup.sh)
// sends syslog over TCP to sluice's --syslog-tcp from two files:
//
//   - syslog() destination: RFC 5424 with octet counting ("LEN <PRI>1
//     TIMESTAMP HOST PROGRAM PID MSGID [meta sequenceId="N"] MSG\n"; the
//     count includes the "\n" syslog-ng ends the message with; frac-digits(3)
//     gives milliseconds, time-zone("UTC") +00:00);
//   - network() destination: the BSD format (RFC 3164), one message a line
//     ("<PRI>Mmm dd hh:mm:ss HOST PROGRAM[PID]: MSG\n"; no year, no zone,
//     whole seconds).
//
// Each line of the files starts with its own time; a csv-parser and a
// date-parser make it the message's time, so the time each destination
// sends is known, and a rewrite sets HOST, PROGRAM, PID and MSGID
// (a different PROGRAM per file, so a different stream). The files' lines
// are read with flags(no-parse), so a message is the whole line, and the
// source's default-facility and default-priority give the PRI. Half of each
// file is written before syslog-ng starts, the other half appended once
// the server has stored the first.
//
// The test checks that every line is stored exactly once in the tenant of
// --syslog-tenant, with the header syslog-ng was told to send, at the
// line's time (to the millisecond for RFC 5424, the second for BSD, whose
// year sluice must take from the time it received it), in the stream
// {hostname=..., app_name=...} sluice derives for syslog, and that
// syslog-ng logged no error.

import (
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

const syslogNGSyslogConfig = `@version: 3.38
options {
  stats_freq(0);
  time_reopen(1);
  keep_hostname(yes);
};
source s_5424 {
  file("{{IN5424}}" flags(no-parse) follow-freq(0.1) default-facility(local4) default-priority(warning));
};
source s_bsd {
  file("{{INBSD}}" flags(no-parse) follow-freq(0.1) default-facility(local5) default-priority(info));
};
# The line's first field is its time.
parser p_time {
  csv-parser(columns("E2E.TS", "E2E.REST") delimiters(" ") flags(greedy));
  date-parser(format("%Y-%m-%dT%H:%M:%S.%f%z") template("${E2E.TS}"));
};
rewrite r_5424 {
  set("e2e-sng-host" value("HOST"));
  set("e2e-sng-5424" value("PROGRAM"));
  set("4242" value("PID"));
  set("ID47" value("MSGID"));
};
rewrite r_bsd {
  set("e2e-sng-host" value("HOST"));
  set("e2e-sng-bsd" value("PROGRAM"));
  set("4343" value("PID"));
};
destination d_syslog {
  syslog("127.0.0.1" port({{PORT}}) transport("tcp") frac-digits(3) time-zone("UTC") persist-name("d_syslog"));
};
destination d_network {
  network("127.0.0.1" port({{PORT}}) transport("tcp") time-zone("UTC") persist-name("d_network"));
};
log { source(s_5424); parser(p_time); rewrite(r_5424); destination(d_syslog); };
log { source(s_bsd); parser(p_time); rewrite(r_bsd); destination(d_network); };
`

// rfc3164 matches the BSD messages syslog-ng's network() sends: PRI,
// TIMESTAMP, HOSTNAME, PROGRAM, PID, MSG.
var rfc3164 = regexp.MustCompile(`^<(\d{1,3})>([A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d) (\S+) ([^\[ ]+)\[(\d+)\]: (.*)$`)

func TestSyslogNGSyslogTCP(t *testing.T) {
	skipIfOff(t)
	bin, modules, libs := syslogNGRoot(t)
	const n, tenant = 1000, "syslogng-tcp" // lines per file
	dir := t.TempDir()
	// BSD timestamps have no year: sluice takes the one that puts the time
	// nearest to when it received it, so the lines' times are recent.
	base := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	lineTime := func(i int) time.Time { return base.Add(time.Duration(i) * 137 * time.Millisecond) }
	line := func(kind string, i int) string {
		return fmt.Sprintf(`%s sng-%s %05d "quoted" back\slash ünïcode ✓ %s`,
			lineTime(i).Format("2006-01-02T15:04:05.000Z"), kind, i, strings.Repeat("x", i%31))
	}
	var want5424, wantBSD, all []string
	var first5424, second5424, firstBSD, secondBSD strings.Builder
	for i := range n {
		a, b := line("5424", i), line("bsd", i)
		want5424, wantBSD = append(want5424, a), append(wantBSD, b)
		if i < n/2 {
			first5424.WriteString(a + "\n")
			firstBSD.WriteString(b + "\n")
		} else {
			second5424.WriteString(a + "\n")
			secondBSD.WriteString(b + "\n")
		}
	}
	all = append(append(all, want5424...), wantBSD...)
	in5424 := writeFile(t, dir, "in-5424.log", first5424.String())
	inBSD := writeFile(t, dir, "in-bsd.log", firstBSD.String())

	s, syslogAddr := startSyslogServer(t, tenant)
	_, port, _ := strings.Cut(syslogAddr, ":")
	conf := strings.NewReplacer("{{IN5424}}", in5424, "{{INBSD}}", inBSD, "{{PORT}}", port).Replace(syslogNGSyslogConfig)
	confPath := writeFile(t, dir, "syslog-ng.conf", conf)
	cmd := exec.Command(bin, "-F", "-e", "-f", confPath, "--no-caps",
		"--module-path="+modules,
		"--persist-file="+filepath.Join(dir, "syslog-ng.persist"),
		"--pidfile="+filepath.Join(dir, "syslog-ng.pid"),
		"--control="+filepath.Join(dir, "syslog-ng.ctl"))
	cmd.Env = append(os.Environ(), libs, "TZ=UTC")
	cmd.Dir = dir
	start := time.Now()
	sng := startProc(t, "syslog-ng", cmd)
	running := func() error {
		if sng.exited() {
			return fmt.Errorf("syslog-ng exited (%v). Output:\n%s", sng.err, sng.out)
		}
		return nil
	}
	s.waitStored(t, tenant, n, 2*time.Minute, running)
	appendFile(t, in5424, second5424.String())
	appendFile(t, inBSD, secondBSD.String())
	s.waitStored(t, tenant, 2*n, 2*time.Minute, running)
	t.Logf("syslog-ng delivered 2×%d lines in %v", n, time.Since(start).Round(time.Millisecond))
	if err := sng.stop(t, time.Minute); err != nil {
		t.Errorf("syslog-ng exited with %v after SIGTERM. Output:\n%s", err, sng.out)
	}
	for _, l := range strings.Split(sng.out.String(), "\n") {
		if strings.Contains(strings.ToLower(l), "error") {
			t.Errorf("syslog-ng logged an error: %s", l)
		}
	}
	s.checkSeries(t, tenant, 2)
	s.stop(t)

	seqOf := func(msg string) (int, error) {
		f := strings.Fields(msg)
		if len(f) < 3 {
			return 0, fmt.Errorf("message %q: not a line of the files", msg)
		}
		return strconv.Atoi(f[2])
	}
	// check reads a stored line, checks its header against the line of the
	// files in its message, and returns the message and the time the
	// header says.
	check := func(stored string) (string, time.Time, error) {
		if m := rfc5424.FindStringSubmatch(stored); m != nil {
			msg := m[8]
			i, err := seqOf(msg)
			if err != nil {
				return "", time.Time{}, err
			}
			wantHeader := []string{strconv.Itoa(20*8 + 4), lineTime(i).Format("2006-01-02T15:04:05.000+00:00"),
				"e2e-sng-host", "e2e-sng-5424", "4242", "ID47"}
			if got := m[1:7]; strings.Join(got, " ") != strings.Join(wantHeader, " ") {
				return "", time.Time{}, fmt.Errorf("RFC 5424 header %q, want %q", got, wantHeader)
			}
			if !regexp.MustCompile(`^\[meta sequenceId="\d+"\]$`).MatchString(m[7]) {
				return "", time.Time{}, fmt.Errorf("structured data %q, want syslog-ng's [meta sequenceId=...]", m[7])
			}
			return msg, lineTime(i), nil
		}
		if m := rfc3164.FindStringSubmatch(stored); m != nil {
			msg := m[6]
			i, err := seqOf(msg)
			if err != nil {
				return "", time.Time{}, err
			}
			ts := lineTime(i).Truncate(time.Second)
			wantHeader := []string{strconv.Itoa(21*8 + 6), ts.Format(time.Stamp), "e2e-sng-host", "e2e-sng-bsd", "4343"}
			if got := m[1:6]; strings.Join(got, " ") != strings.Join(wantHeader, " ") {
				return "", time.Time{}, fmt.Errorf("BSD header %q, want %q", got, wantHeader)
			}
			return msg, ts, nil
		}
		return "", time.Time{}, fmt.Errorf("neither RFC 5424 nor the BSD format")
	}
	msg := func(stored string) (string, error) {
		m, _, err := check(stored)
		return m, err
	}
	lines := export(t, s.data, tenant)
	checkNoBlankLines(t, "syslog-ng's syslog() destination", lines)
	checkOnce(t, "tenant "+tenant, lines, all, msg)
	checkTimes(t, s.data, tenant, lines, func(stored string) (time.Time, error) {
		_, ts, err := check(stored)
		return ts, err
	})
	for _, c := range []struct {
		sel  string
		want []string
	}{
		{`{hostname="e2e-sng-host", app_name="e2e-sng-5424"}`, want5424},
		{`{app_name="e2e-sng-bsd"}`, wantBSD},
		{`{hostname="e2e-sng-host"}`, all},
	} {
		checkOnce(t, c.sel, export(t, s.data, tenant, "--stream", c.sel), c.want, msg)
	}
	checkOnce(t, "tenant default", export(t, s.data, "default"), nil, identity)
	checkStats(t, s.data, tenant, 2*n)
}
