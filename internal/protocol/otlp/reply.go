package otlp

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Content types of OTLP/HTTP bodies.
const (
	ContentJSON  = "application/json"
	ContentProto = "application/x-protobuf"
)

// ErrorBody returns the body and content type of a refused request: a
// google.rpc.Status with code INVALID_ARGUMENT and msg, as JSON or
// protobuf.
func ErrorBody(isJSON bool, msg string) (contentType string, body []byte) {
	if isJSON {
		return ContentJSON, fmt.Appendf(nil, `{"code":3,"message":%q}`, msg)
	}
	var st []byte
	st = protowire.AppendTag(st, 1, protowire.VarintType)
	st = protowire.AppendVarint(st, 3) // INVALID_ARGUMENT
	st = protowire.AppendTag(st, 2, protowire.BytesType)
	st = protowire.AppendString(st, msg)
	return ContentProto, st
}

// SuccessBody returns the body and content type of a served request: an
// ExportLogsServiceResponse, with partial_success when rejected records
// were left out (msg says why), as JSON or protobuf.
func SuccessBody(isJSON bool, rejected int64, msg string) (contentType string, body []byte) {
	if !isJSON {
		return ContentProto, ExportResponse(rejected, msg)
	}
	if rejected == 0 {
		return ContentJSON, []byte("{}")
	}
	return ContentJSON, fmt.Appendf(nil, `{"partialSuccess":{"rejectedLogRecords":"%d","errorMessage":%q}}`, rejected, msg)
}
