package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store"
)

// metric returns the value of one series of /metrics, as printed (labels
// in name order), or 0 when it is absent.
func (f *fixture) metric(series string) float64 {
	f.t.Helper()
	code, body := f.do("GET", "/metrics", nil)
	if code != 200 {
		f.t.Fatalf("GET /metrics: %d", code)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				f.t.Fatalf("%s: %v", series, err)
			}
			return n
		}
	}
	return 0
}

// storedField returns the values of field name in the stored records of
// tenant whose app_name is app, as "kind value".
func (f *fixture) storedField(tenant, app, name string) []string {
	f.t.Helper()
	sn := f.st.Snapshot()
	defer sn.Release()
	var out []string
	for _, ls := range sn.Streams(tenant, math.MinInt64, math.MaxInt64) {
		if !strings.Contains(ls.Key, `app_name="`+app+`"`) {
			continue
		}
		err := sn.Scan(context.Background(), tenant, ls, math.MinInt64, math.MaxInt64, store.ScanOptions{}, func(r *rows.Row, names []string) error {
			for _, fl := range r.Fields {
				if names[fl.Name] == name {
					out = append(out, fmt.Sprintf("%s %v", fl.Kind, fl.Kind == record.Bool && fl.Num == 1))
				}
			}
			return nil
		})
		if err != nil {
			f.t.Fatal(err)
		}
	}
	return out
}

// waitUntil polls cond until it holds, or fails after a minute: a bound
// for a hung test, not a measure of speed.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serveSyslogTCP starts a syslog TCP listener of f for tenant, stopped at
// the end of the test.
func serveSyslogTCP(t *testing.T, f *fixture, tenant string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeSyslogTCP(ctx, ln, tenant) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// octet frames msg with octet counting, as rsyslog and syslog-ng send it
// (the count includes a final LF).
func octet(msg string) string { return fmt.Sprintf("%d %s\n", len(msg)+1, msg) }

// Good, bad, good on one connection, for each kind of bad frame and both
// framings of the good ones: both good messages are stored, and the bad
// frame is counted with its reason.
func TestSyslogTCPResync(t *testing.T) {
	const limit = 200
	long := "<13>1 2026-01-15T08:00:01Z h1 big - - - " + strings.Repeat("x", 300)
	cases := []struct {
		name, bad string
		series    string // the metric that counts the bad frame
		truncated bool   // the bad frame is stored, truncated
	}{
		{"line too long", long + "\n", `sluice_syslog_truncated_messages_total{protocol="syslog-tcp",reason="too_long"}`, true},
		{"octet frame too long", octet(long), `sluice_syslog_truncated_messages_total{protocol="syslog-tcp",reason="too_long"}`, true},
		{"not syslog", "this is not syslog\n", `sluice_ingest_rejected_lines_total{protocol="syslog-tcp",reason="syntax"}`, false},
		{"binary junk", "\x00\x01\xff\xfe junk\n", `sluice_ingest_rejected_lines_total{protocol="syslog-tcp",reason="syntax"}`, false},
		{"count not a number", "12x4 <13>1 2026-01-15T08:00:01Z h1 a - - - x\n", `sluice_ingest_rejected_lines_total{protocol="syslog-tcp",reason="syntax"}`, false},
		{"count without a message", "42 is the answer\n", `sluice_ingest_rejected_lines_total{protocol="syslog-tcp",reason="syntax"}`, false},
		{"absurd count", "999999999 <13>1 2026-01-15T08:00:01Z h1 a - - - x\n", `sluice_ingest_rejected_lines_total{protocol="syslog-tcp",reason="bad_octet_count"}`, false},
	}
	good := []string{"<13>1 2026-01-15T08:00:00Z h1 app - - - good one", "<13>1 2026-01-15T08:00:02Z h1 app - - - good two"}
	for _, tc := range cases {
		for _, framing := range []string{"lf", "octet"} {
			t.Run(tc.name+"/"+framing, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Syslog.MaxMessageBytes = limit
				f := newFixture(t, cfg)
				addr := serveSyslogTCP(t, f, "sys")
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				frame := func(m string) string { return m + "\n" }
				if framing == "octet" {
					frame = octet
				}
				if _, err := io.WriteString(c, frame(good[0])+tc.bad+frame(good[1])); err != nil {
					t.Fatal(err)
				}
				want := 2
				if tc.truncated {
					want = 3
				}
				got := f.waitStored("sys", want)
				var goods, big []string
				for _, l := range got {
					if strings.HasSuffix(l, good[0]) || strings.HasSuffix(l, good[1]) {
						goods = append(goods, l)
					} else {
						big = append(big, l)
					}
				}
				if len(got) != want || len(goods) != 2 {
					t.Fatalf("stored\n%s\nwant %d lines, %q and %q among them", strings.Join(got, "\n"), want, good[0], good[1])
				}
				if n := f.metric(tc.series); n != 1 {
					t.Errorf("%s = %v, want 1", tc.series, n)
				}
				if !tc.truncated {
					return
				}
				if prefix := `{app_name="big", hostname="h1"} `; len(big[0]) != len(prefix)+limit || !strings.HasPrefix(long, big[0][len(prefix):]) {
					t.Errorf("truncated line of %d bytes stored, want the first %d of the message: %s", len(big[0])-len(prefix), limit, big[0])
				}
				// The truncated message's record is flagged.
				if flags := f.storedField("sys", "big", "truncated"); len(flags) != 1 || flags[0] != "bool true" {
					t.Errorf("truncated fields of the big message: %q, want one true", flags)
				}
			})
		}
	}
}

// A connection that sends nothing for the idle timeout is closed, what it
// sent stored.
func TestSyslogTCPIdleTimeout(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Syslog.IdleTimeout = 50 * time.Millisecond
	f := newFixture(t, cfg)
	addr := serveSyslogTCP(t, f, "sys")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "<13>Jan 15 08:00:00 h su: then silence\n<13>Jan 15 08:00:01 h su: unterminated")
	// The read ends when the server closes the connection; the deadline
	// only keeps a broken server from hanging the test.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read %d bytes, %v; want EOF", n, err)
	}
	if got := f.stored("sys"); len(got) != 2 {
		t.Errorf("stored %q", got)
	}
	if n := f.metric("sluice_syslog_tcp_idle_timeouts_total"); n != 1 {
		t.Errorf("idle timeouts %v, want 1", n)
	}
}

// Past the connection limit, a new connection is accepted and closed, and
// counted; those open keep working, and once one closes a new one is
// served.
func TestSyslogTCPMaxConns(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Syslog.MaxConns = 2
	f := newFixture(t, cfg)
	addr := serveSyslogTCP(t, f, "sys")
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	stored := 0
	send := func(c net.Conn, msg string) {
		t.Helper()
		fmt.Fprintf(c, "<13>Jan 15 08:00:00 h su: %s\n", msg)
		stored++
		if got := f.waitStored("sys", stored); len(got) != stored {
			t.Fatalf("stored %d lines, want %d, after %q", len(got), stored, msg)
		}
	}
	c1, c2 := dial(), dial()
	send(c1, "one")
	send(c2, "two")
	c3 := dial()
	c3.SetReadDeadline(time.Now().Add(time.Minute)) // against a hang only
	if n, err := c3.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("over the limit: read %d bytes, %v; want the connection closed", n, err)
	}
	if n := f.metric("sluice_syslog_tcp_connections_refused_total"); n != 1 {
		t.Errorf("refused %v, want 1", n)
	}
	if n := f.metric("sluice_syslog_tcp_connections"); n != 2 {
		t.Errorf("open connections %v, want 2", n)
	}
	send(c1, "one again")
	c2.Close()
	waitUntil(t, "the closed connection to be gone", func() bool { return f.metric("sluice_syslog_tcp_connections") == 1 })
	send(dial(), "four")
}

// Datagrams the kernel drops because the receive buffer is full are
// counted: stored + dropped = sent.
func TestSyslogUDPKernelDrops(t *testing.T) {
	const rcvbuf = 128 << 10 // under Linux's default net.core.rmem_max: no privilege needed
	cfg := DefaultConfig()
	cfg.Syslog.UDPReceiveBuffer = rcvbuf
	f := newFixture(t, cfg)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// A burst at a socket with the smallest buffer that nobody reads yet:
	// most of it is dropped. 500 datagrams stay under the loopback
	// device's backlog (net.core.netdev_max_backlog, 1000), so the socket
	// is the only place one can be lost.
	if _, err := setReceiveBuffer(pc, 1); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sent = 500
	for i := range sent {
		fmt.Fprintf(c, "<14>Jan 15 08:00:00 host3 cron[%d]: tick %d\n", i, i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeSyslogUDP(ctx, pc, "udp") }()
	var stored, dropped int
	waitUntil(t, "stored + dropped = sent", func() bool {
		stored, dropped = len(f.stored("udp")), int(f.metric("sluice_syslog_udp_kernel_drops_total"))
		return stored+dropped >= sent
	})
	if stored+dropped != sent || stored == 0 || dropped == 0 {
		t.Errorf("stored %d, dropped %d, sent %d", stored, dropped, sent)
	}
	// The server set the configured buffer before its first read.
	rc, err := pc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	rc.Control(func(fd uintptr) { got, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	if err != nil || got/2 < rcvbuf {
		t.Errorf("receive buffer %d (as Linux reports it, doubled), %v; want %d", got, err, rcvbuf)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The count outlives the socket.
	if n := int(f.metric("sluice_syslog_udp_kernel_drops_total")); n != dropped {
		t.Errorf("drops after the listener stopped: %d, want %d", n, dropped)
	}
}

// One warning of each kind per interval, the next saying how many were
// left out.
func TestLogLimit(t *testing.T) {
	var l logLimit
	t0 := time.Unix(0, 0)
	for _, step := range []struct {
		kind    string
		at      time.Duration
		ok      bool
		skipped int
	}{
		{"a", 0, true, 0},
		{"a", time.Second, false, 0},
		{"b", time.Second, true, 0},
		{"a", 2 * time.Second, false, 0},
		{"a", syslogWarnEvery, true, 2},
		{"b", syslogWarnEvery + time.Second, true, 0},
	} {
		if ok, skipped := l.allow(step.kind, t0.Add(step.at)); ok != step.ok || skipped != step.skipped {
			t.Errorf("%s at %v: %v, %d; want %v, %d", step.kind, step.at, ok, skipped, step.ok, step.skipped)
		}
	}
}

// A datagram over the message limit is stored truncated, flagged and
// counted.
func TestSyslogUDPTruncated(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Syslog.MaxMessageBytes = 100
	f := newFixture(t, cfg)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeSyslogUDP(ctx, pc, "udp") }()
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "<14>Jan 15 08:00:00 host3 big: %s\n", strings.Repeat("x", 300))
	fmt.Fprintf(c, "<14>Jan 15 08:00:01 host3 small: fits\n")
	got := f.waitStored("udp", 2)
	if len(got) != 2 {
		t.Fatalf("stored %q", got)
	}
	if flags := f.storedField("udp", "big", "truncated"); len(flags) != 1 || flags[0] != "bool true" {
		t.Errorf("truncated fields of the big message: %q", flags)
	}
	if flags := f.storedField("udp", "small", "truncated"); len(flags) != 0 {
		t.Errorf("truncated fields of the small message: %q", flags)
	}
	if n := f.metric(`sluice_syslog_truncated_messages_total{protocol="syslog-udp",reason="too_long"}`); n != 1 {
		t.Errorf("truncated %v, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// emfileListener fails its first accepts as a process out of file
// descriptors does.
type emfileListener struct {
	net.Listener
	fails int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// A failed accept (no file descriptors left) is retried: the listener
// keeps serving.
func TestSyslogTCPAcceptRetry(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeSyslogTCP(ctx, &emfileListener{Listener: ln, fails: 2}, "sys") }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "<13>Jan 15 08:00:00 h su: after EMFILE\n")
	c.Close()
	if got := f.waitStored("sys", 1); len(got) != 1 {
		t.Fatalf("stored %q", got)
	}
	if n := f.metric("sluice_syslog_tcp_accept_errors_total"); n != 2 {
		t.Errorf("accept errors %v, want 2", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
