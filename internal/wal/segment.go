package wal

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sluicelog/sluice/internal/vfs"
)

// segment is the open segment that appends go to. It is owned by the Log's
// writer goroutine.
type segment struct {
	n    uint64
	path string
	f    vfs.File
	// size is the length of the file's good prefix: the header and whole
	// frames. INVARIANT: between writer steps, the file holds exactly size
	// bytes and its write offset is size.
	size int64
}

// createSegment creates segment n in dir with its header, and makes the
// file and its directory entry durable before any frame is written to it.
// On error it leaves no file behind, where it can.
func createSegment(fs vfs.FS, dir string, n uint64) (*segment, error) {
	path := filepath.Join(dir, segmentName(n))
	f, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("wal: create segment %d: %w", n, err)
	}
	s := &segment{n: n, path: path, f: f}
	err = s.write(appendSegmentHeader(nil, n))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		fs.Remove(path) // best effort: recovery repairs a torn header anyway
		return nil, fmt.Errorf("wal: create segment %d: %w", n, err)
	}
	s.size = headerSize
	return s, nil
}

// write writes all of b at the file's write offset.
func (s *segment) write(b []byte) error {
	n, err := s.f.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// truncate cuts the file back to size bytes and moves the write offset
// there, so that no partial frame stays behind a failed write.
func (s *segment) truncate(fs vfs.FS, size int64) error {
	if err := s.f.Truncate(size); err != nil {
		return err
	}
	// vfs.File has no Seek: a file that can seek is moved; any other is
	// reopened and read up to size, a slow path taken only after a failed
	// write.
	if sk, ok := s.f.(io.Seeker); ok {
		_, err := sk.Seek(size, io.SeekStart)
		return err
	}
	err := s.f.Close()
	s.f = nil
	f, oerr := fs.OpenReadWrite(s.path)
	if oerr != nil {
		return errors.Join(err, oerr)
	}
	if _, cerr := io.CopyN(io.Discard, f, size); cerr != nil {
		f.Close()
		return errors.Join(err, cerr)
	}
	s.f = f
	return err
}

// close closes the file; the segment is unusable afterwards.
func (s *segment) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
