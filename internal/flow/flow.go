package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/record"
)

// Sink takes batches in two steps: Prepare encodes a batch, of the
// tenant b.Tenant (and may run while an earlier batch is being written),
// the Pending it returns writes it.
type Sink interface {
	Prepare(b *record.Batch) (Pending, error)
}

// ErrNoTenant is the error for a batch without a tenant (b.Tenant ""):
// the producer must say whose records they are.
var ErrNoTenant = errors.New("batch has no tenant (record.Batch.Tenant is empty)")

// SinkFunc adapts a function that stores a batch at once, and may be
// called concurrently, to a Sink: Prepare calls it (so batches are stored
// in the order Prepare is called, not Write's), Wait returns its error.
type SinkFunc func(b *record.Batch) error

// Prepare stores b.
func (f SinkFunc) Prepare(b *record.Batch) (Pending, error) { return done{f(b)}, nil }

type done struct{ err error }

func (d done) Write(context.Context) {}
func (d done) Wait() error           { return d.err }

// Pending is a prepared batch. Write must be followed by Wait before the
// same goroutine calls Write again; Wait reports whether the batch is
// durable. Write gives up when ctx ends while it waits for room.
type Pending interface {
	Write(ctx context.Context)
	Wait() error
}

// Admission decides which records of a batch may be stored: the
// per-tenant limit of active streams today, rules later.
type Admission interface {
	// Admit removes from b.Records those it refuses, calling refused (if
	// not nil) with the index each had, or, with whole set, refuses all
	// of b or nothing. It says what it refused. b.Tenant is the tenant,
	// never "".
	Admit(b *record.Batch, whole bool, refused func(i int)) Refusal
}

// Refusal says what admission refused.
type Refusal struct {
	Lines   int    // lines refused
	Reason  string // the reason label of the rejected-lines metric, e.g. stream_limit
	Message string // for the client: names the limit
}

// Stage changes a batch before admission: the rule stage (package
// rules). It may drop records (record.Batch.Drop), give records new
// lines and streams; it never fails a batch, and counts what it does
// itself. It runs on the producer's goroutine, the single writer of the
// batch's stream table.
type Stage interface {
	Apply(b *record.Batch)
}

// Metrics are the counters a Flow keeps. Any may be nil.
type Metrics struct {
	Lines         *prometheus.CounterVec // lines stored, by tenant and protocol
	Bytes         *prometheus.CounterVec // bytes stored, by tenant and protocol
	Rejected      *prometheus.CounterVec // lines rejected, by protocol and reason
	TimeFallbacks *prometheus.CounterVec // lines stored at the receive time although they held a time, by protocol
}

// Flow runs admission, counting and the write for every batch of every
// producer. A batch's tenant is b.Tenant, which its producer sets: a
// batch without one is refused by Prepare (and so by Store and Write)
// with ErrNoTenant, and Admit passes it to no Admission.
//
// Concurrency: safe for concurrent use.
type Flow struct {
	Sink      Sink
	Admission Admission // nil: every record is admitted
	Metrics   Metrics
	// Rules, if set, runs on every batch with a tenant before
	// admission, so that what rules drop takes no stream of the limit.
	Rules Stage

	// Metrics.Lines and Metrics.Bytes series looked up once each: a
	// CounterVec lookup hashes its labels on every call.
	storedMu sync.Mutex
	stored   map[[2]string]storedCounters // by tenant and protocol
}

type storedCounters struct{ lines, bytes prometheus.Counter }

// storedFor returns the Lines and Bytes series of tenant and protocol
// (nil for a CounterVec that is nil).
func (f *Flow) storedFor(tenant, protocol string) storedCounters {
	k := [2]string{tenant, protocol}
	f.storedMu.Lock()
	defer f.storedMu.Unlock()
	c, ok := f.stored[k]
	if !ok {
		if f.Metrics.Lines != nil {
			c.lines = f.Metrics.Lines.WithLabelValues(tenant, protocol)
		}
		if f.Metrics.Bytes != nil {
			c.bytes = f.Metrics.Bytes.WithLabelValues(tenant, protocol)
		}
		if f.stored == nil {
			f.stored = map[[2]string]storedCounters{}
		}
		f.stored[k] = c
	}
	return c
}

// Input says where a batch comes from and how it is admitted. The
// batch's tenant is its own (record.Batch.Tenant).
type Input struct {
	Protocol string
	// Whole admits the batch whole or refuses it whole, so that a
	// client's retry stores no line twice.
	Whole bool
	// Refused, if not nil, is called with the index in b.Records of each
	// record refused by admission (not with Whole).
	Refused func(i int)
	// Bytes is what the batch counts in the bytes metric when stored;
	// zero counts the batch's data.
	Bytes int
}

// Result is what a batch's reply needs.
type Result struct {
	// Accepted counts the lines stored.
	Accepted int
	// Rejected counts the lines the decoder rejected (b.Errors) and
	// those refused by admission.
	Rejected int
	// Refused counts the lines refused by admission; Message explains
	// why.
	Refused int
	Message string
	// TimeFallbacks counts lines whose time was present but unusable:
	// they are stored at the receive time.
	TimeFallbacks int
	// Dropped counts the lines the rules dropped (drop, sample,
	// rate_limit, on_error: drop): not stored, and no error.
	Dropped int
}

// Reject counts n lines of protocol rejected for reason.
func (f *Flow) Reject(protocol, reason string, n int) {
	if n > 0 && f.Metrics.Rejected != nil {
		f.Metrics.Rejected.WithLabelValues(protocol, reason).Add(float64(n))
	}
}

// Admit counts the lines of b the decoder rejected, applies the rules
// (Rules), applies the stream limit (removing refused records from b,
// or, with in.Whole, refusing all), and counts time fallbacks. With in.Whole and a refusal, b must
// not be stored.
func (f *Flow) Admit(in Input, b *record.Batch) Result {
	var res Result
	for i := range b.Errors {
		f.Reject(in.Protocol, b.Errors[i].Kind.String(), 1)
	}
	res.Rejected = len(b.Errors)
	if f.Rules != nil && b.Tenant != "" {
		kept := b.NumKept()
		f.Rules.Apply(b)
		res.Dropped = kept - b.NumKept()
	}
	if f.Admission != nil && b.Tenant != "" {
		if rf := f.Admission.Admit(b, in.Whole, in.Refused); rf.Lines > 0 {
			res.Refused, res.Message = rf.Lines, rf.Message
			res.Rejected += rf.Lines
			f.Reject(in.Protocol, rf.Reason, rf.Lines)
			if in.Whole {
				return res
			}
		}
	}
	res.TimeFallbacks = b.BadTime
	if b.BadTime > 0 && f.Metrics.TimeFallbacks != nil {
		f.Metrics.TimeFallbacks.WithLabelValues(in.Protocol).Add(float64(b.BadTime))
	}
	return res
}

// Prepared is a batch prepared for its sink.
type Prepared struct {
	f        *Flow
	p        Pending
	tenant   string
	protocol string
	lines    int
	bytes    int
}

// Prepare prepares b, admitted, for the sink. b may be reused once
// Prepare returns.
func (f *Flow) Prepare(in Input, b *record.Batch) (*Prepared, error) {
	p := new(Prepared)
	if err := f.PrepareInto(p, in, b); err != nil {
		return nil, err
	}
	return p, nil
}

// PrepareInto is Prepare into dst, which the caller keeps (a Prepared
// allocated per batch is a tenth of a one-line push's allocations): dst
// may be reused once its Wait has returned, or if PrepareInto failed.
func (f *Flow) PrepareInto(dst *Prepared, in Input, b *record.Batch) error {
	if b.Tenant == "" {
		return fmt.Errorf("flow: %s batch of %d records: %w", in.Protocol, len(b.Records), ErrNoTenant)
	}
	p, err := f.Sink.Prepare(b)
	if err != nil {
		return err
	}
	bytes := in.Bytes
	if bytes == 0 {
		bytes = len(b.Data)
	}
	*dst = Prepared{f: f, p: p, tenant: b.Tenant, protocol: in.Protocol, lines: b.NumKept(), bytes: bytes}
	return nil
}

// Write starts writing the batch; see Pending.
func (p *Prepared) Write(ctx context.Context) { p.p.Write(ctx) }

// Wait waits until the batch is durable, counts it, and returns its
// lines.
func (p *Prepared) Wait() (int, error) {
	if err := p.p.Wait(); err != nil {
		return 0, err
	}
	if p.f.Metrics.Lines == nil && p.f.Metrics.Bytes == nil {
		return p.lines, nil
	}
	c := p.f.storedFor(p.tenant, p.protocol)
	if c.lines != nil {
		c.lines.Add(float64(p.lines))
	}
	if c.bytes != nil {
		c.bytes.Add(float64(p.bytes))
	}
	return p.lines, nil
}

// Store prepares, writes and waits for b, admitted.
func (f *Flow) Store(ctx context.Context, in Input, b *record.Batch) (int, error) {
	var p Prepared
	if err := f.PrepareInto(&p, in, b); err != nil {
		return 0, err
	}
	p.Write(ctx)
	return p.Wait()
}

// Write admits b and stores what passes: Admit, then Store unless the
// batch was refused whole. On a sink error, the Result has the counts of
// admission and nothing accepted.
func (f *Flow) Write(ctx context.Context, in Input, b *record.Batch) (Result, error) {
	var p Prepared
	res, started, err := f.Begin(ctx, &p, in, b)
	if !started {
		return res, err
	}
	res.Accepted, err = p.Wait()
	return res, err
}

// Begin is Write up to the wait: it admits b and, unless b was refused
// whole, prepares it into dst and starts writing it. b, and whatever its
// records view (a decoder's buffers), may be reused once Begin returns,
// before the batch is durable: a handler gives them back for the next
// request while it waits. started says whether dst.Wait is to be called
// (false: refused whole, or err from the sink's Prepare).
func (f *Flow) Begin(ctx context.Context, dst *Prepared, in Input, b *record.Batch) (res Result, started bool, err error) {
	res = f.Admit(in, b)
	if in.Whole && res.Refused > 0 {
		return res, false, nil
	}
	if err := f.PrepareInto(dst, in, b); err != nil {
		return res, false, err
	}
	dst.Write(ctx)
	return res, true, nil
}
