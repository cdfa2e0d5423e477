// Package rows encodes a batch of parsed records into the compact,
// self-contained form that the WAL carries as an opaque payload and that
// the store's head keeps in memory until it flushes to parts, and decodes
// it again. It knows no store: sinks, sources and other nodes carry a
// block as it is.
//
// A Block holds the original lines byte-exact and, for each record, its
// time, stream and typed fields as spans of its line, so that neither a
// replay nor a flush ever re-parses a line (and a change of parser cannot
// change what a replay yields).
//
// The layout is specified in docs/format/rows.md. It must never depend on
// process state: field names and stream labels are written out, not as ids
// of the producer's tables.
package rows
