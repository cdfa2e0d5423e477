// Package flow is the one way from a protocol to storage. A producer of
// batches (a protocol handler, a listener, a file loader) decodes its
// input into a record.Batch and hands it to a Flow, which runs, for every
// batch, the same steps: it counts the lines the decoder rejected, runs
// the rule stage (Flow.Rules), admits the batch (StreamLimit, the
// per-tenant limit of active streams), counts time fallbacks, writes
// what is left to a Sink, and counts what was stored. It returns what
// the producer's reply needs: lines accepted, rejected, and refused by a
// limit. The producer owns its
// reply body. The tenant of a batch is its own, record.Batch.Tenant, set
// by the producer: nothing else carries it.
//
// Sink is the interface every writer of batches implements: the store
// (through internal/sink/store: flow knows nothing of storage), and
// later the rule stage, a fan-out to several sinks and the cluster's
// Kafka producer, each one more implementation of Sink or a wrapper
// around one. Its two steps, Prepare then Write and Wait, let a
// producer encode one batch while the one before waits for its fsync.
package flow
