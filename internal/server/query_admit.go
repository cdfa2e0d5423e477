package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Admission bounds what queries may ask of the server before any of
// their work starts: the size of a query's text, the queries and tails
// running at once (each tenant's and everyone's). Zero or less means no
// limit.
type Admission struct {
	// MaxQuerySize bounds, in bytes, the text of a query (the query,
	// match[] and match parameters), checked before it is lexed.
	MaxQuerySize int
	// MaxQueries and MaxTenantQueries bound the queries served at once
	// (every query endpoint counts, metadata included); one over waits up
	// to QueueWait for a slot, then gets 429 with Retry-After. At most
	// MaxQueued wait at once (0: four times MaxQueries); more get 429 at
	// once. Queries waiting hold a goroutine and their request, nothing
	// of the store.
	MaxQueries, MaxTenantQueries int
	QueueWait                    time.Duration
	MaxQueued                    int
	// MaxTails and MaxTenantTails bound the tail WebSockets open at once;
	// one over gets 429 before the upgrade.
	MaxTails, MaxTenantTails int
}

// DefaultAdmission returns the admission limits for a machine of
// GOMAXPROCS cores: four queries per core, half of them for one tenant,
// so one tenant cannot take every slot; Loki's 10 tails per tenant.
func DefaultAdmission() Admission {
	n := 4 * runtime.GOMAXPROCS(0)
	return Admission{
		MaxQuerySize:     128 << 10,
		MaxQueries:       n,
		MaxTenantQueries: max(n/2, 1),
		QueueWait:        5 * time.Second,
		MaxTails:         100,
		MaxTenantTails:   10,
	}
}

// gate counts what runs at once, in all and per tenant.
//
// Concurrency: safe for concurrent use.
type gate struct {
	max, maxTenant int
	// what ("queries", "tails") and the flags of the limits, for messages.
	what, flag, tenantFlag string
	total                  int
	tenants                map[string]int
	queued                 int
	mu                     sync.Mutex
	// freed is closed and replaced when a slot frees, waking waiters.
	freed chan struct{}
	// refused counts refusals by limit ("tenant", "total").
	refused *prometheus.CounterVec
}

func newGate(what, flag, tenantFlag string, max, maxTenant int) *gate {
	return &gate{what: what, flag: flag, tenantFlag: tenantFlag, max: max, maxTenant: maxTenant, tenants: map[string]int{}, freed: make(chan struct{}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_" + what + "_refused_total",
			Help: "Requests refused with 429 by the limit of concurrent " + what + ": per tenant or in total."}, []string{"limit"})}
}

// register registers the gate's metrics: refusals and the count running.
func (g *gate) register(reg *prometheus.Registry) {
	reg.MustRegister(g.refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_" + g.what + "_running",
		Help: "Concurrent " + g.what + " being served."}, func() float64 { return float64(g.running()) }))
}

// gateError is a refusal: its message names the limit.
type gateError struct{ limit, msg string }

func (e *gateError) Error() string { return e.msg }

// tryLocked takes a slot for tenant, or returns why it cannot.
func (g *gate) tryLocked(tenant string) error {
	if g.maxTenant > 0 && g.tenants[tenant] >= g.maxTenant {
		return &gateError{limit: "tenant", msg: fmt.Sprintf("too many concurrent %s for tenant %s: the limit is %d per tenant (%s); retry later", g.what, tenant, g.maxTenant, g.tenantFlag)}
	}
	if g.max > 0 && g.total >= g.max {
		return &gateError{limit: "total", msg: fmt.Sprintf("too many concurrent %s: the limit is %d in all (%s); retry later", g.what, g.max, g.flag)}
	}
	g.total++
	g.tenants[tenant]++
	return nil
}

// enter takes a slot for tenant, waiting up to wait (while at most
// maxQueued others wait) for one to free. It returns the release
// function, or a *gateError, or ctx's error.
func (g *gate) enter(ctx context.Context, tenant string, wait time.Duration, maxQueued int) (func(), error) {
	g.mu.Lock()
	err := g.tryLocked(tenant)
	if err == nil {
		g.mu.Unlock()
		return func() { g.leave(tenant) }, nil
	}
	if wait <= 0 || g.queued >= maxQueued {
		g.mu.Unlock()
		g.refuse(err)
		return nil, err
	}
	g.queued++
	defer func() {
		g.mu.Lock()
		g.queued--
		g.mu.Unlock()
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		freed := g.freed
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			g.refuse(err)
			return nil, err
		case <-freed:
		}
		g.mu.Lock()
		if err = g.tryLocked(tenant); err == nil {
			g.mu.Unlock()
			return func() { g.leave(tenant) }, nil
		}
	}
}

func (g *gate) refuse(err error) {
	if ge, ok := err.(*gateError); ok {
		g.refused.WithLabelValues(ge.limit).Inc()
	}
}

func (g *gate) leave(tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if g.tenants[tenant]--; g.tenants[tenant] <= 0 {
		delete(g.tenants, tenant)
	}
	close(g.freed)
	g.freed = make(chan struct{})
}

// running returns the slots taken.
func (g *gate) running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// admitQuery checks a query request's text size and takes a query slot;
// it answers the request itself (400, 429, 499) and returns false when
// it may not run.
func (s *Server) admitQuery(w http.ResponseWriter, r *http.Request, q *queryRequest) (func(), bool) {
	if err := s.checkQuerySize(q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	a := s.cfg.Admission
	queued := a.MaxQueued
	if queued == 0 {
		queued = 4 * max(a.MaxQueries, a.MaxTenantQueries, 1)
	}
	release, err := s.queries.enter(r.Context(), q.tenant, a.QueueWait, queued)
	if err != nil {
		refuseGate(w, r, err)
		return nil, false
	}
	return release, true
}

// refuseGate answers a refusal of a gate: 429 with Retry-After, or 499
// when the client left while waiting.
func refuseGate(w http.ResponseWriter, r *http.Request, err error) {
	var ge *gateError
	if !errors.As(err, &ge) {
		http.Error(w, "client closed the request", 499)
		return
	}
	retryAfter(w, 1)
	http.Error(w, ge.msg, http.StatusTooManyRequests)
}

// checkQuerySize refuses a query whose text is over MaxQuerySize, before
// anything lexes it.
func (s *Server) checkQuerySize(q *queryRequest) error {
	max := s.cfg.Admission.MaxQuerySize
	if max <= 0 {
		return nil
	}
	for _, name := range []string{"query", "match[]", "match"} {
		for _, v := range q.r.Form[name] {
			if len(v) > max {
				return fmt.Errorf("the query is too long: %d bytes, more than the limit of %d (--max-query-size)", len(v), max)
			}
		}
	}
	return nil
}
