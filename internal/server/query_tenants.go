package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/query"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

// Multi-tenant queries: X-Scope-OrgID "a|b" reads tenants a and b at once,
// as Loki's multi-tenant querier, each stream labelled __tenant_id__ (see
// package query). The credential must be allowed every tenant named, else
// 403: data of one tenant is never visible to a credential that may not
// read it. Pushes stay one tenant each (tenantOf refuses "|").

// queryTenantsOf returns the tenants a query names: X-Scope-OrgID,
// URL-decoded as tenantOf does, split on "|", each checked, sorted and
// without repeats (as Loki's). One tenant, or none (the default), is an
// ordinary query.
func queryTenantsOf(r *http.Request) ([]string, error) {
	h := r.Header.Get("X-Scope-OrgID")
	if !strings.Contains(h, "|") && !strings.Contains(strings.ToLower(h), "%7c") {
		t, err := tenantOf(r)
		return []string{t}, err
	}
	for range 8 {
		u, err := url.PathUnescape(h)
		if err != nil {
			return nil, fmt.Errorf("X-Scope-OrgID: %v", err)
		}
		if u == h {
			break
		}
		h = u
	}
	var out []string
	for _, t := range strings.Split(h, "|") {
		if err := store.CheckTenant(t); err != nil {
			return nil, fmt.Errorf("X-Scope-OrgID: tenant %d of %q: %v", len(out)+1, h, err)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// authorizeAll checks a request against every tenant it names: 0, or
// 401 without a known credential, 403 when one tenant is not allowed.
func (s *Server) authorizeAll(r *http.Request, tenants []string) int {
	for _, t := range tenants {
		if code := s.authorize(r, t); code != 0 {
			return code
		}
	}
	return 0
}

// multi reports whether the request reads several tenants.
func (q *queryRequest) multi() bool { return len(q.tenants) > 1 }

// tenantStreams returns each tenant's streams with rows in [from, to],
// labelled with __tenant_id__ in a multi-tenant query.
func (s *Server) tenantStreams(q *queryRequest, sn *store.Snapshot, from, to int64) []record.Labels {
	var out []record.Labels
	for _, t := range q.tenants {
		for _, st := range sn.Streams(t, from, to) {
			ls := st.Labels
			if q.multi() {
				ls = query.WithTenant(ls, t)
			}
			out = append(out, ls)
		}
	}
	return out
}
