// Package store is sluice's storage engine: it makes batches durable in the
// WAL, keeps them queryable in the head, flushes the head into immutable
// parts (one per tenant and day per flush), merges small parts, enforces
// retention, and reads the head and the parts through one Snapshot, so a
// reader never knows where data lives.
//
// Durability: Append returns nil only once the batch is in the WAL as the
// sync policy says (by default, fdatasync'ed), and the batch is visible to
// snapshots taken after it returns. The MANIFEST file names the live parts
// and the first WAL segment not yet in them; it is replaced atomically, so
// after a crash every record is found exactly once: in a part the
// manifest names, or in a WAL segment it says to replay.
//
// Directory layout (docs/format/store.md):
//
//	DIR/LOCK                              flock held by the process using DIR
//	DIR/MANIFEST                          live parts and the WAL start (JSON)
//	DIR/wal/NNNNNNNNNNNNNNNNNNNN.wal      WAL segments
//	DIR/parts/TENANT/YYYY-MM-DD/ID.part   parts
//
// It knows records but no input format, and never decodes a WAL payload
// except through package rows.
package store
