// Package wal is sluice's write-ahead log: it makes opaque payloads durable
// before the store acknowledges them, and gives them back after a crash.
//
// It owns the segment files of one directory (NNNNNNNNNNNNNNNNNNNN.wal),
// their format (specified byte by byte in docs/format/wal.md, frozen as
// FormatVersion), group commit, and recovery: replay, cutting back a torn
// tail, and repairing damage in the middle of the log while keeping a copy
// of the damaged segment.
//
// It must never decode a payload, never acknowledge an append whose
// fdatasync failed (and never retry that fdatasync), never replay a payload
// whose checksum did not check out, and never panic on what it reads from
// disk. All I/O goes through a vfs.FS.
//
// Concurrency: Log's methods are safe for concurrent use. Each Log owns one
// writer goroutine, started by Open and stopped by Close.
package wal
