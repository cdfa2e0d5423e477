package sink

import (
	"context"
	"sync"

	"github.com/sluicelog/sluice/internal/wal"
)

// pipeline delivers as Run's loop does, with fill one batch ahead in a
// goroutine of its own: the next batch is read from the WAL and decoded
// while the destination takes the one before (PostgreSQL's COPY and
// commit), so the destination waits for no decoding. The sink holds at
// most two batches. The position moves only when a batch is delivered, in
// order, as without the pipeline.
//
// REQUIRES: the policy is Block: drop_oldest's drop moves the cursor,
// which the filling goroutine owns here.
func (s *Sink) pipeline(ctx context.Context, l *wal.Log, cur *wal.Cursor, start wal.Pos) error {
	type filled struct {
		b   *Batch
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	full := make(chan filled, 1)
	free := make(chan *Batch, 2)
	free <- new(Batch)
	free <- new(Batch)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() {
		defer close(full)
		from := start
		for {
			var b *Batch
			select {
			case <-ctx.Done():
				return
			case b = <-free:
			}
			b.Reset()
			err := s.fill(ctx, l, cur, b, from)
			if err == nil && ctx.Err() != nil {
				return
			}
			from = b.End
			select {
			case full <- filled{b, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	for f := range full {
		if f.err != nil {
			return f.err
		}
		b := f.b
		if len(b.Records) > 0 {
			// The batch's oldest record is now the one being sent; fill
			// may already have set the next batch's.
			s.sending.Store(b.oldest)
			s.oldest.CompareAndSwap(b.oldest, 0)
			if !s.deliver(ctx, l, cur, b) {
				return nil
			}
		}
		s.sending.Store(0)
		if err := s.delivered(b); err != nil {
			return err
		}
		free <- b
	}
	return nil
}

// oldestUnsent returns the receive time (Unix ns) of the oldest record
// read and not yet delivered, 0 if none.
func (s *Sink) oldestUnsent() int64 {
	a, b := s.sending.Load(), s.oldest.Load()
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
