package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Op names an operation of FS or File that an Injector can fail.
type Op uint8

// The operations an Injector is consulted on. The zero Op is none of them.
const (
	OpCreate        Op = iota + 1 // FS.Create
	OpOpen                        // FS.Open
	OpOpenReadWrite               // FS.OpenReadWrite
	OpRemove                      // FS.Remove
	OpRemoveAll                   // FS.RemoveAll
	OpRename                      // FS.Rename; the name is the old one
	OpMkdir                       // FS.MkdirAll
	OpList                        // FS.List
	OpStat                        // FS.Stat and File.Stat
	OpSyncDir                     // FS.SyncDir
	OpLock                        // FS.Lock
	OpMap                         // FS.Map
	OpFree                        // FS.Free
	OpRead                        // File.Read and File.ReadAt
	OpWrite                       // File.Write
	OpSync                        // File.Sync
	OpTruncate                    // File.Truncate
	OpClose                       // File.Close
)

var opNames = [...]string{
	OpCreate:        "create",
	OpOpen:          "open",
	OpOpenReadWrite: "openrw",
	OpRemove:        "remove",
	OpRemoveAll:     "removeall",
	OpRename:        "rename",
	OpMkdir:         "mkdir",
	OpList:          "list",
	OpStat:          "stat",
	OpSyncDir:       "syncdir",
	OpLock:          "lock",
	OpMap:           "map",
	OpFree:          "free",
	OpRead:          "read",
	OpWrite:         "write",
	OpSync:          "sync",
	OpTruncate:      "truncate",
	OpClose:         "close",
}

func (op Op) String() string {
	if int(op) < len(opNames) && opNames[op] != "" {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", uint8(op))
}

// An Injector is consulted by a FaultFS before each operation, with the
// name the operation was given (for a File, the name it was opened with).
// A non-nil result fails the operation with that error, unchanged, without
// calling the inner FS; a *PartialWriteError for OpWrite lets part of the
// write through first, and OpClose closes the inner file all the same.
//
// An Injector may be called from several goroutines at once.
type Injector func(op Op, name string) error

// ErrInjected is a ready-made error for injectors.
var ErrInjected = errors.New("injected fault")

// PartialWriteError, returned by an Injector for OpWrite, makes the write
// pass its first N bytes (at most all of them) to the inner file and then
// fail with Err, as a write does when the disk fills up part way. For any
// other op it fails the operation with Err.
type PartialWriteError struct {
	N   int
	Err error // nil means io.ErrShortWrite
}

func (e *PartialWriteError) Error() string {
	return fmt.Sprintf("partial write of %d bytes: %v", e.N, e.cause())
}

func (e *PartialWriteError) Unwrap() error { return e.cause() }

func (e *PartialWriteError) cause() error {
	if e.Err == nil {
		return io.ErrShortWrite
	}
	return e.Err
}

// FailOnce fails the first call of op with err.
func FailOnce(op Op, err error) Injector { return FailAfter(op, 0, err) }

// FailAfter lets n calls of op through and fails the n+1-th with err; the
// calls after it succeed again.
func FailAfter(op Op, n int, err error) Injector {
	var calls atomic.Int64
	return func(o Op, _ string) error {
		if o == op && calls.Add(1) == int64(n)+1 {
			return err
		}
		return nil
	}
}

// FailWhen fails every operation for which match reports true with err.
// match may be called from several goroutines at once.
func FailWhen(match func(op Op, name string) bool, err error) Injector {
	return func(op Op, name string) error {
		if match(op, name) {
			return err
		}
		return nil
	}
}

// FaultFS wraps an FS and fails the operations its Injector picks. The
// Files it returns consult the same Injector, including one set later with
// SetInjector.
//
// A FaultFS is safe for concurrent use when its inner FS and its Injector
// are.
type FaultFS struct {
	inner  FS
	inject atomic.Pointer[Injector]
}

var _ FS = (*FaultFS)(nil)

// NewFault returns a FaultFS over inner; a nil inject injects nothing.
func NewFault(inner FS, inject Injector) *FaultFS {
	f := &FaultFS{inner: inner}
	f.SetInjector(inject)
	return f
}

// SetInjector replaces the Injector, for the FaultFS and the files already
// open through it; nil injects nothing.
func (f *FaultFS) SetInjector(inject Injector) {
	f.inject.Store(&inject)
}

func (f *FaultFS) check(op Op, name string) error {
	if inject := *f.inject.Load(); inject != nil {
		return inject(op, name)
	}
	return nil
}

// failure returns the error an injected err fails a non-write op with.
func failure(err error) error {
	if pw, ok := err.(*PartialWriteError); ok {
		return pw.cause()
	}
	return err
}

func (f *FaultFS) wrap(file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{fs: f, f: file}, nil
}

func (f *FaultFS) Create(name string) (File, error) {
	if err := f.check(OpCreate, name); err != nil {
		return nil, failure(err)
	}
	return f.wrap(f.inner.Create(name))
}

func (f *FaultFS) Open(name string) (File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, failure(err)
	}
	return f.wrap(f.inner.Open(name))
}

func (f *FaultFS) OpenReadWrite(name string) (File, error) {
	if err := f.check(OpOpenReadWrite, name); err != nil {
		return nil, failure(err)
	}
	return f.wrap(f.inner.OpenReadWrite(name))
}

func (f *FaultFS) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return failure(err)
	}
	return f.inner.Remove(name)
}

func (f *FaultFS) RemoveAll(name string) error {
	if err := f.check(OpRemoveAll, name); err != nil {
		return failure(err)
	}
	return f.inner.RemoveAll(name)
}

// Rename consults the Injector with oldname.
func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.check(OpRename, oldname); err != nil {
		return failure(err)
	}
	return f.inner.Rename(oldname, newname)
}

func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.check(OpMkdir, dir); err != nil {
		return failure(err)
	}
	return f.inner.MkdirAll(dir, perm)
}

func (f *FaultFS) List(dir string) ([]string, error) {
	if err := f.check(OpList, dir); err != nil {
		return nil, failure(err)
	}
	return f.inner.List(dir)
}

func (f *FaultFS) Stat(name string) (os.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, failure(err)
	}
	return f.inner.Stat(name)
}

func (f *FaultFS) SyncDir(dir string) error {
	if err := f.check(OpSyncDir, dir); err != nil {
		return failure(err)
	}
	return f.inner.SyncDir(dir)
}

// Lock consults the Injector once; releasing the lock is not injected.
func (f *FaultFS) Lock(name string) (io.Closer, error) {
	if err := f.check(OpLock, name); err != nil {
		return nil, failure(err)
	}
	return f.inner.Lock(name)
}

func (f *FaultFS) Map(name string) ([]byte, func() error, error) {
	if err := f.check(OpMap, name); err != nil {
		return nil, nil, failure(err)
	}
	return f.inner.Map(name)
}

func (f *FaultFS) Free(dir string) (uint64, error) {
	if err := f.check(OpFree, dir); err != nil {
		return 0, failure(err)
	}
	return f.inner.Free(dir)
}

type faultFile struct {
	fs *FaultFS
	f  File
}

func (f *faultFile) Name() string { return f.f.Name() }

func (f *faultFile) Read(p []byte) (int, error) {
	if err := f.fs.check(OpRead, f.f.Name()); err != nil {
		return 0, failure(err)
	}
	return f.f.Read(p)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.f.Name()); err != nil {
		return 0, failure(err)
	}
	return f.f.ReadAt(p, off)
}

func (f *faultFile) Write(p []byte) (int, error) {
	err := f.fs.check(OpWrite, f.f.Name())
	if err == nil {
		return f.f.Write(p)
	}
	pw, ok := err.(*PartialWriteError)
	if !ok {
		return 0, err
	}
	n, werr := f.f.Write(p[:min(max(pw.N, 0), len(p))])
	if werr != nil {
		return n, werr
	}
	return n, pw.cause()
}

func (f *faultFile) Sync() error {
	if err := f.fs.check(OpSync, f.f.Name()); err != nil {
		return failure(err)
	}
	return f.f.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.f.Name()); err != nil {
		return failure(err)
	}
	return f.f.Truncate(size)
}

func (f *faultFile) Stat() (os.FileInfo, error) {
	if err := f.fs.check(OpStat, f.f.Name()); err != nil {
		return nil, failure(err)
	}
	return f.f.Stat()
}

// Close closes the inner file even when an error is injected, as close(2)
// releases the descriptor even when it reports an error; the injected
// error is returned.
func (f *faultFile) Close() error {
	ierr := f.fs.check(OpClose, f.f.Name())
	err := f.f.Close()
	if ierr != nil {
		return failure(ierr)
	}
	return err
}
