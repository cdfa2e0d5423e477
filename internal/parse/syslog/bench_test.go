package syslog

import (
	"fmt"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// benchInput returns about size bytes of syslog lines of the given
// format: rfc5424, rfc3164 (half with <PRI>, half as in /var/log files) or
// mix (alternating).
func benchInput(format string, size int) []byte {
	hosts := []string{"web-1", "web-2", "db-1.example.com", "combo"}
	apps := []string{"sshd", "nginx", "CRON", "kernel", "systemd", "postfix/smtpd"}
	msgs := []string{
		"Accepted publickey for deploy from 10.0.4.17 port 52144 ssh2: ED25519 SHA256:2b9e4c",
		"GET /api/v1/orders?limit=50 HTTP/1.1 200 1432 0.012",
		"(root) CMD (run-parts /etc/cron.hourly)",
		"[1234567.891011] usb 1-1: new high-speed USB device number 3 using xhci_hcd",
		"Started Session 7 of user deploy.",
		"connect from mail.example.org[192.0.2.25]",
	}
	var out []byte
	for i := 0; len(out) < size; i++ {
		h, a, m := hosts[i%len(hosts)], apps[i%len(apps)], msgs[(i/3)%len(msgs)]
		pid, sec := 1000+i%977, i%60
		kind := format
		if kind == "mix" {
			kind = [...]string{"rfc5424", "rfc3164"}[i%2]
		}
		switch kind {
		case "rfc5424":
			if i%4 < 2 {
				out = fmt.Appendf(out, "<%d>1 2026-01-15T08:%02d:%02d.%06dZ %s %s %d ID%d [meta@32473 seq=\"%d\" req=\"r-%x\"][origin ip=\"10.0.0.%d\"] %s\n",
					8+i%184, i/60%60, sec, i%1000000, h, a, pid, i%50, i, i*7919, i%255, m)
			} else {
				out = fmt.Appendf(out, "<%d>1 2026-01-15T08:%02d:%02d+01:00 %s %s %d - - %s\n", 8+i%184, i/60%60, sec, h, a, pid, m)
			}
		default:
			if i%4 < 2 {
				out = fmt.Appendf(out, "<%d>Jan 15 08:%02d:%02d %s %s[%d]: %s\n", 8+i%184, i/60%60, sec, h, a, pid, m)
			} else {
				out = fmt.Appendf(out, "Jan %2d 08:%02d:%02d %s %s[%d]: %s\n", 1+i%9, i/60%60, sec, h, a, pid, m)
			}
		}
	}
	return out
}

func BenchmarkParse(b *testing.B) {
	for _, format := range []string{"rfc5424", "rfc3164", "mix"} {
		b.Run("format="+format, func(b *testing.B) {
			input := benchInput(format, 1<<20)
			parsetest.Bench(b, input, record.DefaultConfig(), parsetest.Lines(&Parser{}))
		})
	}
}
