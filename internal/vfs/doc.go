// Package vfs is the filesystem seam under the WAL and the store: the real
// filesystem (OS), an in-memory one that can simulate a crash by keeping
// only what was synced (MemFS), and a wrapper that injects faults such as
// ENOSPC and EIO (FaultFS). Everything that writes durable state goes
// through an FS so that crash and fault behaviour is unit-tested.
//
// MemFS keeps the durability contract stated on FS literally: file bytes
// are durable after File.Sync, directory entries after SyncDir of their
// directory, and MemFS.Crash returns what a power loss would leave, with
// unsynced tails optionally torn. A test that passes on MemFS with crashes
// at every step has shown that its code syncs what it relies on.
// TestSemantics runs the same checks on OS and MemFS so that they agree on
// ordinary behaviour.
//
// It must never know what the bytes mean, and never retry a failed Sync:
// a failed fsync may have dropped the dirty pages, so the caller must fail
// the write instead.
package vfs
