package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// Clients are the HTTP clients Run can send with: raw, a bare HTTP/1.1
// client of this package (plain http:// only), and nethttp, Go's
// net/http client.
var Clients = []string{"raw", "nethttp"}

// rawConn is one kept-alive HTTP/1.1 connection that sends one POST at
// a time, without pipelining, and reads each answer with a small parser
// (status line, headers, a Content-Length, chunked or read-to-close
// body). It exists so that the client is not what a benchmark measures:
// net/http's client spends several times the CPU of the server it
// drives on a one-line request.
//
// It is used by one goroutine at a time.
type rawConn struct {
	addr string // host:port to dial
	// req holds the request head up to and including "Content-Length: ";
	// send appends the length, the blank line and the body after it.
	req    []byte
	prefix int
	c      net.Conn
	r      *bufio.Reader
	stop   func() bool // unregisters the deadline set when ctx ends
	reused bool        // c has answered a request already
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

// maxHeaderLine bounds a status or header line of an answer.
const maxHeaderLine = 8 << 10

// errRawTarget is returned for targets the raw client cannot speak to.
var errRawTarget = errors.New("the raw client speaks plain http:// only (use --client nethttp)")

// newRawConn returns a connection (not yet dialled) that POSTs to
// target+path, target being http://host[:port].
func newRawConn(target, path, ctype, tenant string) (*rawConn, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("loadgen: target %q: %w", target, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("loadgen: target %q: %w", target, errRawTarget)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("loadgen: target %q has no host", target)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	p := u.EscapedPath()
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	p += path
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	var h []byte
	h = append(h, "POST "...)
	h = append(h, p...)
	h = append(h, " HTTP/1.1\r\nHost: "...)
	h = append(h, u.Host...)
	h = append(h, "\r\nUser-Agent: sluice-bench\r\n"...)
	if ctype != "" {
		h = append(h, "Content-Type: "...)
		h = append(h, ctype...)
		h = append(h, "\r\n"...)
	}
	if tenant != "" {
		h = append(h, "X-Scope-OrgID: "...)
		h = append(h, tenant...)
		h = append(h, "\r\n"...)
	}
	h = append(h, "Content-Length: "...)
	var d net.Dialer
	return &rawConn{addr: addr, req: h, prefix: len(h), dial: d.DialContext}, nil
}

func (c *rawConn) send(ctx context.Context, body []byte) (int, error) {
	c.req = strconv.AppendInt(c.req[:c.prefix], int64(len(body)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, body...)
	status, fresh, err := c.roundTrip(ctx)
	// A kept-alive connection the server closed while it was idle fails
	// before any byte of an answer: send once more on a new one, as
	// net/http does for a request it knows went unanswered.
	if err != nil && !fresh && errors.Is(err, errIdleClosed) && ctx.Err() == nil {
		status, _, err = c.roundTrip(ctx)
	}
	return status, err
}

// errIdleClosed marks a connection that ended before the first byte of
// an answer.
var errIdleClosed = errors.New("connection closed before an answer")

// roundTrip writes c.req and reads the answer; fresh reports whether
// the connection was dialled for this request.
func (c *rawConn) roundTrip(ctx context.Context) (status int, fresh bool, err error) {
	if c.c == nil {
		if err := c.connect(ctx); err != nil {
			return 0, true, err
		}
		fresh = true
	}
	if _, err := c.c.Write(c.req); err != nil {
		c.close()
		if !fresh {
			err = fmt.Errorf("%w: %w", errIdleClosed, err)
		}
		return 0, fresh, fmt.Errorf("loadgen: write request to %s: %w", c.addr, err)
	}
	status, keep, err := readResponse(c.r)
	if err != nil {
		c.close()
		return 0, fresh, fmt.Errorf("loadgen: read answer from %s: %w", c.addr, err)
	}
	if !keep {
		c.close()
	}
	return status, fresh, nil
}

func (c *rawConn) connect(ctx context.Context) error {
	nc, err := c.dial(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("loadgen: dial %s: %w", c.addr, err)
	}
	c.c = nc
	if c.r == nil {
		c.r = bufio.NewReaderSize(nc, maxHeaderLine)
	} else {
		c.r.Reset(nc)
	}
	// The end of the run interrupts a request in flight, as cancelling
	// a net/http request does.
	c.stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	return nil
}

func (c *rawConn) close() {
	if c.c == nil {
		return
	}
	c.stop()
	c.c.Close()
	c.c = nil
}

// readResponse reads one HTTP/1.x answer from r, skipping 1xx ones, and
// discards its body. keep is false when the connection must not carry
// another request (Connection: close, HTTP/1.0 without keep-alive, or a
// body delimited by the connection's end).
func readResponse(r *bufio.Reader) (status int, keep bool, err error) {
	for {
		status, keep, err = readOne(r)
		if err != nil || status >= 200 || status == 101 {
			return status, keep, err
		}
	}
}

func readOne(r *bufio.Reader) (status int, keep bool, err error) {
	line, err := readLine(r)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return 0, false, fmt.Errorf("status line: %w: %w", errIdleClosed, err)
		}
		return 0, false, fmt.Errorf("status line: %w", err)
	}
	// HTTP/1.1 204 No Content
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ') {
		return 0, false, fmt.Errorf("malformed status line %q", trimForError(line))
	}
	for _, b := range line[9:12] {
		if b < '0' || b > '9' {
			return 0, false, fmt.Errorf("malformed status code in %q", trimForError(line))
		}
		status = status*10 + int(b-'0')
	}
	http10 := line[7] == '0' // line is overwritten by the next read
	keep = !http10
	length := int64(-1)
	chunked := false
	for {
		h, err := readLine(r)
		if err != nil {
			return 0, false, fmt.Errorf("header of a %d answer: %w", status, noEOF(err))
		}
		if len(h) == 0 {
			break
		}
		colon := bytes.IndexByte(h, ':')
		if colon <= 0 {
			return 0, false, fmt.Errorf("malformed header line %q", trimForError(h))
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (length >= 0 && n != length) {
				return 0, false, fmt.Errorf("bad Content-Length %q", trimForError(value))
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return 0, false, fmt.Errorf("unsupported Transfer-Encoding %q", trimForError(value))
			}
			chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				if bytes.EqualFold(tok, []byte("close")) {
					keep = false
				} else if bytes.EqualFold(tok, []byte("keep-alive")) && http10 {
					keep = true
				}
			}
		}
	}
	switch {
	case status < 200 || status == 204 || status == 304:
		return status, keep, nil // no body, whatever the headers say
	case chunked:
		return status, keep, discardChunked(r)
	case length >= 0:
		if _, err := r.Discard(int(length)); err != nil {
			return 0, false, fmt.Errorf("body of %d bytes: %w", length, noEOF(err))
		}
		return status, keep, nil
	}
	// The body ends with the connection.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return 0, false, fmt.Errorf("body read to the connection's end: %w", err)
	}
	return status, false, nil
}

// discardChunked reads a chunked body and its trailer.
func discardChunked(r *bufio.Reader) error {
	for {
		line, err := readLine(r)
		if err != nil {
			return fmt.Errorf("chunk size: %w", noEOF(err))
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // chunk extensions
		}
		size, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 62)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", trimForError(line))
		}
		if size == 0 {
			break
		}
		if _, err := r.Discard(int(size)); err != nil {
			return fmt.Errorf("chunk of %d bytes: %w", size, noEOF(err))
		}
		crlf, err := readLine(r)
		if err != nil {
			return fmt.Errorf("end of a chunk: %w", noEOF(err))
		}
		if len(crlf) != 0 {
			return fmt.Errorf("chunk of %d bytes followed by %q, not CRLF", size, trimForError(crlf))
		}
	}
	for { // trailer
		line, err := readLine(r)
		if err != nil {
			return fmt.Errorf("chunked trailer: %w", noEOF(err))
		}
		if len(line) == 0 {
			return nil
		}
	}
}

// readLine returns the next line without its CRLF (or LF); it is valid
// until the next read of r.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("line longer than %d bytes", r.Size())
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// noEOF turns an io.EOF in the middle of an answer into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func trimForError(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
