package server

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// connLimit is a listener that keeps at most max connections open. One
// more is accepted, answered 503 (in plain HTTP; a TLS listener's just
// closed, since no TLS handshake has been made) and closed, so the server
// never runs out of file descriptors and never stops accepting: a client
// over the limit learns why at once.
//
// Concurrency: safe for concurrent use, as net.Listener.
type connLimit struct {
	net.Listener
	max     int64
	open    atomic.Int64
	tls     bool
	refused func() // counts a refused connection
	opened  func(delta int)
}

// overLimitReply is what a connection over the limit gets.
var overLimitReply = func() string {
	const msg = "too many open connections (max_connections); retry later\n"
	return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(msg)) + "\r\n\r\n" + msg
}()

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			l.opened(1)
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused()
		go l.refuse(c)
	}
}

// refuse answers a connection over the limit, off the accept loop: a
// client that does not read must not hold up the next accept. It reads
// the request's head first (for at most a second): a reply sent before
// the client has sent its request is taken by clients for a stray one.
func (l *connLimit) refuse(c net.Conn) {
	defer c.Close()
	if l.tls {
		return
	}
	_ = c.SetDeadline(time.Now().Add(time.Second))
	var head []byte
	buf := make([]byte, 4096)
	for len(head) < 64<<10 && !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	_, _ = c.Write([]byte(overLimitReply))
	// Close once the client has seen the reply: closing with unread
	// bytes would reset the connection, and the reply could be lost.
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

// CloseWrite half-closes the connection when the one underneath can (a
// TCP connection), for the servers' closes after a reply.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.opened(-1)
	})
	return err
}

// defaultMaxConnections is half the process's open-file limit: the other
// half is left to the store's files and the syslog listeners.
func defaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(max(min(rl.Cur/2, 1<<20), 64))
}
