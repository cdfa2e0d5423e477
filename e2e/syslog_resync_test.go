package e2e

// TestSyslogTCPResync: a hostile or careless sender's bad frame costs only
// that frame. The real binary, started with --syslog-tcp, a message limit
// of 200 bytes (--syslog-max-message-bytes) and an idle timeout
// (--syslog-idle-timeout), gets good, bad, good on one TCP connection for
// each kind of bad frame, the good messages framed both ways (LF and
// octet counting). Both good messages of every connection are stored and
// found by a LogQL query; a message too long is stored truncated; and
// /metrics counts each bad frame with its reason. Then a connection that
// stays silent is closed by the server and counted.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSyslogTCPResync(t *testing.T) {
	skipIfOff(t)
	var syslogAddr string
	s := startServerArgs(t, func() []string {
		syslogAddr = freeAddr(t)
		return []string{"--syslog-tcp", syslogAddr, "--syslog-tenant", "resync",
			"--syslog-max-message-bytes", "200", "--syslog-idle-timeout", "1s"}
	})
	defer s.stop(t)

	long := func(host string) string {
		return "<13>1 2026-01-15T08:00:01Z " + host + " big - - - " + strings.Repeat("x", 300)
	}
	lf := func(m string) string { return m + "\n" }
	octet := func(m string) string { return fmt.Sprintf("%d %s\n", len(m)+1, m) }
	const (
		truncated = `sluice_syslog_truncated_messages_total{protocol="syslog-tcp",reason="too_long"}`
		syntax    = `sluice_ingest_rejected_lines_total{protocol="syslog-tcp",reason="syntax"}`
		badCount  = `sluice_ingest_rejected_lines_total{protocol="syslog-tcp",reason="bad_octet_count"}`
	)
	cases := []struct {
		name   string
		bad    func(host string) string
		series string
		stored int // lines of the connection stored: 3 when the bad one is kept, truncated
	}{
		{"line too long", func(h string) string { return lf(long(h)) }, truncated, 3},
		{"octet frame too long", func(h string) string { return octet(long(h)) }, truncated, 3},
		{"not syslog", func(string) string { return "this is not syslog at all\n" }, syntax, 2},
		{"count not a number", func(h string) string { return "12x4 <13>1 2026-01-15T08:00:01Z " + h + " a - - - x\n" }, syntax, 2},
		{"count without a message", func(string) string { return "42 is the answer\n" }, syntax, 2},
		{"absurd count", func(h string) string { return "999999999 <13>1 2026-01-15T08:00:01Z " + h + " a - - - x\n" }, badCount, 2},
	}
	want := map[string]float64{}
	for i, tc := range cases {
		for _, framing := range []string{"lf", "octet"} {
			host := fmt.Sprintf("case%d-%s", i, framing)
			frame := lf
			if framing == "octet" {
				frame = octet
			}
			c, err := net.Dial("tcp", syslogAddr)
			if err != nil {
				t.Fatal(err)
			}
			msg := func(n int) string {
				return fmt.Sprintf("<13>1 2026-01-15T08:00:0%d.000Z %s app - - - good %d", 2*n, host, n)
			}
			_, err = io.WriteString(c, frame(msg(0))+tc.bad(host)+frame(msg(1)))
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			want[tc.series]++
			t.Run(tc.name+"/"+framing, func(t *testing.T) {
				got := syslogQuery(t, s, "resync", fmt.Sprintf(`{hostname=%q}`, host), tc.stored)
				for _, m := range []string{msg(0), msg(1)} {
					if !got[m] {
						t.Errorf("%q not found; found %v", m, got)
					}
				}
				if tc.stored == 3 && !got[long(host)[:200]] {
					t.Errorf("the first 200 bytes of the long message not found; found %v", got)
				}
			})
		}
	}
	m := s.metrics(t)
	for series, n := range want {
		if m[series] != n {
			t.Errorf("%s = %v, want %v", series, m[series], n)
		}
	}

	// A silent connection is closed after the idle timeout; a read on it
	// ends with EOF (the deadline only guards against a hang).
	c, err := net.Dial("tcp", syslogAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("idle connection: read %d bytes, %v; want EOF", n, err)
	}
	if n := s.metrics(t)["sluice_syslog_tcp_idle_timeouts_total"]; n != 1 {
		t.Errorf("idle timeouts %v, want 1", n)
	}
}

// TestSyslogUDPDropsCounted: a burst of datagrams at the real binary's
// --syslog-udp listener, with a small receive buffer (--syslog-udp-rcvbuf):
// every datagram is either stored or counted in
// sluice_syslog_udp_kernel_drops_total. (How many the kernel drops depends
// on how fast the server reads, so only the sum is asserted.)
func TestSyslogUDPDropsCounted(t *testing.T) {
	skipIfOff(t)
	var udpAddr string
	s := startServerArgs(t, func() []string {
		udpAddr = freeAddr(t)
		return []string{"--syslog-udp", udpAddr, "--syslog-tenant", "udp", "--syslog-udp-rcvbuf", "4096"}
	})
	defer s.stop(t)
	c, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Under the loopback device's backlog of 1000 (net.core.netdev_max_backlog),
	// so that the socket is the only place a datagram can be lost.
	const sent = 500
	for i := range sent {
		fmt.Fprintf(c, "<14>Jan 15 08:00:%02d host3 cron[%d]: tick %d", i%60, i, i)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		dropped := s.metrics(t)["sluice_syslog_udp_kernel_drops_total"]
		stored := s.metrics(t)[`sluice_ingest_lines_total{protocol="syslog-udp",tenant="udp"}`]
		if stored+dropped == sent {
			t.Logf("stored %v, dropped %v", stored, dropped)
			break
		}
		if stored+dropped > sent || time.Now().After(deadline) {
			t.Fatalf("stored %v + dropped %v, sent %d", stored, dropped, sent)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syslogQuery runs a log query over the tenant's 2026-01-15 08:00 minute until
// it returns n lines (or fails after a minute, against a hang), and returns
// the lines.
func syslogQuery(t *testing.T, s *server, tenant, query string, n int) map[string]bool {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	params := url.Values{"query": {query}, "start": {"2026-01-15T08:00:00Z"}, "end": {"2026-01-15T08:01:00Z"}, "limit": {"100"}}
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", s.url("/loki/api/v1/query_range?"+params.Encode()), nil)
		req.Header.Set("X-Scope-OrgID", tenant)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		var doc struct {
			Data struct {
				Result []struct {
					Values [][2]string `json:"values"`
				} `json:"result"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || json.Unmarshal(body, &doc) != nil {
			t.Fatalf("query %s: %s %s", query, resp.Status, body)
		}
		got := map[string]bool{}
		for _, r := range doc.Data.Result {
			for _, v := range r.Values {
				got[v[1]] = true
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("query %s: %d lines, want %d: %v", query, len(got), n, got)
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}
