package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/protocol/syslog"
	"github.com/sluicelog/sluice/internal/record"
)

// syslogBatchBytes is the most a syslog batch holds before it is stored.
const syslogBatchBytes = 1 << 20

// syslogLinger is how long a UDP listener waits for more datagrams before
// it stores what it has.
const syslogLinger = 20 * time.Millisecond

// syslogWarnEvery is how often a syslog listener logs what it truncated,
// rejected or refused; it counts the rest in its next line.
const syslogWarnEvery = 10 * time.Second

// SyslogConfig bounds the syslog listeners.
type SyslogConfig struct {
	// MaxMessageBytes: a longer message is truncated to this many bytes
	// and stored with the field truncated=true (0: syslog.MaxFrame).
	MaxMessageBytes int
	// IdleTimeout closes a TCP connection that sends nothing for this
	// long (0: never).
	IdleTimeout time.Duration
	// MaxConns bounds the open TCP connections: one more is accepted and
	// closed at once (0 or less: no limit).
	MaxConns int
	// UDPReceiveBuffer asks the kernel for a receive buffer of this many
	// bytes for the UDP socket (0: the system's default). Linux caps it
	// at net.core.rmem_max unless sluice has CAP_NET_ADMIN.
	UDPReceiveBuffer int
}

// DefaultSyslogConfig returns the limits syslog listeners run with unless
// configured: Loki's idle timeout of 120 s, and 1024 connections.
func DefaultSyslogConfig() SyslogConfig {
	return SyslogConfig{MaxMessageBytes: syslog.MaxFrame, IdleTimeout: 120 * time.Second, MaxConns: 1024}
}

func (c SyslogConfig) maxMessage() int {
	if c.MaxMessageBytes <= 0 {
		return syslog.MaxFrame
	}
	return c.MaxMessageBytes
}

// syslogConfig is the record configuration of syslog messages: the
// syslog parser sets time and message itself; hostname and app_name make
// the stream.
func syslogConfig() record.Config {
	cfg := record.DefaultConfig()
	cfg.StreamFields = []string{"hostname", "app_name"}
	return cfg
}

// syslogInput is one syslog listener: where its messages go, and its
// rate-limited warnings.
type syslogInput struct {
	s                *Server
	tenant, protocol string
	warnings         logLimit
}

// warn logs at most one line with this msg per syslogWarnEvery; the line
// says how many were left out before it.
func (in *syslogInput) warn(msg string, args ...any) {
	ok, skipped := in.warnings.allow(msg, time.Now())
	if !ok {
		return
	}
	if skipped > 0 {
		args = append(args, "warnings_not_logged", skipped)
	}
	in.s.log.Warn(msg, args...)
}

// store stores a batch of messages, counting them and the lines rejected.
func (in *syslogInput) store(bt *syslog.Batcher, remote string) error {
	s := in.s
	b := bt.Batch()
	if len(b.Errors) > 0 {
		in.warn("syslog: rejected messages", "protocol", in.protocol, "remote", remote, "rejected", len(b.Errors),
			"first", b.Errors[0].Msg)
	}
	b.Tenant = in.tenant
	fin := flow.Input{Protocol: in.protocol}
	if res := s.flow.Admit(fin, b); res.Refused > 0 {
		in.warn("syslog: stream limit", "protocol", in.protocol, "remote", remote, "msg", res.Message)
	}
	if len(b.Records) == 0 {
		return nil
	}
	if _, err := s.flow.Store(context.Background(), fin, b); err != nil { // no request to hang up: what was read is stored
		s.log.Error("syslog: store refused a batch", "protocol", in.protocol, "err", err)
		return err
	}
	return nil
}

// fault counts and logs a frame that was truncated or skipped.
func (in *syslogInput) fault(f syslog.Frame, remote string, limit int) {
	m := in.s.metrics
	switch f.Fault {
	case syslog.FaultOctetCount:
		m.rejected.WithLabelValues(in.protocol, f.Fault.String()).Inc()
		in.warn("syslog: skipped a frame to the next LF", "remote", remote, "reason", f.Fault.String(),
			"err", fmt.Sprintf("octet count %d, more than the limit of %d", f.Size, syslog.MaxOctetCount))
	case syslog.FaultTooLong:
		m.syslog.truncated.WithLabelValues(in.protocol, f.Fault.String()).Inc()
		in.warn("syslog: truncated a message", "remote", remote, "reason", f.Fault.String(),
			"err", fmt.Sprintf("message of %d bytes, more than the limit of %d", f.Size, limit))
	case syslog.FaultIncomplete:
		m.syslog.truncated.WithLabelValues(in.protocol, f.Fault.String()).Inc()
		in.warn("syslog: the connection ended inside a frame; stored what came", "remote", remote,
			"reason", f.Fault.String(), "err", fmt.Sprintf("%d of %d bytes", len(f.Msg), f.Size))
	}
}

// ServeSyslogTCP accepts syslog connections on ln until ctx is done, then
// closes them and returns once each has stored what it read. Messages are
// stored whenever a connection has no more bytes waiting (or 1 MiB of
// them): TCP syslog has no acknowledgement, so this is as soon as sluice
// can.
//
// A connection idle for Syslog.IdleTimeout is closed. Past Syslog.MaxConns
// open connections, a new one is accepted and closed at once, so that
// accept keeps working for those that come once others are gone; a
// failed accept (no file descriptors left) is retried after a pause.
func (s *Server) ServeSyslogTCP(ctx context.Context, ln net.Listener, tenant string) error {
	in := &syslogInput{s: s, tenant: tenant, protocol: "syslog-tcp"}
	cfg := s.cfg.Syslog
	m := &s.metrics.syslog
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[*idleConn]bool{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.stop() // ends its read; it stores what it has
		}
		mu.Unlock()
	})
	defer stop()
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && retryAccept(err) {
				m.acceptEr.Inc()
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				in.warn("syslog: accept failed; retrying", "err", err, "pause", pause)
				select {
				case <-time.After(pause):
					continue
				case <-ctx.Done():
				}
			}
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		pause = 0
		c := &idleConn{Conn: nc, idle: cfg.IdleTimeout}
		mu.Lock()
		if cfg.MaxConns > 0 && len(conns) >= cfg.MaxConns {
			mu.Unlock()
			m.refused.Inc()
			nc.Close()
			in.warn("syslog: closed a new connection: too many open", "remote", nc.RemoteAddr().String(),
				"limit", cfg.MaxConns)
			continue
		}
		conns[c] = true
		m.conns.Inc()
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.conn(c)
			mu.Lock()
			delete(conns, c)
			m.conns.Dec()
			mu.Unlock()
		}()
	}
}

// retryAccept reports whether a failed accept may work later: the process
// or system is out of descriptors or memory for now, or the client gave
// up before it was accepted.
func retryAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (in *syslogInput) conn(c *idleConn) {
	defer c.Close()
	s := in.s
	remote := c.RemoteAddr().String()
	bt, err := syslog.NewBatcher(syslogConfig())
	if err != nil {
		s.log.Error("syslog", "err", err)
		return
	}
	defer bt.Close()
	bt.Reset(time.Now().UnixNano())
	r := bufio.NewReaderSize(c, 64<<10)
	limit := s.cfg.Syslog.maxMessage()
	fr := syslog.NewFramer(r, limit)
	for {
		f, err := fr.Next()
		if err != nil {
			switch {
			case c.idleTimeout(err):
				s.metrics.syslog.idle.Inc()
			case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err):
				in.warn("syslog: closing a connection", "remote", remote, "err", err)
			}
			in.store(bt, remote)
			return
		}
		if f.Fault != syslog.FaultNone {
			in.fault(f, remote, limit)
		}
		if len(f.Msg) > 0 {
			bt.Add(f.Msg, f.Fault != syslog.FaultNone)
		}
		if r.Buffered() == 0 || bt.Len() >= syslogBatchBytes {
			if in.store(bt, remote) != nil {
				return // the client reconnects and sends again
			}
			bt.Reset(time.Now().UnixNano())
		}
	}
}

// idleConn is a connection whose every read must come within idle. Its
// first read error ends it: a read after a timeout would wait anew.
type idleConn struct {
	net.Conn
	idle time.Duration

	mu       sync.Mutex // orders stop against Read's deadline
	stopping bool
	err      error // the first read error; only Read uses it
}

func (c *idleConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		c.err = net.ErrClosed
		return 0, c.err
	}
	if c.idle > 0 {
		c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// stop ends the connection's current or next read.
func (c *idleConn) stop() {
	c.mu.Lock()
	c.stopping = true
	c.Conn.SetReadDeadline(time.Now())
	c.mu.Unlock()
}

// idleTimeout reports whether err ended the connection for being idle,
// not for a shutdown.
func (c *idleConn) idleTimeout(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle > 0 && !c.stopping && isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// logLimit lets one log line of each kind through per syslogWarnEvery.
//
// Concurrency: safe for concurrent use.
type logLimit struct {
	mu    sync.Mutex
	kinds map[string]*logKind
}

type logKind struct {
	next    time.Time
	skipped int
}

// allow reports whether a line of kind may be logged at now, and how many
// of that kind were not since the last one that was.
func (l *logLimit) allow(kind string, now time.Time) (ok bool, skipped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kinds == nil {
		l.kinds = map[string]*logKind{}
	}
	k := l.kinds[kind]
	if k == nil {
		k = &logKind{}
		l.kinds[kind] = k
	}
	if now.Before(k.next) {
		k.skipped++
		return false, 0
	}
	k.next = now.Add(syslogWarnEvery)
	skipped, k.skipped = k.skipped, 0
	return true, skipped
}

// ServeSyslogUDP reads syslog datagrams, one message each, until ctx is
// done. Messages are stored once no datagram has come for a few
// milliseconds, or 1 MiB of them is waiting.
//
// It first asks for a receive buffer of Syslog.UDPReceiveBuffer bytes.
// What the kernel drops when the buffer is full is counted in
// sluice_syslog_udp_kernel_drops_total (from the socket's drop counter,
// on Linux) and logged.
func (s *Server) ServeSyslogUDP(ctx context.Context, pc net.PacketConn, tenant string) error {
	in := &syslogInput{s: s, tenant: tenant, protocol: "syslog-udp"}
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	var drops *udpDropSource
	if uc, ok := pc.(*net.UDPConn); ok {
		if n := s.cfg.Syslog.UDPReceiveBuffer; n > 0 {
			got, err := setReceiveBuffer(uc, n)
			switch {
			case err != nil:
				s.log.Warn("syslog: could not set the UDP receive buffer", "bytes", n, "err", err)
			case got < n:
				s.log.Warn("syslog: the kernel capped the UDP receive buffer at net.core.rmem_max; raise it, or run with CAP_NET_ADMIN",
					"asked", n, "got", got)
			default:
				s.log.Info("syslog: UDP receive buffer", "bytes", got)
			}
		}
		read, err := socketDrops(uc)
		if err != nil {
			s.log.Warn("syslog: the kernel's UDP drops cannot be counted", "err", err)
		} else {
			drops = s.metrics.syslog.udpDrops.add(read)
			defer s.metrics.syslog.udpDrops.remove(drops)
		}
	}
	bt, err := syslog.NewBatcher(syslogConfig())
	if err != nil {
		return err
	}
	defer bt.Close()
	bt.Reset(time.Now().UnixNano())
	buf := make([]byte, 64<<10)
	limit := s.cfg.Syslog.maxMessage()
	var logged uint64          // drops logged so far
	var dropsChecked time.Time // when drops were last read for the log
	for {
		if bt.Len() > 0 {
			pc.SetReadDeadline(time.Now().Add(syslogLinger))
		} else {
			pc.SetReadDeadline(time.Time{})
		}
		n, _, err := pc.ReadFrom(buf)
		if n > 0 {
			msg := buf[:n]
			for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r' || msg[len(msg)-1] == 0) {
				msg = msg[:len(msg)-1]
			}
			truncated := len(msg) > limit
			if truncated {
				in.fault(syslog.Frame{Msg: msg[:limit], Fault: syslog.FaultTooLong, Size: int64(len(msg))}, "", limit)
				msg = msg[:limit]
			}
			bt.Add(msg, truncated)
		}
		if err != nil || bt.Len() >= syslogBatchBytes {
			in.store(bt, "")
			bt.Reset(time.Now().UnixNano())
			if now := time.Now(); drops != nil && now.Sub(dropsChecked) >= time.Second {
				dropsChecked = now
				if d := drops.read(); d > logged {
					in.warn("syslog: the kernel dropped UDP datagrams, its receive buffer full; TCP loses none (or raise --syslog-udp-rcvbuf)",
						"dropped", d-logged, "total", d)
					logged = d
				}
			}
		}
		if err != nil && !isTimeout(err) {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// udpDropSource is one UDP socket's kernel drop counter.
type udpDropSource struct {
	f    func() (uint64, error)
	mu   sync.Mutex
	last uint64 // the last value read
}

// read returns the socket's drops, or the last value read if the counter
// cannot be read now.
func (d *udpDropSource) read() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, err := d.f(); err == nil && v > d.last {
		d.last = v
	}
	return d.last
}

// udpDropCollector reports sluice_syslog_udp_kernel_drops_total: the drops
// of the sockets being served, and those of sockets served before.
//
// Concurrency: safe for concurrent use.
type udpDropCollector struct {
	mu     sync.Mutex
	srcs   map[*udpDropSource]struct{}
	closed uint64 // drops of the sockets removed
}

var udpDropsDesc = prometheus.NewDesc("sluice_syslog_udp_kernel_drops_total",
	"Syslog datagrams the kernel dropped before sluice read them (the socket's receive buffer was full), on Linux.", nil, nil)

func (c *udpDropCollector) add(f func() (uint64, error)) *udpDropSource {
	d := &udpDropSource{f: f}
	d.read()
	c.mu.Lock()
	c.srcs[d] = struct{}{}
	c.mu.Unlock()
	return d
}

// remove stops reading d, keeping its drops in the total.
func (c *udpDropCollector) remove(d *udpDropSource) {
	n := d.read()
	c.mu.Lock()
	delete(c.srcs, d)
	c.closed += n
	c.mu.Unlock()
}

func (c *udpDropCollector) Describe(ch chan<- *prometheus.Desc) { ch <- udpDropsDesc }

func (c *udpDropCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	n := c.closed
	for d := range c.srcs {
		n += d.read()
	}
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(udpDropsDesc, prometheus.CounterValue, float64(n))
}
