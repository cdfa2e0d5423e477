package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/query"
)

// The endpoints Grafana Logs Drilldown needs beyond the query API: log
// volumes, detected labels and fields, patterns, its limits and query
// formatting, with Loki's parameters and JSON shapes. Each is a query
// path: the same tenancy, credentials and admission as the rest.

// Defaults and bounds of the Drilldown endpoints, as Loki's.
const (
	defaultVolumeLimit   = 100  // loghttp: limit of /index/volume
	defaultLineLimit     = 100  // loghttp: line_limit of detected_fields
	defaultFieldLimit    = 1000 // loghttp: limit (field_limit) of detected_fields
	patternSampleLines   = 20000
	volumeAggregateLabel = "labels"
)

// drilldownRoutes registers the Drilldown paths (GET and POST, as Loki).
func (s *Server) drilldownRoutes() {
	for p, h := range map[string]func(context.Context, *queryRequest) (any, error){
		"/loki/api/v1/index/volume":                 s.volumeInstant,
		"/loki/api/v1/index/volume_range":           s.volumeRange,
		"/loki/api/v1/detected_labels":              s.detectedLabels,
		"/loki/api/v1/detected_fields":              s.detectedFields,
		"/loki/api/v1/detected_field/{name}/values": s.detectedFieldValues,
		"/loki/api/v1/patterns":                     s.patterns,
		"/loki/api/v1/drilldown-limits":             s.drilldownLimits,
		"/loki/api/v1/format_query":                 s.formatQuery,
	} {
		h := s.serveQuery(h)
		s.mux.HandleFunc("GET "+p, h)
		s.mux.HandleFunc("POST "+p, h)
	}
}

// serveQuery wraps a query path's handler with tenancy, credentials,
// admission and error answers: every query path, Loki's API and
// Drilldown's, is served through it.
func (s *Server) serveQuery(h func(context.Context, *queryRequest) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := s.queryRequest(w, r)
		if !ok {
			return
		}
		release, ok := s.admitQuery(w, r, req)
		if !ok {
			return
		}
		defer release()
		out, err := h(r.Context(), req)
		if err != nil {
			s.queryError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(out.([]byte))
	}
}

// intParam reads a positive integer parameter (the first of names set),
// def when none is.
func (q *queryRequest) intParam(def int, names ...string) (int, error) {
	for _, name := range names {
		v := q.get(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: %s must be a positive value", errBadParam, name)
		}
		return n, nil
	}
	return def, nil
}

// --- volume -------------------------------------------------------------

func (s *Server) volumeInstant(ctx context.Context, q *queryRequest) (any, error) {
	return s.volume(ctx, q, false)
}

func (s *Server) volumeRange(ctx context.Context, q *queryRequest) (any, error) {
	return s.volume(ctx, q, true)
}

// volume answers /index/volume (a vector at the end of the range) and
// /index/volume_range (a matrix, one point per step).
func (s *Server) volume(ctx context.Context, q *queryRequest, ranged bool) (any, error) {
	p := query.VolumeParams{Tenant: q.tenant}
	src := strings.TrimSpace(q.get("query"))
	switch src {
	case "":
		return nil, fmt.Errorf("%w: query must not be empty", errBadParam)
	case "{}":
		// Loki's match-all: every stream, every label.
	default:
		sel, err := logql.ParseSelector(src)
		if err != nil {
			return nil, err
		}
		p.Selector = sel
	}
	start, end, err := q.bounds()
	if err != nil {
		return nil, err
	}
	p.Start, p.End = start.UnixNano(), end.UnixNano()
	if p.Limit, err = q.intParam(defaultVolumeLimit, "limit"); err != nil {
		return nil, err
	}
	for _, t := range strings.Split(q.get("targetLabels"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			p.TargetLabels = append(p.TargetLabels, t)
		}
	}
	switch q.get("aggregateBy") {
	case "", "series":
	case volumeAggregateLabel:
		p.ByLabels = true
	default:
		return nil, fmt.Errorf("%w: invalid aggregateBy %q: series or labels", errBadParam, q.get("aggregateBy"))
	}
	if ranged {
		if p.Step, err = q.durationParam("step"); err != nil {
			return nil, err
		}
		if p.Step == 0 {
			p.Step = max(time.Second, time.Duration(math.Ceil(end.Sub(start).Seconds()/250))*time.Second)
		}
		if p.Step < 0 {
			return nil, fmt.Errorf("%w: zero or negative query resolution step widths are not accepted. Try a positive integer", errBadParam)
		}
		if max := s.cfg.Query.MaxPoints; max > 0 && int64(end.Sub(start)/p.Step)+1 > int64(max) {
			return nil, fmt.Errorf("%w: exceeded maximum resolution of %d points per timeseries. Try decreasing the query resolution (?step=XX)", errBadParam, max)
		}
	}
	sn := s.st.Snapshot()
	defer sn.Release()
	series, err := s.engine.Volume(ctx, sn, p)
	if err != nil {
		return nil, err
	}
	return appendVolume(nil, series, ranged), nil
}

// appendVolume appends a volume answer in the shape of Loki's (a
// Prometheus vector, or a matrix for volume_range).
func appendVolume(b []byte, series []query.VolumeSeries, ranged bool) []byte {
	typ := "vector"
	if ranged {
		typ = "matrix"
	}
	b = append(b, `{"status":"success","data":{"resultType":"`...)
	b = append(b, typ...)
	b = append(b, `","result":[`...)
	for i, s := range series {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"metric":`...)
		b = s.Labels.AppendJSON(b)
		if ranged {
			b = append(b, `,"values":[`...)
			for j, pt := range s.Points {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendPoint(b, pt)
			}
			b = append(b, "]}"...)
		} else {
			b = append(b, `,"value":`...)
			b = appendPoint(b, s.Points[0])
			b = append(b, '}')
		}
	}
	return append(b, "]}}"...)
}

// --- detected labels ------------------------------------------------------

// staticLabels are kept by detected_labels even when their values look
// like ids, as Loki keeps them.
var staticLabels = []string{"cluster", "namespace", "instance", "pod"}

// detectedLabels answers /detected_labels: each label of the selected
// streams with the number of its values, leaving out, as Loki does,
// labels whose values are all ids (numbers or UUIDs; two values of 0 and
// 1 are kept as a boolean).
func (s *Server) detectedLabels(ctx context.Context, q *queryRequest) (any, error) {
	var sel logql.Selector
	if src := strings.TrimSpace(q.get("query")); src != "" && src != "{}" {
		var err error
		if sel, err = logql.ParseSelector(src); err != nil {
			return nil, err
		}
	}
	start, end, err := q.bounds()
	if err != nil {
		return nil, err
	}
	sn := s.st.Snapshot()
	defer sn.Release()
	values := map[string]map[string]bool{}
	for _, st := range sn.Streams(q.tenant, start.UnixNano(), end.UnixNano()) {
		if !sel.Matches(st.Labels.Value) {
			continue
		}
		for _, l := range st.Labels {
			if values[l.Name] == nil {
				values[l.Name] = map[string]bool{}
			}
			values[l.Name][l.Value] = true
		}
	}
	names := make([]string, 0, len(values))
	for n, vs := range values {
		if slices.Contains(staticLabels, n) || !idsOnly(vs) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	// Loki's field is omitempty: no labels give {}.
	if len(names) == 0 {
		return []byte(`{}`), nil
	}
	b := []byte(`{"detectedLabels":[`)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"label":`...)
		b = appendJSONString(b, n)
		b = append(b, `,"cardinality":`...)
		b = strconv.AppendInt(b, int64(len(values[n])), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// idsOnly reports whether a label's values are all ids, as Loki's
// shouldRejectLabel decides.
func idsOnly(vs map[string]bool) bool {
	if len(vs) == 0 {
		return true
	}
	if len(vs) <= 2 {
		boolean := true
		for v := range vs {
			boolean = boolean && (v == "0" || v == "1")
		}
		if boolean {
			return false
		}
	}
	for v := range vs {
		if _, err := strconv.ParseFloat(v, 64); err != nil && !isUUID(v) {
			return false
		}
	}
	return true
}

// isUUID reports whether v is a UUID in one of the forms Google's uuid
// package parses: 8-4-4-4-12 hex digits, in braces, with "urn:uuid:",
// or 32 hex digits.
func isUUID(v string) bool {
	switch len(v) {
	case 36:
	case 38:
		if v[0] != '{' || v[37] != '}' {
			return false
		}
		v = v[1:37]
	case 45:
		if !strings.EqualFold(v[:9], "urn:uuid:") {
			return false
		}
		v = v[9:]
	case 32:
		return isHex(v)
	default:
		return false
	}
	if v[8] != '-' || v[13] != '-' || v[18] != '-' || v[23] != '-' {
		return false
	}
	return isHex(v[:8] + v[9:13] + v[14:18] + v[19:23] + v[24:])
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// --- detected fields ------------------------------------------------------

// sampleParams reads the parameters of a detection over a log query's
// newest lines: query, start, end, since, line_limit.
func (s *Server) sampleParams(q *queryRequest) (query.SampleParams, error) {
	p := query.SampleParams{Tenant: q.tenant, Query: q.get("query")}
	if p.Query == "" {
		return p, fmt.Errorf("%w: query must not be empty", errBadParam)
	}
	start, end, err := q.bounds()
	if err != nil {
		return p, err
	}
	p.Start, p.End = start.UnixNano(), end.UnixNano()
	def := defaultLineLimit
	if q.maxLines > 0 {
		def = min(def, q.maxLines)
	}
	if p.Lines, err = q.intParam(def, "line_limit"); err != nil {
		return p, err
	}
	if q.maxLines > 0 && p.Lines > q.maxLines {
		return p, fmt.Errorf("%w: max entries limit per query exceeded, line_limit > max_entries_limit_per_query (%d > %d); see --max-query-lines", errBadParam, p.Lines, q.maxLines)
	}
	return p, nil
}

// detectedFields answers /detected_fields in the shape of Loki's:
// {"fields":[{"label","type","cardinality","parsers","jsonPath"}],"limit"}.
// parsers is null for structured metadata, as Loki's.
func (s *Server) detectedFields(ctx context.Context, q *queryRequest) (any, error) {
	p, err := s.sampleParams(q)
	if err != nil {
		return nil, err
	}
	limit, err := q.intParam(defaultFieldLimit, "limit", "field_limit")
	if err != nil {
		return nil, err
	}
	sn := s.st.Snapshot()
	defer sn.Release()
	fields, err := s.engine.DetectedFields(ctx, sn, p, limit)
	if err != nil {
		return nil, err
	}
	b := []byte(`{`)
	if len(fields) > 0 { // omitempty, as Loki's
		b = append(b, `"fields":[`...)
		for i, f := range fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"label":`...)
			b = appendJSONString(b, f.Label)
			b = append(b, `,"type":`...)
			b = appendJSONString(b, f.Type)
			b = append(b, `,"cardinality":`...)
			b = strconv.AppendInt(b, int64(f.Cardinality), 10)
			b = append(b, `,"parsers":`...)
			if f.Parsers == nil {
				b = append(b, "null"...)
			} else {
				b = appendJSONStrings(b, f.Parsers)
			}
			if len(f.JSONPath) > 0 {
				b = append(b, `,"jsonPath":`...)
				b = appendJSONStrings(b, f.JSONPath)
			}
			b = append(b, '}')
		}
		b = append(b, "],"...)
	}
	b = append(b, `"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	return append(b, '}'), nil
}

// detectedFieldValues answers /detected_field/NAME/values:
// {"values":[...],"limit":N}.
func (s *Server) detectedFieldValues(ctx context.Context, q *queryRequest) (any, error) {
	name := q.r.PathValue("name")
	if name == "" {
		return nil, fmt.Errorf("%w: the field name is empty", errBadParam)
	}
	p, err := s.sampleParams(q)
	if err != nil {
		return nil, err
	}
	limit, err := q.intParam(defaultFieldLimit, "limit", "field_limit")
	if err != nil {
		return nil, err
	}
	sn := s.st.Snapshot()
	defer sn.Release()
	values, err := s.engine.DetectedFieldValues(ctx, sn, p, name, limit)
	if err != nil {
		return nil, err
	}
	b := []byte(`{`)
	if len(values) > 0 { // omitempty, as Loki's
		b = append(b, `"values":`...)
		b = appendJSONStrings(b, values)
		b = append(b, ',')
	}
	b = append(b, `"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	return append(b, '}'), nil
}

func appendJSONStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// --- patterns -------------------------------------------------------------

// patterns answers /patterns: the patterns of the newest lines of the
// query (up to patternSampleLines), mined with Drain, as Loki's
// {"status":"success","data":[{"pattern","level","samples":[[sec,n]]}]}.
func (s *Server) patterns(ctx context.Context, q *queryRequest) (any, error) {
	p := query.PatternParams{SampleParams: query.SampleParams{Tenant: q.tenant, Query: q.get("query"), Lines: patternSampleLines}}
	if p.Query == "" {
		return nil, fmt.Errorf("%w: query must not be empty", errBadParam)
	}
	start, end, err := q.bounds()
	if err != nil {
		return nil, err
	}
	p.Start, p.End = start.UnixNano(), end.UnixNano()
	if p.Step, err = q.durationParam("step"); err != nil {
		return nil, err
	}
	if p.Step <= 0 {
		p.Step = max(10*time.Second, time.Duration(math.Ceil(end.Sub(start).Seconds()/250))*time.Second)
	}
	sn := s.st.Snapshot()
	defer sn.Release()
	pats, err := s.engine.Patterns(ctx, sn, p)
	if err != nil {
		return nil, err
	}
	b := []byte(`{"status":"success","data":[`)
	for i, pt := range pats {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"pattern":`...)
		// Loki writes the pattern with HTML escaped (<_> as \u003c_\u003e);
		// encoding/json does the same.
		txt, _ := json.Marshal(pt.Text)
		b = append(b, txt...)
		b = append(b, `,"level":`...)
		b = appendJSONString(b, pt.Level)
		b = append(b, `,"samples":[`...)
		for j, sm := range pt.Samples {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, floorDiv(sm.Time, int64(time.Second)), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, sm.Count, 10)
			b = append(b, ']')
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...), nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// --- drilldown-limits, format_query ------------------------------------------

// drilldownLimits answers /drilldown-limits as Loki does: the limits
// Drilldown reads (Loki's tenant_limits_allow_publish defaults), whether
// patterns are served, and the version: the Loki version sluice answers
// as, the one build info reports. The values are sluice's own.
func (s *Server) drilldownLimits(ctx context.Context, q *queryRequest) (any, error) {
	lim := s.cfg.Query
	version := lokiVersion
	retention := time.Duration(0)
	if s.st != nil {
		retention = s.st.Retention()
	}
	doc := map[string]any{
		"limits": map[string]any{
			// No detected_level is produced at ingest yet.
			"discover_log_levels":         false,
			"discover_service_name":       []string{},
			"log_level_fields":            []string{},
			"max_entries_limit_per_query": lim.MaxLines,
			"max_line_size_truncate":      false,
			"max_query_bytes_read":        formatBytes(lim.MaxBytesScanned),
			"max_query_length":            "0s",
			"max_query_lookback":          "0s",
			"max_query_range":             "0s",
			"max_query_series":            lim.MaxSeries,
			"metric_aggregation_enabled":  false,
			"pattern_persistence_enabled": false,
			"query_timeout":               formatDuration(lim.Timeout),
			"retention_period":            formatDuration(retention),
			"volume_enabled":              true,
			"volume_max_series":           query.DefaultVolumeMaxSeries,
		},
		"pattern_ingester_enabled": true,
		"version":                  version,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode limits: %w", err)
	}
	return b, nil
}

// formatDuration formats a duration as Prometheus' model.Duration does
// (31d1h, 5m, 2w, 0s): the units y w d h m s ms, the largest first, years
// and weeks only when they divide it exactly.
func formatDuration(d time.Duration) string {
	ms := d.Milliseconds()
	if ms <= 0 {
		return "0s"
	}
	var b []byte
	for _, u := range []struct {
		name  string
		ms    int64
		exact bool
	}{{"y", 365 * 24 * 3600 * 1000, true}, {"w", 7 * 24 * 3600 * 1000, true}, {"d", 24 * 3600 * 1000, false},
		{"h", 3600 * 1000, false}, {"m", 60 * 1000, false}, {"s", 1000, false}, {"ms", 1, false}} {
		if u.exact && ms%u.ms != 0 {
			continue
		}
		if n := ms / u.ms; n > 0 {
			b = strconv.AppendInt(b, n, 10)
			b = append(b, u.name...)
			ms -= n * u.ms
		}
	}
	return string(b)
}

// formatBytes formats a byte count as Loki's flagext.ByteSize does: in
// the largest base-2 unit that divides it.
func formatBytes(n int64) string {
	if n <= 0 {
		return "0B"
	}
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// formatQuery answers /format_query: the query as sluice's printer
// writes it, {"status":"success","data":"..."}; a query that does not
// parse gets 400 with the parse error.
func (s *Server) formatQuery(ctx context.Context, q *queryRequest) (any, error) {
	expr, err := logql.Parse(q.get("query"))
	if err != nil {
		return nil, err
	}
	b := []byte(`{"status":"success","data":`)
	b = appendJSONString(b, expr.String())
	return append(b, '}'), nil
}
