package elastic

import "fmt"

// DocError is the body of a single document (_doc, _create) refused with
// 400 because it cannot be read.
func DocError(reason string) []byte {
	return fmt.Appendf(nil, `{"error":{"type":"document_parsing_exception","reason":%q},"status":400}`, reason)
}

// DocCreated is the body of a single document stored (201) in index under
// id.
func DocCreated(index, id string) []byte {
	return fmt.Appendf(nil, `{"_index":%q,"_id":%q,"_version":1,"result":"created","_shards":{"total":1,"successful":1,"failed":0}}`, index, id)
}
