// Package loki decodes the bodies of Loki's push API
// (POST /loki/api/v1/push) into record batches: JSON, and protobuf
// (logproto.PushRequest) as a snappy block. Stream labels come from the
// request, not from the line, which is kept as sent; structured metadata
// becomes string fields. Encoder is the inverse, for a sink that pushes
// batches to Loki: decode(encode(b)) gives b's records back.
//
// It knows nothing of storage or HTTP: the server reads, decompresses and
// limits the body, and stores the batch.
package loki
