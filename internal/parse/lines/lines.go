package lines

import (
	"bytes"
	"fmt"

	"github.com/sluicelog/sluice/internal/record"
)

// DefaultMaxLineSize is the longest line accepted unless configured.
const DefaultMaxLineSize = 1 << 20

// Parser parses one line into a record. Implementations call bl.Begin,
// then either bl.End or bl.Fail, exactly once per line (or per group of
// lines when they are joined); a line that holds no record (blank JSON
// whitespace) may call neither.
type Parser interface {
	ParseLine(bl *record.Builder, line record.Span)
}

// Splitter finds lines in successive buffers of one input.
//
// Concurrency: one goroutine.
type Splitter struct {
	// MaxLineSize rejects longer lines; 0 means DefaultMaxLineSize.
	MaxLineSize int

	lineNo   int64 // lines started so far
	base     int64 // input offset of the current buffer's Data[0]
	started  bool  // past the BOM check
	skipping bool  // inside a line already rejected as too long
}

// Reset prepares the splitter for a new input.
func (s *Splitter) Reset() {
	*s = Splitter{MaxLineSize: s.MaxLineSize}
}

// ResetAt prepares the splitter for a piece of an input that starts at a
// line boundary, after lines lines and offset bytes: line numbers and
// offsets in errors count from there. Past offset 0 there is no BOM.
func (s *Splitter) ResetAt(lines, offset int64) {
	*s = Splitter{MaxLineSize: s.MaxLineSize, lineNo: lines, base: offset, started: offset > 0}
}

// Offset returns how many input bytes have been consumed so far.
func (s *Splitter) Offset() int64 { return s.base }

// Lines returns how many lines have been seen so far.
func (s *Splitter) Lines() int64 { return s.lineNo }

func (s *Splitter) maxLine() int {
	if s.MaxLineSize > 0 {
		return s.MaxLineSize
	}
	return DefaultMaxLineSize
}

// Next returns the line that starts at pos in data, without its "\n" or
// "\r\n", and the position after its terminator. ok is false when data
// holds no complete line at pos; with final set, an unterminated last line
// counts as complete. Lines too long are reported through bl and skipped.
// Before the first Next on a buffer, call Start.
func (s *Splitter) Next(bl *record.Builder, data []byte, pos int, final bool) (line record.Span, next int, ok bool) {
	for pos < len(data) {
		if !s.started {
			if rest := data[pos:]; len(rest) < len(bom) && bytes.HasPrefix(bom, rest) && !final {
				return record.Span{}, pos, false // maybe a BOM cut by the buffer's end
			}
			s.started = true
			if bytes.HasPrefix(data[pos:], bom) {
				pos += len(bom)
				continue
			}
		}
		rest := data[pos:]
		end := bytes.IndexByte(rest, '\n')
		if s.skipping {
			if end < 0 {
				return record.Span{}, len(data), false
			}
			s.skipping = false
			pos += end + 1
			continue
		}
		n := end
		next = pos + end + 1
		if end < 0 {
			// A line of the maximum size may still wait for its "\r\n".
			if len(rest) > s.maxLine()+1 {
				s.tooLong(bl, pos, len(rest))
				s.skipping = !final
				return record.Span{}, len(data), false
			}
			if !final {
				return record.Span{}, pos, false
			}
			n, next = len(rest), len(data)
		}
		if n > 0 && rest[n-1] == '\r' {
			n--
		}
		if n > s.maxLine() {
			s.tooLong(bl, pos, n)
			pos = next
			continue
		}
		s.lineNo++
		if n == 0 {
			pos = next
			continue
		}
		bl.SetPos(s.lineNo, s.base)
		return record.Span{Off: uint32(pos), Len: uint32(n)}, next, true
	}
	return record.Span{}, pos, false
}

var bom = []byte("\xEF\xBB\xBF")

func (s *Splitter) tooLong(bl *record.Builder, pos, n int) {
	s.lineNo++
	bl.SetPos(s.lineNo, s.base)
	bl.Begin(record.Span{Off: uint32(pos)})
	bl.Fail(record.ErrLineTooLong, s.maxLine()+1, fmt.Sprintf("line longer than %d bytes", s.maxLine()))
}

// Advance tells the splitter that the caller consumed n bytes of the
// buffer, so that the next buffer's offsets continue from there.
func (s *Splitter) Advance(n int) { s.base += int64(n) }

// Run parses every complete line of bl's batch Data with p and returns the
// bytes consumed; the caller carries data[n:] into its next buffer. With
// final set, the input ends here and everything is consumed.
func Run(s *Splitter, bl *record.Builder, p Parser, final bool) (n int) {
	data := bl.Batch().Data
	pos := 0
	for {
		line, next, ok := s.Next(bl, data, pos, final)
		pos = next
		if !ok {
			break
		}
		p.ParseLine(bl, line)
	}
	s.Advance(pos)
	return pos
}
