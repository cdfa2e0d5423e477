//go:build !linux

package vfs

import "errors"

// Syncer makes files durable through an io_uring on Linux; elsewhere
// NewSyncer fails and callers use File.Sync.
type Syncer struct{}

// NewSyncer fails: io_uring is Linux's.
func NewSyncer() (*Syncer, error) { return nil, errors.New("io_uring: Linux only") }

// Sync is f.Sync.
func (s *Syncer) Sync(f File) error { return f.Sync() }

// Close does nothing.
func (s *Syncer) Close() error { return nil }
