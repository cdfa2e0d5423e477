package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/protocol/jsonline"
	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// ingestFunc serves one ingest request whose tenant is known and whose
// body is limited and decompressed. It returns the status and the lines
// stored, which are charged against the tenant's rate.
type ingestFunc func(w http.ResponseWriter, r *http.Request, tenant string, body *reqBody) (code, stored int)

// ingest wraps an ingest handler: in-flight limit, tenant, body limits and
// decompression, metrics.
func (s *Server) ingest(protocol string, h ingestFunc) http.HandlerFunc {
	requests := &codeCounters{vec: s.metrics.requests, protocol: protocol}
	return func(w http.ResponseWriter, r *http.Request) {
		code := s.serveIngest(w, r, protocol, h)
		requests.inc(code)
	}
}

// codeCounters are one protocol's series of the requests counter, by
// status code, looked up once each: a CounterVec lookup hashes its labels
// and formats the code on every request.
type codeCounters struct {
	vec      *prometheus.CounterVec
	protocol string
	byCode   [600]atomic.Pointer[prometheus.Counter]
}

func (c *codeCounters) inc(code int) {
	if code < 0 || code >= len(c.byCode) {
		c.vec.WithLabelValues(c.protocol, strconv.Itoa(code)).Inc()
		return
	}
	p := c.byCode[code].Load()
	if p == nil {
		m := c.vec.WithLabelValues(c.protocol, strconv.Itoa(code))
		p = &m
		c.byCode[code].Store(p)
	}
	(*p).Inc()
}

// takeInflight takes an ingest request's in-flight slot, waiting up to
// InflightWait for one. It returns 0 with the slot, 503 (Retry-After set
// on w) when none came, or 499 when ctx (nil: none) was done first. ctx's
// Done is asked only when the request waits: a fastExchange's makes a
// channel (goneCtx), which a request that finds a slot at once never
// needs.
func (s *Server) takeInflight(w http.ResponseWriter, ctx context.Context) (int, string) {
	select {
	case s.inflight <- struct{}{}:
		return 0, ""
	default:
	}
	noteWait(w)
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	t := time.NewTimer(s.cfg.InflightWait)
	defer t.Stop()
	select {
	case s.inflight <- struct{}{}:
		return 0, ""
	case <-t.C:
		w.Header().Set("Retry-After", "1")
		return http.StatusServiceUnavailable, "too many ingest requests in flight; retry"
	case <-done:
		return 499, ""
	}
}

func (s *Server) serveIngest(w http.ResponseWriter, r *http.Request, protocol string, h ingestFunc) int {
	switch code, msg := s.takeInflight(w, r.Context()); code {
	case 0:
	case 499:
		return 499
	default:
		return refuse(w, r, code, msg)
	}
	s.metrics.inflight.Inc()
	defer func() {
		<-s.inflight
		s.metrics.inflight.Dec()
	}()
	tenant, code, msg := s.checkHead(w, r)
	if code != 0 {
		return refuse(w, r, code, msg)
	}
	if msg, over := s.declaredTooLarge(r); over && awaitsContinue(r) {
		// The client waits for a 100 before it sends the body: refused
		// now, it never sends it. (Otherwise the lines before the limit
		// are stored, and the 413 says how many.)
		return refuse(w, r, http.StatusRequestEntityTooLarge, msg)
	}
	if protocol == "loki" && strings.EqualFold(strings.TrimSpace(r.Header.Get("Content-Encoding")), "snappy") {
		// Loki's push body is snappy-compressed protobuf whatever the
		// header says; tracing-loki and Vector say so in the header, and
		// Loki ignores it. Decoding it once more would fail.
		r.Header.Del("Content-Encoding")
	}
	// Memory is reserved as the body arrives: a client that declares a
	// large body and sends it slowly holds little, and is cut off.
	base, perByte, most := s.memoryOf(r, protocol)
	body, err := s.newBody(w, r, base, perByte, most)
	switch {
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		return refuse(w, r, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		return refuse(w, r, http.StatusUnsupportedMediaType, err.Error())
	}
	defer body.Close()
	code, stored := h(w, r, tenant, body)
	s.limits.take(tenant, stored)
	return code
}

// noteWait tells w, if it cares (fastExchange), that its request waited
// for the server before its body was read.
func noteWait(w http.ResponseWriter) {
	if n, ok := w.(interface{ noteWait() }); ok {
		n.noteWait()
	}
}

// checkHead runs the checks an ingest request's head alone decides, in
// order: its tenant (400), its credential (401, 403), the tenant's rate
// (429), the disk's free space (507). It returns the tenant, or the
// status to refuse with (0 for none) and its message, with the reply
// headers that go with it (WWW-Authenticate, Retry-After) set on w.
func (s *Server) checkHead(w http.ResponseWriter, r *http.Request) (tenant string, code int, msg string) {
	tenant, err := tenantOf(r)
	if err != nil {
		return "", http.StatusBadRequest, err.Error()
	}
	if code := s.authorize(r, tenant); code != 0 {
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="sluice"`)
		}
		return "", code, http.StatusText(code)
	}
	if wait := s.limits.admit(tenant); wait > 0 {
		retryAfter(w, wait)
		return "", http.StatusTooManyRequests,
			fmt.Sprintf("tenant %s is over its ingest rate of %g lines/s; retry in %d s", tenant, s.cfg.TenantRate.LinesPerSecond, wait)
	}
	if free, low := s.disk.low(); low {
		retryAfter(w, 10)
		return "", http.StatusInsufficientStorage,
			fmt.Sprintf("the data directory's disk is nearly full (%d bytes free, %d needed); retry later", free, s.cfg.MinFreeBytes)
	}
	return tenant, 0, ""
}

// declaredTooLarge reports whether r declares a body longer than
// MaxBodyBytes, with the 413's message for a request refused before it
// sends any of it.
func (s *Server) declaredTooLarge(r *http.Request) (string, bool) {
	if s.cfg.MaxBodyBytes > 0 && r.ContentLength > s.cfg.MaxBodyBytes {
		return s.sentTooLarge().Error() + "; nothing of the body was sent or stored", true
	}
	return "", false
}

// awaitsContinue reports whether r's client waits for a 100 Continue
// that was not sent before it sends the body: over net/http, whose
// server sends the 100 when the handler first reads the body. Over
// fasthttp the 100 went out before the handler ran, once expectContinue
// had checked the head (fast.go).
func awaitsContinue(r *http.Request) bool {
	if _, fast := r.Body.(*fastBody); fast {
		return false
	}
	return r.ContentLength != 0 && r.ProtoAtLeast(1, 1) && strings.EqualFold(headerValue(r.Header, "Expect"), "100-continue")
}

// A request refused before its body is read has the body drained, up to
// these bounds, before the answer: many clients read the answer only once
// they have sent the whole body, and a server that closes the connection
// with the body unread makes their write fail with a broken pipe, so that
// they never see the status and its Retry-After.
const (
	drainBytes = 64 << 20
	drainTime  = 10 * time.Second
)

// refuse answers a request before its body is read: it drains the body
// (within drainBytes and drainTime), then answers code with msg and
// closes the connection. A client that waits for a 100 Continue before
// sending the body (awaitsContinue) gets the answer at once instead: it
// never sends the body, and the server closes the connection after the
// answer (net/http does so for a request whose 100 it never sent). It
// returns code.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) int {
	if awaitsContinue(r) {
		w.Header().Set("Connection", "close")
	} else if r.ContentLength != 0 {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(drainTime))
		_, _ = io.CopyN(io.Discard, r.Body, drainBytes)
		_ = rc.SetReadDeadline(time.Time{})
		w.Header().Set("Connection", "close")
	}
	http.Error(w, msg, code)
	return code
}

// diskCheck caches the free space of the data directory's filesystem for
// a second, so that a request costs no statfs.
type diskCheck struct {
	free    func() (uint64, error)
	min     uint64
	mu      sync.Mutex
	checked time.Time
	last    uint64
}

// low reports the free bytes and whether they are below the minimum.
func (d *diskCheck) low() (uint64, bool) {
	if d.free == nil || d.min == 0 {
		return 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Since(d.checked) > time.Second {
		if f, err := d.free(); err == nil {
			d.last = f
		}
		d.checked = time.Now()
	}
	return d.last, d.last < d.min
}

// smallBody is the largest line body read whole rather than streamed.
const smallBody = 256 << 10

// lineRequestMemory is what a line request holds while it is parsed: a
// chunk buffer, its batch and its encoding.
const lineRequestMemory = 16 << 20

// memoryOf estimates the memory a request will hold: base at once, and
// perByte for each byte of its body (decompressed), up to most.
func (s *Server) memoryOf(r *http.Request, protocol string) (base, perByte, most int64) {
	known := r.ContentLength >= 0 && r.Header.Get("Content-Encoding") == ""
	switch protocol {
	case "jsonline", "lines":
		// A small body is read whole (see handleLines).
		if known && r.ContentLength <= smallBody {
			n := 3*r.ContentLength + 64<<10
			return n, 0, n
		}
		// A chunk buffer, its batch and its encoding, reused chunk
		// after chunk.
		return 1 << 20, 4, lineRequestMemory
	}
	// Decoded whole: the body, decompressed, and what is built from it.
	base = 1 << 20
	if known {
		base = min(base, 2*r.ContentLength+64<<10)
	}
	return base, 2, min(2*s.cfg.MaxWholeBodyBytes+1<<20, max(s.cfg.MaxInflightBytes, 64<<20))
}

// tenantOf returns the request's tenant: X-Scope-OrgID, fully URL-decoded
// (so that no encoding can smuggle a path through), or the default.
func tenantOf(r *http.Request) (string, error) {
	t := headerValue(r.Header, "X-Scope-Orgid")
	if t == "" {
		return store.DefaultTenant, nil
	}
	for range 8 {
		u, err := url.PathUnescape(t)
		if err != nil {
			return "", fmt.Errorf("X-Scope-OrgID: %v", err)
		}
		if u == t {
			break
		}
		t = u
	}
	if strings.Contains(t, "|") {
		return "", fmt.Errorf("X-Scope-OrgID %q names several tenants: data goes to one tenant; \"|\" joins tenants only in queries", t)
	}
	if err := store.CheckTenant(t); err != nil {
		return "", fmt.Errorf("X-Scope-OrgID: %v", err)
	}
	return t, nil
}

// headerValue is h.Get(key) for a key in its canonical form (as
// textproto.CanonicalMIMEHeaderKey returns it), without canonicalizing
// it again: X-Scope-OrgID's canonical form is X-Scope-Orgid, and Get
// would allocate it on every request.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// queryOf is r.URL.Query() without the map when there is no query.
func queryOf(r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return nil
	}
	return r.URL.Query()
}

// storeStatus maps a store failure to an HTTP status.
func storeStatus(err error) int {
	switch {
	case vfs.IsNoSpace(err):
		return http.StatusInsufficientStorage
	case errors.Is(err, store.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusServiceUnavailable
}

// storeError answers a store failure; detail, if any, is added to the
// message.
func (s *Server) storeError(w http.ResponseWriter, err error, detail string) int {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The client hung up while the store waited for room: nothing
		// of this batch was stored, and nobody is left to tell.
		s.log.Debug("ingest: client gone while waiting for room", "err", err)
		return 499
	}
	code := storeStatus(err)
	s.log.Error("ingest: store refused a batch", "err", err)
	w.Header().Set("Retry-After", "5")
	http.Error(w, "the store cannot take the request now: "+err.Error()+detail, code)
	return code
}

const maxReplyErrors = 20

// jsonContentType is the Content-Type header's value of a JSON reply,
// shared so that setting it allocates nothing. Never modified.
var jsonContentType = []string{"application/json"}

// handleLines serves /insert/jsonline and /insert/lines: the body is
// parsed as a stream, each chunk stored durably before the next is read.
func (s *Server) handleLines(w http.ResponseWriter, r *http.Request, tenant string, body *reqBody) (int, int) {
	protocol, format := "jsonline", "json"
	query := queryOf(r)
	if r.URL.Path == "/insert/lines" {
		protocol, format = "lines", query.Get("format")
		if format == "" {
			format = "auto"
		}
	}
	var p *parse.Parser
	var list *parserList
	var err error
	if jsonline.Plain(query, r.Header) {
		p, list, err = s.parsers.getPlain(format, func() (parse.Options, error) {
			return jsonline.Options(nil, nil, format, s.cfg.Parse)
		})
	} else {
		var opts parse.Options
		if opts, err = jsonline.Options(query, r.Header, format, s.cfg.Parse); err == nil {
			p, list, err = s.parsers.get(opts)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, 0
	}
	in := flow.Input{Protocol: protocol}
	// The reply lives in the pooled body: the closures below make a
	// local one escape, an allocation per request.
	reply := &body.reply
	var storeErr error
	streamRefused := false
	pipe := body.pipe.start(s.flow)
	each := func(b *record.Batch) error {
		for i := range b.Errors {
			reply.AddError(b.Errors[i].Error(), maxReplyErrors)
		}
		b.Tenant = tenant
		res := s.flow.Admit(in, b)
		reply.Rejected += len(b.Errors)
		if res.Refused > 0 {
			reply.Rejected += res.Refused
			streamRefused = true
			reply.AddError(res.Message, maxReplyErrors)
		}
		reply.TimeFallbacks += res.TimeFallbacks
		reply.Dropped += res.Dropped
		if err := pipe.push(r.Context(), in, b); err != nil {
			storeErr = err
			return err
		}
		return nil
	}
	if r.ContentLength >= 0 && r.ContentLength <= smallBody && r.Header.Get("Content-Encoding") == "" {
		// Small (one-line pushes, mostly): read whole into the body's
		// buffer, parse in place. The batches made from it are encoded
		// (copied) by Prepare, and settled before the body is closed.
		data := body.buffer(int(r.ContentLength) + 1)
		n, rerr := io.ReadFull(body, data)
		if errors.Is(rerr, io.ErrUnexpectedEOF) || errors.Is(rerr, io.EOF) {
			rerr = nil
		}
		err = rerr
		if err == nil {
			err = p.Bytes(r.Context(), data[:n], each)
		}
	} else {
		err = p.Reader(r.Context(), fullReader{body}, each)
	}
	// The parser goes back before the last chunk's fsync is waited for:
	// Prepare copied its batches, so nothing the wait or the reply reads
	// is the parser's. Requests waiting for one group commit then share
	// the few parsers that were just used (still in the cache), not one
	// each.
	s.parsers.put(list, p)
	if serr := pipe.settle(); serr != nil {
		storeErr = serr
		if err == nil {
			err = serr
		}
	}
	reply.Accepted = pipe.accepted
	switch {
	case storeErr != nil:
		// What was made durable before stays: say how much, as the 413
		// does, so that a client can resend only the rest. The body's
		// lines are stored in order.
		return s.storeError(w, storeErr, fmt.Sprintf(" (the first %d lines of the body were stored before it)", reply.Accepted)), reply.Accepted
	case errors.Is(err, errTooLarge):
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("%v (the first %d lines of the body were stored before it)", err, reply.Accepted),
			http.StatusRequestEntityTooLarge)
		return http.StatusRequestEntityTooLarge, reply.Accepted
	case errors.Is(err, errSlowBody), errors.Is(err, errBusy):
		return bodyError(w, fmt.Errorf("%w (the first %d lines of the body were stored before it)", err, reply.Accepted)), reply.Accepted
	case err != nil:
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, reply.Accepted
	}
	code := http.StatusOK
	switch {
	case reply.Accepted == 0 && streamRefused:
		code = http.StatusTooManyRequests
	case reply.Accepted == 0 && reply.Rejected > 0:
		code = http.StatusBadRequest
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(code)
	body.scratch = reply.AppendJSON(body.scratch[:0])
	w.Write(body.scratch)
	return code, reply.Accepted
}

// storePipe stores a body's batches as they are parsed, two in flight: a
// batch is prepared (encoded) while the one before it waits for its
// fsync, and written once that one is durable, so that the body's lines
// are stored in order. The two are the pooled body's: batch k in
// slots[k%2], whose batch k-2 was settled before batch k-1 was written.
type storePipe struct {
	flow     *flow.Flow
	slots    [2]flow.Prepared
	pending  *flow.Prepared // the batch written and not yet settled
	n        int            // batches pushed
	accepted int            // lines of the batches settled
}

// start readies the pipe for a body, and returns it.
func (p *storePipe) start(f *flow.Flow) *storePipe {
	p.flow, p.pending, p.n, p.accepted = f, nil, 0, 0
	return p
}

// push prepares b, admitted, settles the batch before it and writes b.
// b may be reused once push returns.
func (p *storePipe) push(ctx context.Context, in flow.Input, b *record.Batch) error {
	next := &p.slots[p.n%2]
	p.n++
	if err := p.flow.PrepareInto(next, in, b); err != nil {
		return err
	}
	if err := p.settle(); err != nil {
		return err
	}
	next.Write(ctx)
	p.pending = next
	return nil
}

// settle waits for the batch in flight, if any, to be durable.
func (p *storePipe) settle() error {
	if p.pending == nil {
		return nil
	}
	n, err := p.pending.Wait()
	p.pending = nil
	if err != nil {
		return err
	}
	p.accepted += n
	return nil
}

// lokiDecoders keeps Loki decoders, with their tables (Decoder.Reuse),
// between requests: a push is stored and answered before its decoder is
// put back.
var lokiDecoders = sync.Pool{New: func() any { return &loki.Decoder{Reuse: true} }}

func (s *Server) getLokiDecoder() *loki.Decoder {
	d := lokiDecoders.Get().(*loki.Decoder)
	d.Limits, d.Discover, d.Fields = s.cfg.Loki, s.cfg.Discover, s.cfg.LokiFields
	return d
}

func putLokiDecoder(d *loki.Decoder) {
	d.Clear()
	lokiDecoders.Put(d)
}

// handleLoki serves /loki/api/v1/push as Loki does: 204; 400 with a
// plain-text reason when entries were left out (the others are stored).
func (s *Server) handleLoki(w http.ResponseWriter, r *http.Request, tenant string, body *reqBody) (int, int) {
	data, err := s.readWhole(body)
	if err != nil {
		return bodyError(w, err), 0
	}
	d := s.getLokiDecoder()
	b := record.GetBatch()
	// The decoder and the batch go back before the wait for the fsync
	// (Flow.Begin): the requests of one group commit share a few, still
	// in the cache, rather than holding one each.
	release := func() {
		putLokiDecoder(d)
		record.PutBatch(b)
	}
	b.ReceiveTime = time.Now().UnixNano()
	var res loki.Result
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	if strings.HasPrefix(ct, "application/json") {
		res, err = d.DecodeJSON(data, b)
	} else {
		res, err = d.DecodeProto(data, b, int(s.cfg.MaxWholeBodyBytes))
	}
	switch {
	case errors.Is(err, loki.ErrTooLarge):
		release()
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return http.StatusRequestEntityTooLarge, 0
	case err != nil:
		release()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, 0
	}
	b.Tenant = tenant
	// Admitted whole, so that the client's retry stores no line twice.
	pending := &body.pipe.slots[0]
	fr, started, err := s.flow.Begin(r.Context(), pending, flow.Input{Protocol: "loki", Whole: true, Bytes: len(data)}, b)
	var rejected string
	if res.Rejected > 0 {
		rejected = fmt.Sprintf("%d of %d entries rejected (the others are stored): %s", res.Rejected, res.Entries, strings.Join(res.Reasons, "; "))
	}
	release()
	if started {
		fr.Accepted, err = pending.Wait()
	}
	switch {
	case err != nil:
		return s.storeError(w, err, ""), 0
	case fr.Refused > 0:
		http.Error(w, fr.Message+"; nothing of the push was stored", http.StatusTooManyRequests)
		return http.StatusTooManyRequests, 0
	}
	if res.Rejected > 0 {
		s.flow.Reject("loki", "invalid", res.Rejected)
		http.Error(w, rejected, http.StatusBadRequest)
		return http.StatusBadRequest, fr.Accepted
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, fr.Accepted
}
