package parse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/multiline"
	"github.com/sluicelog/sluice/internal/record"
)

// Options configure a Parser.
type Options struct {
	// Format is one of Formats; "" means auto.
	Format string
	// Record says which fields give a record its time, message and stream.
	Record record.Config
	// MaxLineSize rejects longer lines (0: lines.DefaultMaxLineSize).
	MaxLineSize int
	// MaxDepth limits JSON nesting (0: the json package's default).
	MaxDepth int
	// Multiline, when set, is an RE2 expression matching the first line of
	// a record; the lines that don't match are joined to the record
	// before them (stack traces).
	Multiline string
}

// Parser parses one input, of one format, into batches.
//
// Concurrency: one goroutine.
type Parser struct {
	sp    lines.Splitter
	bl    *record.Builder
	lp    lines.Parser
	join  *multiline.Joiner
	chunk int
	buf   []byte // Reader's
}

// ReleaseBuffer drops the buffer Reader keeps for the parser's next
// input (4 MiB or more): for a parser kept idle among many.
func (p *Parser) ReleaseBuffer() { p.buf = nil }

// New returns a parser for opts.
func New(opts Options) (*Parser, error) {
	if err := opts.Record.Check(); err != nil {
		return nil, err
	}
	lp, err := NewLineParser(opts.Format, opts.MaxDepth, opts.Record.TimeLayout)
	if err != nil {
		return nil, err
	}
	p := &Parser{
		sp: lines.Splitter{MaxLineSize: opts.MaxLineSize},
		bl: record.NewBuilder(opts.Record),
		lp: lp,
	}
	if opts.Multiline != "" {
		if p.join, err = multiline.New(lp, multiline.Config{Start: opts.Multiline}); err != nil {
			return nil, err
		}
	}
	maxLine := opts.MaxLineSize
	if maxLine <= 0 {
		maxLine = lines.DefaultMaxLineSize
	}
	// A chunk must hold the longest line with room to spare, so that every
	// chunk makes progress.
	p.chunk = max(4<<20, 2*maxLine)
	return p, nil
}

// ResetAt prepares the parser for a piece of an input that starts at a
// line boundary after lines lines and offset bytes, so that errors name
// the lines and offsets of the whole input. Pieces can then be parsed in
// parallel by several parsers. Not for multiline joining, which needs the
// lines before.
func (p *Parser) ResetAt(lines, offset int64) error {
	if p.join != nil {
		return errors.New("parse: multiline input cannot be parsed in pieces")
	}
	p.sp.ResetAt(lines, offset)
	return nil
}

// Lines returns how many input lines the parser has seen.
func (p *Parser) Lines() int64 {
	if p.join != nil {
		return p.sp.Lines() - p.join.Recounted()
	}
	return p.sp.Lines()
}

// Offset returns how many input bytes the parser has consumed.
func (p *Parser) Offset() int64 { return p.sp.Offset() }

// Parse parses the complete lines of b.Data into records appended to b and
// returns how many bytes it consumed; the caller carries the rest into the
// next buffer. With final set the input ends with b.Data and all of it is
// consumed. b.ReceiveTime must be set.
func (p *Parser) Parse(b *record.Batch, final bool) int {
	p.bl.Start(b)
	if p.join != nil {
		return p.join.Run(&p.sp, p.bl, final)
	}
	return lines.Run(&p.sp, p.bl, p.lp, final)
}

// BatchFunc receives each batch of an input. The batch and every view into
// it are valid only until it returns.
type BatchFunc func(b *record.Batch) error

// File parses the file at path, mapped into memory so that records view
// the file's pages directly, and calls fn for each batch. Inputs that
// can't be mapped (pipes, terminals) are read instead.
func (p *Parser) File(ctx context.Context, path string, fn BatchFunc) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Size() == 0 || st.Size() > 1<<40 {
		return p.Reader(ctx, f, fn)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return p.Reader(ctx, f, fn)
	}
	defer syscall.Munmap(data)
	_ = syscall.Madvise(data, syscall.MADV_SEQUENTIAL)
	return p.Bytes(ctx, data, fn)
}

// Bytes parses data, one whole input, in chunks.
func (p *Parser) Bytes(ctx context.Context, data []byte, fn BatchFunc) error {
	b := record.GetBatch()
	defer func() {
		b.Data = nil // it views data, which must never be appended to
		record.PutBatch(b)
	}()
	for off := 0; off < len(data); {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(off+p.chunk, len(data))
		b.Reset()
		b.Data = data[off:end:end]
		b.ReceiveTime = time.Now().UnixNano()
		off += p.Parse(b, end == len(data))
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// Reader parses everything r yields, reading in large blocks, and calls fn
// for each batch.
func (p *Parser) Reader(ctx context.Context, r io.Reader, fn BatchFunc) error {
	b := record.GetBatch()
	defer record.PutBatch(b)
	// The buffer stays with the parser for its next input: a server
	// reuses parsers for request after request.
	if cap(p.buf) < p.chunk {
		p.buf = make([]byte, 0, p.chunk)
	}
	buf := p.buf[:0]
	var carry int
	for eof := false; !eof; {
		if err := ctx.Err(); err != nil {
			return err
		}
		// One read after the carried partial line: a file fills the
		// buffer, a pipe gives what it has, so a slow writer is not kept
		// waiting for a full buffer.
		buf = buf[:carry]
		n, err := r.Read(buf[carry:cap(buf)])
		buf = buf[:carry+n]
		if errors.Is(err, io.EOF) {
			eof = true
		} else if err != nil {
			return fmt.Errorf("read input: %w", err)
		}
		b.Reset()
		b.Data = buf
		b.ReceiveTime = time.Now().UnixNano()
		used := p.Parse(b, eof)
		if err := fn(b); err != nil {
			return err
		}
		carry = copy(buf, buf[used:])
		b.Data = nil
	}
	return nil
}
