package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that keeps the durability contract of FS
// literally, so that Crash can show what a power loss would leave: file
// bytes written since the last File.Sync, and directory entries changed
// since the last SyncDir of their directory, are lost (or, for file bytes,
// torn).
//
// There is no working directory: a relative name is taken from the root,
// so "wal/1" and "/wal/1" are the same file.
//
// Total file bytes can be capped with SetCapacity to simulate a full disk.
// Bytes of a file that has been removed while still open are not counted.
//
// A MemFS and its files are safe for concurrent use; one mutex serialises
// every operation.
type MemFS struct {
	mu       sync.Mutex
	root     *node
	locks    map[*node]bool // inodes whose lock is held
	capacity int64          // 0: unlimited
	used     int64          // INVARIANT: sum of len(data) of files with nlink > 0
}

// node is an inode: a file or a directory.
type node struct {
	isDir bool

	// Files.
	data   []byte // current contents
	synced []byte // contents as of the last Sync; never shares data's array
	// INVARIANT: dirtyFrom <= min(len(data), len(synced)) and
	// data[:dirtyFrom] equals synced[:dirtyFrom], so a Sync only copies
	// what changed since the last one.
	dirtyFrom int
	nlink     int // entries naming this file in the current namespace

	// Directories: name → inode, as things are now and as they would be
	// found after a crash (as of the last SyncDir).
	cur, dur map[string]*node
}

func newDir() *node {
	return &node{isDir: true, cur: map[string]*node{}, dur: map[string]*node{}}
}

// NewMem returns an empty MemFS with an unlimited capacity. Its root
// directory always exists and is durable.
func NewMem() *MemFS {
	return &MemFS{root: newDir(), locks: map[*node]bool{}}
}

var _ FS = (*MemFS)(nil)

// memModTime is the ModTime of every MemFS file: the contract says nothing
// about times, and a constant keeps tests deterministic.
var memModTime = time.Unix(0, 0).UTC()

var errNegativeOffset = errors.New("negative offset")

// split cleans name and returns its components from the root; the root
// itself has none.
func split(name string) ([]string, error) {
	if name == "" {
		return nil, syscall.ENOENT
	}
	p := path.Clean("/" + name)
	if p == "/" {
		return nil, nil
	}
	return strings.Split(p[1:], "/"), nil
}

// walkLocked returns the inode that comps lead to from the root.
func (m *MemFS) walkLocked(comps []string) (*node, error) {
	n := m.root
	for _, c := range comps {
		if !n.isDir {
			return nil, syscall.ENOTDIR
		}
		child, ok := n.cur[c]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = child
	}
	return n, nil
}

func (m *MemFS) lookupLocked(name string) (*node, error) {
	comps, err := split(name)
	if err != nil {
		return nil, err
	}
	return m.walkLocked(comps)
}

// parentLocked returns the directory holding name and name's last
// component; base is "" when name is the root.
func (m *MemFS) parentLocked(name string) (dir *node, base string, err error) {
	comps, err := split(name)
	if err != nil {
		return nil, "", err
	}
	if len(comps) == 0 {
		return nil, "", nil
	}
	dir, err = m.walkLocked(comps[:len(comps)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, comps[len(comps)-1], nil
}

// openLocked returns the file name, creating it when create is set.
func (m *MemFS) openLocked(name string, create bool) (*node, error) {
	dir, base, err := m.parentLocked(name)
	if err != nil {
		return nil, err
	}
	if base == "" {
		return nil, syscall.EISDIR
	}
	n, ok := dir.cur[base]
	switch {
	case ok && n.isDir:
		return nil, syscall.EISDIR
	case ok:
		return n, nil
	case !create:
		return nil, syscall.ENOENT
	}
	n = &node{nlink: 1}
	dir.cur[base] = n
	return n, nil
}

// unlinkLocked drops one current name of n.
func (m *MemFS) unlinkLocked(n *node) {
	if n.isDir {
		return
	}
	n.nlink--
	if n.nlink == 0 {
		m.used -= int64(len(n.data))
	}
}

// resizeLocked sets the length of file n, zero-filling any growth.
func (m *MemFS) resizeLocked(n *node, size int) {
	old := len(n.data)
	if size > old {
		n.data = slices.Grow(n.data, size-old)[:size]
		clear(n.data[old:])
	} else {
		n.data = n.data[:size]
	}
	n.dirtyFrom = min(n.dirtyFrom, size)
	if n.nlink > 0 {
		m.used += int64(size - old)
	}
}

// roomLocked returns how many more file bytes fit under the capacity.
func (m *MemFS) roomLocked() int64 {
	if m.capacity <= 0 {
		return math.MaxInt64
	}
	return max(m.capacity-m.used, 0)
}

func syncLocked(n *node) {
	k := n.dirtyFrom
	n.synced = append(n.synced[:k], n.data[k:]...)
	n.dirtyFrom = len(n.data)
}

// Create creates or truncates name. The new directory entry is durable only
// after SyncDir of its directory.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.openLocked(name, true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	m.resizeLocked(n, 0)
	return &memFile{m: m, n: n, name: name, writable: true}, nil
}

// Open opens name for reading. A directory can be opened (for Stat), but
// not read.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{m: m, n: n, name: name}, nil
}

// OpenReadWrite opens the existing file name for reading and writing at
// offset 0.
func (m *MemFS) OpenReadWrite(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.openLocked(name, false)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{m: m, n: n, name: name, writable: true}, nil
}

// Remove removes a file or an empty directory. Files still open keep
// working on the removed inode.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked(name)
	if err == nil && base == "" {
		err = syscall.EBUSY
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	n, ok := dir.cur[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	if n.isDir && len(n.cur) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.cur, base)
	m.unlinkLocked(n)
	return nil
}

// RemoveAll removes name and everything under it; a missing name is not an
// error.
func (m *MemFS) RemoveAll(name string) error {
	if name == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked(name)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return nil
	case err != nil:
		return &fs.PathError{Op: "unlinkat", Path: name, Err: err}
	case base == "" || name == "." || strings.HasSuffix(name, "/."):
		// Like os.RemoveAll, which refuses to remove "." or the root.
		return &fs.PathError{Op: "RemoveAll", Path: name, Err: syscall.EINVAL}
	}
	n, ok := dir.cur[base]
	if !ok {
		return nil
	}
	m.removeTreeLocked(n)
	delete(dir.cur, base)
	m.unlinkLocked(n)
	return nil
}

// removeTreeLocked unlinks everything under directory n, depth first, as
// rm -r does; n's durable entries stay for a crash to bring back.
func (m *MemFS) removeTreeLocked(n *node) {
	if !n.isDir {
		return
	}
	for name, child := range n.cur {
		m.removeTreeLocked(child)
		delete(n.cur, name)
		m.unlinkLocked(child)
	}
}

// Rename moves oldname to newname, replacing a file newname atomically. As
// with os.Rename, newname may not be an existing directory. The change is
// durable only after SyncDir of both parent directories; until then a crash
// may leave the old name, the new one, or both.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.renameLocked(oldname, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (m *MemFS) renameLocked(oldname, newname string) error {
	od, ob, err := m.parentLocked(oldname)
	if err != nil {
		return err
	}
	if ob == "" {
		return syscall.EBUSY
	}
	n, ok := od.cur[ob]
	if !ok {
		return syscall.ENOENT
	}
	nd, nb, err := m.parentLocked(newname)
	if err != nil {
		return err
	}
	if nb == "" {
		return syscall.EEXIST
	}
	target, exists := nd.cur[nb]
	switch {
	case target == n:
		return nil // the same inode: rename(2) does nothing
	case exists && target.isDir:
		return syscall.EEXIST
	case exists && n.isDir:
		return syscall.ENOTDIR
	}
	if n.isDir {
		// A directory cannot move under itself.
		comps, _ := split(newname)
		d := m.root
		for _, c := range comps[:len(comps)-1] {
			d = d.cur[c]
			if d == n {
				return syscall.EINVAL
			}
		}
	}
	delete(od.cur, ob)
	nd.cur[nb] = n
	if exists {
		m.unlinkLocked(target)
	}
	return nil
}

// MkdirAll creates dir and any missing parents; perm is ignored. New
// entries are durable only after SyncDir of their parents.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	comps, err := split(dir)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	n := m.root
	for _, c := range comps {
		child, ok := n.cur[c]
		if !ok {
			child = newDir()
			n.cur[c] = child
		}
		if !child.isDir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = child
	}
	return nil
}

// List returns the names in dir, sorted.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(dir)
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return slices.Sorted(maps.Keys(n.cur)), nil
}

// Stat describes name. ModTime is a constant.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(name)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return newMemInfo(name, n), nil
}

// SyncDir makes the current entries of dir durable. On a file it syncs the
// file's data, as fsync would.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(dir)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	if !n.isDir {
		syncLocked(n)
		return nil
	}
	n.dur = maps.Clone(n.cur)
	return nil
}

// Lock takes an exclusive lock on the file name, creating it if needed.
// Like flock, the lock belongs to the inode, so it follows a rename; it is
// held within this MemFS only, and a Crash copy starts with none held.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.openLocked(name, true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if m.locks[n] {
		return nil, ErrLocked
	}
	m.locks[n] = true
	return &memLock{m: m, n: n, name: name}, nil
}

type memLock struct {
	m      *MemFS
	n      *node
	name   string
	closed bool // guarded by m.mu
}

// Close releases the lock. A second Close fails and releases nothing.
func (l *memLock) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.closed {
		return &fs.PathError{Op: "close", Path: l.name, Err: fs.ErrClosed}
	}
	l.closed = true
	delete(l.m.locks, l.n)
	return nil
}

// Map returns a copy of the contents of name; release does nothing.
func (m *MemFS) Map(name string) ([]byte, func() error, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(name)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if n.isDir {
		return nil, nil, &fs.PathError{Op: "mmap", Path: name, Err: syscall.ENODEV}
	}
	return bytes.Clone(n.data), func() error { return nil }, nil
}

// Free returns the capacity less the bytes in files, or math.MaxInt64 when
// the capacity is unlimited. dir must exist.
func (m *MemFS) Free(dir string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookupLocked(dir); err != nil {
		return 0, &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return uint64(m.roomLocked()), nil
}

// Used returns the total bytes of all files.
func (m *MemFS) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// SetCapacity caps the total bytes of all files; limit <= 0 means
// unlimited. A write that would go past the cap writes what fits and fails
// with ENOSPC. Lowering the cap below what is used removes nothing.
func (m *MemFS) SetCapacity(limit int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = max(limit, 0)
}

// CrashOptions says what a simulated power loss does to bytes that were
// written but not synced.
type CrashOptions struct {
	// Rand, when nil, makes every unsynced byte vanish. When set, each
	// file keeps a random prefix of the bytes it has beyond its synced
	// length (a torn write; at times none of them, at times all), and, half
	// of the time, a random range of that kept prefix is zeroed or filled
	// with garbage, as when the disk wrote later pages before earlier ones.
	// The same Rand state on the same MemFS gives the same result.
	Rand *rand.Rand
}

// Crash returns a new, independent MemFS holding what a power loss would
// leave of m: the directory entries as of each directory's last SyncDir,
// and in each file its synced bytes, plus what opts says of the unsynced
// ones. Synced bytes are never changed. Everything in the result is
// durable, it has m's capacity, and no locks are held. m and its open files
// are unaffected and can go on being used.
func (m *MemFS) Crash(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemFS{root: newDir(), locks: map[*node]bool{}, capacity: m.capacity}
	copies := map[*node]*node{m.root: c.root}
	crashCopyDir(c, c.root, m.root, opts.Rand, copies)
	return c
}

// crashCopyDir fills directory dst of c with the durable entries of src.
// copies maps inodes of the crashed FS to theirs, so a file reachable by two
// durable names (a rename whose two directories were not both synced) stays
// one inode with two links. A directory reachable twice keeps only the
// first name found, in sorted depth-first order: directories have one name.
//
// REQUIRES: the caller holds the lock of the FS that src belongs to.
func crashCopyDir(c *MemFS, dst, src *node, rnd *rand.Rand, copies map[*node]*node) {
	for _, name := range slices.Sorted(maps.Keys(src.dur)) {
		child := src.dur[name]
		if child.isDir {
			if _, seen := copies[child]; seen {
				continue
			}
			d := newDir()
			copies[child] = d
			dst.cur[name] = d
			crashCopyDir(c, d, child, rnd, copies)
			continue
		}
		f, ok := copies[child]
		if !ok {
			f = crashFile(child, rnd)
			copies[child] = f
			c.used += int64(len(f.data))
		}
		f.nlink++
		dst.cur[name] = f
	}
	dst.dur = maps.Clone(dst.cur)
}

// crashFile returns what a power loss leaves of file n.
func crashFile(n *node, rnd *rand.Rand) *node {
	data := bytes.Clone(n.synced)
	if rnd != nil && len(n.data) > len(n.synced) {
		tail := n.data[len(n.synced):]
		var keep int
		switch rnd.IntN(4) {
		case 0:
			keep = 0
		case 1:
			keep = len(tail)
		default:
			keep = rnd.IntN(len(tail) + 1)
		}
		data = append(data, tail[:keep]...)
		if kept := data[len(n.synced):]; len(kept) > 0 && rnd.IntN(2) == 0 {
			i := rnd.IntN(len(kept))
			j := i + 1 + rnd.IntN(len(kept)-i)
			if rnd.IntN(2) == 0 {
				clear(kept[i:j])
			} else {
				for k := i; k < j; k++ {
					kept[k] = byte(rnd.Uint32())
				}
			}
		}
	}
	// What is on the medium after the crash is durable.
	return &node{data: data, synced: bytes.Clone(data), dirtyFrom: len(data)}
}

type memFile struct {
	m        *MemFS
	n        *node
	name     string
	writable bool
	off      int64 // guarded by m.mu
	closed   bool  // guarded by m.mu
}

func (f *memFile) checkLocked(op string) error {
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	return nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Read(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	n, err := f.readAtLocked("read", p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errNegativeOffset}
	}
	n, err := f.readAtLocked("read", p, off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (f *memFile) readAtLocked(op string, p []byte, off int64) (int, error) {
	if err := f.checkLocked(op); err != nil {
		return 0, err
	}
	if f.n.isDir {
		return 0, &fs.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	return copy(p, f.n.data[off:]), nil
}

// Write writes p at the file offset. Past the capacity it writes what fits
// and fails with ENOSPC.
func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.checkLocked("write"); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	n := f.n
	size, off := int64(len(n.data)), f.off
	end := off + int64(len(p))
	var err error
	if room := f.m.roomLocked(); n.nlink > 0 && end-size > room {
		p = p[:max(size+room-off, 0)]
		end = off + int64(len(p))
		err = &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	if len(p) == 0 {
		return 0, err
	}
	if end > size {
		f.m.resizeLocked(n, int(end))
	}
	copy(n.data[off:], p)
	n.dirtyFrom = min(n.dirtyFrom, int(off))
	f.off = end
	return len(p), err
}

// Sync makes the file's current bytes and size durable.
func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.checkLocked("sync"); err != nil {
		return err
	}
	if !f.n.isDir {
		syncLocked(f.n)
	}
	return nil
}

// Truncate sets the file size, zero-filling growth, without moving the
// offset. Growth past the capacity fails with ENOSPC.
func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.checkLocked("truncate"); err != nil {
		return err
	}
	if !f.writable || size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	if grow := size - int64(len(f.n.data)); f.n.nlink > 0 && grow > f.m.roomLocked() {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.ENOSPC}
	}
	f.m.resizeLocked(f.n, int(size))
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.checkLocked("stat"); err != nil {
		return nil, err
	}
	return newMemInfo(f.name, f.n), nil
}

// Close closes the file; a second Close fails with fs.ErrClosed.
func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.checkLocked("close"); err != nil {
		return err
	}
	f.closed = true
	return nil
}

type memInfo struct {
	name  string
	size  int64
	isDir bool
}

func newMemInfo(name string, n *node) memInfo {
	return memInfo{name: path.Base(path.Clean("/" + name)), size: int64(len(n.data)), isDir: n.isDir}
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) IsDir() bool        { return i.isDir }
func (i memInfo) ModTime() time.Time { return memModTime }
func (i memInfo) Sys() any           { return nil }

func (i memInfo) Mode() fs.FileMode {
	if i.isDir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
