package elastic

import "fmt"

// DocError is the body of a single document (_doc, _create) refused with
// 400 because it cannot be read.
func DocError(reason string) []byte {
	return fmt.Appendf(nil, `{"error":{"type":"document_parsing_exception","reason":%q},"status":400}`, reason)
}

// DocStreamLimited is the body of a single document refused with 429
// because its stream is new and its tenant is at its limit of max active
// streams, as a bulk item so refused says (Item.StreamLimited).
func DocStreamLimited(max int) []byte {
	return fmt.Appendf(nil, `{"error":{"type":"es_rejected_execution_exception","reason":%q},"status":429}`, streamLimitedReason(max))
}

// streamLimitedReason says why a document of a new stream was refused.
func streamLimitedReason(max int) string {
	return fmt.Sprintf("the tenant is at its limit of %d active streams (max_streams_per_tenant): this document's stream is new", max)
}

// DocCreated is the body of a single document stored (201) in index under
// id.
func DocCreated(index, id string) []byte {
	return fmt.Appendf(nil, `{"_index":%q,"_id":%q,"_version":1,"result":"created","_shards":{"total":1,"successful":1,"failed":0}}`, index, id)
}

// Created marks the item's document stored: 201.
func (it *Item) Created() { it.Status, it.Type, it.Err = 201, "", "" }

// Unreadable marks the item's document refused because it cannot be read
// (msg, at column col of its line): 400, document_parsing_exception.
func (it *Item) Unreadable(col int, msg string) {
	it.Status, it.Type, it.Err = 400, "document_parsing_exception", fmt.Sprintf("column %d: %s", col, msg)
}

// StreamLimited marks the item's document refused because its stream is
// new and its tenant is at its limit of max active streams: 429,
// es_rejected_execution_exception, which Beats and Logstash retry as they
// retry Elasticsearch's own.
func (it *Item) StreamLimited(max int) {
	it.Status, it.Type, it.Err = 429, "es_rejected_execution_exception", streamLimitedReason(max)
}
