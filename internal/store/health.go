package store

import (
	"errors"
	"fmt"
)

// ErrRefusing matches the error of WriteError: the store would refuse a
// write now.
var ErrRefusing = errors.New("store refuses writes")

// WriteError reports why an Append made now would be refused without
// waiting for anything that may change on its own: the store is closed,
// its WAL is broken (a failed fdatasync: it refuses until the store is
// reopened), or its heads are full while flushing them fails. It returns
// nil when a write would be taken. Readiness probes ask it, so that load
// balancers move traffic away from a store that cannot take it.
func (s *Store) WriteError() error {
	if s.wal != nil && s.wal.Stats().Broken {
		return fmt.Errorf("%w: the WAL is broken (a failed write or fdatasync); restart sluice once the disk is fixed", ErrRefusing)
	}
	if !s.flushFailing.Load() {
		// The common case, without the lock (which a flush holds
		// across a manifest's fsync): a probe must answer at once.
		if s.ctx.Err() != nil { // Close cancels it
			return fmt.Errorf("%w: %w", ErrRefusing, ErrClosed)
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: %w", ErrRefusing, ErrClosed)
	}
	if s.bgErr == nil {
		return nil
	}
	b, _ := s.head.size()
	var f int64
	if s.flushing != nil {
		f, _ = s.flushing.size()
	}
	if b+f >= s.opts.MaxHeadBytes {
		return fmt.Errorf("%w: the heads are full and cannot be flushed: %w", ErrRefusing, s.bgErr)
	}
	return nil
}
