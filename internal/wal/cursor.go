package wal

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sluicelog/sluice/internal/vfs"
)

// A Cursor follows a live Log from a position, as a PostgreSQL replication
// slot follows its WAL: it hands back the payload of each committed frame,
// in order, with its position, and never decodes one. Sinks use it to
// deliver what was acknowledged to ingest without a queue of their own.
//
// A Cursor reads only what the Log has acknowledged (Log.Committed), so it
// never sees a frame a crash could take back (under SyncAlways). It reads
// the segment files through the Log's FS; segments below the cursor's
// position may be removed by Log.RemoveBefore, the others must be held by
// whoever removes segments (the store consults its WALHold).
//
// Concurrency: a Cursor is used by one goroutine; many cursors may follow
// one Log.
type Cursor struct {
	l   *Log
	pos Pos // the next frame starts here (or the segment ends here)
	r   segmentReader
	// open is the segment r reads; r.f is nil when none is open.
	open uint64
}

// ErrGone is matched (errors.Is) by the error of Cursor.Next when the
// segment at the cursor's position has been removed: the cursor fell
// behind what the log keeps. GoneError says where the log resumes.
var ErrGone = errors.New("wal: segment removed before the cursor read it")

// GoneError says that the segment a cursor wanted was removed, and which
// is the oldest one still on disk (Oldest, with Found false if none is
// older than the segment appends go to).
type GoneError struct {
	Want   Pos
	Oldest uint64
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("wal: cursor at %s: segment removed; the oldest kept is %s", e.Want, segmentName(e.Oldest))
}

// Is makes errors.Is(err, ErrGone) true.
func (e *GoneError) Is(target error) bool { return target == ErrGone }

// Cursor returns a cursor whose first frame is the first committed one at
// or after from. A from before the first frame of its segment (Offset 0)
// starts at that segment's first frame.
// REQUIRES: from is a frame boundary the log wrote (a position Next
// returned as next, or the start of a segment).
func (l *Log) Cursor(from Pos) *Cursor {
	c := &Cursor{l: l}
	c.Seek(from)
	return c
}

// Seek moves the cursor to p (a frame boundary, as for Log.Cursor).
func (c *Cursor) Seek(p Pos) {
	if p.Offset < headerSize {
		p.Offset = headerSize
	}
	c.pos = p
}

// Pos returns where the next frame starts: what a consumer that has
// processed every frame Next returned stores as its position.
func (c *Cursor) Pos() Pos { return c.pos }

// Next returns the payload of the next committed frame, its position, and
// the position after it (which Pos returns from now on). The payload is
// valid until the next call. It returns io.EOF when the cursor has read
// everything committed (wait on Log.Changed and call again), a *GoneError
// when the segment at the position was removed, and a *CorruptionError for
// a frame that does not check out (the cursor stays where it was; Seek to
// the next segment to skip it).
func (c *Cursor) Next() (payload []byte, at Pos, err error) {
	for {
		end := c.l.Committed()
		if c.pos.Segment > end.Segment || (c.pos.Segment == end.Segment && c.pos.Offset >= end.Offset) {
			return nil, Pos{}, io.EOF
		}
		if err := c.openSegment(); err != nil {
			return nil, Pos{}, err
		}
		// Closed segments are whole; the current one is read up to what
		// was acknowledged, so a frame being written is never seen.
		if c.pos.Segment == end.Segment {
			c.r.size = end.Offset
		} else if c.r.size < c.pos.Offset+frameHeaderSize {
			st, err := c.r.f.Stat()
			if err != nil {
				return nil, Pos{}, fmt.Errorf("wal: cursor: stat segment %d: %w", c.pos.Segment, err)
			}
			c.r.size = st.Size()
		}
		if c.pos.Offset >= c.r.size {
			if c.pos.Segment == end.Segment {
				return nil, Pos{}, io.EOF
			}
			// The end of a closed segment: on to the next one on disk.
			next, err := c.nextSegment(c.pos.Segment)
			if err != nil {
				return nil, Pos{}, err
			}
			c.closeSegment()
			c.pos = Pos{Segment: next, Offset: headerSize}
			continue
		}
		p, why, err := c.r.frameAt(c.pos.Offset, false)
		if err != nil {
			return nil, Pos{}, fmt.Errorf("wal: cursor: %w", err)
		}
		if why != frameOK {
			return nil, Pos{}, &CorruptionError{Segment: c.pos.Segment, Offset: c.pos.Offset, Reason: why.String()}
		}
		at = c.pos
		c.pos.Offset += frameSize(len(p))
		return p, at, nil
	}
}

// openSegment makes r read the segment at the cursor's position.
func (c *Cursor) openSegment() error {
	if c.r.f != nil && c.open == c.pos.Segment {
		return nil
	}
	c.closeSegment()
	fs, dir := c.l.opts.FS, c.l.opts.Dir
	f, err := fs.Open(filepath.Join(dir, segmentName(c.pos.Segment)))
	if vfs.IsNotExist(err) {
		oldest, lerr := c.oldestSegment()
		if lerr != nil {
			return lerr
		}
		if oldest > c.pos.Segment {
			return &GoneError{Want: c.pos, Oldest: oldest}
		}
		// A segment numbered below the oldest on disk is gone; one above
		// it that is missing is a gap a repair left: skip to the next.
		next, nerr := c.nextSegment(c.pos.Segment)
		if nerr != nil {
			return nerr
		}
		return &GoneError{Want: c.pos, Oldest: next}
	}
	if err != nil {
		return fmt.Errorf("wal: cursor: open segment %d: %w", c.pos.Segment, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("wal: cursor: stat segment %d: %w", c.pos.Segment, err)
	}
	c.r = segmentReader{f: f, seg: c.pos.Segment, size: st.Size(), buf: c.r.buf[:0]}
	c.open = c.pos.Segment
	return nil
}

func (c *Cursor) closeSegment() {
	if c.r.f != nil {
		c.r.f.Close()
		c.r.f = nil
	}
	c.r.bufOff, c.r.buf = 0, c.r.buf[:0]
}

// nextSegment returns the number of the first segment on disk above n;
// the log always has one (the segment appends go to) while n is below it.
func (c *Cursor) nextSegment(n uint64) (uint64, error) {
	segs, err := c.l.segmentList()
	if err != nil {
		return 0, err
	}
	for _, s := range segs {
		if s > n {
			return s, nil
		}
	}
	return c.l.Committed().Segment, nil
}

func (c *Cursor) oldestSegment() (uint64, error) {
	segs, err := c.l.segmentList()
	if err != nil {
		return 0, err
	}
	if len(segs) == 0 {
		return c.l.Committed().Segment, nil
	}
	return segs[0], nil
}

// Close releases the open segment file. The cursor may be used again
// afterwards (it reopens what it needs).
func (c *Cursor) Close() { c.closeSegment() }

// segmentList returns the numbers of the segment files in the log's
// directory, in order.
func (l *Log) segmentList() ([]uint64, error) {
	names, err := l.opts.FS.List(l.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", l.opts.Dir, err)
	}
	var segs []uint64
	for _, name := range names {
		if n, ok := parseSegmentName(name); ok {
			segs = append(segs, n)
		}
	}
	return segs, nil // List is sorted and the names have fixed width
}

// Committed returns the position just after the last frame the log has
// acknowledged: every frame before it is whole on disk (durable, under
// SyncAlways). A rotation moves it to the start of the new segment.
func (l *Log) Committed() Pos {
	l.notifyMu.Lock()
	defer l.notifyMu.Unlock()
	return l.committed
}

// Changed returns a channel that is closed when Committed next moves.
// Callers take the channel, check Committed (or read with a Cursor), and
// then wait on it, so no change between the two is missed.
func (l *Log) Changed() <-chan struct{} {
	l.notifyMu.Lock()
	defer l.notifyMu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// setCommitted moves Committed to p and wakes the waiters. The channel is
// made only when someone asks for it (Changed): an Append with no cursor
// waiting allocates nothing (TestAppendAllocs).
func (l *Log) setCommitted(p Pos) {
	l.notifyMu.Lock()
	l.committed = p
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.notifyMu.Unlock()
}

// BytesSince returns how many bytes of segments the log holds at or after
// p: what a cursor at p still has to read, headers included. It stats the
// segment files, so it is for a periodic check, not for every frame.
func (l *Log) BytesSince(p Pos) (int64, error) {
	segs, err := l.segmentList()
	if err != nil {
		return 0, err
	}
	end := l.Committed()
	var n int64
	for _, s := range segs {
		if s < p.Segment || s > end.Segment {
			continue
		}
		size := end.Offset
		if s < end.Segment {
			st, err := l.opts.FS.Stat(filepath.Join(l.opts.Dir, segmentName(s)))
			if vfs.IsNotExist(err) {
				continue // removed meanwhile
			}
			if err != nil {
				return 0, fmt.Errorf("wal: stat segment %d: %w", s, err)
			}
			size = st.Size()
		}
		if s == p.Segment {
			size -= max(p.Offset, headerSize)
		}
		n += max(size, 0)
	}
	return n, nil
}
