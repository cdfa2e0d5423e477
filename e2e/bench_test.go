package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestBenchEveryProtocol runs `sluice bench` against sluice in every
// protocol (HTTP through its raw client, the default, and twice through
// net/http's): each run reports its requests with no error, and the
// server stores every line sent.
func TestBenchEveryProtocol(t *testing.T) {
	skipIfOff(t)
	const tenant = "bench"
	s, syslogAddr := startSyslogServer(t, tenant)
	stored := 0
	for _, p := range []string{"jsonline", "lines", "loki-json", "loki-protobuf", "elastic", "otlp", "syslog-tcp", "jsonline nethttp", "loki-protobuf nethttp"} {
		target := s.url("")
		args := []string{"bench", "--tenant", tenant, "--batch", "10", "--conns", "2", "--requests", "20"}
		proto, client, _ := strings.Cut(p, " ")
		args = append(args, "--protocol", proto)
		if client != "" {
			args = append(args, "--client", client)
		}
		if p == "syslog-tcp" {
			target = syslogAddr
		}
		out := runSluice(t, append(args, target)...)
		if !strings.Contains(out, "requests: 20 ") || !strings.Contains(out, "lines stored: 200,") || !strings.Contains(out, "errors: none") ||
			!strings.Contains(out, "p99 ") {
			t.Errorf("%s: report:\n%s", p, out)
		}
		stored += 200
		s.waitStored(t, tenant, stored, time.Minute, nil)
	}
}
