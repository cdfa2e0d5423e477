// Package loki is the Loki destination of a sink: each batch pushed to a
// Loki push URL (/loki/api/v1/push) as Promtail pushes it, a
// snappy-compressed protobuf PushRequest (package protocol/loki's
// Encoder) with Content-Type application/x-protobuf, one stream per label
// set, one request per tenant with the tenant in X-Scope-OrgID (the
// record's tenant, or the configured OrgID).
//
// Answers: 2xx delivers the tenant's records; 429 and 503 are retried,
// no sooner than their Retry-After; 413 splits the push in halves until
// they fit (a single record refused so goes to the dead letter); other
// 4xx are permanent: the push's records go to the dead letter with the
// status and the start of the body; anything else (5xx, a connection
// error, a timeout) is retried. When one tenant's push succeeds and another's fails, the
// retry sends only the failed tenant's records (sink.Batch.Settle).
//
// Loki keeps no position for us: the sink resumes from its own position
// file, so after a crash or a retry of a push whose answer was lost,
// records are pushed again. Delivery is at least once. (Loki drops an
// entry identical to one already in its stream, same time and line, in
// most cases, but not across ingester restarts: do not count on it.)
//
// Structured metadata is sent for records that carry it (a Loki or OTLP
// push's, sink.Record.Metadata). Fields parsed from the line are not
// sent: the line holds them, and Loki extracts them at query time with a
// parser stage.
package loki

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	lokiproto "github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/wal"
)

// DefaultTimeout bounds one push.
const DefaultTimeout = 30 * time.Second

// reasonBytes is how much of a refusal's body a dead-letter reason keeps.
const reasonBytes = 512

// Config configures the destination.
type Config struct {
	Sink string
	// URL is the push endpoint, e.g. http://loki:3100/loki/api/v1/push.
	URL string
	// OrgID, if set, is sent as X-Scope-OrgID for every record; if not,
	// each record's own tenant is.
	OrgID string
	// Basic auth (User and Password), or a bearer token; not both.
	User, Password string
	BearerToken    string
	// Timeout bounds one push (DefaultTimeout if 0).
	Timeout time.Duration
	// Client, if set, sends the requests (tests); Timeout still applies.
	Client *http.Client
}

// Dest is the Loki destination.
//
// Concurrency: as sink.Destination, one goroutine.
type Dest struct {
	cfg    Config
	client *http.Client
	enc    lokiproto.Encoder
	rb     record.Batch
	body   []byte
	groups map[string][]int // tenant: unsettled record indexes
	order  []string         // tenants, in order of their first record
}

// New checks cfg.
func New(cfg Config) (*Dest, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("loki.url %q: want an http or https URL such as http://loki:3100/loki/api/v1/push", cfg.URL)
	}
	if cfg.BearerToken != "" && (cfg.User != "" || cfg.Password != "") {
		return nil, errors.New("loki: set basic auth (user, password) or bearer_token, not both")
	}
	if cfg.Password != "" && cfg.User == "" {
		return nil, errors.New("loki.password without loki.user")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	c := cfg.Client
	if c == nil {
		c = &http.Client{}
	}
	return &Dest{cfg: cfg, client: c, groups: map[string][]int{}}, nil
}

// Open keeps no position: Loki has none for us (at least once).
func (d *Dest) Open(context.Context) (wal.Pos, bool, error) { return wal.Pos{}, false, nil }

// Positionless says the runtime's position file is all there is.
func (d *Dest) Positionless() {}

// Close does nothing: requests hold nothing between deliveries.
func (d *Dest) Close() error {
	d.client.CloseIdleConnections()
	return nil
}

// Deliver pushes the records of b not yet settled, one request per
// tenant.
func (d *Dest) Deliver(ctx context.Context, b *sink.Batch) ([]sink.Rejected, error) {
	clear(d.groups)
	d.order = d.order[:0]
	for i := range b.Records {
		if b.Settled(i) {
			continue
		}
		t := d.cfg.OrgID
		if t == "" {
			t = b.Records[i].Tenant
		}
		if _, ok := d.groups[t]; !ok {
			d.order = append(d.order, t)
		}
		d.groups[t] = append(d.groups[t], i)
	}
	var rej []sink.Rejected
	var errs []error
	for _, tenant := range d.order {
		rej, errs = d.pushSet(ctx, b, tenant, d.groups[tenant], rej, errs)
	}
	if len(errs) > 0 {
		// The longest Retry-After wins: errors.Join keeps each, and the
		// runtime reads the first it finds; put the longest first.
		longest := 0
		for k, e := range errs {
			if wait(e) > wait(errs[longest]) {
				longest = k
			}
		}
		errs[0], errs[longest] = errs[longest], errs[0]
		return rej, errors.Join(errs...)
	}
	return rej, nil
}

// pushSet pushes records idx of b for tenant, appending what it rejects
// and its errors to rej and errs. A 413 (the push is larger than the
// receiver takes) splits idx in halves until they fit.
func (d *Dest) pushSet(ctx context.Context, b *sink.Batch, tenant string, idx []int, rej []sink.Rejected, errs []error) (
	[]sink.Rejected, []error) {
	d.body = d.enc.AppendPushProto(d.body[:0], d.build(b, idx))
	res := d.push(ctx, tenant, d.body)
	switch {
	case res.err != nil:
		errs = append(errs, res.err)
	case res.status/100 == 2:
		for _, i := range idx {
			b.Settle(i)
		}
	case res.status == http.StatusRequestEntityTooLarge && len(idx) > 1:
		rej, errs = d.pushSet(ctx, b, tenant, idx[:len(idx)/2], rej, errs)
		rej, errs = d.pushSet(ctx, b, tenant, idx[len(idx)/2:], rej, errs)
	case res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable:
		errs = append(errs, sink.RetryAfter(res.refusal(tenant), res.retryAfter))
	case res.status/100 == 4:
		reason := res.refusal(tenant).Error()
		for _, i := range idx {
			rej = append(rej, sink.Rejected{Index: i, Reason: reason})
		}
	default:
		errs = append(errs, res.refusal(tenant))
	}
	return rej, errs
}

func wait(err error) time.Duration {
	var ra *sink.RetryAfterError
	if errors.As(err, &ra) {
		return ra.Wait
	}
	return 0
}

// build fills d.rb with records idx of b: lines, times, stream labels and
// structured metadata (string fields held after the line in Data, which
// is what protocol/loki.AppendMetadata finds).
func (d *Dest) build(b *sink.Batch, idx []int) *record.Batch {
	rb := &d.rb
	rb.Reset()
	// A fresh stream table per push: its sets are interned per batch.
	rb.Names, rb.Streams = record.NewNames(), record.NewStreams()
	for _, i := range idx {
		r := &b.Records[i]
		id, ok := rb.Streams.Intern(r.Labels)
		if !ok { // not with the few thousand sets of a batch
			id = 0
		}
		off := uint32(len(rb.Data))
		rb.Data = append(rb.Data, r.Line...)
		line := record.Span{Off: off, Len: uint32(len(r.Line))}
		start := len(rb.Fields)
		for _, m := range r.Metadata {
			nid, ok := rb.Names.Lookup([]byte(m.Name))
			if !ok {
				break
			}
			voff := uint32(len(rb.Data))
			rb.Data = append(rb.Data, m.Value...)
			rb.Fields = append(rb.Fields, record.Field{Name: nid, Kind: record.String, Raw: record.Span{Off: voff, Len: uint32(len(m.Value))}})
		}
		rb.Records = append(rb.Records, record.Record{Time: r.Time, Stream: id, Line: line, Msg: line,
			FieldStart: uint32(start), NumFields: uint32(len(rb.Fields) - start)})
	}
	return rb
}

// result is the outcome of one request.
type result struct {
	status     int
	statusText string
	body       []byte // its first reasonBytes
	retryAfter time.Duration
	err        error // the request failed before an answer
}

func (r *result) refusal(tenant string) error {
	return fmt.Errorf("loki push (tenant %q): %s: %s", tenant, r.statusText, bytes.TrimSpace(r.body))
}

func (d *Dest) push(ctx context.Context, tenant string, body []byte) result {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return result{err: fmt.Errorf("loki push: %w", err)}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "sluice")
	if tenant != "" {
		req.Header.Set("X-Scope-OrgID", tenant)
	}
	switch {
	case d.cfg.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+d.cfg.BearerToken)
	case d.cfg.User != "":
		req.SetBasicAuth(d.cfg.User, d.cfg.Password)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return result{err: fmt.Errorf("loki push (tenant %q): %w", tenant, err)}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, reasonBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // reuse the connection
	return result{status: resp.StatusCode, statusText: resp.Status, body: head,
		retryAfter: sink.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
}
