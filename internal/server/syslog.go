package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/sluicelog/sluice/internal/ingest/syslog"
	"github.com/sluicelog/sluice/internal/record"
)

// syslogBatchBytes is the most a syslog batch holds before it is stored.
const syslogBatchBytes = 1 << 20

// syslogLinger is how long a UDP listener waits for more datagrams before
// it stores what it has.
const syslogLinger = 20 * time.Millisecond

// syslogConfig is the record configuration of syslog messages: the
// syslog parser sets time and message itself; hostname and app_name make
// the stream.
func syslogConfig() record.Config {
	cfg := record.DefaultConfig()
	cfg.StreamFields = []string{"hostname", "app_name"}
	return cfg
}

// storeSyslog stores a batch of messages, counting them.
func (s *Server) storeSyslog(tenant, protocol string, bt *syslog.Batcher) error {
	b := bt.Batch()
	for i := range b.Errors {
		s.metrics.rejected.WithLabelValues(protocol, b.Errors[i].Kind.String()).Inc()
	}
	if len(b.Records) == 0 {
		return nil
	}
	if err := s.st.Append(tenant, b); err != nil {
		s.log.Error("syslog: store refused a batch", "protocol", protocol, "err", err)
		return err
	}
	s.metrics.lines.WithLabelValues(tenant, protocol).Add(float64(len(b.Records)))
	s.metrics.bytes.WithLabelValues(tenant, protocol).Add(float64(len(b.Data)))
	return nil
}

// ServeSyslogTCP accepts syslog connections on ln until ctx is done, then
// closes them and returns once each has stored what it read. Messages are
// stored whenever a connection has no more bytes waiting (or 1 MiB of
// them): TCP syslog has no acknowledgement, so this is as soon as sluice
// can.
func (s *Server) ServeSyslogTCP(ctx context.Context, ln net.Listener, tenant string) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.SetReadDeadline(time.Now()) // ends its read; it stores what it has
		}
		mu.Unlock()
	})
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.syslogConn(c, tenant)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

func (s *Server) syslogConn(c net.Conn, tenant string) {
	defer c.Close()
	bt, err := syslog.NewBatcher(syslogConfig())
	if err != nil {
		s.log.Error("syslog", "err", err)
		return
	}
	defer bt.Close()
	bt.Reset(time.Now().UnixNano())
	r := bufio.NewReaderSize(c, 64<<10)
	var buf []byte
	for {
		msg, err := syslog.NextFrame(r, buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
				s.log.Warn("syslog: closing a connection", "remote", c.RemoteAddr().String(), "err", err)
			}
			s.storeSyslog(tenant, "syslog-tcp", bt)
			return
		}
		buf = msg
		bt.Add(msg)
		if r.Buffered() == 0 || bt.Len() >= syslogBatchBytes {
			if s.storeSyslog(tenant, "syslog-tcp", bt) != nil {
				return // the client reconnects and sends again
			}
			bt.Reset(time.Now().UnixNano())
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ServeSyslogUDP reads syslog datagrams, one message each, until ctx is
// done. Messages are stored once no datagram has come for a few
// milliseconds, or 1 MiB of them is waiting.
func (s *Server) ServeSyslogUDP(ctx context.Context, pc net.PacketConn, tenant string) error {
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	bt, err := syslog.NewBatcher(syslogConfig())
	if err != nil {
		return err
	}
	defer bt.Close()
	bt.Reset(time.Now().UnixNano())
	buf := make([]byte, 64<<10)
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
			bt.Add(msg)
		}
		if err != nil || bt.Len() >= syslogBatchBytes {
			s.storeSyslog(tenant, "syslog-udp", bt)
			bt.Reset(time.Now().UnixNano())
		}
		if err != nil && !isTimeout(err) {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
