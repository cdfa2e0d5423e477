package store

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
)

// exportChunk is the size of the buffers an export hands from the
// goroutines that decode to the one that writes.
const exportChunk = 1 << 20

// Export writes the lines that Lines would give, each followed by "\n",
// to w. Streams are decoded in parallel, one per CPU, and written in
// order; memory stays bounded by a few buffers per CPU.
//
// Damaged blocks are skipped and noted (Damage), unless the snapshot
// fails on damage (FailOnDamage): then an unreadable part with rows in
// range fails the export before anything is written, and a damaged block
// ends it there, after the lines before it.
func (sn *Snapshot) Export(ctx context.Context, tenants []string, from, to int64, match func(record.Labels) bool, w io.Writer) error {
	for _, d := range sn.badParts {
		if (len(tenants) == 0 || slices.Contains(tenants, d.Tenant)) && d.overlaps(d.Tenant, from, to) {
			if sn.strict {
				return fmt.Errorf("%s: %w", d.Describe(), part.ErrCorrupt)
			}
			sn.noteDamage(d)
		}
	}
	if len(tenants) == 0 {
		tenants = sn.Tenants()
	}
	type item struct {
		tenant string
		stream Stream
		out    chan []byte // filled buffers, in order; closed when done
		err    error       // set before out is closed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	todo := make(chan *item)
	order := make(chan *item, workers)
	free := make(chan []byte, 4*workers)

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range todo {
				var buf []byte
				select {
				case buf = <-free:
				default:
					buf = make([]byte, 0, exportChunk+64<<10)
				}
				it.err = sn.Scan(ctx, it.tenant, it.stream, from, to, ScanOptions{Drop: true, LinesOnly: true}, func(r *rows.Row, _ []string) error {
					buf = append(buf, r.Line...)
					buf = append(buf, '\n')
					if len(buf) >= exportChunk {
						select {
						case it.out <- buf:
						case <-ctx.Done():
							return ctx.Err()
						}
						select {
						case buf = <-free:
						default:
							buf = make([]byte, 0, exportChunk+64<<10)
						}
					}
					return nil
				})
				if len(buf) > 0 && it.err == nil {
					select {
					case it.out <- buf:
					case <-ctx.Done():
						it.err = ctx.Err()
					}
				}
				close(it.out)
			}
		}()
	}
	// Feed streams in order; the writer below consumes them in the same
	// order.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(todo)
		for _, t := range tenants {
			for _, st := range sn.Streams(t, from, to) {
				if match != nil && !match(st.Labels) {
					continue
				}
				it := &item{tenant: t, stream: st, out: make(chan []byte, 4)}
				select {
				case order <- it:
				case <-ctx.Done():
					return
				}
				select {
				case todo <- it:
				case <-ctx.Done():
					// The writer waits for this item's end: no worker
					// will take it.
					it.err = ctx.Err()
					close(it.out)
					return
				}
			}
		}
	}()
	var err error
	for it := range order {
		for buf := range it.out {
			if err == nil {
				if _, werr := w.Write(buf); werr != nil {
					err = werr
					cancel()
				}
			}
			select {
			case free <- buf[:0]:
			default:
			}
		}
		if err == nil && it.err != nil {
			err = it.err
			cancel()
		}
	}
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return err
}
