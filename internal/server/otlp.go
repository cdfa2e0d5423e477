package server

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicelog/sluice/internal/ingest/loki"
	"github.com/sluicelog/sluice/internal/ingest/otlp"
	"github.com/sluicelog/sluice/internal/record"
)

// handleOTLP serves POST /v1/logs as OTLP/HTTP says, storing the records
// as Loki 3 does (package otlp): 200 with an
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
	// Stream labels: the resource attributes Loki makes labels, unless
	// the request names others (_stream_fields, VL-Stream-Fields:
	// attribute names, as sent).
	var index []string
	if v := cmp.Or(r.URL.Query().Get("_stream_fields"), r.Header.Get("VL-Stream-Fields")); v != "" {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				index = append(index, f)
			}
		}
	}
	d := loki.Decoder{Limits: s.cfg.Loki, Discover: s.cfg.Discover}
	b := record.GetBatch()
	defer record.PutBatch(b)
	b.ReceiveTime = time.Now().UnixNano()
	res, err := otlp.Decode(&d, data, isJSON, b, index)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	rejected := int64(res.Rejected)
	reasons := res.Reasons
	if rejected > 0 {
		s.metrics.rejected.WithLabelValues("otlp", "invalid").Add(float64(rejected))
	}
	// OTLP's partial success: the client is told, and does not retry.
	b.Tenant = tenant
	if rf := s.streams.admit(tenant, b, false, nil); rf.lines > 0 {
		rejected += int64(rf.lines)
		reasons = append(reasons, rf.message(tenant, s.streams.max))
		s.metrics.rejected.WithLabelValues("otlp", "stream_limit").Add(float64(rf.lines))
	}
	if err := s.st.Append(r.Context(), tenant, b); err != nil {
		return s.storeError(w, err, "")
	}
	s.countLines(r, tenant, "otlp", len(b.Records))
	s.metrics.bytes.WithLabelValues(tenant, "otlp").Add(float64(len(data)))
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
