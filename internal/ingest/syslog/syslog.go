// Package syslog frames syslog messages from a TCP stream (RFC 6587:
// octet counting, "LEN SP MSG", or non-transparent framing, one message a
// line; detected per frame) and from UDP datagrams (one message each),
// and builds batches of them with the syslog line parser (RFC 5424 and
// RFC 3164). A message keeps its bytes as sent, newlines inside an
// octet-counted frame included.
//
// It knows nothing of storage or sockets beyond a reader.
package syslog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// MaxFrame bounds a message's length.
const MaxFrame = 1 << 20

// ErrFrame is matched by the error for a frame that cannot be read; the
// connection should be closed, as its framing is lost.
var ErrFrame = errors.New("syslog framing")

// NextFrame reads one message from r: octet counted when it starts with a
// digit, else up to the next LF; one trailing LF (and a CR before it) is
// not part of the message either way. The message is valid until the next
// call.
func NextFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	c, err := r.Peek(1)
	if err != nil {
		return nil, err
	}
	if c[0] >= '1' && c[0] <= '9' {
		// Octet counting: digits, one space, that many bytes.
		var n int
		for i := 0; ; i++ {
			b, err := r.ReadByte()
			if err != nil {
				return nil, fmt.Errorf("%w: octet count: %v", ErrFrame, err)
			}
			if b == ' ' {
				break
			}
			if b < '0' || b > '9' || i > 7 {
				return nil, fmt.Errorf("%w: bad octet count", ErrFrame)
			}
			n = n*10 + int(b-'0')
		}
		if n > MaxFrame {
			return nil, fmt.Errorf("%w: frame of %d bytes, more than the limit of %d", ErrFrame, n, MaxFrame)
		}
		buf = append(buf[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("%w: frame of %d bytes: %v", ErrFrame, n, err)
		}
		// rsyslog's and syslog-ng's RFC 5424 senders end the message with
		// a newline that the count includes; receivers drop it (rsyslog's
		// imtcp drops one), and so does sluice: one LF, and a CR before it.
		buf = bytes.TrimSuffix(buf, []byte{'\n'})
		return bytes.TrimSuffix(buf, []byte{'\r'}), nil
	}
	buf = buf[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxFrame {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrFrame, MaxFrame)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(buf) > 0 {
			break // the last line, unterminated
		}
		return nil, err
	}
	buf = bytes.TrimSuffix(buf, []byte{'\n'})
	return bytes.TrimSuffix(buf, []byte{'\r'}), nil
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

// Add appends one message. REQUIRES: the batch's ReceiveTime is set
// (Reset sets it).
func (bt *Batcher) Add(msg []byte) {
	if len(bt.b.Records) == 0 && len(bt.b.Errors) == 0 && len(bt.b.Data) == 0 {
		bt.bl.Start(bt.b)
	}
	start := uint32(len(bt.b.Data))
	bt.b.Data = append(bt.b.Data, msg...)
	bt.n++
	bt.bl.SetPos(bt.n, 0)
	bt.lp.ParseLine(bt.bl, record.Span{Off: start, Len: uint32(len(msg))})
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
