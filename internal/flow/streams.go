package flow

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sluicelog/sluice/internal/record"
)

// StreamIdle is how long a stream stays active after its last line: as
// long as Loki keeps an idle stream's chunk in an ingester (30 minutes by
// default), so that a tenant's limit means what it means there.
const StreamIdle = 30 * time.Minute

// StreamLimit bounds each tenant's active streams, as Loki's
// max_global_streams_per_user does: every stream costs memory in the
// head and an entry in every index, so one tenant sending a label with a
// new value per line (a request id, say) must not take the server from
// the others. Lines of known streams always pass; a new stream passes
// while its tenant has fewer than max active ones. It is an Admission;
// its refusals have the reason stream_limit.
//
// Concurrency: safe for concurrent use (Now aside).
type StreamLimit struct {
	max int
	// Now is the limit's clock (time.Now unless set). Set it before the
	// limit is used.
	Now func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantStreams
	verdict sync.Pool // of map[uint32]bool, by stream id, for one batch
}

type tenantStreams struct {
	seen  map[uint64]int64 // a stream's label hash: the Unix second of its last line
	swept int64
}

// NewStreamLimit returns a limit of max active streams per tenant; 0 or
// less means no limit.
func NewStreamLimit(max int) *StreamLimit {
	return &StreamLimit{max: max, Now: time.Now, tenants: map[string]*tenantStreams{}}
}

// Max returns the limit.
func (l *StreamLimit) Max() int { return l.max }

// Admit is admit, for b's tenant, as the flow's Admission.
func (l *StreamLimit) Admit(b *record.Batch, whole bool, refused func(i int)) Refusal {
	rf := l.admit(b.Tenant, b, whole, refused)
	if rf.lines == 0 {
		return Refusal{}
	}
	return Refusal{Lines: rf.lines, Reason: "stream_limit", Message: rf.message(b.Tenant, l.max)}
}

// streamRefusal says what admit refused.
type streamRefusal struct {
	lines, streams int
}

// message explains a refusal to the client.
func (r streamRefusal) message(tenant string, max int) string {
	return fmt.Sprintf("tenant %s is at its limit of %d active streams (max_streams_per_tenant; a stream is active until it has had no line for %v): %d lines of %d new streams refused",
		tenant, max, StreamIdle, r.lines, r.streams)
}

// admit marks the streams of b's records as active for tenant. With
// whole set, either every record passes or, if any stream is new past the
// limit, none does and nothing is marked (for a request that is stored
// whole or refused whole, so that its retry stores no line twice).
// Otherwise the records of refused streams are removed from b.Records,
// and refused, if not nil, is called with the index each had. Records
// already dropped (record.Batch.Drop) take no stream and are not
// refused; when refused records are removed, they are removed too.
func (l *StreamLimit) admit(tenant string, b *record.Batch, whole bool, refused func(i int)) streamRefusal {
	if l == nil || l.max <= 0 || b.NumKept() == 0 {
		return streamRefusal{}
	}
	now := l.Now().Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tenants[tenant]
	if t == nil {
		t = &tenantStreams{seen: map[uint64]int64{}, swept: now}
		l.tenants[tenant] = t
	}
	if now-t.swept >= 60 {
		for h, last := range t.seen {
			if now-last > int64(StreamIdle/time.Second) {
				delete(t.seen, h)
			}
		}
		t.swept = now
	}
	verdict, _ := l.verdict.Get().(map[uint32]bool)
	if verdict == nil {
		verdict = map[uint32]bool{}
	}
	defer func() { clear(verdict); l.verdict.Put(verdict) }()
	var added []uint64 // new streams marked, to unmark if whole fails
	var r streamRefusal
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		id := b.Records[i].Stream
		ok, decided := verdict[id]
		if !decided {
			h := labelsHash(b.Streams.Get(id))
			_, known := t.seen[h]
			ok = known || len(t.seen) < l.max
			if ok {
				t.seen[h] = now
				if !known {
					added = append(added, h)
				}
			} else {
				r.streams++
			}
			verdict[id] = ok
		}
		if !ok {
			r.lines++
		}
	}
	if r.lines == 0 {
		return r
	}
	if whole {
		for _, h := range added {
			delete(t.seen, h)
		}
		r.lines = b.NumKept()
		return r
	}
	kept := b.Records[:0]
	for i, rec := range b.Records {
		if !b.Kept(i) {
			continue // dropped by an earlier stage: neither kept nor refused
		}
		if verdict[rec.Stream] {
			kept = append(kept, rec)
		} else if refused != nil {
			refused(i)
		}
	}
	b.Records = kept
	b.ClearSelection() // the dropped records are gone with the refused
	return r
}

// labelsHash identifies a label set: names and values with their lengths,
// so that no two sets run together.
func labelsHash(ls record.Labels) uint64 {
	d := xxhash.New()
	var n []byte
	for _, l := range ls {
		for _, s := range [2]string{l.Name, l.Value} {
			n = binary.AppendUvarint(n[:0], uint64(len(s)))
			d.Write(n)
			d.WriteString(s)
		}
	}
	return d.Sum64()
}
