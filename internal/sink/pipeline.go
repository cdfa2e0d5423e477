package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluicelog/sluice/internal/wal"
)

// pipeline delivers as Run's loop does, with fill one batch ahead in a
// goroutine of its own: the next batch is read from the WAL and decoded
// while the destination takes the one before (PostgreSQL's COPY and
// commit), so the destination waits for no decoding. The sink holds at
// most two batches. The position moves only when a batch is delivered, in
// order, as without the pipeline.
//
// With Concurrency n above 1 (an Ordered destination), up to n batches are
// in the destination at once (deliverOrdered) and the sink holds n+1.
//
// REQUIRES: the policy is Block: drop_oldest's drop moves the cursor,
// which the filling goroutine owns here.
func (s *Sink) pipeline(ctx context.Context, l *wal.Log, cur *wal.Cursor, start wal.Pos) error {
	ctx, cancel := context.WithCancel(ctx)
	full := make(chan filled, 1)
	n := s.cfg.Concurrency
	free := make(chan *Batch, n+1)
	for range n + 1 {
		free <- new(Batch)
	}
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() {
		defer close(full)
		from := start
		pace := s.pacer()
		for {
			var b *Batch
			select {
			case <-ctx.Done():
				return
			case b = <-free:
			}
			b.Reset()
			t0 := time.Now()
			err := s.fill(ctx, l, cur, b, from)
			if err == nil && ctx.Err() != nil {
				return
			}
			from = b.End
			work := time.Since(t0) - b.waited + time.Duration(s.delivering.Load())
			select {
			case full <- filled{b, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
			if !pace.after(ctx, l, from, work) {
				return
			}
		}
	})
	if n > 1 {
		return s.deliverOrdered(ctx, l, cur, full, free)
	}
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
			t0 := time.Now()
			if !s.deliver(ctx, l, cur, b) {
				return nil
			}
			s.delivering.Store(int64(time.Since(t0)))
		}
		s.sending.Store(0)
		if err := s.delivered(b); err != nil {
			return err
		}
		free <- b
	}
	return nil
}

// filled is a batch fill returned, or the error it stopped at.
type filled struct {
	b   *Batch
	err error
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

// flight is one batch handed to an Ordered destination.
type flight struct {
	b    *Batch
	done chan struct{} // closed when the attempt ended
	rej  []Rejected    // the attempt's outcome, once done
	err  error
	// settled: b needs no attempt (it failed for good while rolled
	// back, its records in the dead letter); only the position moves.
	settled bool
}

// deliverOrdered delivers the batches of in, in order, with up to
// s.cfg.Concurrency of them in the destination at once: each batch's turn
// (Batch.Turn) waits for the flights before it. The position moves as the
// batches finish, in order. When an attempt fails, every later flight
// fails its turn (ErrEarlierFailed) and rolls back; once they all ended,
// the failed batch is retried alone, with backoff, and the later ones are
// handed to the destination again, in order. Delivered batches go back to
// free. It returns when in is closed and every batch delivered (nil), or
// ctx ends (nil), or fill or saving the position failed. It waits for the
// flights it started: those after ctx ended see it cancelled.
func (s *Sink) deliverOrdered(ctx context.Context, l *wal.Log, cur *wal.Cursor, in <-chan filled, free chan<- *Batch) error {
	n := s.cfg.Concurrency
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	var queue []*flight // in flight, in order
	var redo []*flight  // rolled back after an earlier batch failed, in order
	showSending := func() {
		if len(queue) == 0 {
			s.sending.Store(0)
			return
		}
		s.sending.Store(queue[0].b.oldest)
	}
	launch := func(b *Batch, settled bool) {
		f := &flight{b: b, done: make(chan struct{}), settled: settled}
		if len(b.Records) == 0 || settled {
			close(f.done) // nothing to deliver: only the position moves
			queue = append(queue, f)
			return
		}
		before := slices.Clone(queue)
		b.turn = func(ctx context.Context) error {
			for _, p := range before {
				select {
				case <-p.done:
				case <-ctx.Done():
					return ctx.Err()
				}
				if p.err != nil {
					return fmt.Errorf("sink %q: %w", s.cfg.Name, ErrEarlierFailed)
				}
			}
			return nil
		}
		s.oldest.CompareAndSwap(b.oldest, 0)
		queue = append(queue, f)
		showSending()
		wg.Go(func() {
			defer close(f.done)
			t0 := time.Now()
			f.rej, f.err = s.attempt(ctx, l, b)
			s.delivering.Store(int64(time.Since(t0)))
		})
	}
	// finish moves the position past the delivered batch b.
	finish := func(b *Batch) error {
		b.turn = nil
		if err := s.delivered(b); err != nil {
			return err
		}
		free <- b
		return nil
	}
	waitDone := func(f *flight) bool {
		select {
		case <-f.done:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		for len(queue) < n && len(redo) > 0 {
			launch(redo[0].b, redo[0].settled)
			redo = redo[1:]
		}
		var head <-chan struct{}
		if len(queue) > 0 {
			head = queue[0].done
		}
		var next <-chan filled
		if len(queue) < n && in != nil {
			next = in
		}
		if head == nil && next == nil {
			return nil // in is closed and everything delivered
		}
		select {
		case <-ctx.Done():
			return nil
		case fb, ok := <-next:
			if !ok {
				in = nil
				continue
			}
			if fb.err != nil {
				return fb.err
			}
			launch(fb.b, false)
			continue
		case <-head:
		}
		f := queue[0]
		queue = queue[1:]
		if len(f.b.Records) == 0 || f.settled || s.settle(l, f.b, f.rej, f.err) {
			showSending()
			if err := finish(f.b); err != nil {
				return err
			}
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		// f's attempt failed: the later flights fail their turns and roll
		// back. Once they ended, f is retried alone, then they go again.
		later := queue
		queue = nil
		for _, g := range later {
			if !waitDone(g) {
				return nil
			}
			settled := g.settled
			if g.err != nil && !settled {
				s.m.retries.Inc() // rolled back: it goes again
				if !errors.Is(g.err, ErrEarlierFailed) {
					// Its own failure: what it rejected is settled, all
					// of it when the failure is for good.
					settled = s.settle(l, g.b, g.rej, g.err)
				}
			}
			g.b.turn = nil
			redo = append(redo, &flight{b: g.b, settled: settled})
		}
		f.b.turn = nil
		s.sending.Store(f.b.oldest)
		// settle took f's rejected records already.
		if !s.retry(ctx, l, cur, f.b, 1, nil, f.err) {
			return nil
		}
		s.sending.Store(0)
		if err := finish(f.b); err != nil {
			return err
		}
		// Empty batches among the later ones move the position in order
		// as they are launched again.
	}
}
