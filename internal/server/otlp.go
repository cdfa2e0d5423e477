package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicelog/sluice/internal/ingest/jsonline"
	"github.com/sluicelog/sluice/internal/ingest/otlp"
	"github.com/sluicelog/sluice/internal/record"
)

// handleOTLP serves POST /v1/logs as OTLP/HTTP says: 200 with an
// ExportLogsServiceResponse (partial_success when records were left out),
// 400 with a Status when the request cannot be read.
func (s *Server) handleOTLP(w http.ResponseWriter, r *http.Request, tenant string, body *reqBody) int {
	isJSON := strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/json")
	fail := func(code int, msg string) int {
		if isJSON {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"code":3,"message":%q}`, msg)
			return code
		}
		var st []byte
		st = protowire.AppendTag(st, 1, protowire.VarintType)
		st = protowire.AppendVarint(st, 3) // INVALID_ARGUMENT
		st = protowire.AppendTag(st, 2, protowire.BytesType)
		st = protowire.AppendString(st, msg)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(code)
		w.Write(st)
		return code
	}
	data, err := s.readWhole(body)
	if err != nil {
		code := bodyStatus(err)
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		return fail(code, err.Error())
	}
	lines, _, err := otlp.Lines(nil, data, isJSON)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	base := s.cfg.Parse
	base.Record.StreamFields = otlp.StreamFields
	opts, err := jsonline.Options(r.URL.Query(), r.Header, "json", base)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	// Unless the request names them, the rendering's own fields.
	if r.URL.Query().Get("_stream_fields") == "" && r.Header.Get("VL-Stream-Fields") == "" {
		opts.Record.StreamFields = otlp.StreamFields
	}
	opts.Record.TimeFields = []string{"time"}
	opts.Record.MsgFields = []string{"body"}
	p, put, err := s.parsers.get(opts)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	defer put()
	var rejected int64
	var reasons []string
	var storeErr error
	err = p.Bytes(r.Context(), lines, func(b *record.Batch) error {
		for i := range b.Errors {
			rejected++
			if len(reasons) < 5 {
				reasons = append(reasons, b.Errors[i].Msg)
			}
			s.metrics.rejected.WithLabelValues("otlp", b.Errors[i].Kind.String()).Inc()
		}
		// OTLP's partial success: the client is told, and does not retry.
		if rf := s.streams.admit(tenant, b, false, nil); rf.lines > 0 {
			rejected += int64(rf.lines)
			reasons = append(reasons, rf.message(tenant, s.streams.max))
			s.metrics.rejected.WithLabelValues("otlp", "stream_limit").Add(float64(rf.lines))
		}
		s.countTimeFallbacks("otlp", b)
		if err := s.st.Append(tenant, b); err != nil {
			storeErr = err
			return err
		}
		s.countLines(r, tenant, "otlp", len(b.Records))
		s.metrics.bytes.WithLabelValues(tenant, "otlp").Add(float64(len(b.Data)))
		return nil
	})
	if storeErr != nil {
		return s.storeError(w, storeErr, "")
	}
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	msg := strings.Join(reasons, "; ")
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		if rejected == 0 {
			io.WriteString(w, "{}")
		} else {
			fmt.Fprintf(w, `{"partialSuccess":{"rejectedLogRecords":"%d","errorMessage":%q}}`, rejected, msg)
		}
		return http.StatusOK
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(otlp.ExportResponse(rejected, msg))
	return http.StatusOK
}
