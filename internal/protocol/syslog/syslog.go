// Package syslog frames syslog messages from a TCP stream (RFC 6587:
// octet counting, "LEN SP MSG", or non-transparent framing, one message a
// line; detected per frame) and from UDP datagrams (one message each),
// and builds batches of them with the syslog line parser (RFC 5424 and
// RFC 3164). A message keeps its bytes as sent, newlines inside an
// octet-counted frame included.
//
// # Framing
//
// A frame that starts with "LEN SP <", LEN being 1 to 9 digits without a
// leading zero, is octet counted: LEN bytes follow the space, starting
// with the "<" of the message's PRI (every RFC 5424 sender writes one).
// Anything else is a line, ended by LF (a CR before it, and one LF ending
// an octet-counted frame, are not part of the message). Requiring the
// "<" keeps a line that merely starts with digits ("2026-01-15T08:00:00Z
// host app: ...", "42 things") a line, instead of a count that would
// swallow the messages after it. Empty lines are skipped.
//
// A bad frame never costs the frames after it, as rsyslog's imtcp does:
//
//   - a message longer than the limit is truncated to it (Frame.Fault is
//     FaultTooLong) and the rest of it skipped: to the next LF for a line,
//     by its count for an octet-counted frame;
//   - a count over MaxOctetCount cannot be a frame sluice would read: the
//     bytes up to the next LF are skipped (FaultOctetCount) and framing
//     starts again after it;
//   - a stream that ends inside an octet-counted frame gives what came
//     (FaultIncomplete); one that ends inside a line gives the line.
//
// It knows nothing of storage or sockets beyond a reader.
package syslog

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// MaxFrame is the default limit of a message's length.
const MaxFrame = 1 << 20

// MaxOctetCount is the largest octet count taken as a frame's length; a
// larger one is garbage, or a frame too large to be worth skipping by its
// count.
const MaxOctetCount = 64 << 20

// maxCountDigits bounds the digits of an octet count: 9 hold any count up
// to MaxOctetCount and more, so that a larger one is still recognised as
// a count (and skipped as absurd), not taken for a line.
const maxCountDigits = 9

// Fault says what was wrong with a frame.
type Fault uint8

const (
	// FaultNone: a whole message.
	FaultNone Fault = iota
	// FaultTooLong: the message was longer than the limit; Frame.Msg
	// holds its first bytes, the rest was skipped.
	FaultTooLong
	// FaultOctetCount: an octet count over MaxOctetCount; the bytes up
	// to the next LF were skipped and Frame.Msg is empty.
	FaultOctetCount
	// FaultIncomplete: the stream ended inside an octet-counted frame;
	// Frame.Msg holds what came.
	FaultIncomplete
)

var faultNames = [...]string{"", "too_long", "bad_octet_count", "incomplete"}

// String returns the fault's name for metrics and logs.
func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "unknown"
}

// Frame is one frame read from a stream.
type Frame struct {
	// Msg is the message, valid until the next call to Next.
	Msg []byte
	// Fault says what was wrong with the frame, if anything.
	Fault Fault
	// Size is the frame's length as sent (its octet count, or its
	// line's length), which is more than len(Msg) when truncated.
	Size int64
}

// Framer reads syslog frames from a stream.
//
// Concurrency: one goroutine.
type Framer struct {
	r   *bufio.Reader
	max int
	buf []byte
	err error // sticky: returned once the frame it ended is returned
}

// NewFramer returns a framer reading from r that truncates messages
// longer than max bytes (0: MaxFrame).
func NewFramer(r *bufio.Reader, max int) *Framer {
	if max <= 0 {
		max = MaxFrame
	}
	return &Framer{r: r, max: max}
}

// Next returns the next frame. Its error is io.EOF at the end of the
// stream, or the reader's error; after an error, Next returns it again.
func (fr *Framer) Next() (Frame, error) {
	for {
		if fr.err != nil {
			return Frame{}, fr.err
		}
		c, err := fr.r.Peek(1)
		if err != nil {
			fr.err = err
			return Frame{}, err
		}
		if c[0] >= '1' && c[0] <= '9' {
			if n, hdr, ok := fr.octetCount(); ok {
				return fr.counted(n, hdr), nil
			}
		}
		f, ok := fr.line()
		if ok {
			return f, nil
		}
	}
}

// octetCount reports whether the stream holds "LEN SP <" here, without
// consuming it: the count, and the header's length up to the "<". It looks
// at the bytes buffered, and waits for more only one at a time, so never
// for a byte a frame might not have (past a line's LF, say).
func (fr *Framer) octetCount() (n, hdr int, ok bool) {
	p, _ := fr.r.Peek(min(fr.r.Buffered(), maxCountDigits+2))
	at := func(i int) (byte, bool) {
		if i >= len(p) {
			var err error
			if p, err = fr.r.Peek(i + 1); err != nil {
				return 0, false // too short for a frame: a line, unterminated
			}
		}
		return p[i], true
	}
	for i := 0; ; i++ {
		b, ok := at(i)
		switch {
		case !ok:
			return 0, 0, false
		case b >= '0' && b <= '9' && i < maxCountDigits:
			n = n*10 + int(b-'0')
		case b == ' ' && i > 0:
			if b, ok := at(i + 1); !ok || b != '<' {
				return 0, 0, false
			}
			return n, i + 1, true
		default:
			return 0, 0, false
		}
	}
}

// counted reads an octet-counted frame of n bytes after a header of hdr
// bytes.
func (fr *Framer) counted(n, hdr int) Frame {
	fr.r.Discard(hdr)
	if n > MaxOctetCount {
		fr.skipLine()
		return Frame{Fault: FaultOctetCount, Size: int64(n)}
	}
	keep := min(n, fr.max)
	fr.buf = append(fr.buf[:0], make([]byte, keep)...)
	got, err := io.ReadFull(fr.r, fr.buf)
	if err == nil && n > keep {
		var skipped int
		skipped, err = fr.r.Discard(n - keep)
		got += skipped
	}
	if err != nil {
		fr.err = eofOf(err)
		return Frame{Msg: fr.buf[:min(got, keep)], Fault: FaultIncomplete, Size: int64(n)}
	}
	if n > keep {
		return Frame{Msg: fr.buf, Fault: FaultTooLong, Size: int64(n)}
	}
	// rsyslog's and syslog-ng's RFC 5424 senders end the message with a
	// newline that the count includes; receivers drop it (rsyslog's
	// imtcp drops one), and so does sluice: one LF, and a CR before it.
	msg := bytes.TrimSuffix(fr.buf, []byte{'\n'})
	return Frame{Msg: bytes.TrimSuffix(msg, []byte{'\r'}), Size: int64(n)}
}

// line reads a frame up to the next LF, or to the end of the stream. ok is
// false for an empty line.
func (fr *Framer) line() (f Frame, ok bool) {
	buf := fr.buf[:0]
	var size int64 // the line's length, CR included
	var last byte  // its last byte
	for {
		chunk, err := fr.r.ReadSlice('\n')
		text := chunk
		if err == nil {
			text = chunk[:len(chunk)-1]
		}
		size += int64(len(text))
		if len(text) > 0 {
			last = text[len(text)-1]
		}
		// Keep up to the limit, and a CR that may follow it.
		if room := fr.max + 1 - len(buf); room > 0 {
			buf = append(buf, text[:min(room, len(text))]...)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		fr.err = err // the stream ended: the line so far is the last
		break
	}
	fr.buf = buf
	if size > 0 && last == '\r' {
		size--
		if int64(len(buf)) > size {
			buf = buf[:size]
		}
	}
	if size > int64(fr.max) {
		return Frame{Msg: buf[:fr.max], Fault: FaultTooLong, Size: size}, true
	}
	if size == 0 {
		return Frame{}, false
	}
	return Frame{Msg: buf, Size: size}, true
}

// skipLine discards the stream up to and including the next LF.
func (fr *Framer) skipLine() {
	for {
		_, err := fr.r.ReadSlice('\n')
		if err == nil {
			return
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			fr.err = err
			return
		}
	}
}

// eofOf turns io.ErrUnexpectedEOF, which a frame cut short gives, into
// io.EOF: the stream ended, and the frame already says it was cut.
func eofOf(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return io.EOF
	}
	return err
}

// Batcher builds batches of syslog messages.
//
// Concurrency: one goroutine.
type Batcher struct {
	bl *record.Builder
	lp lines.Parser
	b  *record.Batch
	n  int64
}

// NewBatcher returns a batcher whose records take their time, stream and
// message as cfg says.
func NewBatcher(cfg record.Config) (*Batcher, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	lp, err := parse.NewLineParser("syslog", 0, timestamp.Auto)
	if err != nil {
		return nil, err
	}
	bt := &Batcher{bl: record.NewBuilder(cfg), lp: lp, b: record.GetBatch()}
	return bt, nil
}

// Add appends one message. A truncated message's record gets the field
// truncated=true. REQUIRES: the batch's ReceiveTime is set (Reset sets
// it).
func (bt *Batcher) Add(msg []byte, truncated bool) {
	b := bt.b
	if len(b.Records) == 0 && len(b.Errors) == 0 && len(b.Data) == 0 {
		bt.bl.Start(b)
	}
	start := uint32(len(b.Data))
	b.Data = append(b.Data, msg...)
	bt.n++
	bt.bl.SetPos(bt.n, 0)
	nrec := len(b.Records)
	bt.lp.ParseLine(bt.bl, record.Span{Off: start, Len: uint32(len(msg))})
	if truncated && len(b.Records) > nrec {
		bt.flagTruncated()
	}
}

var (
	nameTruncated = []byte("truncated")
	constTrue     = record.Constant("true")
)

// flagTruncated adds truncated=true to the record just built. Its fields
// are the batch's last ones, so the field extends them.
func (bt *Batcher) flagTruncated() {
	b := bt.b
	r := &b.Records[len(b.Records)-1]
	id, ok := bt.bl.Name(nameTruncated)
	if !ok || int(r.FieldStart+r.NumFields) != len(b.Fields) {
		return // the name table is full: the metric still counts it
	}
	b.Fields = append(b.Fields, record.Field{Name: id, Kind: record.Bool, Flags: record.Const, Raw: constTrue, Num: 1})
	r.NumFields++
}

// Len returns the bytes of messages in the batch.
func (bt *Batcher) Len() int { return len(bt.b.Data) }

// Batch returns the batch built so far; valid until Reset.
func (bt *Batcher) Batch() *record.Batch { return bt.b }

// Reset empties the batch for the next messages, received at now.
func (bt *Batcher) Reset(now int64) {
	bt.b.Reset()
	bt.b.ReceiveTime = now
}

// Close returns the batch's buffers.
func (bt *Batcher) Close() { record.PutBatch(bt.b) }
