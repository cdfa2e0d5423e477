package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// The ingest transports (Config.IngestServer).
const (
	IngestNetHTTP  = "net/http"
	IngestFastHTTP = "fasthttp"
)

// Ingest over fasthttp.
//
// One address serves everything: split (dispatch.go) gives a connection
// whose first request is an ingest POST (isIngestRoute) to a
// fasthttp.Server, any other to net/http. Both transports call the same
// code: the ingest handlers (ingest.go, otlp.go, elastic.go) are written
// against the seam *http.Request (method, path, query, headers, body
// reader, context) and http.ResponseWriter (reply headers, status,
// body, read deadline), and fastExchange presents a fasthttp request as
// that pair, pooled, so the in-flight limit, tenant, auth, rate, disk
// check, body limits, memory reserve, 413 with Connection: close, the
// drain before a refusal and the per-code metrics have one copy.
//
// The body: the fasthttp server streams it (StreamRequestBody), reading
// one byte of it before the handler (its prefetch, MaxRequestBodySize),
// the rest as the handler reads it, through reqBody:
// the limits as sent, decompressed and whole, the paced reads (deadlines
// set through RequestCtx.SetReadDeadline) and the memory reserved as the
// body arrives all apply as on net/http. Multipart bodies are not
// pre-parsed (DisablePreParseMultipartForm).
//
// A later request on a fasthttp connection that is not an ingest route
// (rare: clients that push keep a connection for pushing) is served by
// the net/http mux: through fasthttpadaptor when it has no body (the
// adaptor buffers the whole answer, and can hijack for a websocket),
// else through a fastExchange, whose body is streamed (the adaptor would
// read it whole, unbounded) and whose answer is buffered.
//
// Where fasthttp and net/http differ, the exchange makes them agree: a
// request's context is canceled when its client goes away after its body
// (goneCtx); Expect: 100-continue is answered after the head's checks
// (expectContinue), as net/http answers it when the handler first reads
// the body; a head longer than fasthttp's buffer goes on to net/http, up
// to MaxHeaderBytes, past which the answer is 431 (fastHeadTooLong).
//
// fasthttp speaks HTTP/1.1 only: a TLS listener is served by net/http
// alone (HTTP/2 by ALPN), whatever IngestServer says.

// isIngestRoute reports whether a request line's method and path (no
// query) are an ingest route that fastExchange serves: what a
// connection's first request must be for the connection to go to
// fasthttp.
func (s *Server) isIngestRoute(method, path []byte) bool {
	return s.fastRoute(method, path).h != nil
}

// ingestRoute is an ingest path's handler and the protocol its metrics
// name.
type ingestRoute struct {
	h        http.HandlerFunc
	protocol string
}

// fastRoute returns the ingest route of method and path; its h is nil
// when there is none.
func (s *Server) fastRoute(method, path []byte) ingestRoute {
	if string(method) != http.MethodPost && string(method) != http.MethodPut {
		return ingestRoute{}
	}
	if r, ok := s.ingestRoutes[string(path)]; ok {
		if string(method) == http.MethodPost || bytes.HasSuffix(path, []byte("/_bulk")) {
			return r
		}
		return ingestRoute{}
	}
	if _, ok := bulkIndex(path); ok {
		return s.ingestRoutes["/{index}/_bulk"]
	}
	return ingestRoute{}
}

// bulkIndex returns INDEX of a path /INDEX/_bulk.
func bulkIndex(path []byte) ([]byte, bool) {
	rest, ok := bytes.CutSuffix(path, []byte("/_bulk"))
	if !ok || len(rest) < 2 || rest[0] != '/' || bytes.IndexByte(rest[1:], '/') >= 0 {
		return nil, false
	}
	return rest[1:], true
}

// addIngestRoute serves an ingest pattern ("POST /insert/jsonline") with
// h (s.ingest's handler of protocol, or one wrapping it) on the mux, and
// notes it for fasthttp; every method of a path has the same handler.
func (s *Server) addIngestRoute(pattern, protocol string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, h)
	_, path, _ := bytes.Cut([]byte(pattern), []byte(" "))
	s.ingestRoutes[string(path)] = ingestRoute{h: h, protocol: protocol}
}

// newFastServer returns the fasthttp server of the ingest connections.
// maxConns bounds its connections, as connLimit does.
func (s *Server) newFastServer(maxConns int) *fasthttp.Server {
	fallback := fasthttpadaptor.NewFastHTTPHandler(s.mux)
	return &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			r := s.fastRoute(ctx.Method(), ctx.Path())
			switch {
			case r.h != nil:
				s.serveExchange(ctx, r.h)
			case ctx.Request.Header.ContentLength() == 0 || ctx.Request.Header.ContentLength() == -2:
				// No body: the adaptor, which can hijack (a tail's
				// websocket) and flush.
				fallback(ctx)
			default:
				// The adaptor would read the body whole, unbounded:
				// the mux reads it as a stream instead.
				s.serveExchange(ctx, s.mux.ServeHTTP)
			}
		},
		ExpectHandler:         s.expectContinue,
		Name:                  "sluice",
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		StreamRequestBody:     true,
		// With the body streamed, this is what fasthttp reads of it
		// before the handler runs (at most 8 KiB): one byte, so that
		// the rest is read by reqBody, paced, limited and reserved.
		MaxRequestBodySize:            1,
		DisablePreParseMultipartForm:  true,
		DisableHeaderNamesNormalizing: false,
		// The largest head fasthttp reads; a longer one goes to
		// net/http, within MaxHeaderBytes (fastHeadTooLong).
		ReadBufferSize:  fastHeadBuffer,
		ErrorHandler:    s.fastError,
		ReadTimeout:     fastReadTimeout,
		LazyRequestTime: true, // nothing reads ctx.Time: one clock read fewer per request
		IdleTimeout:     s.cfg.IdleTimeout,
		Concurrency:     maxConns,
		CloseOnShutdown: true,
		Logger:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// expectContinue answers a request's Expect: 100-continue before the
// handler runs (fasthttp sends the 100 as soon as this returns
// StatusContinue, where net/http sends it when the handler first reads
// the body). An ingest request is checked first, on its head alone: a
// free in-flight slot within InflightWait (503; the slot is let go, and
// the handler takes one again), tenant, credential, rate and disk
// (checkHead), a declared length over MaxBodyBytes (413). A refused one
// is answered here, with the handler's message, reply headers and
// metric, and fasthttp closes the connection after the answer: the
// client never sends its body. Other requests get their 100 at once.
func (s *Server) expectContinue(ctx *fasthttp.RequestCtx) int {
	route := s.fastRoute(ctx.Method(), ctx.Path())
	if route.h == nil {
		return fasthttp.StatusContinue
	}
	x := getExchange(ctx)
	defer putExchange(x)
	code, msg := s.checkExpect(x, &x.req)
	if code == 0 {
		return fasthttp.StatusContinue
	}
	if route.protocol == "elastic" {
		x.Header().Set("X-Elastic-Product", "Elasticsearch") // as s.es sets it
	}
	http.Error(x, msg, code)
	s.metrics.requests.WithLabelValues(route.protocol, strconv.Itoa(code)).Inc()
	return code
}

// checkExpect runs expectContinue's checks of an ingest request's head;
// it returns 0 or the status to refuse with and its message.
func (s *Server) checkExpect(w http.ResponseWriter, r *http.Request) (int, string) {
	// No context to wait on: the exchange's watches the connection for
	// its client's leaving only once the body is read, and it comes
	// after these checks.
	if code, msg := s.takeInflight(w, nil); code != 0 {
		return code, msg
	}
	<-s.inflight
	if _, code, msg := s.checkHead(w, r); code != 0 {
		return code, msg
	}
	if msg, over := s.declaredTooLarge(r); over {
		return http.StatusRequestEntityTooLarge, msg
	}
	return 0, ""
}

// fastReadTimeout is fasthttp's ReadTimeout: the read deadline a
// request's head (from its first byte) and then its body are read under
// until the handler sets another (see headDeadline).
const fastReadTimeout = 10 * time.Second

// headTimeout is the read timeout fasthttp set for the request at its
// first byte, still on the connection when the body is first read:
// paced takes the deadline to be at most headTimeout after its first
// read and leaves it in place when the one it wants is less than a
// second later, so that a small body's one read costs no deadline
// update (nor a clock read: ctx.Time is never read, and the server's
// LazyRequestTime saves fasthttp its own).
// After a wait of the server's own (an in-flight slot, memory) it is 0:
// the client is not to lose its body's grace to the server's waits; so it
// is for a request that said Expect: 100-continue, whose body comes only
// after the 100, itself after expectContinue's checks.
func (x *fastExchange) headTimeout() time.Duration {
	if x.waited || headerValue(x.in, "Expect") != "" {
		return 0
	}
	return fastReadTimeout
}

// noteWait notes that the request waited for the server before its body
// was read (see headTimeout).
func (x *fastExchange) noteWait() { x.waited = true }

// fastHeadBuffer is fasthttp's read buffer on a connection, which bounds
// the heads it reads: the request line and headers of an ingest client
// are far shorter. A longer head (up to MaxHeaderBytes, net/http's limit)
// is served by net/http: see prefixConn and fastHeadTooLong.
const fastHeadBuffer = 8 << 10

// maxHeaderBytes is Config.MaxHeaderBytes, or net/http's default.
func (s *Server) maxHeaderBytes() int {
	if s.cfg.MaxHeaderBytes > 0 {
		return s.cfg.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

// headerTooLarge is the 431's message.
func (s *Server) headerTooLarge() string {
	return fmt.Sprintf("request header too large: --max-header-bytes bounds a request's line and headers to %d bytes (plus 4096)", s.maxHeaderBytes())
}

// fastError answers a request fasthttp could not read (its
// ErrorHandler): a head longer than its buffer goes on to net/http or
// gets 431 (fastHeadTooLong); a timeout gets 408; anything else 400, as
// fasthttp's own handler answers.
func (s *Server) fastError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &small):
		s.fastHeadTooLong(ctx)
	case isTimeout(err):
		ctx.Error("request timeout", http.StatusRequestTimeout)
	default:
		ctx.Error("cannot parse the request", http.StatusBadRequest)
	}
}

// fastHeadTooLong serves a request whose head did not fit fasthttp's
// buffer: fasthttp read its first fastHeadBuffer bytes, the last ones the
// connection returned (prefixConn.recent). It reads the rest of the head,
// up to MaxHeaderBytes plus 4 KiB (what net/http allows): a longer head
// gets 431 naming the limit, and the connection closes; one within it is
// handed, with the connection, to net/http, which serves it and what
// follows on the connection. fasthttp's answer and close then go nowhere.
func (s *Server) fastHeadTooLong(ctx *fasthttp.RequestCtx) {
	c, ok := ctx.Conn().(*prefixConn)
	if !ok || c.recent == nil || c.handOff == nil {
		// Not a connection of split's: nothing to hand over.
		ctx.Error(fmt.Sprintf("request header too large: this server reads %d bytes of a request's line and headers", fastHeadBuffer),
			http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	most := s.maxHeaderBytes() + 4096
	head := c.recent.appendTo(make([]byte, 0, 2*fastHeadBuffer))
	searched := 0
	for {
		if end := headEnd(head, searched); end >= 0 {
			if end > most {
				break
			}
			// Read deadlines are the server's from here.
			_ = c.Conn.SetReadDeadline(time.Time{})
			next := &prefixConn{Conn: c.Conn, head: head}
			c.dead.Store(true)
			if !c.handOff(next) {
				c.Conn.Close()
			}
			return
		}
		if len(head) > most {
			break
		}
		searched = max(len(head)-3, 0)
		head = slices.Grow(head, 4096)
		n, err := c.read(head[len(head):cap(head)])
		head = head[:len(head)+n]
		if err != nil && n == 0 {
			if isTimeout(err) {
				ctx.Error("request timeout", http.StatusRequestTimeout)
			}
			// Else the client is gone: nobody to answer.
			ctx.SetConnectionClose()
			return
		}
	}
	ctx.Error(s.headerTooLarge(), http.StatusRequestHeaderFieldsTooLarge)
	ctx.SetConnectionClose()
}

// headEnd returns the length of the HTTP head at the start of b (through
// the blank line that ends it, CRLF or a bare LF as net/http accepts), or
// -1 if b holds no end yet; the search starts at from.
func headEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 3
		}
	}
	return -1
}

// serveExchange serves ctx's request with h through a fastExchange.
func (s *Server) serveExchange(ctx *fasthttp.RequestCtx, h http.HandlerFunc) {
	x := getExchange(ctx)
	if index, ok := bulkIndex(ctx.Path()); ok {
		x.req.SetPathValue("index", string(index))
	}
	if s.cfg.BodyIdleTimeout <= 0 && s.cfg.MinBodyRate <= 0 {
		// ReadTimeout bounded the head; nothing paces the body.
		_ = ctx.SetReadDeadline(time.Time{})
	}
	h(x, &x.req)
	x.finish()
	putExchange(x)
}

// fastExchange presents a fasthttp request as an *http.Request and an
// http.ResponseWriter for the ingest handlers. Its request's headers are
// copied into one string (one allocation), its context is gone (canceled
// when the client goes away, once its body is read; as a request's on
// net/http, not canceled at shutdown: requests in flight finish), its
// body the connection's stream.
//
// Concurrency: one goroutine, the request's; pooled (getExchange,
// putExchange).
type fastExchange struct {
	ctx    *fasthttp.RequestCtx
	req    http.Request
	url    url.URL
	in     http.Header
	vals   []string
	keys   []string // the header's names, as readHeader puts them in in
	arena  []byte
	lens   []int32 // of the header's names and values, in turn
	body   fastBody
	out    http.Header
	code   int
	wrote  bool
	waited bool // see noteWait
	gone   goneCtx
	blank  http.Request // empty, its context gone
}

var exchanges = sync.Pool{New: func() any {
	x := &fastExchange{in: http.Header{}, out: http.Header{}}
	x.gone.x = x
	x.blank = *(&http.Request{}).WithContext(&x.gone)
	return x
}}

// fastBody is the request's body stream; its Close does nothing: the
// fasthttp server drains what is left (up to 256 KiB, else it closes the
// connection).
type fastBody struct {
	r   io.Reader
	eof bool // the stream said io.EOF: nothing of the request is left on the connection
}

func (b *fastBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *fastBody) Close() error { return nil }

// goneCtx is a fasthttp request's context: canceled when its client goes
// away, where that can be seen, as net/http's request context is. It
// never expires and holds no values.
//
// Seeing the client go needs a read on the connection, which is only
// safe once the request's body has been read to its end (the next bytes
// are then the next request's, or the client's close): the watch is
// started by the first Done after that (waits select on Done: the
// in-flight wait of a request without a body, the store's wait for room
// in the head after the body was read), never on a request's fast path,
// which calls Err at most. The watch is one goroutine reading a byte from
// the connection beneath fasthttp's reader: the client's close or reset
// cancels the context; a byte (a pipelined request) ends the watch and
// is put back in front of the connection's stream. stop, as the handler
// returns, ends the watch before fasthttp reads again.
//
// Before the body's end nothing is seen (Done's channel stays open): a
// gone client's read then fails, which ends the request anyway.
//
// Concurrency: Done and Err from any goroutine; stop from the request's.
type goneCtx struct {
	x        *fastExchange
	canceled atomic.Bool
	mu       sync.Mutex
	done     chan struct{} // made by the first Done
	watching chan struct{} // closed when the watch ends; nil if none ran
	conn     *prefixConn
	got      [1]byte // a byte the watch read
	gotOne   bool
}

func (c *goneCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *goneCtx) Value(any) any               { return nil }

func (c *goneCtx) Err() error {
	if c.canceled.Load() {
		return context.Canceled
	}
	return nil
}

func (c *goneCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	if c.watching == nil && c.x.ctx != nil && c.x.body.eof {
		// The body is read: no deadline of the request's applies. Set
		// here, not by the watch, so that stop's deadline comes after it.
		if pc, ok := c.x.ctx.Conn().(*prefixConn); ok && len(pc.head) == 0 && pc.err == nil && !pc.dead.Load() &&
			pc.Conn.SetReadDeadline(time.Time{}) == nil {
			c.conn, c.watching = pc, make(chan struct{})
			go c.watch(pc.Conn, c.done, c.watching)
		}
	}
	return c.done
}

// watch reads a byte from conn: the client's end cancels the context.
func (c *goneCtx) watch(conn net.Conn, done, watching chan struct{}) {
	defer close(watching)
	n, err := conn.Read(c.got[:]) // until the client's end, a byte, or stop's deadline
	if n == 1 {
		c.gotOne = true
		return
	}
	if err != nil && !isTimeout(err) {
		c.canceled.Store(true)
		close(done)
	}
}

// stop ends the watch, if one runs, and puts the byte it read back in
// front of the connection's stream; then it readies c for the next
// request.
func (c *goneCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watching != nil {
		_ = c.conn.Conn.SetReadDeadline(time.Unix(1, 0))
		<-c.watching
		// fasthttp sets the deadline of its next read itself.
		_ = c.conn.Conn.SetReadDeadline(time.Time{})
		if c.gotOne {
			c.conn.head = append(c.conn.head, c.got[0])
		}
	}
	c.done, c.watching, c.conn, c.gotOne = nil, nil, nil, false
	c.canceled.Store(false)
}

// getExchange returns the exchange of ctx's request.
func getExchange(ctx *fasthttp.RequestCtx) *fastExchange {
	x := exchanges.Get().(*fastExchange)
	x.ctx = ctx
	h := &ctx.Request.Header
	x.url = url.URL{Path: pathString(ctx.Path())}
	if q := ctx.URI().QueryString(); len(q) > 0 {
		x.url.RawQuery = string(q)
	}
	x.readHeader(h)
	cl := int64(h.ContentLength())
	switch cl {
	case -1: // chunked
	case -2: // no body
		cl = 0
	}
	x.body.r = ctx.RequestBodyStream()
	if x.body.r == nil {
		x.body.r = bytes.NewReader(nil)
	}
	x.body.eof = cl == 0
	// A copy of the blank request, whose context is x.gone: the
	// context of a Request is set by WithContext alone, which allocates.
	x.req = x.blank
	x.req.Method = methodString(h.Method())
	x.req.URL = &x.url
	x.req.Proto, x.req.ProtoMajor, x.req.ProtoMinor = "HTTP/1.1", 1, 1
	x.req.Header = x.in
	x.req.Body = &x.body
	x.req.ContentLength = cl
	x.req.RequestURI = x.url.Path
	x.req.Host = headerValue(x.in, "Host") // a view of the header string: no allocation
	if !h.IsHTTP11() {
		x.req.Proto, x.req.ProtoMinor = "HTTP/1.0", 0
	}
	return x
}

func putExchange(x *fastExchange) {
	// Before fasthttp reads the connection again.
	x.gone.stop()
	x.ctx, x.body.r = nil, nil
	clear(x.in)
	clear(x.out)
	x.code, x.wrote, x.waited = 0, false, false
	x.req = x.blank
	if cap(x.arena) > 64<<10 {
		x.arena = nil
	}
	exchanges.Put(x)
}

// readHeader copies h into x.in: every name and value into one string,
// names in their canonical form (which fasthttp's normalized ones
// already are, mostly). One pass over h: the lengths are noted as the
// bytes are copied.
func (x *fastExchange) readHeader(h *fasthttp.RequestHeader) {
	a, lens := x.arena[:0], x.lens[:0]
	for k, v := range h.All() {
		a = append(append(a, k...), v...)
		lens = append(lens, int32(len(k)), int32(len(v)))
	}
	all := string(a)
	x.arena, x.lens = a, lens
	x.vals, x.keys = x.vals[:0], x.keys[:0]
	at := 0
	for i := 0; i+1 < len(lens); i += 2 {
		key := textproto.CanonicalMIMEHeaderKey(all[at : at+int(lens[i])])
		at += int(lens[i])
		val := all[at : at+int(lens[i+1])]
		at += int(lens[i+1])
		// One map operation per header: a repeated name (rare) is
		// found among the names seen, not by a lookup per header.
		if slices.Contains(x.keys, key) {
			x.in[key] = append(x.in[key], val)
			continue
		}
		x.keys = append(x.keys, key)
		x.vals = append(x.vals, val)
		n := len(x.vals)
		x.in[key] = x.vals[n-1 : n : n]
	}
}

// pathString is path as a string, without an allocation for the ingest
// paths.
func pathString(path []byte) string {
	switch string(path) {
	case "/insert/jsonline":
		return "/insert/jsonline"
	case "/insert/lines":
		return "/insert/lines"
	case "/loki/api/v1/push":
		return "/loki/api/v1/push"
	case "/v1/logs":
		return "/v1/logs"
	case "/_bulk":
		return "/_bulk"
	}
	return string(path)
}

func methodString(m []byte) string {
	switch string(m) {
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	}
	return string(m)
}

func (x *fastExchange) Header() http.Header { return x.out }

func (x *fastExchange) WriteHeader(code int) {
	if x.wrote {
		return
	}
	x.wrote, x.code = true, code
	r := &x.ctx.Response
	r.SetStatusCode(code)
	for k, vs := range x.out {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Date":
			// fasthttp frames and dates the reply itself.
			continue
		case "Connection":
			for _, v := range vs {
				if v == "close" {
					x.ctx.SetConnectionClose()
				}
			}
			continue
		}
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
}

func (x *fastExchange) Write(p []byte) (int, error) {
	if !x.wrote {
		x.WriteHeader(http.StatusOK)
	}
	return x.ctx.Write(p)
}

// SetReadDeadline sets the connection's read deadline, for paced body
// reads and the drain before a refusal (http.ResponseController finds
// it).
func (x *fastExchange) SetReadDeadline(t time.Time) error { return x.ctx.SetReadDeadline(t) }

// finish completes a reply the handler left without a status.
func (x *fastExchange) finish() {
	if !x.wrote {
		x.WriteHeader(http.StatusOK)
	}
}
