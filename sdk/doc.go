// Package sdk ships logs from a Go program to sluice (or to any server
// that takes Loki's push protocol or VictoriaLogs-style NDJSON) without a
// sidecar.
//
// A Client batches records (by count, by bytes and by age), compresses
// each batch, sends it from background goroutines and retries what the
// server refuses for a while (429 and 503, honouring Retry-After, and
// 5xx or transport errors) with jittered exponential backoff. Its memory
// is bounded: when the server is slow or gone and the queue of sealed
// batches is full, Send either blocks (OverflowBlock) or drops the oldest
// queued batch (OverflowDropOldest); both are counted in Stats.
//
// With Config.SpoolDir set, a batch that cannot reach the server at all
// (no connection, no answer) is written to a file there instead of being
// held in memory, and sent, oldest first, once the server answers again,
// by this Client or the next one given the same directory. Delivery from
// the spool is at least once: a request cut off by Close is sent again.
//
// Send copies the record into a preallocated batch: in steady state it
// allocates nothing. A Client is safe for concurrent use. Close flushes
// what is buffered and waits for it to be delivered.
//
// # Throughput
//
// Into sluice on loopback (bench/sdk.sh: one process, four goroutines
// calling Send, sluice on the same two cores) a record of about 110
// bytes costs, client and server together, about 1.3 us of CPU with
// LokiProtobuf and 1.8-2 us with NDJSON: the server stores each field of
// an NDJSON object as a column (in its rows block, then in the part it
// flushes), and zstd costs the client about twice what snappy does
// (docs/small-request.md has the breakdown). On a network, NDJSON's zstd
// sends the smaller body. Senders (requests in flight, default 4)
// overlaps the server's fsync waits: with sluice on the same two cores,
// 4 sent 21-28% more records/s than 2 (BENCHMARKS.md).
//
// Handler is a log/slog Handler writing to a Client: attributes become
// JSON fields, groups dotted names, and the attributes whose keys are
// named in HandlerOptions.LabelKeys become the record's stream labels.
//
// The package imports nothing of sluice's internals.
package sdk
