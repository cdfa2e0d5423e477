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
	switch {
	case found == nil:
		return http.StatusUnauthorized
	case !found.allows(tenant):
		return http.StatusForbidden
	}
	return 0
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
