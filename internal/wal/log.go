package wal

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicelog/sluice/internal/vfs"
)

// Pos is where a frame starts: its segment and the byte offset of the frame
// header in the segment file.
type Pos struct {
	Segment uint64
	Offset  int64
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", segmentName(p.Segment), p.Offset) }

// Stats are counters of a Log since Open.
type Stats struct {
	Appends uint64 // payloads acknowledged
	Bytes   uint64 // payload bytes acknowledged
	Writes  uint64 // write calls to segment files
	Syncs   uint64 // fdatasyncs of segment files, new segments' headers included
	// Corruptions is the number of damaged ranges (and gaps in the
	// numbering) Open found in the middle of the log, as in
	// RecoveryReport.Corrupt; torn tails are not counted.
	Corruptions int
	Segments    int    // segment files in Dir
	Segment     uint64 // the segment appends go to
	Broken      bool   // an fdatasync, or undoing a failed write, failed: Appends fail until the Log is reopened
}

// Log is an open write-ahead log. Its methods are safe for concurrent use.
// One goroutine owned by the Log writes and syncs the segments; Close stops
// it.
type Log struct {
	opts Options
	lock io.Closer

	mu      sync.Mutex
	queue   []*request // waiting for the writer, in arrival order
	closing bool
	// err is sticky: once set (by the writer, under mu) nothing more is
	// acknowledged.
	err error

	kick chan struct{} // capacity 1: "the queue is not empty"
	done chan struct{} // closed when the writer goroutine returns

	closeOnce sync.Once
	closeErr  error

	removeMu sync.Mutex // serializes RemoveBefore

	// notifyMu guards committed and changed (cursor.go): the end of what
	// was acknowledged, and a channel closed when it moves.
	notifyMu  sync.Mutex
	committed Pos
	changed   chan struct{}

	// Owned by the writer goroutine.
	syncer   *vfs.Syncer // nil: segments are synced by File.Sync
	seg      *segment    // nil after a segment could not be created
	next     uint64      // number of the next segment to create
	buf      []byte      // frames being assembled for one write
	spare    []*request
	dirty    int // bytes written since the last fdatasync
	lastSync time.Time

	appends, bytes, writes, syncs atomic.Uint64
	segments                      atomic.Int64
	segmentNum                    atomic.Uint64
	broken                        atomic.Bool
	corruptions                   int // set by Open
}

const (
	// flushSize: the writer issues a write once it has assembled this
	// many bytes of frames.
	flushSize = 1 << 20
	// directSize: payloads at least this large are written straight from
	// the caller's slice (which Append keeps alive until it returns)
	// instead of being copied into the write buffer.
	directSize = 256 << 10
	// maxKeptBuf bounds the write buffer kept between groups.
	maxKeptBuf = 2 * flushSize
)

// request is one Append or Rotate waiting for the writer.
type request struct {
	payload []byte
	rotate  bool
	pos     Pos
	err     error
	done    chan struct{} // capacity 1; receives once per use
}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

func getRequest() *request { return requestPool.Get().(*request) }

func putRequest(r *request) {
	r.payload, r.rotate, r.pos, r.err = nil, false, Pos{}, nil
	requestPool.Put(r)
}

// Append writes payload as one frame and returns where it starts. Under
// SyncAlways it returns nil only once an fdatasync covering the frame has
// returned nil; under SyncInterval and SyncNever once the frame is written.
// Concurrent calls are committed together: one write and one fdatasync for
// all of them. payload is not retained after Append returns.
//
// After an fdatasync error every Append fails with ErrBroken until the log
// is reopened. After a failed write (a full disk) only the appends of that
// group fail, and nothing of them stays in the segment.
func (l *Log) Append(payload []byte) (Pos, error) {
	p := l.Enqueue(payload)
	return p.Wait()
}

// Pending is an append queued by Enqueue.
type Pending struct {
	r   *request
	err error
}

// Enqueue queues payload for the writer and returns at once: appends
// enqueued one after another by one goroutine land in the WAL in that
// order. Wait says when the frame is durable, as Append does.
// REQUIRES: Wait is called exactly once; payload stays unchanged until it
// returns.
func (l *Log) Enqueue(payload []byte) Pending {
	if len(payload) > l.opts.MaxPayload {
		return Pending{err: fmt.Errorf("wal: append %d bytes (limit %d): %w", len(payload), l.opts.MaxPayload, ErrTooLarge)}
	}
	r := getRequest()
	r.payload = payload
	if err := l.enqueue(r); err != nil {
		putRequest(r)
		return Pending{err: err}
	}
	return Pending{r: r}
}

// Wait returns where the frame starts once it is durable (under
// SyncAlways; written, under the other policies), or why it failed.
func (p *Pending) Wait() (Pos, error) {
	if p.r == nil {
		return Pos{}, p.err
	}
	<-p.r.done
	pos, err := p.r.pos, p.r.err
	putRequest(p.r)
	p.r = nil
	return pos, err
}

// Rotate syncs and closes the current segment and starts the next one. It
// returns the number of the segment that later appends go to; every
// segment numbered below it is complete and durable.
func (l *Log) Rotate() (uint64, error) {
	r := getRequest()
	r.rotate = true
	err := l.submit(r)
	n := r.pos.Segment
	putRequest(r)
	return n, err
}

// submit queues r for the writer and waits until it is done.
func (l *Log) submit(r *request) error {
	if err := l.enqueue(r); err != nil {
		return err
	}
	<-r.done
	return r.err
}

// enqueue queues r for the writer.
func (l *Log) enqueue(r *request) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.err != nil {
		err := brokenError(l.err)
		l.mu.Unlock()
		return err
	}
	l.queue = append(l.queue, r)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default: // the writer has been kicked already and will see r
	}
	return nil
}

func brokenError(cause error) error { return fmt.Errorf("%w: %w", ErrBroken, cause) }

// RemoveBefore deletes the segments numbered below seg, which must not be
// above the segment appends go to (the number Rotate returned is the usual
// argument). Copies of corrupt segments kept for forensics are left alone.
func (l *Log) RemoveBefore(seg uint64) error {
	l.mu.Lock()
	closing := l.closing
	l.mu.Unlock()
	if closing {
		return ErrClosed
	}
	if cur := l.segmentNum.Load(); seg > cur {
		return fmt.Errorf("wal: remove segments before %d: beyond the current segment %d", seg, cur)
	}
	l.removeMu.Lock()
	defer l.removeMu.Unlock()
	fs, dir := l.opts.FS, l.opts.Dir
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("wal: remove segments before %d: %w", seg, err)
	}
	removed := 0
	for _, name := range names {
		n, ok := parseSegmentName(name)
		if !ok || n >= seg {
			continue
		}
		if err := fs.Remove(filepath.Join(dir, name)); err != nil && !vfs.IsNotExist(err) {
			return fmt.Errorf("wal: remove segment %d: %w", n, err)
		}
		removed++
		l.segments.Add(-1)
	}
	if removed == 0 {
		return nil
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("wal: remove segments before %d: sync dir: %w", seg, err)
	}
	return nil
}

// Stats returns the counters.
func (l *Log) Stats() Stats {
	return Stats{
		Appends:     l.appends.Load(),
		Bytes:       l.bytes.Load(),
		Writes:      l.writes.Load(),
		Syncs:       l.syncs.Load(),
		Corruptions: l.corruptions,
		Segments:    int(l.segments.Load()),
		Segment:     l.segmentNum.Load(),
		Broken:      l.broken.Load(),
	}
}

// Close writes and syncs what was appended (under every SyncPolicy), closes
// the segment, stops the writer goroutine and releases the directory lock.
// Appends waiting when Close is called are completed first; later calls fail
// with ErrClosed. Close is idempotent: later calls return the first result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
		select {
		case l.kick <- struct{}{}:
		default:
		}
		<-l.done
		err := l.closeErr // set by the writer before done was closed
		if lerr := l.lock.Close(); lerr != nil && err == nil {
			err = fmt.Errorf("wal: release lock: %w", lerr)
		}
		l.closeErr = err
	})
	return l.closeErr
}

// run is the writer goroutine: it takes everything queued, writes it with
// as few writes as it can, syncs per the policy and then wakes the callers.
// While it writes and syncs, new requests queue up for the next group.
// lingerBelow is the queue length under which the writer yields once
// before it takes the queue.
const lingerBelow = 16

func (l *Log) run() {
	defer close(l.done)
	if l.syncer != nil {
		defer l.syncer.Close()
	}
	var tick <-chan time.Time
	if l.opts.Sync.Mode == SyncInterval {
		t := time.NewTicker(l.opts.Sync.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.kick:
		case <-tick:
			if l.dirty > 0 && l.err == nil && l.seg != nil {
				l.syncSegment()
			}
			continue
		}
		// A short queue under SyncAlways: let the goroutines that are
		// about to append run first, so that they share this fdatasync
		// rather than wait for the next (on a busy core they are queued
		// behind this one).
		if l.opts.Sync.Mode == SyncAlways {
			l.mu.Lock()
			short := len(l.queue) < lingerBelow
			l.mu.Unlock()
			if short {
				runtime.Gosched()
			}
		}
		l.mu.Lock()
		batch, closing := l.queue, l.closing
		l.queue = l.spare[:0]
		l.mu.Unlock()

		l.process(batch)
		clear(batch)
		l.spare = batch[:0]

		if tick != nil && l.dirty > 0 && l.err == nil && l.seg != nil && time.Since(l.lastSync) >= l.opts.Sync.Interval {
			l.syncSegment()
		}
		if closing {
			// Nothing is queued after closing is set, so batch was the
			// last one.
			l.closeErr = l.finish()
			return
		}
	}
}

// process serves a batch in order: runs of appends are committed as
// groups; a rotation ends the group before it.
func (l *Log) process(batch []*request) {
	for len(batch) > 0 {
		if l.err != nil {
			l.fail(batch, brokenError(l.err))
			return
		}
		if batch[0].rotate {
			r := batch[0]
			n, err := l.rotate()
			r.pos, r.err = Pos{Segment: n}, err
			r.done <- struct{}{}
			batch = batch[1:]
			continue
		}
		k := 1
		for k < len(batch) && !batch[k].rotate {
			k++
		}
		l.commit(batch[:k])
		batch = batch[k:]
	}
}

// commit writes a group of appends, syncs them under SyncAlways and
// completes them. A group that overflows the segment continues in the next
// one.
func (l *Log) commit(reqs []*request) {
	for len(reqs) > 0 {
		if l.seg == nil || l.seg.size > l.opts.SegmentSize {
			if _, err := l.rotate(); err != nil {
				l.fail(reqs, err)
				return
			}
		}
		n, err := l.writeFrames(reqs)
		if err == nil && l.opts.Sync.Mode == SyncAlways {
			err = l.syncSegment()
		}
		if err != nil {
			l.fail(reqs, err)
			return
		}
		l.complete(reqs[:n])
		reqs = reqs[n:]
	}
}

// writeFrames writes frames for a prefix of reqs to the current segment:
// all of them, or up to the first frame that takes the segment past
// SegmentSize. It returns how many it wrote. On a write error it truncates
// the segment back to where the group started, so no partial frame is left
// and the segment can take later appends; if that fails too, the log is
// broken.
func (l *Log) writeFrames(reqs []*request) (int, error) {
	s := l.seg
	start := s.size
	off := start
	buf := l.buf[:0]
	n := 0
	var err error
	for n < len(reqs) {
		p := reqs[n].payload
		reqs[n].pos = Pos{Segment: s.n, Offset: off}
		if len(p) >= directSize {
			buf = appendFrameHeader(buf, s.n, off, p)
			if err = l.writeSegment(buf); err != nil {
				break
			}
			buf = buf[:0]
			if err = l.writeSegment(p); err != nil {
				break
			}
		} else {
			buf = appendFrame(buf, s.n, off, p)
			if len(buf) >= flushSize {
				if err = l.writeSegment(buf); err != nil {
					break
				}
				buf = buf[:0]
			}
		}
		off += frameSize(len(p))
		n++
		if off > l.opts.SegmentSize {
			break
		}
	}
	if err == nil && len(buf) > 0 {
		err = l.writeSegment(buf)
	}
	if cap(buf) <= maxKeptBuf {
		l.buf = buf[:0]
	} else {
		l.buf = nil
	}
	if err != nil {
		err = fmt.Errorf("wal: write segment %d: %w", s.n, err)
		if terr := s.truncate(l.opts.FS, start); terr != nil {
			l.setBroken(fmt.Errorf("wal: truncate segment %d to %d after a failed write: %w", s.n, start, terr))
		}
		return 0, err
	}
	s.size = off
	l.dirty += int(off - start)
	return n, nil
}

func (l *Log) writeSegment(b []byte) error {
	l.writes.Add(1)
	return l.seg.write(b)
}

// syncSegment fdatasyncs the current segment. A failure breaks the log: the
// kernel may have dropped the dirty pages and cleared the error, so a retry
// that succeeded would prove nothing (fsyncgate).
func (l *Log) syncSegment() error {
	s := l.seg
	start := time.Now()
	var err error
	if l.syncer != nil {
		err = l.syncer.Sync(s.f)
	} else {
		err = s.f.Sync()
	}
	if err != nil {
		err = fmt.Errorf("wal: sync segment %d: %w", s.n, err)
		l.setBroken(err)
		return err
	}
	l.syncs.Add(1)
	l.lastSync = time.Now()
	if l.opts.OnSync != nil {
		l.opts.OnSync(l.lastSync.Sub(start), l.dirty)
	}
	l.dirty = 0
	return nil
}

// rotate syncs and closes the current segment, if any, and creates the
// next one. If creating it fails the log has no segment and the next group
// tries again with the same number.
func (l *Log) rotate() (uint64, error) {
	if s := l.seg; s != nil {
		if err := l.syncSegment(); err != nil {
			return 0, err
		}
		if err := s.close(); err != nil {
			err = fmt.Errorf("wal: close segment %d: %w", s.n, err)
			l.setBroken(err)
			return 0, err
		}
		l.seg = nil
	}
	s, err := createSegment(l.opts.FS, l.opts.Dir, l.next)
	if err != nil {
		return 0, err
	}
	l.seg = s
	l.next = s.n + 1
	l.syncs.Add(1) // of the header
	l.segments.Add(1)
	l.segmentNum.Store(s.n)
	l.setCommitted(Pos{Segment: s.n, Offset: headerSize})
	return s.n, nil
}

// finish syncs and closes the current segment when the Log is closed.
func (l *Log) finish() error {
	s := l.seg
	if s == nil {
		if l.err != nil {
			return brokenError(l.err)
		}
		return nil
	}
	var err error
	if l.err != nil {
		err = brokenError(l.err)
	} else {
		err = l.syncSegment()
	}
	if cerr := s.close(); cerr != nil && err == nil {
		err = fmt.Errorf("wal: close segment %d: %w", s.n, cerr)
	}
	l.seg = nil
	return err
}

func (l *Log) setBroken(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
	l.broken.Store(true)
	l.opts.Logger.Error("wal: log broken, appends fail until it is reopened", "dir", l.opts.Dir, "err", err)
}

// fail completes reqs with err.
// INVARIANT: a request is signalled exactly once, and not touched after.
func (l *Log) fail(reqs []*request, err error) {
	for _, r := range reqs {
		r.err = err
		r.done <- struct{}{}
	}
}

// complete acknowledges reqs, whose positions are set.
func (l *Log) complete(reqs []*request) {
	var bytes uint64
	for _, r := range reqs {
		bytes += uint64(len(r.payload))
	}
	// Counted first, so that Stats after an Append returned includes it.
	l.appends.Add(uint64(len(reqs)))
	l.bytes.Add(bytes)
	// Before the callers wake, so that a cursor can read what Append
	// returned.
	l.setCommitted(Pos{Segment: l.seg.n, Offset: l.seg.size})
	for _, r := range reqs {
		r.err = nil
		r.done <- struct{}{}
	}
}
