// Package part is the on-disk format of the store's immutable parts: one
// file per part holding the records of one tenant and day, grouped by
// stream, ordered by time, in blocks stored column by column.
//
// A block keeps each record's time once, as a number; each field as a
// typed column with an encoding chosen per block (constant, dictionary,
// a dictionary of the frequent values with the rest as strings, integers,
// decimals, hex, timestamp shapes, or compressed strings); and,
// for each record, a template: the line's text between its field values,
// shared by every line written the same way. The original line is rebuilt
// from the template and the values, byte-exact, so the store keeps no
// second copy of it. Lines that no template fits are stored whole.
// Each encoding is one file, enc_*.go, holding its writer (the test that
// the values fit it, and their streams), its reader and, for encodings
// whose text is computed, its alphabet; block_write.go and block_read.go
// choose among them.
//
// A block is read through one of four entry points, by what the caller
// wants: ReadRows (every row whole), ReadLines (lines, optionally only
// those holding some literals, or the newest few), CountLines (how many
// hold them) and ReadColumns (no row: the caller walks the rows with a
// Cursor and reads the values it needs).
//
// Reads prune before they decompress: a block's token filter rules out
// the blocks without a searched word, a text column's gram filter the
// columns without a searched literal (grams.go). A BlockCache
// (block_cache.go), shared by the parts of a store, keeps what every read
// of a block finds alike (its parsed templates, its rows' templates and
// times), so that warm queries pay only for the columns they read.
//
// The header's magic and version are checked, and every other region
// (blocks, token filters, index, footer) is covered by a CRC32C and
// checked for consistency as it is decoded: reading a damaged part gives
// a clean error, never a wrong record and never a panic.
//
// The layout is specified in docs/format/part.md. It must never import the
// parsers: it stores what they produced.
package part
