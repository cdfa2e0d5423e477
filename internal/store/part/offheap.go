package part

import (
	"math/bits"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// offHeap is the block cache's memory: anonymous mappings outside the Go
// heap. The collector neither scans what the cache holds nor counts it in
// the heap it lets grow to twice what is live, so a full cache of a
// gigabyte costs a gigabyte, not two (a 20M-line store's questions left
// 2.1 GB of anonymous memory beside a 1 GB cache when it was on the heap).
//
// Buffers come in size classes (whole pages, four classes a doubling above
// 16 pages, so at most a quarter is lost to rounding) and go back to a
// free list of their class, up to maxFree bytes, for the next: a cache at
// its budget evicts about what it takes in, without a system call for
// either. A buffer of less than minMapped bytes is an ordinary heap slice.
//
// The cache, not offHeap, decides when a buffer may be freed: only once no
// read that may hold it is left (BlockCache.Enter, Leave).
type offHeap struct {
	mu        sync.Mutex
	mapped    map[*byte]int // every buffer handed out or free, by its first byte: its class size
	free      map[int][]*byte
	freeBytes int64
	maxFree   int64
	closed    bool
}

const pageSize = 4096

// minMapped is the least a buffer must be to be mapped. In a test binary
// it is a few bytes, so that the tests' small blocks take the path (and
// the poisoning, release) that a server's large ones do.
var minMapped = func() int {
	if testing.Testing() {
		return 64
	}
	return 2048
}()

func newOffHeap(maxFree int64) *offHeap {
	return &offHeap{mapped: map[*byte]int{}, free: map[int][]*byte{}, maxFree: maxFree}
}

// sizeClass returns the bytes a buffer of n bytes takes.
func sizeClass(n int) int {
	p := (n + pageSize - 1) / pageSize
	if p > 16 {
		step := 1 << (bits.Len(uint(p)) - 3) // four classes from one power of two to the next
		p = (p + step - 1) &^ (step - 1)
	}
	return p * pageSize
}

// alloc returns a buffer of length n, zeroed if it is newly mapped and
// holding what its last user left otherwise.
func (m *offHeap) alloc(n int) []byte {
	if n < minMapped {
		return heapBytes(n)
	}
	size := sizeClass(n)
	m.mu.Lock()
	if l := m.free[size]; len(l) > 0 {
		p := l[len(l)-1]
		m.free[size] = l[:len(l)-1]
		m.freeBytes -= int64(size)
		m.mu.Unlock()
		return unsafe.Slice(p, size)[:n]
	}
	m.mu.Unlock()
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil { // out of mappings or memory: the heap's turn to say so
		return heapBytes(n)
	}
	m.mu.Lock()
	m.mapped[&b[0]] = size
	m.mu.Unlock()
	return b[:n]
}

// heapBytes returns n bytes on the heap aligned as alloc's (for view).
func heapBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)[:n]
}

// size returns the memory a buffer from alloc holds.
func (m *offHeap) size(b []byte) int64 {
	if cap(b) == 0 {
		return 0
	}
	if cap(b) < minMapped {
		return int64(cap(b))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.mapped[unsafe.SliceData(b)]; ok {
		return int64(n)
	}
	return int64(cap(b))
}

// mappedSize returns the memory of a buffer from alloc that is mapped, 0
// for a heap slice.
func (m *offHeap) mappedSize(p *byte) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(m.mapped[p])
}

// release takes back a buffer from alloc, which nothing may use again; a
// heap slice is left to the collector.
func (m *offHeap) release(p *byte) {
	if p == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	size, ok := m.mapped[p]
	if !ok {
		return
	}
	b := unsafe.Slice(p, size)
	if testing.Testing() {
		// A read that kept a view of the cache past its pin reads this,
		// not the values it had: the engine's differential tests see it.
		for i := range b {
			b[i] = 0xa5
		}
	}
	if !m.closed && m.freeBytes+int64(size) <= m.maxFree {
		m.free[size] = append(m.free[size], p)
		m.freeBytes += int64(size)
		return
	}
	delete(m.mapped, p)
	_ = unix.Munmap(b)
}

// close unmaps the free buffers; those still handed out are unmapped
// when released.
func (m *offHeap) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for size, l := range m.free {
		for _, p := range l {
			delete(m.mapped, p)
			_ = unix.Munmap(unsafe.Slice(p, size))
		}
	}
	clear(m.free)
	m.freeBytes = 0
}

// mappedBytes returns the memory mapped, handed out or free.
func (m *offHeap) mappedBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, size := range m.mapped {
		n += int64(size)
	}
	return n
}

// view returns n values of type T laid out in b from offset *off, aligned
// for T, and moves *off past them. REQUIRES: b 8-aligned and long enough
// (regionSize).
func view[T any](b []byte, off *int, n int) []T {
	var zero T
	a := int(unsafe.Alignof(zero))
	*off = (*off + a - 1) &^ (a - 1)
	if n == 0 {
		return nil
	}
	s := unsafe.Slice((*T)(unsafe.Pointer(&b[*off])), n)
	*off += n * int(unsafe.Sizeof(zero))
	return s
}

// regionSize adds to *size what view of n values of type T takes.
func regionSize[T any](size *int, n int) {
	var zero T
	a := int(unsafe.Alignof(zero))
	*size = (*size+a-1)&^(a-1) + n*int(unsafe.Sizeof(zero))
}

// bytesOf returns the memory of s as bytes, for release.
func bytesOf[T any](s []T) *byte {
	if cap(s) == 0 {
		return nil
	}
	return (*byte)(unsafe.Pointer(unsafe.SliceData(s)))
}
