package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// split hands each connection of one listener to one of two servers by
// its first request: a POST or PUT to an ingest path (isIngest) goes to
// ingest, any other to other. It reads the first request's line (at most
// maxPeek bytes, within peekTimeout) and replays those bytes to the
// server that gets the connection, so both serve on the same address.
// Which server a connection got holds for its life: a later request of
// another kind on it is that server's to answer.
//
// Concurrency: Run accepts in one goroutine and peeks each connection in
// its own; the two listeners are safe for concurrent use.
type split struct {
	ln          net.Listener
	isIngest    func(method, path []byte) bool
	peekTimeout time.Duration
	ingest      *chanListener
	other       *chanListener
	handed      func(ingest bool) // counts a connection handed over

	mu      sync.Mutex
	closed  bool
	peeking map[net.Conn]struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// maxPeek bounds the bytes read to find the first request's line: an
// ingest path's line is far shorter, and a longer line (a query's) goes
// to net/http, which reads on.
const maxPeek = 4 << 10

func newSplit(ln net.Listener, peekTimeout time.Duration, isIngest func(method, path []byte) bool, handed func(ingest bool)) *split {
	sp := &split{ln: ln, isIngest: isIngest, peekTimeout: peekTimeout, handed: handed, peeking: map[net.Conn]struct{}{}}
	sp.ingest = &chanListener{sp: sp, conns: make(chan net.Conn), done: make(chan struct{})}
	sp.other = &chanListener{sp: sp, conns: make(chan net.Conn), done: make(chan struct{})}
	return sp
}

// Run accepts connections until the listener is closed (by Close, or by
// either server closing its listener), then waits for the connections
// being peeked, which it closes.
func (sp *split) Run() error {
	defer sp.wg.Wait()
	var delay time.Duration
	for {
		c, err := sp.ln.Accept()
		if err != nil {
			if acceptRetryable(err) && !sp.isClosed() {
				// Out of descriptors or a connection reset before it was
				// accepted: wait and go on, as net/http's Serve does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			sp.close()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		delay = 0
		sp.mu.Lock()
		if sp.closed {
			sp.mu.Unlock()
			c.Close()
			continue
		}
		sp.peeking[c] = struct{}{}
		sp.wg.Add(1)
		sp.mu.Unlock()
		go sp.dispatch(c)
	}
}

// acceptRetryable reports whether an Accept error is one that passes:
// the process or the system out of descriptors or buffers, a connection
// aborted before it was accepted, a timeout.
func acceptRetryable(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.ECONNABORTED) || errors.As(err, &ne) && ne.Timeout()
}

func (sp *split) isClosed() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.closed
}

// dispatch peeks c's first request line and hands c to its server.
func (sp *split) dispatch(c net.Conn) {
	defer sp.wg.Done()
	head, err := sp.peek(c)
	sp.mu.Lock()
	delete(sp.peeking, c)
	closed := sp.closed
	sp.mu.Unlock()
	if closed || (err != nil && len(head) == 0) {
		// Nothing came, or the servers are gone: nobody to answer.
		c.Close()
		return
	}
	to := sp.other
	if method, path, ok := requestLine(head); ok && sp.isIngest(method, path) {
		to = sp.ingest
	}
	// Whatever the peek met (an error, a line too long), the server the
	// connection goes to reads the same bytes and answers as it would.
	pc := &prefixConn{Conn: c, head: head, err: err}
	if to == sp.ingest {
		// fasthttp reads a head into a buffer of fastHeadBuffer bytes; a
		// longer one is handed to net/http (handOff) with these bytes.
		pc.recent = &ring{buf: make([]byte, fastHeadBuffer)}
		pc.handOff = sp.handOff
	}
	// Counted before it is served, so that a client that got an answer
	// sees its connection counted.
	sp.handed(to == sp.ingest)
	select {
	case to.conns <- pc:
	case <-to.done:
		c.Close()
	}
}

// peek reads c until the first line ends, maxPeek bytes or the timeout;
// it returns what it read and the error that stopped it.
func (sp *split) peek(c net.Conn) ([]byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(sp.peekTimeout)); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, 512)
	var err error
	for len(buf) < maxPeek && bytes.IndexByte(buf, '\n') < 0 {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var n int
		n, err = c.Read(buf[len(buf):min(cap(buf), maxPeek)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	if derr := c.SetReadDeadline(time.Time{}); err == nil {
		err = derr
	}
	return buf, err
}

// requestLine returns the method and path (without the query) of an
// HTTP/1.x request line in head: "POST /insert/jsonline?x=1 HTTP/1.1".
// Leading blank lines are skipped, as servers do.
func requestLine(head []byte) (method, path []byte, ok bool) {
	head = bytes.TrimLeft(head, "\r\n")
	end := bytes.IndexByte(head, '\n')
	if end < 0 {
		return nil, nil, false
	}
	line := bytes.TrimSuffix(head[:end], []byte("\r"))
	method, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return nil, nil, false
	}
	target, _, ok := bytes.Cut(rest, []byte(" "))
	if !ok || len(target) == 0 || target[0] != '/' {
		// An absolute or asterisk form, or HTTP/0.9: not ingest.
		return nil, nil, false
	}
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	return method, target, true
}

// close stops accepting: it closes the listener, both servers' listeners
// and the connections being peeked. Idempotent.
func (sp *split) close() {
	sp.once.Do(func() {
		sp.mu.Lock()
		sp.closed = true
		for c := range sp.peeking {
			// Wakes the peek; dispatch then closes c.
			_ = c.SetReadDeadline(time.Now())
		}
		sp.mu.Unlock()
		_ = sp.ln.Close()
		close(sp.ingest.done)
		close(sp.other.done)
	})
}

// chanListener is the listener one server of a split accepts from.
// Closing it closes the split (the address serves both or neither).
type chanListener struct {
	sp    *split
	conns chan net.Conn
	done  chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.sp.close()
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.sp.ln.Addr() }

// handOff gives c, whose fasthttp server could not read a head, to the
// net/http server; false if that server is gone.
func (sp *split) handOff(c net.Conn) bool {
	sp.handed(false)
	select {
	case sp.other.conns <- c:
		return true
	case <-sp.other.done:
		return false
	}
}

// prefixConn is a connection whose first bytes, already read, are
// replayed before the rest; err, if any, is the error that stopped that
// read (a timeout, the peer's end), returned once they are.
//
// One served by fasthttp keeps the last bytes it returned (recent): when
// fasthttp fails on a head longer than its buffer (ErrSmallBuffer), its
// buffer is full of that head's first bytes, which are the last ones
// read; fastHeadTooLong reads the rest of the head, then hands the
// connection to net/http (handOff) as a new prefixConn, and this one
// goes dead: what fasthttp then writes to it, the deadlines it sets and
// its close go nowhere.
type prefixConn struct {
	net.Conn
	head    []byte
	err     error
	recent  *ring
	handOff func(net.Conn) bool
	dead    atomic.Bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	if c.recent != nil && n > 0 {
		c.recent.add(p[:n])
	}
	return n, err
}

func (c *prefixConn) read(p []byte) (int, error) {
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	if c.err != nil {
		err := c.err
		c.err = nil
		if !isTimeout(err) {
			return 0, err
		}
		// A timeout of the peek is not the server's: read on under its
		// own deadline.
	}
	return c.Conn.Read(p)
}

func (c *prefixConn) Write(p []byte) (int, error) {
	if c.dead.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *prefixConn) Close() error {
	if c.dead.Load() {
		return nil
	}
	if c.recent != nil {
		// fasthttp's: it closes right after a reply that ends the
		// connection (a 413, say), maybe with the request's body not
		// read; closing then would reset the connection, and the client
		// could lose the reply. Half-closed, and closed once the client
		// has closed its end (or lingerTime).
		if err := c.CloseWrite(); err == nil {
			go linger(c.Conn)
			return nil
		}
	}
	return c.Conn.Close()
}

// A connection half-closed after its last reply is read, what comes
// discarded, for at most lingerTime and lingerBytes before it is closed
// (net/http waits as long for the same reason).
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 256 << 10
)

// linger reads c until its peer closes it, lingerTime or lingerBytes,
// and closes it.
func linger(c net.Conn) {
	defer c.Close()
	if c.SetReadDeadline(time.Now().Add(lingerTime)) != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, lingerBytes))
}

func (c *prefixConn) SetDeadline(t time.Time) error {
	if c.dead.Load() {
		return nil
	}
	return c.Conn.SetDeadline(t)
}

func (c *prefixConn) SetReadDeadline(t time.Time) error {
	if c.dead.Load() {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *prefixConn) SetWriteDeadline(t time.Time) error {
	if c.dead.Load() {
		return nil
	}
	return c.Conn.SetWriteDeadline(t)
}

// ring keeps the last len(buf) bytes added to it.
type ring struct {
	buf  []byte
	at   int // where the next byte goes
	full bool
}

func (r *ring) add(p []byte) {
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.at, r.full = 0, true
		return
	}
	n := copy(r.buf[r.at:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
		r.full = true
	}
	r.at = (r.at + len(p)) % len(r.buf)
	if r.at == 0 && len(p) > 0 {
		r.full = true
	}
}

// appendTo appends the bytes kept, oldest first, to dst.
func (r *ring) appendTo(dst []byte) []byte {
	if !r.full {
		return append(dst, r.buf[:r.at]...)
	}
	return append(append(dst, r.buf[r.at:]...), r.buf[:r.at]...)
}

// CloseWrite half-closes the connection when the one underneath can, so
// that net/http can close after a reply without a reset losing it.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// serveSplit is Serve with the ingest connections on fasthttp (fast.go):
// one listener split between the two servers by each connection's first
// request.
func (s *Server) serveSplit(ctx context.Context, hs *http.Server, ln net.Listener, maxConns int) error {
	fastConns, netConns := s.metrics.connsServed.WithLabelValues(IngestFastHTTP), s.metrics.connsServed.WithLabelValues(IngestNetHTTP)
	sp := newSplit(ln, hs.ReadHeaderTimeout, s.isIngestRoute, func(ingest bool) {
		if ingest {
			fastConns.Inc()
		} else {
			netConns.Inc()
		}
	})
	fs := s.newFastServer(maxConns)
	s.fast.Store(fs)
	errc := make(chan error, 3)
	go func() { errc <- sp.Run() }()
	go func() { errc <- hs.Serve(sp.other) }()
	go func() { errc <- fs.Serve(sp.ingest) }()
	s.once.Do(func() { close(s.ready) })
	var err error
	running := 3
	select {
	case err = <-errc:
		// One stopped: stop the others.
		running--
		sp.close()
	case <-ctx.Done():
		s.log.Info("shutting down: draining requests in flight")
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	// Both at once: each waits for its requests in flight.
	ferrc := make(chan error, 1)
	go func() { ferrc <- fs.ShutdownWithContext(sctx) }()
	if serr := hs.Shutdown(sctx); err == nil {
		err = serr
	}
	if ferr := <-ferrc; err == nil {
		err = ferr
	}
	for ; running > 0; running-- {
		// Closing one server's listener closes the other's: the server
		// that sees it first may return net.ErrClosed.
		if rerr := <-errc; err == nil && !errors.Is(rerr, http.ErrServerClosed) && !errors.Is(rerr, net.ErrClosed) {
			err = rerr
		}
	}
	return err
}
