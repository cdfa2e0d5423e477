package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/record"
)

// Protocol is the protocol label of the loader's batches in the flow's
// metrics.
const Protocol = "file"

// Options configure Load.
type Options struct {
	Parse parse.Options
	// Tenant is the tenant of every batch; the flow refuses batches
	// without one (flow.ErrNoTenant).
	Tenant string
	// Workers parse and store chunks in parallel; 0 means twice the
	// number of CPUs, so that one worker parses while another waits for
	// its batch to be durable.
	Workers int
	// ChunkSize is the size of the reads, and so of the batches; 0 means
	// 1 MiB.
	ChunkSize int
	// OnDone, if set, is called with the number of input lines (counted
	// across all inputs) of the longest prefix of the input whose every
	// line is stored or rejected. Calls are serialized and the number
	// only grows.
	OnDone func(lines int64)
	// OnError, if set, is called with each rejected line. Calls are
	// serialized.
	OnError func(input string, e *record.LineError)
}

// Progress is what Load has done so far, readable while it runs.
type Progress struct {
	BytesRead atomic.Int64
	BytesDone atomic.Int64
	LinesDone atomic.Int64
	Records   atomic.Int64
	BadUTF8   atomic.Int64
	Rejected  [8]atomic.Int64 // by record.ErrKind
	// Refused counts the lines the flow's admission refused (none
	// without an Admission).
	Refused atomic.Int64
}

// chunk is a piece of one input that starts and ends at line boundaries.
type chunk struct {
	seq        int64
	input      string
	buf        *[]byte
	data       []byte
	lineBase   int64 // lines of the input before the chunk
	offBase    int64
	lines      int64 // lines in the chunk
	received   int64 // receive time (Unix ns), increasing in input order
	tooLong    bool  // the chunk is one line over the limit: reject it
	tooLongLen int64
}

// Load reads every input ("-" is stdin), parses it as opts.Parse says and
// writes each batch, of opts.Tenant, through f: batches are parsed and
// prepared (f.Admit, f.Prepare) on many goroutines at once, written in
// input order, one at a time, and waited for in parallel. Progress.Records
// counts the lines f stored. Load stops at the first error of f's sink or
// of reading, and when ctx is done.
func Load(ctx context.Context, inputs []string, stdin io.Reader, opts Options, f *flow.Flow, prog *Progress) error {
	if prog == nil {
		prog = new(Progress)
	}
	if opts.Parse.Multiline != "" {
		return loadJoined(ctx, inputs, stdin, opts, f, prog)
	}
	if opts.Workers <= 0 {
		opts.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 1 << 20
	}
	maxLine := opts.Parse.MaxLineSize
	if maxLine <= 0 {
		maxLine = lines.DefaultMaxLineSize
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	pool := sync.Pool{New: func() any { b := make([]byte, 0, opts.ChunkSize+maxLine); return &b }}
	chunks := make(chan *chunk, opts.Workers)
	doneCh := make(chan *chunk, opts.Workers)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	report := func(input string, e *record.LineError) {
		prog.Rejected[e.Kind].Add(1)
		if opts.OnError != nil {
			errMu.Lock()
			opts.OnError(input, e)
			errMu.Unlock()
		}
	}

	turn := newTurnstile()
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(ctx, opts, chunks, doneCh, f, turn, report, prog); err != nil {
				cancel(err)
			}
		}()
	}
	// The reader: one goroutine, so chunks are numbered in input order.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(chunks)
		if err := read(ctx, inputs, stdin, opts.ChunkSize, maxLine, &pool, chunks, prog); err != nil {
			cancel(err)
		}
	}()
	// Completion in input order.
	var ackWG sync.WaitGroup
	ackWG.Add(1)
	go func() {
		defer ackWG.Done()
		pending := map[int64]*chunk{}
		var next, total int64
		for c := range doneCh {
			pending[c.seq] = c
			advanced := false
			for pending[next] != nil {
				c := pending[next]
				delete(pending, next)
				total += c.lines
				prog.LinesDone.Store(total)
				next++
				advanced = true
				if c.buf != nil {
					pool.Put(c.buf)
				}
			}
			if advanced && opts.OnDone != nil {
				opts.OnDone(total)
			}
		}
	}()
	wg.Wait()
	close(doneCh)
	ackWG.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// read cuts the inputs into chunks.
func read(ctx context.Context, inputs []string, stdin io.Reader, size, maxLine int, pool *sync.Pool, out chan<- *chunk, prog *Progress) error {
	var seq, lastReceived int64
	send := func(c *chunk) error {
		c.seq = seq
		seq++
		// Receive times increase in input order, so lines without a
		// timestamp keep their order whichever worker stores them.
		c.received = max(time.Now().UnixNano(), lastReceived+1)
		lastReceived = c.received
		select {
		case out <- c:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	for _, name := range inputs {
		var r io.Reader
		if name == "-" {
			// A pipe can stay idle for ever: don't let it hold up a cancel.
			r = &cancelReader{ctx: ctx, r: stdin}
		} else {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		var lineBase, offBase int64
		var carry []byte // the unfinished line at the end of the last read
		for eof := false; !eof; {
			bp := pool.Get().(*[]byte)
			buf := append((*bp)[:0], carry...)
			carry = nil
			// Fill to size bytes holding a newline, to EOF, or past the
			// longest line allowed.
			for !eof && (len(buf) < size || bytes.IndexByte(buf, '\n') < 0) && len(buf) <= maxLine+size {
				// Read up to size bytes; past that only while no line has
				// ended yet (a long line), so batches stay about size.
				want := size
				if len(buf) >= size {
					want = len(buf) + size
				}
				buf = slices.Grow(buf, want-len(buf))
				n, err := r.Read(buf[len(buf):want])
				buf = buf[:len(buf)+n]
				prog.BytesRead.Add(int64(n))
				if errors.Is(err, io.EOF) {
					eof = true
				} else if err != nil {
					return fmt.Errorf("read %s: %w", name, err)
				}
				// A short read is a pipe giving what it has: store the
				// whole lines now rather than wait for a full chunk.
				if len(buf) < want && bytes.IndexByte(buf, '\n') >= 0 {
					break
				}
			}
			*bp = buf
			c := &chunk{input: name, buf: bp, lineBase: lineBase, offBase: offBase}
			cut := len(buf)
			if !eof {
				cut = bytes.LastIndexByte(buf, '\n') + 1
			}
			if cut == 0 && !eof {
				// One line longer than the limit: reject it once and
				// skip to its end.
				rest, n, err := skipLine(r, buf[:cap(buf)], prog)
				eof = errors.Is(err, io.EOF)
				if err != nil && !eof {
					return fmt.Errorf("read %s: %w", name, err)
				}
				carry = append(carry, rest...)
				c.tooLong, c.lines, c.tooLongLen = true, 1, int64(len(buf))+n
				lineBase++
				offBase += c.tooLongLen
				if err := send(c); err != nil {
					return err
				}
				continue
			}
			c.data = buf[:cut]
			carry = append(carry, buf[cut:]...)
			c.lines = int64(bytes.Count(c.data, []byte{'\n'}))
			if eof && len(c.data) > 0 && c.data[len(c.data)-1] != '\n' {
				c.lines++
			}
			lineBase += c.lines
			offBase += int64(len(c.data))
			if err := send(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipLine reads r up to and including the next newline, using buf as
// scratch, and returns the bytes read after that newline and how many
// bytes it skipped.
func skipLine(r io.Reader, buf []byte, prog *Progress) ([]byte, int64, error) {
	var skipped int64
	for {
		n, err := r.Read(buf)
		prog.BytesRead.Add(int64(n))
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return buf[i+1 : n], skipped + int64(i+1), nil
		}
		skipped += int64(n)
		if err != nil {
			return nil, skipped, err
		}
	}
}

// work parses chunks and stores their batches.
func work(ctx context.Context, opts Options, in <-chan *chunk, done chan<- *chunk, f *flow.Flow, turn *turnstile, report func(string, *record.LineError), prog *Progress) error {
	p, err := parse.New(opts.Parse)
	if err != nil {
		return err
	}
	b := record.GetBatch()
	defer func() {
		b.Data = nil
		record.PutBatch(b)
	}()
	for c := range in {
		if ctx.Err() != nil {
			continue // drain, so the reader never blocks
		}
		if c.tooLong {
			report(c.input, &record.LineError{Line: c.lineBase + 1, Col: 1, Offset: c.offBase, Kind: record.ErrLineTooLong,
				Msg: fmt.Sprintf("line of %d bytes is longer than the limit", c.tooLongLen)})
			prog.BytesDone.Add(c.tooLongLen)
			if err := turn.wait(ctx, c.seq); err != nil {
				return err
			}
			turn.pass(c.seq)
			done <- c
			continue
		}
		if err := p.ResetAt(c.lineBase, c.offBase); err != nil {
			return err
		}
		b.Reset()
		b.Data = c.data
		b.ReceiveTime = c.received
		b.Tenant = opts.Tenant
		p.Parse(b, true)
		for i := range b.Errors {
			report(c.input, &b.Errors[i])
		}
		prog.BadUTF8.Add(int64(b.BadUTF8))
		st, err := prepare(f, b, prog)
		if err != nil {
			return err
		}
		// Store in input order; wait for durability in parallel.
		if err := turn.wait(ctx, c.seq); err != nil {
			return err
		}
		st.Write(ctx)
		turn.pass(c.seq)
		n, err := st.Wait()
		if err != nil {
			return err
		}
		prog.Records.Add(int64(n))
		prog.BytesDone.Add(int64(len(c.data)))
		b.Data = nil
		done <- c
	}
	return nil
}

// prepare admits b through f and prepares what passes.
func prepare(f *flow.Flow, b *record.Batch, prog *Progress) (*flow.Prepared, error) {
	in := flow.Input{Protocol: Protocol}
	res := f.Admit(in, b)
	prog.Refused.Add(int64(res.Refused))
	return f.Prepare(in, b)
}

// loadJoined loads inputs whose records span lines (opts.Parse.Multiline)
// in one goroutine: joining needs the lines before each line.
func loadJoined(ctx context.Context, inputs []string, stdin io.Reader, opts Options, f *flow.Flow, prog *Progress) error {
	var total int64
	for _, name := range inputs {
		p, err := parse.New(opts.Parse)
		if err != nil {
			return err
		}
		var seen int64
		each := func(b *record.Batch) error {
			for i := range b.Errors {
				prog.Rejected[b.Errors[i].Kind].Add(1)
				if opts.OnError != nil {
					opts.OnError(name, &b.Errors[i])
				}
			}
			prog.BadUTF8.Add(int64(b.BadUTF8))
			b.Tenant = opts.Tenant
			st, err := prepare(f, b, prog)
			if err != nil {
				return err
			}
			st.Write(ctx)
			n, err := st.Wait()
			if err != nil {
				return err
			}
			prog.Records.Add(int64(n))
			prog.BytesDone.Add(p.Offset() - seen)
			prog.BytesRead.Add(p.Offset() - seen)
			seen = p.Offset()
			return nil
		}
		if name == "-" {
			err = p.Reader(ctx, stdin, each)
		} else {
			err = p.File(ctx, name, each)
		}
		if err != nil {
			return err
		}
		// The joiner may hold lines back until it sees the next record,
		// so an input is done only at its end.
		total += p.Lines()
		prog.LinesDone.Store(total)
		if opts.OnDone != nil {
			opts.OnDone(total)
		}
	}
	return nil
}

// turnstile lets chunks through one at a time in sequence order.
type turnstile struct {
	mu      sync.Mutex
	next    int64
	waiting map[int64]chan struct{}
}

func newTurnstile() *turnstile { return &turnstile{waiting: map[int64]chan struct{}{}} }

// wait returns once every chunk before seq has passed, or ctx is done.
func (t *turnstile) wait(ctx context.Context, seq int64) error {
	t.mu.Lock()
	if t.next == seq {
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	t.waiting[seq] = ch
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// pass lets the chunk after seq through.
func (t *turnstile) pass(seq int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next = seq + 1
	if ch, ok := t.waiting[t.next]; ok {
		delete(t.waiting, t.next)
		close(ch)
	}
}

// cancelReader reads r in a goroutine of its own so that a Read blocked on
// an idle pipe returns when ctx is done. The goroutine then ends with the
// pending read (at EOF or when the writer writes or closes).
type cancelReader struct {
	ctx     context.Context
	r       io.Reader
	pending chan readResult // the read in flight, if any
	rest    readResult      // what a read gave beyond the caller's buffer
}

type readResult struct {
	data []byte
	err  error
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if len(c.rest.data) > 0 || c.rest.err != nil {
		n := copy(p, c.rest.data)
		c.rest.data = c.rest.data[n:]
		if len(c.rest.data) > 0 {
			return n, nil
		}
		err := c.rest.err
		c.rest = readResult{}
		return n, err
	}
	if c.pending == nil {
		c.pending = make(chan readResult, 1)
		buf := make([]byte, len(p))
		go func(ch chan readResult) {
			n, err := c.r.Read(buf)
			ch <- readResult{buf[:n], err}
		}(c.pending)
	}
	select {
	case res := <-c.pending:
		c.pending = nil
		c.rest = res
		return c.Read(p)
	case <-c.ctx.Done():
		return 0, context.Cause(c.ctx)
	}
}
