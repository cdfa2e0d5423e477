package multiline

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Defaults for the limits of Config.
const (
	DefaultMaxLines = 500
	DefaultMaxBytes = 256 << 10
)

// Config says how lines are grouped.
type Config struct {
	// Start is an RE2 regexp matching the first line of a record. Empty
	// means the default rule (see the package doc).
	Start string
	// MaxLines and MaxBytes bound a group; 0 means DefaultMaxLines and
	// DefaultMaxBytes. A caller's buffer must hold MaxBytes plus the
	// Splitter's MaxLineSize, since an unfinished group is carried over.
	MaxLines int
	MaxBytes int
}

// Joiner groups lines into records and parses each group with an inner
// line parser.
//
// Concurrency: one goroutine, one input at a time.
type Joiner struct {
	p        lines.Parser
	re       *regexp.Regexp
	prefix   []byte // every start line begins with it (anchored Start)
	complete bool   // and matching prefix is all Start asks
	maxLines int
	maxBytes uint32

	// Per input.
	base int64 // input offset of the current buffer's Data[0]
	over int64 // lines the Splitter has counted twice: carried groups re-read

	// The open group, within one Run.
	open  bool
	first record.Span // its first line
	end   uint32      // the end of its last line
	n     int         // its lines
	line  int64       // the first line's number
	timed bool        // default rule: the first line starts with a timestamp
	held  []record.LineError
}

// New returns a Joiner that parses each group with p.
func New(p lines.Parser, cfg Config) (*Joiner, error) {
	if p == nil {
		return nil, fmt.Errorf("multiline: no inner parser")
	}
	j := &Joiner{p: p, maxLines: cfg.MaxLines, maxBytes: uint32(cfg.MaxBytes)}
	if cfg.MaxLines < 0 || cfg.MaxBytes < 0 || cfg.MaxBytes > 1<<30 {
		return nil, fmt.Errorf("multiline: limits out of range: %d lines, %d bytes", cfg.MaxLines, cfg.MaxBytes)
	}
	if j.maxLines == 0 {
		j.maxLines = DefaultMaxLines
	}
	if j.maxBytes == 0 {
		j.maxBytes = DefaultMaxBytes
	}
	if cfg.Start != "" {
		re, err := regexp.Compile(cfg.Start)
		if err != nil {
			return nil, fmt.Errorf("multiline: start pattern: %w", err)
		}
		j.re = re
		if anchored(cfg.Start) {
			prefix, complete := re.LiteralPrefix()
			j.prefix, j.complete = []byte(prefix), complete && prefix != ""
		}
	}
	return j, nil
}

// anchored reports whether every match of expr starts at the start of the
// text, so that its literal prefix is a prefix of the line.
func anchored(expr string) bool {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return false
	}
	re = re.Simplify()
	for re.Op == syntax.OpConcat && len(re.Sub) > 0 || re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	return re.Op == syntax.OpBeginText
}

// Reset prepares the Joiner for a new input. Reset the Splitter with it.
// Recounted returns how many lines the Splitter has counted twice
// because a group left unfinished at a buffer's end was read again.
func (j *Joiner) Recounted() int64 { return j.over }

func (j *Joiner) Reset() {
	j.base, j.over, j.open = 0, 0, false
}

// Run groups and parses every complete group of lines in bl's batch Data
// and returns the bytes consumed, as lines.Run does: the caller carries
// data[n:] into its next buffer, which then starts with the unfinished
// group. With final set, the input ends here and everything is consumed.
//
// REQUIRES: sp serves this input only through this Joiner's Run, and
// was Reset along with it.
func (j *Joiner) Run(sp *lines.Splitter, bl *record.Builder, final bool) int {
	b := bl.Batch()
	data := b.Data
	pos := 0
	for {
		nerr := len(b.Errors)
		line, next, ok := sp.Next(bl, data, pos, final)
		if len(b.Errors) > nerr {
			j.cut(bl, nerr)
		}
		if !ok {
			pos = next
			break
		}
		known := false // the default rule already knows whether line is timed
		if j.open {
			if line.End()-j.first.Off > j.maxBytes {
				j.emit(bl)
			} else if j.starts(data, line, bl.TimeLayout(), b.ReceiveTime) {
				known = j.re == nil && j.timed // a start in a timed group is timed
				j.emit(bl)
			}
		}
		if !j.open {
			j.open = true
			j.first, j.n = line, 0
			j.line = sp.Lines() - j.over
			if j.re == nil && !known {
				_, _, j.timed = timestamp.LinePrefixLayout(data[line.Off:line.End()], bl.TimeLayout(), b.ReceiveTime)
			}
		}
		j.end = line.End()
		j.n++
		if j.n >= j.maxLines || j.end-j.first.Off >= j.maxBytes {
			j.emit(bl)
		}
		pos = next
	}
	if j.open && !final {
		// The group may go on in the next buffer: leave it unconsumed.
		// The Splitter will count its lines again; over takes them back.
		pos = int(j.first.Off)
		j.over += sp.Lines() - (j.line + j.over - 1)
		j.open = false
	} else if j.open {
		j.emit(bl)
	}
	sp.Advance(pos)
	j.base += int64(pos)
	return pos
}

// cut handles the errors the Splitter reported from b.Errors[nerr:]: a
// line too long. It ends the open group, whose error (if the inner parser
// fails it) must come first, being on an earlier line.
func (j *Joiner) cut(bl *record.Builder, nerr int) {
	b := bl.Batch()
	j.held = append(j.held[:0], b.Errors[nerr:]...)
	b.Errors = b.Errors[:nerr]
	if j.open {
		j.emit(bl)
	}
	for _, e := range j.held {
		e.Line -= j.over
		b.Errors = append(b.Errors, e)
	}
	clear(j.held)
}

// emit parses the open group as one record.
func (j *Joiner) emit(bl *record.Builder) {
	bl.SetPos(j.line, j.base)
	j.p.ParseLine(bl, record.Span{Off: j.first.Off, Len: j.end - j.first.Off})
	j.open = false
}

// starts reports whether line starts a new record.
func (j *Joiner) starts(data []byte, line record.Span, layout timestamp.Layout, ref int64) bool {
	l := data[line.Off:line.End()]
	if j.re != nil {
		if len(j.prefix) > 0 {
			if !bytes.HasPrefix(l, j.prefix) {
				return false
			}
			if j.complete {
				return true
			}
		}
		return j.re.Match(l)
	}
	c := l[0]
	if c == ' ' || c == '\t' {
		return false
	}
	if j.timed {
		_, _, ok := timestamp.LinePrefixLayout(l, layout, ref)
		return ok
	}
	return !bytes.HasPrefix(l, causedBy)
}

var causedBy = []byte("Caused by: ")
