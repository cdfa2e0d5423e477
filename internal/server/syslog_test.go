package server

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitStored polls until tenant has n lines, or returns what it has at a
// deadline that only stops a test that hangs.
func (f *fixture) waitStored(tenant string, n int) []string {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := f.stored(tenant)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSyslogTCP(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeSyslogTCP(ctx, ln, "sys") }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	octet := "<34>1 2026-01-15T08:00:02Z host1 app1 - - - octet\nwith a newline"
	framed := octet + "\n" // as rsyslog and syslog-ng send it: the count includes a final LF
	// Framing is detected per frame: LF, then octet counting, then LF.
	fmt.Fprintf(c, "<34>1 2026-01-15T08:00:00Z host1 app1 - - - lf one\r\n%d %s<13>Jan 15 08:00:01 host2 su: lf two\n", len(framed), framed)
	c.Close()
	got := f.waitStored("sys", 3)
	want := []string{
		`{app_name="app1", hostname="host1"} <34>1 2026-01-15T08:00:00Z host1 app1 - - - lf one`,
		`{app_name="app1", hostname="host1"} ` + octet,
		`{app_name="su", hostname="host2"} <13>Jan 15 08:00:01 host2 su: lf two`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A connection left open is closed at shutdown, its messages stored.
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "<13>Jan 15 08:00:05 host2 su: before shutdown\n")
	f.waitStored("sys", 4)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.stored("sys"); len(got) != 4 {
		t.Errorf("%d lines after shutdown, want 4", len(got))
	}
}

func TestSyslogUDP(t *testing.T) {
	f := newFixture(t, DefaultConfig())
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
	for i := range 5 {
		fmt.Fprintf(c, "<14>Jan 15 08:00:0%d host3 cron[%d]: tick %d\n", i, i, i)
	}
	got := f.waitStored("udp", 5)
	if len(got) != 5 || got[0] != `{app_name="cron", hostname="host3"} <14>Jan 15 08:00:00 host3 cron[0]: tick 0` {
		t.Errorf("stored %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
