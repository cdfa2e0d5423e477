package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/vfs"
)

const (
	lockName = "LOCK"
	// tmpSuffix marks a segment being rewritten by a repair; one left
	// behind by a crash is incomplete and removed by Open.
	tmpSuffix = ".tmp"
	// corruptSuffix marks the untouched copy of a segment that a repair
	// rewrote, kept for forensics.
	corruptSuffix = ".corrupt"
	// readAhead is how much of a segment recovery reads at a time; a
	// frame larger than this is read whole, so recovery holds at most one
	// payload (and readAhead) in memory.
	readAhead = 256 << 10
)

// RecoveryReport says what Open found and repaired.
type RecoveryReport struct {
	Segments int   // segments replayed
	Records  int   // frames replayed
	Bytes    int64 // payload bytes replayed
	// TornTail is where the last segment was cut back to because it ended
	// in an incomplete or damaged frame, as a crash during a write leaves
	// it; nil if it ended cleanly.
	TornTail *Pos
	// TornReason says what is wrong at TornTail.
	TornReason string
	// Corrupt lists damage in the middle of the log: a bad header or
	// frame with valid frames after it, or any damage in a segment that
	// is not the last. Every valid frame around it was replayed, the
	// segment was copied aside (NAME.corrupt) and rewritten with only its
	// valid frames.
	Corrupt []*CorruptionError
}

// Open recovers the log in opts.Dir, creating the directory if needed, and
// returns a Log whose appends go to a new segment.
//
// Recovery replays every frame of every segment numbered from or above, in
// order, calling replay (if not nil) with its position and payload; the
// payload is valid only during the call. An error from replay stops Open
// and is returned. Damage is repaired as RecoveryReport describes, and a
// payload whose checksum does not check out is never replayed. Positions
// are those in the segment as found: a segment rewritten by a repair has
// its frames after the damage at smaller offsets afterwards.
//
// The Log holds a lock on the directory until Close.
func Open(opts Options, from uint64, replay func(pos Pos, payload []byte) error) (*Log, RecoveryReport, error) {
	var rep RecoveryReport
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, rep, err
	}
	fs, dir := opts.FS, opts.Dir
	if err := makeDir(fs, dir); err != nil {
		return nil, rep, err
	}
	lock, err := fs.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return nil, rep, fmt.Errorf("wal: lock %s: %w", dir, err)
	}
	rc := recovery{opts: opts, replay: replay, rep: &rep}
	next, nsegs, err := rc.run(from)
	if err != nil {
		lock.Close()
		return nil, rep, err
	}
	l := &Log{
		opts:        opts,
		lock:        lock,
		kick:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		next:        next,
		corruptions: len(rep.Corrupt),
		lastSync:    time.Now(),
	}
	l.segments.Store(int64(nsegs))
	if opts.FS == vfs.OS && !opts.BlockingSync {
		// fdatasync through an io_uring: the writer then waits
		// holding no P (vfs.Syncer); where there is none, File.Sync.
		if l.syncer, err = vfs.NewSyncer(); err != nil {
			opts.Logger.Info("wal: fdatasync by a blocking syscall", "reason", err)
			l.syncer = nil
		}
	}
	if _, err := l.rotate(); err != nil {
		// A full disk must not keep the log from opening, and what it
		// holds from being read: the first append creates the segment,
		// and fails cleanly until there is room.
		if !vfs.IsNoSpace(err) {
			if l.syncer != nil {
				l.syncer.Close()
			}
			lock.Close()
			return nil, rep, err
		}
		opts.Logger.Warn("wal: no room for a new segment; appends will fail until space is freed", "dir", dir, "err", err)
		l.segmentNum.Store(l.next) // the segment appends will go to
	}
	go l.run()
	return l, rep, nil
}

// Replay reads the log in opts.Dir as Open's recovery does, calling
// replay for every valid frame of every segment numbered from or above,
// but changes nothing: no lock is taken, nothing is created, and damage
// is reported in the RecoveryReport (TornTail, Corrupt) but neither cut
// off nor rewritten. A directory that does not exist holds no frames.
// For readers of a directory that must stay as it is (export, check).
func Replay(opts Options, from uint64, replay func(pos Pos, payload []byte) error) (RecoveryReport, error) {
	var rep RecoveryReport
	opts, err := opts.withDefaults()
	if err != nil {
		return rep, err
	}
	if _, err := opts.FS.Stat(opts.Dir); vfs.IsNotExist(err) {
		return rep, nil
	}
	rc := recovery{opts: opts, replay: replay, rep: &rep, readOnly: true}
	_, _, err = rc.run(from)
	return rep, err
}

// makeDir creates dir and its missing parents, and makes their entries
// durable.
func makeDir(fs vfs.FS, dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		_, err := fs.Stat(d)
		if err == nil {
			break
		}
		if !vfs.IsNotExist(err) {
			return fmt.Errorf("wal: open dir: %w", err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("wal: create dir: %w", err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fs.SyncDir(filepath.Dir(missing[i])); err != nil {
			return fmt.Errorf("wal: create dir: %w", err)
		}
	}
	return nil
}

// recovery is the state of one Open's recovery.
type recovery struct {
	opts   Options
	replay func(Pos, []byte) error
	rep    *RecoveryReport
	buf    []byte // read buffer, shared by the segments
	// readOnly finds damage without repairing it (Replay).
	readOnly bool
}

// run recovers every segment numbered from or above and returns the number
// for the new segment and how many segment files there are.
func (rc *recovery) run(from uint64) (next uint64, nsegs int, err error) {
	fs, dir := rc.opts.FS, rc.opts.Dir
	names, err := fs.List(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var segs []uint64
	removedTmp := false
	for _, name := range names {
		if n, ok := parseSegmentName(name); ok {
			segs = append(segs, n)
			continue
		}
		if base, ok := strings.CutSuffix(name, tmpSuffix); ok && !rc.readOnly {
			if _, ok := parseSegmentName(base); ok {
				// An interrupted repair: the segment itself is intact.
				if err := fs.Remove(filepath.Join(dir, name)); err != nil {
					return 0, 0, fmt.Errorf("wal: remove %s: %w", name, err)
				}
				removedTmp = true
			}
		}
	}
	if removedTmp {
		if err := fs.SyncDir(dir); err != nil {
			return 0, 0, fmt.Errorf("wal: sync dir %s: %w", dir, err)
		}
	}
	slices.Sort(segs)
	next = from
	if len(segs) == 0 {
		return next, 0, nil
	}
	last := segs[len(segs)-1]
	if last == math.MaxUint64 {
		return 0, 0, fmt.Errorf("wal: segment numbers exhausted in %s", dir)
	}
	next = max(next, last+1)
	prev, havePrev := uint64(0), false
	for _, n := range segs {
		if n < from {
			continue
		}
		if havePrev && n != prev+1 {
			c := &CorruptionError{Segment: prev + 1, Reason: fmt.Sprintf("segments %d to %d are missing", prev+1, n-1)}
			rc.opts.Logger.Error("wal: missing segments", "dir", dir, "first", prev+1, "last", n-1)
			rc.rep.Corrupt = append(rc.rep.Corrupt, c)
		}
		prev, havePrev = n, true
		if err := rc.segment(n, n == last); err != nil {
			return 0, 0, err
		}
		rc.rep.Segments++
	}
	return next, len(segs), nil
}

// segment replays segment n and repairs it.
func (rc *recovery) segment(n uint64, last bool) error {
	path := filepath.Join(rc.opts.Dir, segmentName(n))
	f, err := rc.opts.FS.Open(path)
	if err != nil {
		return fmt.Errorf("wal: open segment %d: %w", n, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: stat segment %d: %w", n, err)
	}
	r := segmentReader{f: f, seg: n, size: st.Size(), buf: rc.buf[:0]}
	sc, err := r.scan(last, rc.replay)
	rc.buf = r.buf[:0]
	if err != nil {
		return err
	}
	rc.rep.Records += sc.records
	rc.rep.Bytes += sc.bytes
	log := rc.opts.Logger
	if rc.readOnly {
		rc.rep.Corrupt = append(rc.rep.Corrupt, sc.corrupt...)
		if sc.torn != nil {
			rc.rep.TornTail, rc.rep.TornReason = &Pos{Segment: n, Offset: sc.torn.Offset}, sc.torn.Reason
		}
		return nil
	}
	for _, c := range sc.corrupt {
		log.Error("wal: corrupt segment, replayed the valid frames around the damage",
			"file", path, "offset", c.Offset, "reason", c.Reason)
	}
	rc.rep.Corrupt = append(rc.rep.Corrupt, sc.corrupt...)
	if sc.torn != nil {
		log.Warn("wal: torn tail, truncating the last segment", "file", path, "offset", sc.torn.Offset,
			"bytes", r.size-sc.torn.Offset, "reason", sc.torn.Reason)
		rc.rep.TornTail, rc.rep.TornReason = &Pos{Segment: n, Offset: sc.torn.Offset}, sc.torn.Reason
	}
	switch {
	case len(sc.corrupt) > 0:
		aside, err := rc.rewrite(&r, path, sc.runs)
		if err != nil {
			return err
		}
		log.Warn("wal: rewrote segment with its valid frames only", "file", path, "original", aside)
	case sc.torn != nil:
		return rc.truncate(path, n, sc.torn.Offset)
	}
	return nil
}

// truncate cuts segment n back to off, a frame boundary, rewriting the
// header if the damage starts in it.
func (rc *recovery) truncate(path string, n uint64, off int64) error {
	f, err := rc.opts.FS.OpenReadWrite(path)
	if err != nil {
		return fmt.Errorf("wal: truncate torn segment %d: %w", n, err)
	}
	if off < headerSize {
		err = f.Truncate(0)
		if err == nil {
			// The write offset of a newly opened file is 0.
			var k int
			hdr := appendSegmentHeader(nil, n)
			if k, err = f.Write(hdr); err == nil && k < len(hdr) {
				err = io.ErrShortWrite
			}
		}
	} else {
		err = f.Truncate(off)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: truncate torn segment %d at %d: %w", n, off, err)
	}
	return nil
}

// rewrite copies the segment read by r aside for forensics and replaces it
// with a segment holding only the frames in runs, re-encoded at their new
// offsets. Each step is durable before the next: a crash leaves either the
// original or the rewritten segment under path, and a stray temporary file
// that the next Open removes. It returns the name of the copy.
func (rc *recovery) rewrite(r *segmentReader, path string, runs []span) (string, error) {
	fs, dir, n := rc.opts.FS, rc.opts.Dir, r.seg
	wrap := func(err error) error { return fmt.Errorf("wal: repair segment %d: %w", n, err) }
	aside, err := rc.asideName(path)
	if err != nil {
		return "", wrap(err)
	}
	if err := writeFile(fs, aside, func(w io.Writer) error {
		_, err := io.Copy(w, io.NewSectionReader(r.f, 0, r.size))
		return err
	}); err != nil {
		return "", wrap(err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return "", wrap(err)
	}
	tmp := path + tmpSuffix
	if err := writeFile(fs, tmp, func(w io.Writer) error {
		b := appendSegmentHeader(nil, n)
		if _, err := w.Write(b); err != nil {
			return err
		}
		newOff := int64(headerSize)
		for _, sp := range runs {
			for off := sp.start; off < sp.end; {
				p, why, err := r.frameAt(off, false)
				if err != nil {
					return err
				}
				if why != frameOK {
					return fmt.Errorf("frame at %d no longer checks out: %v", off, why)
				}
				b = appendFrameHeader(b[:0], n, newOff, p)
				if _, err := w.Write(b); err != nil {
					return err
				}
				if _, err := w.Write(p); err != nil {
					return err
				}
				off += frameSize(len(p))
				newOff += frameSize(len(p))
			}
		}
		return nil
	}); err != nil {
		fs.Remove(tmp)
		return "", wrap(err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return "", wrap(err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return "", wrap(err)
	}
	return aside, nil
}

// asideName returns a name for the forensic copy of the segment at path
// that no file has yet.
func (rc *recovery) asideName(path string) (string, error) {
	for i := 0; ; i++ {
		name := path + corruptSuffix
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		_, err := rc.opts.FS.Stat(name)
		if vfs.IsNotExist(err) {
			return name, nil
		}
		if err != nil {
			return "", err
		}
	}
}

// writeFile creates name, fills it through a buffered writer and syncs it.
func writeFile(fs vfs.FS, name string, fill func(io.Writer) error) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, readAhead)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// span is a byte range [start, end) of a segment holding consecutive valid
// frames.
type span struct{ start, end int64 }

// segmentScan is what reading a segment found.
type segmentScan struct {
	runs    []span
	corrupt []*CorruptionError
	// torn is damage running to the end of the last segment.
	torn    *CorruptionError
	records int
	bytes   int64
}

// frameVerdict says whether a valid frame starts at an offset, or why not.
type frameVerdict uint8

const (
	frameOK frameVerdict = iota
	frameShortHeader
	frameBadHeader
	frameTooLong
	framePastEnd
	frameBadPayload
)

func (v frameVerdict) String() string {
	switch v {
	case frameOK:
		return "valid frame"
	case frameShortHeader:
		return "incomplete frame header"
	case frameBadHeader:
		return "frame header checksum mismatch"
	case frameTooLong:
		return "frame length above the format limit"
	case framePastEnd:
		return "frame extends past the end of the segment"
	case frameBadPayload:
		return "payload checksum mismatch"
	}
	return "frameVerdict(" + strconv.Itoa(int(v)) + ")"
}

// segmentReader reads frames of one segment file through a window buffer:
// it never holds more than one frame (or readAhead bytes) in memory.
type segmentReader struct {
	f    vfs.File
	seg  uint64
	size int64
	// buf holds the file's bytes [bufOff, bufOff+len(buf)).
	buf     []byte
	bufOff  int64
	scratch [24]byte // for frameHeaderChecksum
}

// bytes returns the file's bytes [off, off+n), valid until the next call.
// REQUIRES: 0 <= off, n >= 0, off+n <= r.size.
func (r *segmentReader) bytes(off int64, n int) ([]byte, error) {
	if off >= r.bufOff && off+int64(n) <= r.bufOff+int64(len(r.buf)) {
		i := off - r.bufOff
		return r.buf[i : i+int64(n)], nil
	}
	want := int64(max(n, readAhead))
	want = min(want, r.size-off)
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	k, err := r.f.ReadAt(r.buf, off)
	if int64(k) < want {
		r.buf = r.buf[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("wal: read segment %d at %d: %w", r.seg, off, err)
	}
	r.bufOff = off
	return r.buf[:n], nil
}

// frameAt checks whether a valid frame starts at off and returns its
// payload, valid until the next read. With quick set, a length that cannot
// be right is reported as frameBadHeader without checking the header: a
// resynchronizing caller only needs a yes or no, fast, at every offset.
func (r *segmentReader) frameAt(off int64, quick bool) ([]byte, frameVerdict, error) {
	if r.size-off < frameHeaderSize {
		return nil, frameShortHeader, nil
	}
	h, err := r.bytes(off, frameHeaderSize)
	if err != nil {
		return nil, 0, err
	}
	n := binary.LittleEndian.Uint32(h[0:4])
	plausible := n <= MaxPayloadLimit && int64(n) <= r.size-off-frameHeaderSize
	if !plausible && quick {
		return nil, frameBadHeader, nil
	}
	if frameHeaderChecksum(r.scratch[:0], r.seg, off, h) != binary.LittleEndian.Uint32(h[8:12]) {
		return nil, frameBadHeader, nil
	}
	if n > MaxPayloadLimit {
		return nil, frameTooLong, nil
	}
	if !plausible {
		return nil, framePastEnd, nil
	}
	b, err := r.bytes(off, frameHeaderSize+int(n))
	if err != nil {
		return nil, 0, err
	}
	p := b[frameHeaderSize:]
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[4:8]) {
		return nil, frameBadPayload, nil
	}
	return p, frameOK, nil
}

// scan reads the segment, calling replay for each valid frame. After a bad
// frame it resynchronizes by trying every later offset: frames carry no
// sync marker, but a frame only verifies at the offset it was written at,
// and the header checksum rejects a wrong offset in constant time, so the
// scan is linear in the size of the damage.
func (r *segmentReader) scan(last bool, replay func(Pos, []byte) error) (segmentScan, error) {
	var sc segmentScan
	badAt, badWhy := int64(-1), ""
	if r.size < headerSize {
		badAt, badWhy = 0, "incomplete segment header"
	} else {
		h, err := r.bytes(0, headerSize)
		if err != nil {
			return sc, err
		}
		switch st, why := checkSegmentHeader(h, r.seg); st {
		case headerNewer:
			return sc, fmt.Errorf("wal: segment %d: %s, this build reads version %d", r.seg, why, FormatVersion)
		case headerBad:
			badAt, badWhy = 0, why
		}
	}
	for off := int64(headerSize); off < r.size; {
		p, why, err := r.frameAt(off, badAt >= 0)
		if err != nil {
			return sc, err
		}
		if why != frameOK {
			if badAt < 0 {
				badAt, badWhy = off, why.String()
			}
			off++
			continue
		}
		if badAt >= 0 {
			sc.corrupt = append(sc.corrupt, &CorruptionError{Segment: r.seg, Offset: badAt,
				Reason: fmt.Sprintf("%s; skipped %d bytes to the next valid frame", badWhy, off-badAt)})
			badAt = -1
		}
		if replay != nil {
			if err := replay(Pos{Segment: r.seg, Offset: off}, p); err != nil {
				return sc, fmt.Errorf("wal: replay %s: %w", Pos{Segment: r.seg, Offset: off}, err)
			}
		}
		end := off + frameSize(len(p))
		if k := len(sc.runs); k > 0 && sc.runs[k-1].end == off {
			sc.runs[k-1].end = end
		} else {
			sc.runs = append(sc.runs, span{off, end})
		}
		sc.records++
		sc.bytes += int64(len(p))
		off = end
	}
	if badAt >= 0 {
		c := &CorruptionError{Segment: r.seg, Offset: badAt, Reason: badWhy}
		if last {
			sc.torn = c
		} else {
			sc.corrupt = append(sc.corrupt, c)
		}
	}
	return sc, nil
}
