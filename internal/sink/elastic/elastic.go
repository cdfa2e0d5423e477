// Package elastic is the Elasticsearch destination of a sink: each batch
// posted to _bulk (package protocol/elastic writes the documents), one
// create (or index) action per record into the configured index or data
// stream, and the reply read item by item.
//
// Each document has an id derived from where its record is in sluice's
// WAL (IDPrefix, then segment-offset-row): reading the WAL again, after a
// retry or a crash, gives the same ids. With the create action,
// Elasticsearch answers 409 (version_conflict_engine_exception) for an id
// it already holds, which counts as delivered: a document is never
// indexed twice. With the index action the retry overwrites the document
// with itself. Either way the index holds each record once, as long as
// no one else writes those ids; a receiver that ignores ids (a second
// sluice does) stores what is sent again twice: at least once there.
//
// Answers: a reply of 2xx is read per item: 2xx (and 409 for create)
// deliver the item; 429, 502, 503 and 504 leave it for the retry, which
// sends those items alone (sink.Batch.Settle); any other status sends
// the item to the dead letter with its error. The whole request: 429 and
// 503 are retried no sooner than Retry-After; 413 (larger than the
// cluster's http.max_content_length) splits the request in halves until
// they fit, and a single document refused so goes to the dead letter;
// other 4xx send the request's records to the dead letter with the
// status and the start of the body; 5xx and connection errors are
// retried.
package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	esproto "github.com/sluicelog/sluice/internal/protocol/elastic"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/wal"
)

// DefaultTimeout bounds one _bulk request.
const DefaultTimeout = 30 * time.Second

// reasonBytes is how much of a refusal's body a dead-letter reason keeps.
const reasonBytes = 512

// Config configures the destination.
type Config struct {
	Sink string
	// URL is the cluster's base URL, e.g. http://es:9200; requests go to
	// URL/_bulk, with URL's query.
	URL string
	// Index is the index or data stream the documents go to.
	Index string
	// Action is "create" (the default; what data streams require) or
	// "index".
	Action string
	// IDPrefix starts every document id (the sink's name and "-" if
	// empty): ids are unique within one sluice data directory, so two
	// sluices writing one index need different prefixes.
	IDPrefix string
	// OrgID, if set, is sent as X-Scope-OrgID (for a sluice receiver).
	OrgID string
	// Basic auth (User and Password), an API key, or a bearer token.
	User, Password string
	APIKey         string
	BearerToken    string
	// Timeout bounds one request (DefaultTimeout if 0).
	Timeout time.Duration
	// Client, if set, sends the requests (tests).
	Client *http.Client
}

// Dest is the Elasticsearch destination.
//
// Concurrency: as sink.Destination, one goroutine.
type Dest struct {
	cfg    Config
	url    string
	client *http.Client
	enc    esproto.Encoder
	rb     record.Batch
	body   []byte
}

// New checks cfg.
func New(cfg Config) (*Dest, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("elasticsearch.url %q: want an http or https URL such as http://es:9200", cfg.URL)
	}
	if err := esproto.CheckIndex(cfg.Index); err != nil {
		return nil, fmt.Errorf("elasticsearch.index: %v", err)
	}
	switch cfg.Action {
	case "":
		cfg.Action = "create"
	case "create", "index":
	default:
		return nil, fmt.Errorf("elasticsearch.action %q: want create or index", cfg.Action)
	}
	n := 0
	for _, set := range []bool{cfg.User != "" || cfg.Password != "", cfg.APIKey != "", cfg.BearerToken != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("elasticsearch: set one of basic auth (user, password), api_key and bearer_token")
	}
	if cfg.Password != "" && cfg.User == "" {
		return nil, errors.New("elasticsearch.password without elasticsearch.user")
	}
	if cfg.IDPrefix == "" {
		cfg.IDPrefix = cfg.Sink + "-"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/_bulk"
	c := cfg.Client
	if c == nil {
		c = &http.Client{}
	}
	return &Dest{cfg: cfg, url: u.String(), client: c}, nil
}

// Open keeps no position: ids make retries harmless instead.
func (d *Dest) Open(context.Context) (wal.Pos, bool, error) { return wal.Pos{}, false, nil }

// Positionless says the runtime's position file is all there is.
func (d *Dest) Positionless() {}

// Close releases idle connections.
func (d *Dest) Close() error {
	d.client.CloseIdleConnections()
	return nil
}

// ID returns the document id of record r: the same for the same WAL
// frame and row, whoever reads it.
func (d *Dest) ID(r *sink.Record) string {
	return d.cfg.IDPrefix + strconv.FormatUint(r.Pos.Segment, 10) + "-" + strconv.FormatInt(r.Pos.Offset, 10) + "-" + strconv.Itoa(r.Row)
}

// Deliver posts the records of b not yet settled as one _bulk request
// (split in halves while Elasticsearch answers 413).
func (d *Dest) Deliver(ctx context.Context, b *sink.Batch) ([]sink.Rejected, error) {
	var idx []int
	for i := range b.Records {
		if !b.Settled(i) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	return d.deliver(ctx, b, idx)
}

// deliver posts records idx of b as one _bulk request.
func (d *Dest) deliver(ctx context.Context, b *sink.Batch, idx []int) ([]sink.Rejected, error) {
	if err := d.build(b, idx); err != nil {
		return nil, err
	}
	res := d.post(ctx)
	switch {
	case res.err != nil:
		return nil, res.err
	case res.status == http.StatusRequestEntityTooLarge && len(idx) > 1:
		// Too large for the cluster's http.max_content_length: each
		// half alone.
		rej, err := d.deliver(ctx, b, idx[:len(idx)/2])
		rej2, err2 := d.deliver(ctx, b, idx[len(idx)/2:])
		return append(rej, rej2...), errors.Join(err, err2)
	case res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable:
		return nil, sink.RetryAfter(res.refusal(), res.retryAfter)
	case res.status/100 == 4:
		reason := res.refusal().Error()
		rej := make([]sink.Rejected, len(idx))
		for k, i := range idx {
			rej[k] = sink.Rejected{Index: i, Reason: reason}
		}
		return rej, nil
	case res.status/100 != 2:
		return nil, res.refusal()
	}
	items, err := readItems(res.body)
	if err != nil {
		return nil, fmt.Errorf("elasticsearch _bulk reply: %w", err)
	}
	if len(items) != len(idx) {
		return nil, fmt.Errorf("elasticsearch _bulk reply: %d items for %d actions", len(items), len(idx))
	}
	var rej []sink.Rejected
	retry := 0
	var firstRetry string
	for k, it := range items {
		i := idx[k]
		switch {
		case it.Status/100 == 2 || it.Status == http.StatusConflict && d.cfg.Action == "create":
			b.Settle(i)
		case retryable(it.Status):
			if retry++; retry == 1 {
				firstRetry = it.reason()
			}
		default:
			rej = append(rej, sink.Rejected{Index: i, Reason: "elasticsearch: " + it.reason()})
		}
	}
	if retry > 0 {
		return rej, fmt.Errorf("elasticsearch _bulk: %d of %d items to retry, the first: %s", retry, len(items), firstRetry)
	}
	return rej, nil
}

func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// build writes the _bulk body of records idx of b into d.body.
func (d *Dest) build(b *sink.Batch, idx []int) error {
	rb := &d.rb
	rb.Reset()
	rb.Names, rb.Streams = record.NewNames(), record.NewStreams()
	d.body = d.body[:0]
	for _, i := range idx {
		r := &b.Records[i]
		k, err := addRecord(rb, r)
		if err != nil {
			return sink.Permanent(fmt.Errorf("record at %s: %w", r.Pos, err))
		}
		d.body = append(d.body, `{"`...)
		d.body = append(d.body, d.cfg.Action...)
		d.body = append(d.body, `":{"_index":"`...)
		d.body = record.AppendJSONEscaped(d.body, d.cfg.Index)
		d.body = append(d.body, `","_id":"`...)
		d.body = record.AppendJSONEscaped(d.body, d.ID(r))
		d.body = append(d.body, "\"}}\n"...)
		d.body = d.enc.AppendDoc(d.body, rb, k)
		d.body = append(d.body, '\n')
	}
	return nil
}

// addRecord adds r to rb, with its fields as JSON values, and returns its
// index. The record's time is not marked as read from a field, so the
// encoder writes @timestamp and message itself, then labels and fields.
func addRecord(rb *record.Batch, r *sink.Record) (int, error) {
	id, ok := rb.Streams.Intern(r.Labels)
	if !ok {
		return 0, errors.New("too many label sets in one batch")
	}
	off := uint32(len(rb.Data))
	rb.Data = append(rb.Data, r.Line...)
	line := record.Span{Off: off, Len: uint32(len(r.Line))}
	start := len(rb.Fields)
	if len(r.FieldsJSON) > 2 {
		dec := json.NewDecoder(bytes.NewReader(r.FieldsJSON))
		if _, err := dec.Token(); err != nil {
			return 0, fmt.Errorf("fields: %w", err)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return 0, fmt.Errorf("fields: %w", err)
			}
			name, _ := tok.(string)
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return 0, fmt.Errorf("field %q: %w", name, err)
			}
			nid, ok := rb.Names.Lookup([]byte(name))
			if !ok {
				return 0, errors.New("too many field names in one batch")
			}
			voff := uint32(len(rb.Data))
			rb.Data = append(rb.Data, v...)
			rb.Fields = append(rb.Fields, record.Field{Name: nid, Kind: record.JSON, Raw: record.Span{Off: voff, Len: uint32(len(v))}})
		}
	}
	rb.Records = append(rb.Records, record.Record{Time: r.Time, TimeSource: record.FromReceive, Stream: id, Line: line, Msg: line,
		FieldStart: uint32(start), NumFields: uint32(len(rb.Fields) - start)})
	return len(rb.Records) - 1, nil
}

// item is one entry of a _bulk reply's items.
type item struct {
	Status int `json:"status"`
	Error  struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

func (it *item) reason() string {
	if it.Error.Type == "" && it.Error.Reason == "" {
		return strconv.Itoa(it.Status)
	}
	return fmt.Sprintf("%d %s: %s", it.Status, it.Error.Type, it.Error.Reason)
}

// readItems reads the items of a _bulk reply, each an object of one
// action name.
func readItems(body []byte) ([]item, error) {
	var reply struct {
		Items []map[string]item `json:"items"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, err
	}
	items := make([]item, len(reply.Items))
	for k, m := range reply.Items {
		if len(m) != 1 {
			return nil, fmt.Errorf("item %d names %d actions, want 1", k, len(m))
		}
		for _, it := range m {
			items[k] = it
		}
	}
	return items, nil
}

// result is the outcome of one request.
type result struct {
	status     int
	statusText string
	body       []byte // the whole body on 2xx, else its first reasonBytes
	retryAfter time.Duration
	err        error
}

func (r *result) refusal() error {
	return fmt.Errorf("elasticsearch _bulk: %s: %s", r.statusText, bytes.TrimSpace(r.body))
}

func (d *Dest) post(ctx context.Context) result {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		return result{err: fmt.Errorf("elasticsearch _bulk: %w", err)}
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("User-Agent", "sluice")
	if d.cfg.OrgID != "" {
		req.Header.Set("X-Scope-OrgID", d.cfg.OrgID)
	}
	switch {
	case d.cfg.APIKey != "":
		req.Header.Set("Authorization", "ApiKey "+d.cfg.APIKey)
	case d.cfg.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+d.cfg.BearerToken)
	case d.cfg.User != "":
		req.SetBasicAuth(d.cfg.User, d.cfg.Password)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return result{err: fmt.Errorf("elasticsearch _bulk: %w", err)}
	}
	defer resp.Body.Close()
	res := result{status: resp.StatusCode, statusText: resp.Status,
		retryAfter: sink.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if resp.StatusCode/100 == 2 {
		// The reply has an item per action: bounded by the batch.
		res.body, err = io.ReadAll(resp.Body)
		if err != nil {
			return result{err: fmt.Errorf("elasticsearch _bulk: read reply: %w", err)}
		}
		return res
	}
	res.body, _ = io.ReadAll(io.LimitReader(resp.Body, reasonBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return res
}
