package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FS is the part of a filesystem that the WAL and the store use. Paths are
// slash-separated and may be absolute or relative, as for package os.
//
// Durability contract, which every implementation keeps and MemFS
// enforces on a simulated crash: file data is durable only after File.Sync
// returns nil; a created, renamed or removed directory entry is durable
// only after SyncDir of its parent returns nil.
type FS interface {
	// Create creates or truncates a file for reading and writing.
	Create(name string) (File, error)
	// Open opens a file for reading.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing, at
	// offset 0, without truncating it.
	OpenReadWrite(name string) (File, error)
	Remove(name string) error
	// RemoveAll removes name and everything under it; a missing name is
	// not an error.
	RemoveAll(name string) error
	// Rename replaces newname with oldname atomically.
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names in dir, sorted.
	List(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the entries of dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on name, creating it if needed, and
	// fails at once with ErrLocked when another holder has it.
	Lock(name string) (io.Closer, error)
	// Map returns the whole contents of a file that will not change
	// again, mapped into memory where the implementation can; release
	// must be called once the bytes are no longer used.
	Map(name string) (data []byte, release func() error, err error)
	// Free returns the bytes available to an unprivileged writer on the
	// filesystem holding dir.
	Free(dir string) (uint64, error)
}

// File is an open file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's data (and its size) durable: fdatasync.
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Name() string
}

// ErrLocked is returned by Lock when another holder has the lock.
var ErrLocked = errors.New("locked by another process")

// IsNoSpace reports whether err means the filesystem is full.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// IsNotExist reports whether err means a file does not exist.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// OS is the real filesystem.
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Sync() error {
	fd := f.Fd()
	if fd == ^uintptr(0) {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: fs.ErrClosed}
	}
	err := unix.Fdatasync(int(fd))
	runtime.KeepAlive(f.File) // its finalizer must not close fd before the call
	if err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenReadWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                 { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

func (osFS) List(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

type osLock struct{ f *os.File }

func (l osLock) Close() error { return l.f.Close() } // closing drops the flock

func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, &fs.PathError{Op: "flock", Path: name, Err: err}
	}
	return osLock{f}, nil
}

func (osFS) Map(name string) ([]byte, func() error, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return nil, func() error { return nil }, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "mmap", Path: name, Err: err}
	}
	return data, func() error { return unix.Munmap(data) }, nil
}

func (osFS) Free(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Clean(dir), &st); err != nil {
		return 0, &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// pageDropper is implemented by filesystems whose Map is a real memory
// mapping.
type pageDropper interface {
	dropPages(b []byte)
}

// DropPages tells the kernel that the process no longer needs the pages of
// b, a part of a mapping fs.Map returned: they leave its resident memory
// (and stay in the page cache). A no-op where Map does not map.
func DropPages(fs FS, b []byte) {
	if d, ok := fs.(pageDropper); ok {
		d.dropPages(b)
	}
}

func (osFS) dropPages(b []byte) {
	// madvise needs a page-aligned start: drop the whole pages inside b.
	const page = 4096
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first := (start + page - 1) &^ (page - 1)
	end := start + uintptr(len(b))
	if end <= first+page {
		return
	}
	n := (end - first) &^ (page - 1)
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), first-start)
	_ = unix.Madvise(unsafe.Slice((*byte)(p), n), unix.MADV_DONTNEED)
}

// ReplaceFile replaces the file at path (on the OS's filesystem) with
// data, durably and whole: data goes to a new file beside it, which is
// fsynced, given perm, renamed over path, and the directory fsynced. When
// it returns nil, path holds data across a crash; when it fails, path
// holds what it held.
func ReplaceFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return OS.SyncDir(filepath.Dir(path))
}
