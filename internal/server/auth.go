package server

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Credential lets a client in, to the tenants it names ("*": any).
// Either Token (Authorization: Bearer TOKEN) or User and Password (basic
// auth) is set.
type Credential struct {
	Token    string   `yaml:"token"`
	User     string   `yaml:"user"`
	Password string   `yaml:"password"`
	Tenants  []string `yaml:"tenants"`
	// Admin lets the credential read the operational endpoints (/metrics,
	// /debug/pprof/), which are closed to the others once auth is on.
	Admin bool `yaml:"admin"`
}

func (c *Credential) allows(tenant string) bool {
	return slices.Contains(c.Tenants, "*") || slices.Contains(c.Tenants, tenant)
}

// authorize checks a request against the configured credentials: with
// none configured every request is let in; otherwise it must present one
// that allows its tenant. It returns 0 or the status to answer.
func (s *Server) authorize(r *http.Request, tenant string) int {
	if len(s.cfg.Auth) == 0 {
		return 0
	}
	switch c := s.credential(r); {
	case c == nil:
		return http.StatusUnauthorized
	case !c.allows(tenant):
		return http.StatusForbidden
	}
	return 0
}

// credential returns the configured credential the request presents, or
// nil. Every candidate is compared in constant time.
func (s *Server) credential(r *http.Request) *Credential {
	var found *Credential
	if tok, ok := bearer(r); ok {
		for i := range s.cfg.Auth {
			if c := &s.cfg.Auth[i]; c.Token != "" && subtle.ConstantTimeCompare([]byte(c.Token), []byte(tok)) == 1 {
				found = c
			}
		}
	} else if user, pass, ok := r.BasicAuth(); ok {
		for i := range s.cfg.Auth {
			c := &s.cfg.Auth[i]
			if c.User != "" && subtle.ConstantTimeCompare([]byte(c.User), []byte(user)) == 1 &&
				subtle.ConstantTimeCompare([]byte(c.Password), []byte(pass)) == 1 {
				found = c
			}
		}
	}
	return found
}

// guarded serves h only to requests whose credential passes ok, once
// auth is configured: 401 without a known credential, 403 with one that
// does not pass.
func (s *Server) guarded(h http.Handler, ok func(*Credential) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.cfg.Auth) > 0 {
			switch c := s.credential(r); {
			case c == nil:
				w.Header().Set("WWW-Authenticate", `Basic realm="sluice"`)
				http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
				return
			case !ok(c):
				http.Error(w, "this endpoint needs an admin credential (admin: true)", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// admin serves h only to admin credentials once auth is configured.
func (s *Server) admin(h http.Handler) http.Handler {
	return s.guarded(h, func(c *Credential) bool { return c.Admin })
}

// anyCredential serves h to any known credential once auth is
// configured.
func (s *Server) anyCredential(h http.Handler) http.Handler {
	return s.guarded(h, func(*Credential) bool { return true })
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) > len(p) && (h[:len(p)] == p || h[:len(p)] == "bearer ") {
		return h[len(p):], true
	}
	return "", false
}

// RateLimit bounds a tenant's ingest in lines per second; a request
// arriving while the tenant is over its rate gets 429 with Retry-After.
// Zero means no limit.
type RateLimit struct {
	LinesPerSecond float64 `yaml:"lines_per_second"`
	Burst          float64 `yaml:"burst"`
}

// bucket is a token bucket that may go into debt: a request is admitted
// while the bucket is not empty, and its lines are taken afterwards, so
// one large request is not refused for being larger than the burst.
type bucket struct {
	tokens float64
	last   time.Time
}

type limiter struct {
	mu      sync.Mutex
	rate    RateLimit
	buckets map[string]*bucket
}

func (l *limiter) refill(tenant string, now time.Time) *bucket {
	b := l.buckets[tenant]
	if b == nil {
		b = &bucket{tokens: l.rate.Burst, last: now}
		l.buckets[tenant] = b
	}
	b.tokens = min(l.rate.Burst, b.tokens+now.Sub(b.last).Seconds()*l.rate.LinesPerSecond)
	b.last = now
	return b
}

// admit reports 0 if tenant may send now, or the seconds to wait.
func (l *limiter) admit(tenant string) int {
	if l.rate.LinesPerSecond <= 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(tenant, time.Now())
	if b.tokens > 0 {
		return 0
	}
	return int(-b.tokens/l.rate.LinesPerSecond) + 1
}

// take charges tenant for n lines.
func (l *limiter) take(tenant string, n int) {
	if l.rate.LinesPerSecond <= 0 || n == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(tenant, time.Now()).tokens -= float64(n)
}

func retryAfter(w http.ResponseWriter, seconds int) {
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
}
