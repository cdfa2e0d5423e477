package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Protocol is the wire format of a Client's requests.
type Protocol int

const (
	// NDJSON posts one JSON object a line to /insert/jsonline, stream
	// labels named in _stream_fields. It is sluice's native format.
	NDJSON Protocol = iota
	// LokiProtobuf posts a logproto.PushRequest, snappy block compressed
	// (Content-Type application/x-protobuf), to /loki/api/v1/push, as
	// Loki's own clients do.
	LokiProtobuf
)

func (p Protocol) String() string {
	switch p {
	case NDJSON:
		return "ndjson"
	case LokiProtobuf:
		return "loki-protobuf"
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

// Compression is how a request body is compressed.
type Compression int

const (
	// CompressionDefault is zstd for NDJSON and snappy for LokiProtobuf.
	CompressionDefault Compression = iota
	CompressionNone
	CompressionGzip
	CompressionZstd
	// CompressionSnappy is the snappy block format of Loki's protobuf
	// push; it is the only one LokiProtobuf takes.
	CompressionSnappy
)

func (c Compression) String() string {
	switch c {
	case CompressionDefault:
		return "default"
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionZstd:
		return "zstd"
	case CompressionSnappy:
		return "snappy"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// Overflow says what Send does when the queue of sealed batches is full.
type Overflow int

const (
	// OverflowDropOldest, the default, drops the oldest queued batch to
	// make room, so that logging never waits for a slow or absent
	// server; its records are counted in Stats.Dropped.
	OverflowDropOldest Overflow = iota
	// OverflowBlock makes Send wait for room (or for Close); the waits
	// are counted in Stats.Blocked.
	OverflowBlock
)

// Label is one stream label.
type Label struct {
	Name, Value string
}

// Config configures a Client. Zero fields take the defaults given.
type Config struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:3100"; the
	// protocol's path is appended.
	URL         string
	Protocol    Protocol
	Compression Compression
	// Tenant, if set, is sent as X-Scope-OrgID.
	Tenant string
	// Header is added to every request (e.g. Authorization).
	Header http.Header
	// Labels are added to every record's stream.
	Labels []Label

	// A batch is sealed and queued when it holds BatchRecords records
	// (default 10,000) or BatchBytes bytes (default 1 MiB), or when its
	// first record is Linger old (default 200 ms).
	BatchRecords int
	BatchBytes   int
	Linger       time.Duration

	// MaxBufferedBytes bounds the queue of sealed batches (default
	// 32 MiB): it holds MaxBufferedBytes/BatchBytes batches (at least
	// one). Memory in use is at most that many batches, plus one being
	// filled and one being sent by each sender.
	MaxBufferedBytes int
	Overflow         Overflow
	// MaxStreams bounds the distinct label sets a Client knows (default
	// 10,000); Send refuses a new one past it with ErrTooManyStreams.
	MaxStreams int

	// Senders is the number of requests in flight at once (default 4):
	// each waits for the server's fsync before its answer, and the others
	// keep the server's cores busy meanwhile. Each holds one batch being
	// sent (BatchBytes, and its compressed body) and a connection.
	Senders int
	// A refused batch is retried after a jittered exponential backoff
	// from MinBackoff (default 100 ms) up to MaxBackoff (default 10 s),
	// or after Retry-After if the server says so. MaxAttempts bounds the
	// tries of one batch (0: no bound; Close's context ends them).
	MinBackoff  time.Duration
	MaxBackoff  time.Duration
	MaxAttempts int
	// RequestTimeout bounds one request (default 30 s).
	RequestTimeout time.Duration
	// HTTPClient sends the requests (default: a client of its own with
	// kept-alive connections).
	HTTPClient *http.Client
	// SpoolDir, if set, is a directory where a batch that cannot reach
	// the server (no connection, no answer) is written instead of being
	// retried in memory; the files are sent, oldest first, once the
	// server answers, and those left at Close by the next Client with
	// the same SpoolDir. SpoolMaxBytes bounds it (default 1 GiB); past
	// it batches are retried in memory as without a spool.
	SpoolDir      string
	SpoolMaxBytes int64

	// OnError, if set, is told of each batch given up (refused for good,
	// out of attempts, or dropped). It is called from the Client's
	// goroutines, and from Send when the queue overflows with the
	// Client's lock held: it must not block nor call the Client.
	OnError func(error)
}

// Stats counts what a Client did, in records unless said otherwise.
type Stats struct {
	Sent     uint64 // acknowledged by the server
	Dropped  uint64 // dropped by OverflowDropOldest, or undelivered at Close
	Failed   uint64 // refused for good (4xx other than 408 and 429, or lines the answer says it refused) or out of attempts
	Blocked  uint64 // Send calls that waited for room (OverflowBlock)
	Retries  uint64 // requests retried
	Requests uint64 // requests sent, retries included
	Spooled  uint64 // written to the spool (and counted in Sent once the spool sends them)
	Buffered int    // records held now, queued or being sent
}

// Errors a Client returns.
var (
	ErrClosed         = errors.New("sdk: client is closed")
	ErrTooManyStreams = errors.New("sdk: too many distinct streams (Config.MaxStreams)")
	ErrNoLabels       = errors.New("sdk: a Loki push needs at least one stream label")
)

// Client batches records and sends them to sluice. It is safe for
// concurrent use.
type Client struct {
	cfg      Config
	http     *http.Client
	pushURL  string
	base     string // Config.URL without a trailing slash
	maxQueue int
	spool    *spool

	ctx    context.Context // ends when Close gives up
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed by Close: stops the linger loop

	mu       sync.Mutex
	notFull  sync.Cond // a queue slot was freed, or closing
	notEmpty sync.Cond // a batch was queued, or closing
	idle     sync.Cond // a batch was delivered or given up
	cur      *batch
	queue    []*batch
	free     []*batch
	inflight int
	closed   bool // Send refuses
	stopping bool // senders exit once the queue is empty
	stats    Stats

	// Streams: interned label sets. streamList entries are never changed
	// once appended, so a sender may read a snapshot of the slice.
	streams    map[string]uint32
	streamList []stream
	names      map[string]struct{}
	ndjsonURL  string
	key        []byte
	// baseID is the stream of a record without labels of its own (the
	// Config's labels alone), plus one; 0 until known. baseRef is that
	// stream for the Handler, read without the lock.
	baseID  uint32
	baseRef atomic.Pointer[streamRef]

	// testPost, set by tests, takes each request body in place of the
	// server.
	testPost func(body []byte) error
}

type stream struct {
	loki []byte // {a="b", c="d"}
	json []byte // "a":"b","c":"d"
}

// streamRef is a stream's id and NDJSON fields, which never change once
// interned.
type streamRef struct {
	id   uint32
	json []byte
}

// New returns a Client sending to cfg.URL. It starts the Client's
// goroutines; Close stops them.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		return nil, errors.New("sdk: Config.URL is empty")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sdk: Config.URL %q is not an http(s) URL", cfg.URL)
	}
	switch cfg.Protocol {
	case NDJSON:
		switch cfg.Compression {
		case CompressionDefault:
			cfg.Compression = CompressionZstd
		case CompressionNone, CompressionGzip, CompressionZstd:
		default:
			return nil, fmt.Errorf("sdk: compression %s is not taken with NDJSON (none, gzip or zstd)", cfg.Compression)
		}
	case LokiProtobuf:
		switch cfg.Compression {
		case CompressionDefault, CompressionSnappy:
			cfg.Compression = CompressionSnappy
		default:
			return nil, fmt.Errorf("sdk: compression %s is not taken with LokiProtobuf (its body is a snappy block)", cfg.Compression)
		}
	default:
		return nil, fmt.Errorf("sdk: unknown protocol %d", int(cfg.Protocol))
	}
	if cfg.Overflow != OverflowBlock && cfg.Overflow != OverflowDropOldest {
		return nil, fmt.Errorf("sdk: unknown overflow policy %d", int(cfg.Overflow))
	}
	for _, l := range cfg.Labels {
		if err := checkLabel(cfg.Protocol, l); err != nil {
			return nil, fmt.Errorf("sdk: Config.Labels: %w", err)
		}
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.BatchRecords, 10000)
	def(&cfg.BatchBytes, 1<<20)
	def(&cfg.MaxBufferedBytes, 32<<20)
	def(&cfg.MaxStreams, 10000)
	def(&cfg.Senders, 4)
	defDur(&cfg.Linger, 200*time.Millisecond)
	defDur(&cfg.MinBackoff, 100*time.Millisecond)
	defDur(&cfg.MaxBackoff, 10*time.Second)
	defDur(&cfg.RequestTimeout, 30*time.Second)
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	c := &Client{
		cfg:      cfg,
		http:     cfg.HTTPClient,
		maxQueue: max(1, cfg.MaxBufferedBytes/cfg.BatchBytes),
		done:     make(chan struct{}),
		streams:  make(map[string]uint32),
		names:    make(map[string]struct{}),
	}
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = cfg.Senders
		// The body is compressed by the Client; a gzip answer is not
		// wanted.
		tr.DisableCompression = true
		c.http = &http.Client{Transport: tr}
	}
	base := strings.TrimRight(cfg.URL, "/")
	c.base = base
	if cfg.SpoolDir != "" {
		if cfg.SpoolMaxBytes <= 0 {
			cfg.SpoolMaxBytes = 1 << 30
			c.cfg.SpoolMaxBytes = cfg.SpoolMaxBytes
		}
		sp, err := openSpool(cfg.SpoolDir, cfg.SpoolMaxBytes)
		if err != nil {
			return nil, err
		}
		c.spool = sp
	}
	if cfg.Protocol == NDJSON {
		c.pushURL = base + "/insert/jsonline"
	} else {
		c.pushURL = base + "/loki/api/v1/push"
	}
	c.ndjsonURL = c.pushURL
	c.notFull.L, c.notEmpty.L, c.idle.L = &c.mu, &c.mu, &c.mu
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.queue = make([]*batch, 0, c.maxQueue)
	c.cur = c.newBatch()
	for range cfg.Senders {
		s := newSender(c)
		c.wg.Go(s.run)
	}
	c.wg.Go(c.lingerLoop)
	if c.spool != nil {
		c.wg.Go(c.drainSpool)
	}
	return c, nil
}

// Send queues one record: its time (the zero time: the server's clock),
// its line, and its stream labels besides Config.Labels. With NDJSON a
// line that is a JSON object is sent as that object with the time and
// labels added; any other line becomes the object's _msg. Send copies
// what it is given; it allocates nothing once the label set is known.
func (c *Client) Send(t time.Time, line []byte, labels ...Label) error {
	return c.send(t, line, labels, false)
}

// send is Send; compact says line is a JSON object with no white space
// between its tokens.
func (c *Client) send(t time.Time, line []byte, labels []Label, compact bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	id, err := c.streamID(labels)
	if err != nil {
		return err
	}
	size := len(line) + 64
	if c.cfg.Protocol == NDJSON {
		size += len(c.streamList[id].json)
	}
	blocked, err := c.roomFor(size)
	if err != nil {
		return err
	}
	c.cur.add(c.cfg.Protocol, t, line, id, &c.streamList[id], compact)
	c.added(&blocked)
	return nil
}

// roomFor seals the current batch until it has room for a record of
// about size bytes; called with c.mu held. blocked says whether a seal
// waited (seal's), for added.
func (c *Client) roomFor(size int) (blocked bool, err error) {
	for c.cur.n > 0 && (c.cur.n >= c.cfg.BatchRecords || len(c.cur.data)+size > c.cfg.BatchBytes) {
		if c.seal(&blocked) != nil {
			return blocked, ErrClosed
		}
	}
	return blocked, nil
}

// added counts a record just added to the current batch and seals the
// batch if it is full; called with c.mu held. A seal that fails leaves
// the record in: Close will deliver or count it.
func (c *Client) added(blocked *bool) {
	c.stats.Buffered++
	if c.cur.n >= c.cfg.BatchRecords || len(c.cur.data) >= c.cfg.BatchBytes {
		_ = c.seal(blocked)
	}
}

// baseStream returns the stream of records without labels of their
// own (Config.Labels alone), interning it on the first call.
func (c *Client) baseStream() (*streamRef, error) {
	if r := c.baseRef.Load(); r != nil {
		return r, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id, err := c.streamID(nil)
	if err != nil {
		return nil, err
	}
	r := &streamRef{id: id, json: c.streamList[id].json}
	c.baseRef.Store(r)
	return r, nil
}

// sendLine queues line, one whole NDJSON record of stream id ending in a
// newline, as batch.add would have written it (the Handler's, NDJSON
// only).
func (c *Client) sendLine(line []byte, id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	blocked, err := c.roomFor(len(line))
	if err != nil {
		return err
	}
	c.cur.addLine(line)
	c.added(&blocked)
	return nil
}

// seal queues c.cur and starts a fresh batch; called with c.mu held. With
// OverflowBlock it waits for room, and returns ErrClosed if the Client is
// being stopped meanwhile; with OverflowDropOldest it drops the oldest
// queued batch.
func (c *Client) seal(blocked *bool) error {
	for len(c.queue) >= c.maxQueue {
		if c.cfg.Overflow == OverflowDropOldest {
			old := c.queue[0]
			copy(c.queue, c.queue[1:])
			c.queue = c.queue[:len(c.queue)-1]
			c.stats.Dropped += uint64(old.n)
			c.stats.Buffered -= old.n
			c.recycle(old)
			if c.cfg.OnError != nil {
				c.cfg.OnError(fmt.Errorf("sdk: queue full (%d batches): dropped the oldest batch of %d records", c.maxQueue, old.n))
			}
			continue
		}
		if c.stopping {
			return ErrClosed
		}
		if !*blocked {
			*blocked = true
			c.stats.Blocked++
		}
		c.notFull.Wait()
	}
	if c.cur.n == 0 {
		return nil // sealed by another caller while this one waited
	}
	c.queue = append(c.queue, c.cur)
	c.cur = c.newBatch()
	c.notEmpty.Signal()
	return nil
}

func (c *Client) newBatch() *batch {
	if n := len(c.free); n > 0 {
		b := c.free[n-1]
		c.free = c.free[:n-1]
		return b
	}
	return &batch{data: make([]byte, 0, c.cfg.BatchBytes+c.cfg.BatchBytes/8)}
}

// recycle keeps b for reuse; called with c.mu held. A batch grown far
// past BatchBytes by one large record is let go.
func (c *Client) recycle(b *batch) {
	b.reset()
	if cap(b.data) > 4*c.cfg.BatchBytes {
		return
	}
	c.free = append(c.free, b)
}

// lingerLoop seals a batch whose first record is Linger old.
func (c *Client) lingerLoop() {
	tick := time.NewTicker(max(c.cfg.Linger/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case now := <-tick.C:
			c.mu.Lock()
			if c.cur.n > 0 && now.Sub(c.cur.first) >= c.cfg.Linger {
				var blocked bool
				_ = c.seal(&blocked)
			}
			c.mu.Unlock()
		}
	}
}

// Flush queues what is buffered and waits until every record queued
// before it returns is delivered or given up, or ctx ends.
func (c *Client) Flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.notFull.Broadcast()
		c.idle.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.cur.n > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sdk: flush: %w", err)
		}
		if len(c.queue) < c.maxQueue || c.cfg.Overflow == OverflowDropOldest {
			var blocked bool
			if err := c.seal(&blocked); err != nil {
				return err
			}
			break
		}
		c.notFull.Wait()
	}
	for len(c.queue) > 0 || c.inflight > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sdk: flush: %d records undelivered: %w", c.stats.Buffered, err)
		}
		c.idle.Wait()
	}
	return nil
}

// Close stops the Client: Send refuses from then on, what is buffered is
// sent, and Close waits for it until ctx ends; then what is left is
// dropped (counted in Stats.Dropped) and Close returns an error saying
// how much.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.mu.Unlock()
	close(c.done)
	err := c.Flush(ctx)
	c.mu.Lock()
	c.stopping = true
	c.notEmpty.Broadcast()
	c.notFull.Broadcast()
	c.mu.Unlock()
	if err != nil {
		c.cancel() // ends requests and backoffs in flight
	}
	c.wg.Wait()
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	// Left behind by a cancelled Flush: the batch being filled (if Flush
	// could not seal it) and the queue.
	lost := c.cur.n
	c.stats.Dropped += uint64(c.cur.n)
	c.stats.Buffered -= c.cur.n
	c.cur.reset()
	for _, b := range c.queue {
		lost += b.n
		c.stats.Dropped += uint64(b.n)
		c.stats.Buffered -= b.n
	}
	c.queue = c.queue[:0]
	if err != nil {
		return fmt.Errorf("sdk: close: %d records undelivered: %w", lost, err)
	}
	return nil
}

// Stats returns the Client's counts so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// streamID returns the id of Config.Labels plus labels, interning a new
// label set; called with c.mu held.
func (c *Client) streamID(labels []Label) (uint32, error) {
	if len(labels) == 0 && c.baseID > 0 {
		return c.baseID - 1, nil
	}
	id, err := c.lookupStream(labels)
	if err == nil && len(labels) == 0 {
		c.baseID = id + 1
	}
	return id, err
}

func (c *Client) lookupStream(labels []Label) (uint32, error) {
	k := c.key[:0]
	for _, set := range [2][]Label{c.cfg.Labels, labels} {
		for _, l := range set {
			k = append(k, l.Name...)
			k = append(k, 0)
			k = append(k, l.Value...)
			k = append(k, 0)
		}
	}
	c.key = k
	if id, ok := c.streams[string(k)]; ok {
		return id, nil
	}
	if len(c.streamList) >= c.cfg.MaxStreams {
		return 0, fmt.Errorf("%w: %d known", ErrTooManyStreams, len(c.streamList))
	}
	if c.cfg.Protocol == LokiProtobuf && len(c.cfg.Labels)+len(labels) == 0 {
		return 0, ErrNoLabels
	}
	var s stream
	s.loki = append(s.loki, '{')
	n := 0
	for _, set := range [2][]Label{c.cfg.Labels, labels} {
		for _, l := range set {
			if err := checkLabel(c.cfg.Protocol, l); err != nil {
				return 0, fmt.Errorf("sdk: %w", err)
			}
			if n > 0 {
				s.loki = append(s.loki, ", "...)
				s.json = append(s.json, ',')
			}
			n++
			s.loki = append(s.loki, l.Name...)
			s.loki = append(s.loki, '=')
			s.loki = appendLokiQuoted(s.loki, l.Value)
			s.json = appendJSONString(s.json, l.Name)
			s.json = append(s.json, ':')
			s.json = appendJSONString(s.json, l.Value)
			if _, ok := c.names[l.Name]; !ok && c.cfg.Protocol == NDJSON {
				c.names[l.Name] = struct{}{}
				c.ndjsonURL = c.streamFieldsURL()
			}
		}
	}
	s.loki = append(s.loki, '}')
	id := uint32(len(c.streamList))
	c.streamList = append(c.streamList, s)
	c.streams[string(k)] = id
	return id, nil
}

// streamFieldsURL returns the NDJSON push URL naming every label name
// seen as a stream field.
func (c *Client) streamFieldsURL() string {
	var b strings.Builder
	for n := range c.names {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
	}
	return c.pushURL + "?_stream_fields=" + url.QueryEscape(b.String())
}

func checkLabel(p Protocol, l Label) error {
	if l.Name == "" {
		return errors.New("a label has an empty name")
	}
	if p == NDJSON {
		if strings.ContainsRune(l.Name, ',') {
			return fmt.Errorf("label name %q has a comma", l.Name)
		}
		return nil
	}
	for i := 0; i < len(l.Name); i++ {
		ch := l.Name[i]
		if ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9' {
			continue
		}
		return fmt.Errorf("label name %q is not a Loki label name ([a-zA-Z_][a-zA-Z0-9_]*)", l.Name)
	}
	return nil
}
