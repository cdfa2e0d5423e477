package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/wal"
)

// Manager runs the configured sinks: it tells the store which WAL segments
// they hold (Hold), refuses ingest for a blocked sink's tenants (Gate), and
// reports their state (Status, Handler).
//
// Concurrency: safe for concurrent use; Run is called once.
type Manager struct {
	sinks []*Sink
	log   *slog.Logger
	m     *metrics
	// Interval is how often backlogs are measured against the budgets.
	Interval time.Duration
	wal      atomic.Pointer[wal.Log] // set by Start
}

// NewManager returns a manager of sinks, registering the per-sink metrics
// in reg (nil: none registered).
func NewManager(sinks []*Sink, reg prometheus.Registerer, log *slog.Logger) *Manager {
	m := &Manager{sinks: sinks, log: log, m: newMetrics(reg), Interval: 500 * time.Millisecond}
	for _, s := range sinks {
		s.m = m.m.of(s.cfg.Name)
	}
	return m
}

// Sinks returns the managed sinks.
func (m *Manager) Sinks() []*Sink { return m.sinks }

// BatchMemory returns the bytes the sinks' batches may hold together:
// Concurrency+1 batches of BatchBytes per sink (those being delivered and
// the one being filled; two with the default Concurrency 1), each of
// which may pass it by one WAL record. What a sink
// holds besides (its WAL cursor's buffer, as large as the largest WAL
// record; the destination's buffers) is not counted. serve adds it to
// the default soft memory limit.
func (m *Manager) BatchMemory() int64 {
	var n int64
	for _, s := range m.sinks {
		n += int64(s.cfg.Concurrency+1) * int64(s.cfg.BatchBytes)
	}
	return n
}

// Hold returns the lowest WAL segment a sink may still read (the store's
// WALHold): segments from it on must be kept.
func (m *Manager) Hold() uint64 {
	h := ^uint64(0)
	for _, s := range m.sinks {
		h = min(h, s.Hold())
	}
	return h
}

// Start fixes where sinks without a position begin: at what l has
// acknowledged so far, so that every line acknowledged from now on is
// theirs (and held for them). Call it before ingest starts; Run calls it
// too. Idempotent.
func (m *Manager) Start(l *wal.Log) {
	m.wal.Store(l)
	end := l.Committed()
	for _, s := range m.sinks {
		s.mu.Lock()
		isNew := !s.hasDone && !s.initial
		if isNew {
			s.done, s.initial = end, true
			s.hold.Store(end.Segment)
		}
		s.mu.Unlock()
		// Durably now, not once the destination first opens: a crash
		// before that would make the sink new again at the next start,
		// and it would skip what ingest acknowledged in between.
		if isNew {
			if err := s.savePosition(); err != nil {
				m.log.Error("sink: save the starting position; a crash before the destination opens loses what ingest takes until then",
					"sink", s.cfg.Name, "err", err)
			}
		}
	}
}

// Run runs every sink on l, and the budget monitor, until ctx ends, and
// returns the first sink's fault (the other sinks keep running).
func (m *Manager) Run(ctx context.Context, l *wal.Log) error {
	m.Start(l)
	var wg sync.WaitGroup
	errs := make(chan error, len(m.sinks))
	for _, s := range m.sinks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Run(ctx, l); err != nil {
				m.log.Error("sink stopped", "sink", s.cfg.Name, "err", err)
				s.setErr(err)
				errs <- err
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(m.Interval)
		defer t.Stop()
		for {
			m.measure(l)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	wg.Wait()
	close(errs)
	return <-errs
}

// measure updates every sink's backlog and whether it is over its budget.
func (m *Manager) measure(l *wal.Log) {
	for _, s := range m.sinks {
		n, err := l.BytesSince(s.donePos())
		if err != nil {
			m.log.Warn("sink: measure backlog", "sink", s.cfg.Name, "err", err)
			continue
		}
		s.backlog.Store(n)
		over := n > s.cfg.Budget
		if was := s.over.Swap(over); was != over {
			m.log.Warn("sink: budget", "sink", s.cfg.Name, "over", over, "backlog", n, "budget", s.cfg.Budget, "policy", s.cfg.Policy.String())
		}
		s.m.queue.Set(float64(n))
		age := 0.0
		if t := s.oldestUnsent(); t != 0 {
			age = time.Since(time.Unix(0, t)).Seconds()
		}
		s.m.age.Set(age)
	}
}

// ErrBlocked is matched by the error Gate returns while a sink with the
// block policy is over its budget.
var ErrBlocked = fmt.Errorf("sink over its budget")

// blocked returns the error for b, if a blocking sink that would take
// some of it is over its budget: one that takes b's tenant, or, for a
// sink that takes routed records, one to which b routes a kept record.
func (m *Manager) blocked(b *record.Batch) error {
	for _, s := range m.sinks {
		if s.cfg.Policy == Block && s.over.Load() && s.filt.tenantMatches(b.Tenant) && (s.filt.route == "" || routesTo(b, s.filt.route)) {
			return fmt.Errorf("%w: sink %q holds %d bytes of WAL, its budget is %d (policy block); retry later",
				ErrBlocked, s.cfg.Name, s.backlog.Load(), s.cfg.Budget)
		}
	}
	return nil
}

// routesTo reports whether a kept record of b is routed to sink.
func routesTo(b *record.Batch, sink string) bool {
	var want [record.MaxRoutes/64 + 1]uint64 // bit k: b.Routes[k-1] names sink
	any := false
	for k, names := range b.Routes {
		if slices.Contains(names, sink) {
			want[(k+1)/64] |= 1 << ((k + 1) % 64)
			any = true
		}
	}
	if !any {
		return false
	}
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		if k := b.Records[i].Route; k != 0 && want[k/64]&(1<<(k%64)) != 0 {
			return true
		}
	}
	return false
}

// Gate wraps the flow's sink: while a blocking sink is over its budget,
// batches of its tenants (or, for a sink that takes routed records, the
// batches that route a record to it) are refused before anything is
// written, with an error naming the sink (ingest answers 503 with
// Retry-After).
func (m *Manager) Gate(next flow.Sink) flow.Sink {
	if len(m.sinks) == 0 {
		return next
	}
	return gate{m: m, next: next}
}

type gate struct {
	m    *Manager
	next flow.Sink
}

func (g gate) Prepare(b *record.Batch) (flow.Pending, error) {
	if err := g.m.blocked(b); err != nil {
		return nil, err
	}
	return g.next.Prepare(b)
}

// Status is what `GET /api/v1/sinks` and `sluice sink status` show of a
// sink.
type Status struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Tenant   string `json:"tenant"`
	Selector string `json:"selector,omitempty"`
	From     string `json:"from,omitempty"`
	Position string `json:"position"`
	// Backlog is the WAL bytes after the position: the queue.
	Backlog int64  `json:"backlog_bytes"`
	Budget  int64  `json:"budget_bytes"`
	Policy  string `json:"policy"`
	Blocked bool   `json:"over_budget"`
	// OldestAge is the age of the oldest record read and not yet
	// delivered, in seconds (0: none waiting).
	OldestAge    float64 `json:"oldest_unsent_age_seconds"`
	Records      float64 `json:"records_sent"`
	Bytes        float64 `json:"bytes_sent"`
	Batches      float64 `json:"batches"`
	Retries      float64 `json:"retries"`
	DeadLettered float64 `json:"dead_lettered"`
	Dropped      float64 `json:"dropped"`
	// Paused is the seconds the sink paused for ingest (Config.Pace).
	Paused    float64 `json:"paused_seconds,omitempty"`
	LastError string  `json:"last_error,omitempty"`
}

// Status returns every sink's state.
func (m *Manager) Status() []Status {
	out := make([]Status, 0, len(m.sinks))
	for _, s := range m.sinks {
		s.mu.Lock()
		done, lastErr := s.done, s.lastErr
		s.mu.Unlock()
		backlog := s.backlog.Load()
		if l := m.wal.Load(); l != nil {
			// Measured now, so that a reader sees the state after what
			// it just did, not the monitor's last look.
			if n, err := l.BytesSince(done); err == nil {
				backlog = n
			}
		}
		tenant := s.cfg.Tenant
		if tenant == "" {
			tenant = "*"
		}
		age := 0.0
		if t := s.oldestUnsent(); t != 0 {
			age = time.Since(time.Unix(0, t)).Seconds()
		}
		out = append(out, Status{Name: s.cfg.Name, Type: s.cfg.Type, Tenant: tenant, Selector: s.cfg.Selector, From: s.cfg.From,
			Position: done.String(), Backlog: backlog, Budget: s.cfg.Budget, Policy: s.cfg.Policy.String(),
			Blocked: s.over.Load(), OldestAge: age, Records: value(s.m.records), Bytes: value(s.m.bytes),
			Batches: value(s.m.batches), Retries: value(s.m.retries), DeadLettered: value(s.m.deadLettered),
			Dropped: value(s.m.dropped), Paused: value(s.m.paused), LastError: lastErr})
	}
	return out
}

// Handler serves Status as JSON: {"sinks": [...]}.
func (m *Manager) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Sinks []Status `json:"sinks"`
		}{m.Status()})
	})
}

// FormatStatus renders statuses as the table `sluice sink status` prints.
func FormatStatus(st []Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %-8s %-10s %-24s %12s %12s %-11s %8s %10s %8s %8s %8s %8s\n",
		"NAME", "TYPE", "TENANT", "POSITION", "BACKLOG", "BUDGET", "POLICY", "AGE_S", "SENT", "BATCHES", "RETRIES", "DEAD", "DROPPED")
	for _, s := range st {
		policy := s.Policy
		if s.Blocked {
			policy += "!"
		}
		fmt.Fprintf(&b, "%-16s %-8s %-10s %-24s %12d %12d %-11s %8.1f %10.0f %8.0f %8.0f %8.0f %8.0f\n",
			s.Name, s.Type, s.Tenant, s.Position, s.Backlog, s.Budget, policy, s.OldestAge, s.Records, s.Batches,
			s.Retries, s.DeadLettered, s.Dropped)
		if s.Paused > 0 {
			fmt.Fprintf(&b, "  paused for ingest (pace): %.1f s\n", s.Paused)
		}
		if s.LastError != "" {
			fmt.Fprintf(&b, "  last error: %s\n", s.LastError)
		}
	}
	return b.String()
}
