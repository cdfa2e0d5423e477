package store

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/vfs"
)

// prepare encodes lines as one batch for tenant.
func prepare(t testing.TB, s *Store, tenant string, lines []string) *Pending {
	t.Helper()
	p, err := prepareLines(s, tenant, lines)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func prepareLines(s *Store, tenant string, lines []string) (*Pending, error) {
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		return nil, err
	}
	var out *Pending
	err = p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(b *record.Batch) error {
		if out != nil {
			return errors.New("the lines parsed as more than one batch")
		}
		if len(b.Errors) > 0 {
			return errors.New("parse: " + b.Errors[0].Msg)
		}
		out, err = s.Prepare(tenant, b)
		return err
	})
	return out, err
}

// TestWriteSeveralBeforeWait: one goroutine writes several batches before
// it waits for them (in reverse order), while heads are cut by the
// flusher (the heads are tiny, so Write also waits for room with batches
// of its own in flight), by another goroutine, and by the writer itself
// between its Writes and its Waits. Every batch is stored exactly once,
// in the order written.
//
// With the old protocol (Write took the cut lock for reading and Wait
// released it) this deadlocked: the writer's own Flush waited for the
// read lock the writer held; a cut by another goroutine, waiting for that
// read lock, blocked the writer's next Write (a sync.RWMutex makes new
// readers wait for a waiting writer), which blocked the Wait that would
// have released it; and a Write waiting for room waited for a flush that
// waited for the writer's earlier batches.
func TestWriteSeveralBeforeWait(t *testing.T) {
	s := open(t, vfs.NewMem(), Options{HeadBytes: 4 << 10, MaxHeadBytes: 8 << 10})
	lines := genLines(3000, 21)
	cuts := make(chan struct{}, 1)
	flushed := make(chan error, 1)
	go func() {
		var err error
		for range cuts {
			if ferr := s.Flush(); ferr != nil && err == nil {
				err = ferr
			}
		}
		flushed <- err
	}()
	ctx := context.Background()
	const per = 10
	for i, round := 0, 0; i < len(lines); round++ {
		var ps []*Pending
		for k := 0; k <= round%5 && i < len(lines); k++ {
			n := min(per, len(lines)-i)
			p := prepare(t, s, "default", lines[i:i+n])
			p.Write(ctx)
			ps = append(ps, p)
			i += n
			select {
			case cuts <- struct{}{}:
			default: // a cut is asked for already
			}
		}
		if round%7 == 3 {
			// A cut by the writer itself, its batches in flight.
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		for k := len(ps) - 1; k >= 0; k-- {
			if err := ps[k].Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(cuts)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Flushes < 2 {
		t.Errorf("%d flushes, want the heads cut while batches were in flight", st.Flushes)
	}
	diff(t, exportAll(t, s), expected(t, map[string][]string{"default": lines}))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAppendCancelledWhileWaitingForRoom: while a stuck flush keeps the
// heads full, an Append waiting for room returns ctx's error once its
// context is cancelled (the client hung up), and stores nothing; the
// appends acknowledged before it are all stored.
func TestAppendCancelledWhileWaitingForRoom(t *testing.T) {
	gate := make(chan struct{})
	var stuck atomic.Bool
	fs := vfs.NewFault(vfs.NewMem(), func(op vfs.Op, name string) error {
		if op == vfs.OpCreate && strings.Contains(name, ".part") {
			stuck.Store(true)
			<-gate
		}
		return nil
	})
	s := open(t, fs, Options{HeadBytes: 8 << 10, MaxHeadBytes: 32 << 10})
	lines := genLines(4000, 22)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acked := make(chan int, len(lines))
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < len(lines); i += 20 {
			p, err := prepareLines(s, "default", lines[i:i+20])
			if err == nil {
				p.Write(ctx)
				err = p.Wait()
			}
			if err != nil {
				errc <- err
				return
			}
			acked <- i + 20
		}
		errc <- nil
	}()
	// The deadline only stops a test that hangs.
	deadline := time.Now().Add(2 * time.Minute)
	for !stuck.Load() || !waitingForRoom() {
		select {
		case err := <-errc:
			t.Fatalf("every append returned (err %v) while the flush was stuck", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no append waits for room (stats %+v)", s.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Append waiting for room returned %v after its context was cancelled, want context.Canceled", err)
	}
	close(gate)
	done := 0
	for len(acked) > 0 {
		done = <-acked
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	diff(t, exportAll(t, s), expected(t, map[string][]string{"default": lines[:done]}))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
