package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/query"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

// The Loki query API: the paths, parameters and JSON shapes of Loki's,
// so that Grafana's Loki data source and logcli work unchanged.

const defaultSince = time.Hour

func (s *Server) queryRoutes() {
	m := s.mux
	for _, p := range []string{"/loki/api/v1/query_range", "/loki/api/v1/query", "/loki/api/v1/labels",
		"/loki/api/v1/label/{name}/values", "/loki/api/v1/series", "/loki/api/v1/index/stats"} {
		h := s.queryHandler(p)
		m.HandleFunc("GET "+p, h)
		m.HandleFunc("POST "+p, h)
	}
	m.Handle("GET /loki/api/v1/status/buildinfo", s.anyCredential(http.HandlerFunc(s.handleBuildInfo)))
	m.HandleFunc("GET /loki/api/v1/tail", s.handleTail)
	s.drilldownRoutes()
}

// queryHandler wraps the handler of a query path with tenancy, auth and
// error answers.
func (s *Server) queryHandler(path string) http.HandlerFunc {
	var h func(ctx context.Context, r *queryRequest) (any, error)
	switch path {
	case "/loki/api/v1/query_range":
		h = s.queryRange
	case "/loki/api/v1/query":
		h = s.queryInstant
	case "/loki/api/v1/labels":
		h = s.labelNames
	case "/loki/api/v1/label/{name}/values":
		h = s.labelValues
	case "/loki/api/v1/series":
		h = s.series
	case "/loki/api/v1/index/stats":
		h = s.indexStats
	}
	return s.serveQuery(h)
}

// queryRequest reads a query request's tenant and parameters, checking
// its credentials; it answers the request itself and returns false when
// they are wrong.
func (s *Server) queryRequest(w http.ResponseWriter, r *http.Request) (*queryRequest, bool) {
	tenants, err := queryTenantsOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	if code := s.authorizeAll(r, tenants); code != 0 {
		http.Error(w, http.StatusText(code), code)
		return nil, false
	}
	tenant := strings.Join(tenants, "|")
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return &queryRequest{r: r, tenant: tenant, tenants: tenants, now: time.Now(), maxLines: s.cfg.Query.MaxLines}, true
}

// queryError answers an error as Loki does: plain text, 400 for a bad
// query or a limit, 499 when the client went away, 500 otherwise.
func (s *Server) queryError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *logql.ParseError
	code := http.StatusInternalServerError
	switch {
	case errors.As(err, &pe), errors.Is(err, query.ErrBadRequest), errors.Is(err, errBadParam):
		code = http.StatusBadRequest
	case errors.Is(err, query.ErrLimit):
		code = http.StatusBadRequest
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		code = 499
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	if code >= 500 {
		s.log.Error("query", "query", r.Form.Get("query"), "err", err)
	}
	msg := err.Error()
	for _, prefix := range []string{query.ErrBadRequest.Error() + ": ", query.ErrLimit.Error() + ": ", errBadParam.Error() + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	http.Error(w, msg, code)
}

var errBadParam = errors.New("bad parameter")

// queryRequest is a parsed query request.
type queryRequest struct {
	r      *http.Request
	tenant string
	now    time.Time
	// maxLines is the largest limit a log query may ask (0: any).
	maxLines int

	// tenants are the tenants read: one, or in a multi-tenant query
	// (query_tenants.go) each, tenant being their names joined by |.
	tenants []string
}

func (q *queryRequest) get(name string) string { return q.r.Form.Get(name) }

// timeParam reads a time in any of Loki's formats: Unix seconds with a
// fraction, Unix seconds (10 digits or fewer) or nanoseconds as an
// integer, or RFC 3339.
func (q *queryRequest) timeParam(name string, def time.Time) (time.Time, error) {
	v := q.get(name)
	if v == "" {
		return def, nil
	}
	return parseTime(name, v)
}

func parseTime(name, v string) (time.Time, error) {
	if strings.Contains(v, ".") {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			s, frac := math.Modf(f)
			return time.Unix(int64(s), int64(math.Round(frac*1e9))), nil
		}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if len(strings.TrimPrefix(v, "-")) <= 10 {
			return time.Unix(n, 0), nil
		}
		return time.Unix(0, n), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: cannot parse %q to a valid timestamp (%s)", errBadParam, v, name)
	}
	return t, nil
}

// durationParam reads a duration: Prometheus-style (5m, 1h30m, 2d) or
// seconds as a number.
func (q *queryRequest) durationParam(name string) (time.Duration, error) {
	v := q.get(name)
	if v == "" {
		return 0, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := logql.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%w: cannot parse %q to a valid duration (%s)", errBadParam, v, name)
	}
	return d, nil
}

// bounds reads start, end and since: end defaults to now, start to
// since (an hour) before end.
func (q *queryRequest) bounds() (start, end time.Time, err error) {
	if end, err = q.timeParam("end", q.now); err != nil {
		return
	}
	since := defaultSince
	if q.get("since") != "" {
		if since, err = q.durationParam("since"); err != nil {
			return
		}
	}
	if start, err = q.timeParam("start", end.Add(-since)); err != nil {
		return
	}
	if end.Before(start) {
		err = fmt.Errorf("%w: end timestamp must not be before or equal to start time", errBadParam)
	}
	return
}

func (q *queryRequest) params() (query.Params, error) {
	p := query.Params{Tenant: q.tenant, Query: q.get("query"), Limit: 100}
	if q.multi() {
		p.Tenants = q.tenants
	}
	if p.Query == "" {
		return p, fmt.Errorf("%w: query must not be empty", errBadParam)
	}
	if v := q.get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return p, fmt.Errorf("%w: limit must be a positive value", errBadParam)
		}
		// As Loki: a limit over the maximum is refused, not cut.
		if q.maxLines > 0 && n > q.maxLines {
			return p, fmt.Errorf("%w: max entries limit per query exceeded, limit > max_entries_limit_per_query (%d > %d); see --max-query-lines", errBadParam, n, q.maxLines)
		}
		p.Limit = n
	}
	// Loki's encoding flags, a comma-separated list; Grafana sends
	// categorize-labels to get structured metadata apart.
	for _, f := range strings.Split(q.r.Header.Get("X-Loki-Response-Encoding-Flags"), ",") {
		if strings.TrimSpace(f) == categorizeLabels {
			p.Categorize = true
		}
	}
	switch strings.ToLower(q.get("direction")) {
	case "", "backward":
		p.Direction = query.Backward
	case "forward":
		p.Direction = query.Forward
	default:
		return p, fmt.Errorf("%w: invalid direction %q", errBadParam, q.get("direction"))
	}
	return p, nil
}

func (s *Server) queryRange(ctx context.Context, q *queryRequest) (any, error) {
	p, err := q.params()
	if err != nil {
		return nil, err
	}
	start, end, err := q.bounds()
	if err != nil {
		return nil, err
	}
	p.Start, p.End = start.UnixNano(), end.UnixNano()
	if p.Step, err = q.durationParam("step"); err != nil {
		return nil, err
	}
	if p.Step == 0 {
		// Loki's default: about 250 points over the range, at least 1 s.
		p.Step = max(time.Second, time.Duration(math.Ceil(end.Sub(start).Seconds()/250))*time.Second)
	}
	if p.Interval, err = q.durationParam("interval"); err != nil {
		return nil, err
	}
	return s.runQuery(ctx, p)
}

func (s *Server) queryInstant(ctx context.Context, q *queryRequest) (any, error) {
	p, err := q.params()
	if err != nil {
		return nil, err
	}
	t, err := q.timeParam("time", q.now)
	if err != nil {
		return nil, err
	}
	p.Start, p.End, p.Instant = t.UnixNano(), t.UnixNano(), true
	return s.runQuery(ctx, p)
}

func (s *Server) runQuery(ctx context.Context, p query.Params) (any, error) {
	sn := s.st.Snapshot()
	defer sn.Release()
	res, err := s.engine.Exec(ctx, sn, p)
	if err != nil {
		return nil, err
	}
	return appendQueryResult(nil, res, p.Categorize), nil
}

// matchers reads the selectors of a labels/series request: match[] (or
// match, or query), any of which may select.
func (q *queryRequest) selectors(names ...string) ([]logql.Selector, error) {
	var out []logql.Selector
	for _, n := range names {
		for _, v := range q.r.Form[n] {
			sel, err := logql.ParseSelector(v)
			if err != nil {
				return nil, err
			}
			out = append(out, sel)
		}
	}
	return out, nil
}

// matchingStreams returns the streams in the request's bounds that any
// selector matches (every stream without selectors).
func (s *Server) matchingStreams(q *queryRequest, names ...string) ([]record.Labels, error) {
	sels, err := q.selectors(names...)
	if err != nil {
		return nil, err
	}
	start, end, err := q.bounds()
	if err != nil {
		return nil, err
	}
	sn := s.st.Snapshot()
	defer sn.Release()
	var out []record.Labels
	for _, ls := range s.tenantStreams(q, sn, start.UnixNano(), end.UnixNano()) {
		if len(sels) == 0 || slices.ContainsFunc(sels, func(sel logql.Selector) bool { return sel.Matches(ls.Value) }) {
			out = append(out, ls)
		}
	}
	return out, nil
}

func (s *Server) labelNames(ctx context.Context, q *queryRequest) (any, error) {
	streams, err := s.matchingStreams(q, "query")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	if q.multi() { // as Loki: always a label name of a multi-tenant query
		seen[query.TenantLabel] = true
	}
	for _, ls := range streams {
		for _, l := range ls {
			seen[l.Name] = true
		}
	}
	return appendStringsData(nil, seen), nil
}

func (s *Server) labelValues(ctx context.Context, q *queryRequest) (any, error) {
	name := q.r.PathValue("name")
	if q.multi() && name == query.TenantLabel { // as Loki: the tenants asked
		seen := map[string]bool{}
		for _, t := range q.tenants {
			seen[t] = true
		}
		return appendStringsData(nil, seen), nil
	}
	streams, err := s.matchingStreams(q, "query")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, ls := range streams {
		if v, ok := ls.Get(name); ok {
			seen[v] = true
		}
	}
	return appendStringsData(nil, seen), nil
}

func (s *Server) series(ctx context.Context, q *queryRequest) (any, error) {
	streams, err := s.matchingStreams(q, "match[]", "match")
	if err != nil {
		return nil, err
	}
	b := []byte(`{"status":"success","data":[`)
	for i, ls := range streams {
		if i > 0 {
			b = append(b, ',')
		}
		b = ls.AppendJSON(b)
	}
	return append(b, "]}"...), nil
}

// indexStats answers /index/stats: the streams selected, their blocks
// (Loki's chunks), rows (entries) and line bytes in the range.
func (s *Server) indexStats(ctx context.Context, q *queryRequest) (any, error) {
	sel, err := logql.ParseSelector(q.get("query"))
	if err != nil {
		return nil, err
	}
	start, end, err := q.bounds()
	if err != nil {
		return nil, err
	}
	sn := s.st.Snapshot()
	defer sn.Release()
	var st store.StreamStats
	for _, t := range q.tenants { // summed over the tenants of a multi-tenant query
		one, err := sn.StreamStats(ctx, t, start.UnixNano(), end.UnixNano(), func(ls record.Labels) bool {
			if q.multi() {
				ls = query.WithTenant(ls, t)
			}
			return sel.Matches(ls.Value)
		})
		if err != nil {
			return nil, err
		}
		st.Streams, st.Blocks, st.Rows, st.Bytes = st.Streams+one.Streams, st.Blocks+one.Blocks, st.Rows+one.Rows, st.Bytes+one.Bytes
	}
	return fmt.Appendf(nil, `{"streams":%d,"chunks":%d,"entries":%d,"bytes":%d}`, st.Streams, st.Blocks, st.Rows, st.Bytes), nil
}

// lokiVersion is the Loki version /loki/api/v1/status/buildinfo reports
// in "version", as the Elasticsearch API reports esVersion: the Loki whose
// API sluice answers as (structured metadata, approx_topk, the Drilldown
// endpoints), so a client that turns features on by Loki's version turns
// on these. Grafana itself does not read it (its alerting skips Loki's
// buildinfo; Logs Drilldown gates on Grafana's own version and reads
// /drilldown-limits). sluice's own version is in "sluiceVersion".
const lokiVersion = "3.4.0"

// handleBuildInfo answers Loki's buildinfo shape plus sluice's version.
func (s *Server) handleBuildInfo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	b := []byte(`{"version":`)
	b = strconv.AppendQuote(b, lokiVersion)
	b = append(b, `,"revision":`...)
	b = strconv.AppendQuote(b, s.cfg.Revision)
	b = append(b, `,"branch":"","buildUser":"","buildDate":"","goVersion":`...)
	b = strconv.AppendQuote(b, goVersion())
	b = append(b, `,"sluiceVersion":`...)
	b = strconv.AppendQuote(b, s.cfg.Version)
	b = append(b, '}')
	_, _ = w.Write(b)
}
