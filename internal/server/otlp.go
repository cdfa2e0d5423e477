package server

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/protocol/otlp"
	"github.com/sluicelog/sluice/internal/record"
)

// handleOTLP serves POST /v1/logs as OTLP/HTTP says, storing the records
// as Loki 3 does (package otlp): 200 with an
// ExportLogsServiceResponse (partial_success when records were left out),
// 400 with a Status when the request cannot be read.
func (s *Server) handleOTLP(w http.ResponseWriter, r *http.Request, tenant string, body *reqBody) (int, int) {
	isJSON := strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/json")
	fail := func(code int, msg string) (int, int) {
		ct, b := otlp.ErrorBody(isJSON, msg)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(code)
		w.Write(b)
		return code, 0
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
	d := s.getLokiDecoder()
	b := record.GetBatch()
	// Given back before the wait for the fsync, as handleLoki does.
	release := func() {
		putLokiDecoder(d)
		record.PutBatch(b)
	}
	b.ReceiveTime = time.Now().UnixNano()
	res, err := otlp.Decode(d, data, isJSON, b, index)
	if err != nil {
		release()
		return fail(http.StatusBadRequest, err.Error())
	}
	rejected := int64(res.Rejected)
	reasons := res.Reasons // the decode's own, not the decoder's
	s.flow.Reject("otlp", "invalid", res.Rejected)
	// OTLP's partial success: the client is told, and does not retry.
	b.Tenant = tenant
	pending := &body.pipe.slots[0]
	fr, started, err := s.flow.Begin(r.Context(), pending, flow.Input{Protocol: "otlp", Bytes: len(data)}, b)
	release()
	if started {
		fr.Accepted, err = pending.Wait()
	}
	if err != nil {
		return s.storeError(w, err, ""), 0
	}
	if fr.Refused > 0 {
		rejected += int64(fr.Refused)
		reasons = append(reasons, fr.Message)
	}
	ct, reply := otlp.SuccessBody(isJSON, rejected, strings.Join(reasons, "; "))
	w.Header().Set("Content-Type", ct)
	w.Write(reply)
	return http.StatusOK, fr.Accepted
}
