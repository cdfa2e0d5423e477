package rules

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicelog/sluice/internal/stage"
)

// DefaultMaxSets bounds the label sets a rate_limit keeps a bucket for
// when the rule says nothing.
const DefaultMaxSets = 10000

// rateSpec is a rule's rate_limit.
type rateSpec struct {
	by                     []string // labels whose values pick the bucket
	lines, bytes           float64  // per second; 0: not limited
	burstLines, burstBytes float64
	maxSets                int
}

// limiter is a rule's rate limit: a token bucket of lines and one of
// bytes per label set, at most maxSets sets; the lines of sets past the
// bound share one overflow bucket and are counted as overflow.
//
// Concurrency: safe for concurrent use.
type limiter struct {
	spec rateSpec
	now  func() time.Time // time.Now; tests set a clock

	mu       sync.Mutex
	sets     map[string]*bucket
	spill    bucket
	overflow atomic.Uint64
}

type bucket struct {
	lines, bytes float64 // tokens
	last         time.Time
}

// limiter returns the rate limit of the rule named rule: the one already
// running under that name if its spec is the same, so that a reload does
// not refill every bucket.
func (m *Metrics) limiter(rule string, s *rateSpec) *limiter {
	fresh := &limiter{spec: *s, now: time.Now, sets: map[string]*bucket{}}
	if m == nil {
		return fresh
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.limiters[rule]; ok && old.spec.equal(s) {
		return old
	}
	m.limiters[rule] = fresh
	return fresh
}

func (s *rateSpec) equal(o *rateSpec) bool {
	if len(s.by) != len(o.by) {
		return false
	}
	for i := range s.by {
		if s.by[i] != o.by[i] {
			return false
		}
	}
	return s.lines == o.lines && s.bytes == o.bytes && s.burstLines == o.burstLines &&
		s.burstBytes == o.burstBytes && s.maxSets == o.maxSets
}

// allow takes a line of n bytes from its label set's buckets (the set
// named by lb's values of the spec's labels), and reports whether there
// were tokens for it. A line longer than the byte burst passes when the
// bucket is full, leaving it in debt.
func (l *limiter) allow(lb *stage.Labels, n int, key *[]byte) bool {
	k := (*key)[:0]
	for i, name := range l.spec.by {
		if i > 0 {
			k = append(k, 0xff)
		}
		k = append(k, lb.Get(name)...)
	}
	*key = k
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.sets[string(k)]
	if !ok {
		if len(l.sets) >= l.spec.maxSets {
			l.overflow.Add(1)
			b = &l.spill
			if b.last.IsZero() {
				*b = l.full(now)
			}
		} else {
			b = new(bucket)
			*b = l.full(now)
			l.sets[string(k)] = b
		}
	}
	s := &l.spec
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.lines = min(s.burstLines, b.lines+dt*s.lines)
		b.bytes = min(s.burstBytes, b.bytes+dt*s.bytes)
		b.last = now
	}
	if s.lines > 0 && b.lines < 1 {
		return false
	}
	if s.bytes > 0 && b.bytes < min(float64(n), s.burstBytes) {
		return false
	}
	b.lines--
	b.bytes -= float64(n)
	return true
}

// full returns a bucket with all its burst, at now.
func (l *limiter) full(now time.Time) bucket {
	return bucket{lines: l.spec.burstLines, bytes: l.spec.burstBytes, last: now}
}
