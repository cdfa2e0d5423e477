// Package jsonline reads the parameters of VictoriaLogs-style line
// ingestion (POST /insert/jsonline, /insert/lines): which fields give a
// record its stream, time and message, from query arguments or VL-*
// headers, as parser options. The body is then parsed as a stream of
// lines by package parse.
//
// It knows nothing of storage.
package jsonline

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
)

// Parameters: the query argument and the header that may carry each
// (VL-Stream-Fields and so on), the header's name in its canonical form so
// that a lookup costs no canonicalization: this is on every request's path.
var params = []struct{ arg, header string }{
	{"_stream_fields", "Vl-Stream-Fields"},
	{"_time_field", "Vl-Time-Field"},
	{"_msg_field", "Vl-Msg-Field"},
}

// unsupported are VictoriaLogs parameters this server does not implement:
// a request naming one is refused rather than half-honoured.
var unsupported = []string{"ignore_fields", "extra_fields", "decolorize_fields", "_default_msg_value", "debug"}

// Plain reports whether a request's query q and headers h set none of the
// parameters: then Options depends on its format and base alone, and a
// caller may keep what it returned for them.
func Plain(q url.Values, h http.Header) bool {
	if len(q) > 0 {
		return false
	}
	for _, p := range params {
		if len(h[p.header]) > 0 {
			return false
		}
	}
	return true
}

// Options returns the parser options a request asks for: format is
// "json" for /insert/jsonline or the format argument of /insert/lines;
// base holds the server's defaults (line size, depth).
func Options(q url.Values, h http.Header, format string, base parse.Options) (parse.Options, error) {
	for _, p := range unsupported {
		if q.Has(p) {
			return base, fmt.Errorf("parameter %s is not supported", p)
		}
	}
	opts := base
	opts.Format = format
	cfg := record.DefaultConfig()
	cfg.MaxFields = base.Record.MaxFields
	lists := []*[]string{&cfg.StreamFields, &cfg.TimeFields, &cfg.MsgFields}
	for i, p := range params {
		v := q.Get(p.arg)
		if vs := h[p.header]; v == "" && len(vs) > 0 {
			v = vs[0]
		}
		if v == "" {
			continue
		}
		var list []string
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				list = append(list, f)
			}
		}
		*lists[i] = list
	}
	opts.Record = cfg
	if err := cfg.Check(); err != nil {
		return base, fmt.Errorf("_stream_fields: %v", err)
	}
	// The format is checked when a parser is made for these options.
	return opts, nil
}
