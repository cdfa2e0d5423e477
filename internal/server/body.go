package server

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicelog/sluice/internal/protocol/jsonline"
)

// errTooLarge is the error of a body over a limit; the error returned
// is a *tooLarge naming the limit, which matches it.
var errTooLarge = errors.New("request body too large")

// tooLarge is a body over one of the limits: its flag, what it bounds
// and its value, so that the 413 says which limit it met.
type tooLarge struct {
	key, bounds string
	limit       int64
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("request body too large: %s bounds %s to %d bytes", e.key, e.bounds, e.limit)
}

func (e *tooLarge) Is(target error) bool { return target == errTooLarge }

// Limits of a body: as sent, decompressed, decoded whole.
func (s *Server) sentTooLarge() *tooLarge {
	return &tooLarge{key: "--max-body-bytes", bounds: "the body as sent", limit: s.cfg.MaxBodyBytes}
}

func (s *Server) decodedTooLarge() *tooLarge {
	return &tooLarge{key: "--max-decoded-bytes", bounds: "the body decompressed", limit: s.cfg.MaxDecodedBytes}
}

func (s *Server) wholeTooLarge() *tooLarge {
	return &tooLarge{key: "--max-whole-body-bytes", bounds: "a Loki, OTLP or Elasticsearch body decompressed", limit: s.cfg.MaxWholeBodyBytes}
}

// errSlowBody is the error of a body that stalled or trickled: see
// Config.BodyIdleTimeout and Config.MinBodyRate.
var errSlowBody = errors.New("request body too slow")

// errBusy is the error of a body whose memory could not be reserved
// while it arrived: the requests in flight hold MaxInflightBytes.
var errBusy = errors.New("too much ingest in flight; retry")

// bodyGrace is how long a body may take before MinBodyRate applies:
// time for a client to get going, and for a small body to arrive at any
// rate.
const bodyGrace = 10 * time.Second

// reqBody is an ingest request's body: limited as sent, decompressed,
// limited again once decompressed, cut off when it stalls or trickles,
// and charged against the server's in-flight memory as it arrives, not
// up front, so that clients that declare large bodies and send them
// slowly cannot hold the budget that others need.
//
// reqBodys are pooled: Close gives it back, with its buffers.
//
// Concurrency: one goroutine, the request's.
type reqBody struct {
	s        *Server
	ctx      context.Context
	r        io.Reader // decompressed
	left     int64     // decompressed bytes still allowed
	raw      io.ReadCloser
	closeDec func() error

	// Memory: held is reserved now; the request needs base plus perByte
	// for each byte read, up to most.
	held, base, perByte, most int64
	read                      int64
	waited                    bool // a reserve waited for memory

	pace paced    // the body as sent, when BodyIdleTimeout or MinBodyRate is set
	sent sentBody // pace, or the request's body, limited

	data    []byte // buffer (see buffer)
	scratch []byte // for the handler's reply
	reply   jsonline.Reply
	pipe    storePipe // the body's batches in flight
}

var bodyPool = sync.Pool{New: func() any { return new(reqBody) }}

// maxPooledBody bounds the buffers a pooled reqBody keeps.
const maxPooledBody = smallBody + 1

// buffer returns a slice of n bytes that stays the body's until Close.
func (b *reqBody) buffer(n int) []byte {
	if cap(b.data) < n {
		b.data = make([]byte, n)
	}
	return b.data[:n]
}

// sentBody is the request's body as sent, limited to MaxBodyBytes (as
// http.MaxBytesReader limits it, without its allocation per request):
// past the limit a read fails with errTooLarge, and the connection
// closes after the answer. Its Close does nothing: the HTTP server
// closes the request's body itself. It closes body once it has read its
// end, though: a handler that answers with the request's body open has
// the server drain it first (an io.CopyN, with its allocation, on every
// request), even when it is at its end.
type sentBody struct {
	r    io.Reader
	body io.Closer // the request's body; nil once closed
	w    http.ResponseWriter
	s    *Server
	left int64 // bytes allowed still
	err  error // sticky
}

func (n *sentBody) Read(p []byte) (int, error) {
	if n.err != nil {
		return 0, n.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// One byte more than allowed says whether the body goes past it.
	if int64(len(p))-1 > n.left {
		p = p[:n.left+1]
	}
	k, err := n.r.Read(p)
	if err == io.EOF && n.body != nil {
		_ = n.body.Close()
		n.body = nil
	}
	if int64(k) <= n.left {
		n.left -= int64(k)
		n.err = err
		return k, err
	}
	k, n.left, n.err = int(n.left), 0, n.s.sentTooLarge()
	// The rest of the body is not read: the connection cannot carry
	// another request.
	n.w.Header().Set("Connection", "close")
	return k, n.err
}

func (n *sentBody) Close() error { return nil }

// deadliner sets a connection's read deadline: the server's
// ResponseWriter does, and http.ResponseController for those wrapping it.
type deadliner interface {
	SetReadDeadline(time.Time) error
}

func noClose() error { return nil }

// newBody prepares r's body for an ingest handler, reserving base bytes
// of in-flight memory at once and perByte for each decompressed byte read,
// up to most. It returns an error (errBusy when the memory is not to be
// had, else a bad Content-Encoding) and, then, nothing to release.
func (s *Server) newBody(w http.ResponseWriter, r *http.Request, base, perByte, most int64) (*reqBody, error) {
	b := bodyPool.Get().(*reqBody)
	b.s, b.ctx, b.base, b.perByte, b.most = s, r.Context(), base, perByte, max(most, base)
	b.waited = false
	if err := b.reserve(base); err != nil {
		b.free()
		return nil, err
	}
	if b.waited {
		noteWait(w)
	}
	b.sent = sentBody{r: r.Body, body: r.Body, w: w, s: s, left: max(s.cfg.MaxBodyBytes, 0)}
	if s.cfg.BodyIdleTimeout > 0 || s.cfg.MinBodyRate > 0 {
		d, ok := w.(deadliner)
		if !ok {
			d = http.NewResponseController(w)
		}
		b.pace = paced{r: r.Body, rc: d, idle: s.cfg.BodyIdleTimeout, rate: s.cfg.MinBodyRate}
		if ht, ok := w.(interface{ headTimeout() time.Duration }); ok {
			// The connection still has the deadline its head was read
			// under (fasthttp's): see paced.head.
			b.pace.head = ht.headTimeout()
		}
		b.sent.r = &b.pace
	}
	b.raw = &b.sent
	dec, closeDec, err := decoder(b.raw, r.Header.Get("Content-Encoding"))
	if err != nil {
		b.release()
		b.free()
		return nil, err
	}
	b.r, b.left, b.closeDec = dec, s.cfg.MaxDecodedBytes, closeDec
	return b, nil
}

// Decompressors kept between requests: a new zstd decoder allocates its
// buffers and window, a gzip reader its inflate state, per request.
var (
	zstdDecoders sync.Pool // *zstd.Decoder, reset to nil
	gzipReaders  sync.Pool // *gzip.Reader, closed
)

// decoder returns raw decompressed as a Content-Encoding says; the
// function returned closes it (and gives it back to its pool).
func decoder(raw io.Reader, encoding string) (io.Reader, func() error, error) {
	none := noClose
	switch enc := strings.ToLower(strings.TrimSpace(encoding)); enc {
	case "", "identity":
		return raw, none, nil
	case "gzip", "x-gzip":
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(raw)
		} else {
			err = zr.Reset(raw)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("Content-Encoding gzip: %v", err)
		}
		return zr, func() error {
			err := zr.Close()
			gzipReaders.Put(zr)
			return err
		}, nil
	case "deflate":
		// HTTP's deflate is zlib (RFC 9110, 8.4.1.2), but some clients
		// send raw deflate: a zlib header says which it is.
		br := bufio.NewReader(raw)
		if h, err := br.Peek(2); err == nil && isZlibHeader(h[0], h[1]) {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, nil, fmt.Errorf("Content-Encoding deflate (zlib): %v", err)
			}
			return zr, zr.Close, nil
		}
		fr := flate.NewReader(br)
		return fr, fr.Close, nil
	case "zstd":
		zr, _ := zstdDecoders.Get().(*zstd.Decoder)
		var err error
		if zr == nil {
			zr, err = zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(64<<20))
		} else {
			err = zr.Reset(raw)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("Content-Encoding zstd: %v", err)
		}
		return zr, func() error {
			// Reset(nil) drops the body; the decoder, synchronous
			// (concurrency 1), holds no goroutine in the pool.
			_ = zr.Reset(nil)
			zstdDecoders.Put(zr)
			return nil
		}, nil
	default:
		return nil, nil, fmt.Errorf("Content-Encoding %q is not supported (gzip, deflate, zstd or none)", enc)
	}
}

// isZlibHeader reports whether two bytes start a zlib stream (RFC 1950):
// method 8 (deflate) with a window of at most 32 KiB, and a header that
// is a multiple of 31. A raw deflate stream starts so by chance with a
// probability of about 1 in 500; its first block would then have to be
// a stored or reserved one with matching bits as well.
func isZlibHeader(cmf, flg byte) bool {
	return cmf&0x0f == 8 && cmf>>4 <= 7 && (uint16(cmf)<<8|uint16(flg))%31 == 0
}

func (b *reqBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Is there more? One byte says.
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			return 0, b.s.decodedTooLarge()
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	b.read += int64(n)
	if err != nil && err != io.EOF {
		var tl *tooLarge
		switch {
		case errors.As(err, &tl):
			err = tl // a decoder may have wrapped it
		case errors.Is(err, os.ErrDeadlineExceeded):
			err = b.s.slowBodyError()
		}
	}
	if need := min(b.base+b.perByte*b.read, b.most); need > b.held && err == nil {
		if rerr := b.reserve(need - b.held); rerr != nil {
			return n, rerr
		}
	}
	return n, err
}

// reserve takes n more bytes of in-flight memory: at once if free, else
// waiting up to InflightWait.
func (b *reqBody) reserve(n int64) error {
	s := b.s
	if !s.memory.TryAcquire(n) {
		b.waited = true
		ctx, cancel := context.WithTimeout(b.ctx, s.cfg.InflightWait)
		err := s.memory.Acquire(ctx, n)
		cancel()
		if err != nil {
			return errBusy
		}
	}
	b.held += n
	s.metrics.inflightBytes.Add(float64(n))
	return nil
}

// release gives back the memory the body holds.
func (b *reqBody) release() {
	if b.held > 0 {
		b.s.memory.Release(b.held)
		b.s.metrics.inflightBytes.Sub(float64(b.held))
		b.held = 0
	}
}

// Close closes the decoders, releases the body's memory and gives b
// back to the pool.
// REQUIRES: nothing uses b, or a buffer it returned, after Close.
func (b *reqBody) Close() error {
	err := b.closeDec()
	if rerr := b.raw.Close(); err == nil {
		err = rerr
	}
	b.release()
	b.free()
	return err
}

// free gives b, released, back to the pool.
func (b *reqBody) free() {
	data, scratch := b.data, b.scratch[:0]
	if cap(data) > maxPooledBody {
		data = nil
	}
	if cap(scratch) > 4<<10 {
		scratch = nil
	}
	*b = reqBody{data: data, scratch: scratch}
	bodyPool.Put(b)
}

func (s *Server) slowBodyError() error {
	return fmt.Errorf("%w: no bytes for %v, or under %d bytes/s on average after the first %v (body_idle_timeout, min_body_rate)",
		errSlowBody, s.cfg.BodyIdleTimeout, s.cfg.MinBodyRate, bodyGrace)
}

// paced sets the connection's read deadline before each read of a body:
// idle after now, and, past bodyGrace, no later than when the bytes read
// so far would have come at rate bytes/s. A read past it fails with
// os.ErrDeadlineExceeded. The HTTP server sets the connection's deadlines
// anew for the next request.
type paced struct {
	r     io.Reader
	rc    deadliner
	start time.Time // of the first read (a clock read fewer per request)
	idle  time.Duration
	rate  int64
	read  int64
	set   time.Time // the deadline set last
	// head, if set, bounds the read deadline still on the connection
	// when the body is first read: at most head after that read (the
	// server set it when the head's first byte came).
	head time.Duration
}

func (p *paced) Read(b []byte) (int, error) {
	now := time.Now()
	if p.start.IsZero() {
		p.start = now
		if p.head > 0 {
			p.set = now.Add(p.head)
		}
	}
	var d time.Time
	if p.idle > 0 {
		d = now.Add(p.idle)
	}
	if p.rate > 0 {
		due := p.start.Add(bodyGrace + time.Duration(float64(p.read)/float64(p.rate)*float64(time.Second)))
		if d.IsZero() || due.Before(d) {
			d = due
		}
	}
	// A deadline that moves later by under a second is left as it was:
	// a body of many small reads costs no timer update per read.
	if d.Before(p.set) || d.Sub(p.set) >= time.Second {
		if err := p.rc.SetReadDeadline(d); err == nil {
			p.set = d
		}
	}
	n, err := p.r.Read(b)
	p.read += int64(n)
	return n, err
}

// readWhole reads a body that is decoded whole, up to MaxWholeBodyBytes
// decompressed; past it the error matches errTooLarge.
func (s *Server) readWhole(body io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, s.cfg.MaxWholeBodyBytes+1))
	if err == nil && int64(len(data)) > s.cfg.MaxWholeBodyBytes {
		err = s.wholeTooLarge()
	}
	switch {
	case errors.Is(err, errTooLarge), errors.Is(err, errSlowBody), errors.Is(err, errBusy):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("read body: %w", err)
	}
	return data, nil
}

// bodyError answers a readWhole failure: 413, 408, 503 or 400.
func bodyError(w http.ResponseWriter, err error) int {
	code := bodyStatus(err)
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if code != http.StatusBadRequest {
		w.Header().Set("Connection", "close")
	}
	http.Error(w, err.Error(), code)
	return code
}

// bodyStatus is the status of a body that could not be read.
func bodyStatus(err error) int {
	switch {
	case errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errSlowBody):
		return http.StatusRequestTimeout
	case errors.Is(err, errBusy):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// fullReader reads until the buffer is full or the input ends, so that a
// network body is parsed (and made durable) in whole chunks rather than
// one fsync per TCP read. Any error but the input's end is the body's: a
// gzip or zstd body cut short ends in io.ErrUnexpectedEOF, which must not
// pass for the end of a body whose checksum was never read.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := f.r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
