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
// 16 pages, so at most a quarter is lost to rounding), cut from chunks of
// chunkSize mapped at once: a mapping per buffer would be tens of
// thousands of them for a full cache, near the kernel's limit of 65,530
// a process (vm.max_map_count), and a system call each. A buffer released
// goes back to a free list of its class for the next: a cache at its
// budget evicts about what it takes in. Past maxFree bytes of free
// buffers, the pages of those released are given back to the kernel
// (MADV_DONTNEED: still mapped, no longer resident) and the buffer is kept
// for its class, faulted in again when reused. A buffer of a quarter chunk
// or more has a mapping of its own, unmapped when released; one of less
// than minMapped bytes is an ordinary heap slice.
//
// The cache, not offHeap, decides when a buffer may be freed: only once no
// read that may hold it is left (BlockCache.Enter, Leave).
type offHeap struct {
	mu      sync.Mutex
	classOf map[*byte]int // every buffer handed out or free, by its first byte: its class size
	chunks  [][]byte      // the mappings buffers are cut from
	rest    []byte        // what is left of the newest chunk
	own     map[*byte]int // buffers with a mapping of their own, handed out
	// free and cold hold released buffers by class: those still
	// resident (freeBytes of them), and those whose pages were given back.
	free      map[int][]*byte
	cold      map[int][]*byte
	freeBytes int64
	maxFree   int64
	out       int   // buffers handed out
	outBytes  int64 // and their bytes, mapped ones
	closed    bool
}

const (
	pageSize  = 4096
	chunkSize = 32 << 20
)

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
	return &offHeap{classOf: map[*byte]int{}, own: map[*byte]int{}, free: map[int][]*byte{}, cold: map[int][]*byte{}, maxFree: maxFree}
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

// alloc returns a buffer of length n, zeroed if it is new and holding
// what its last user left otherwise.
func (m *offHeap) alloc(n int) []byte {
	if n < minMapped {
		return heapBytes(n)
	}
	size := sizeClass(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return heapBytes(n)
	}
	if l := m.free[size]; len(l) > 0 {
		p := l[len(l)-1]
		m.free[size] = l[:len(l)-1]
		m.freeBytes -= int64(size)
		m.out, m.outBytes = m.out+1, m.outBytes+int64(size)
		return unsafe.Slice(p, size)[:n]
	}
	if l := m.cold[size]; len(l) > 0 {
		p := l[len(l)-1]
		m.cold[size] = l[:len(l)-1]
		m.out, m.outBytes = m.out+1, m.outBytes+int64(size)
		return unsafe.Slice(p, size)[:n]
	}
	if size >= chunkSize/4 {
		b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil { // out of mappings or memory: the heap's turn to say so
			return heapBytes(n)
		}
		m.own[&b[0]] = size
		m.out, m.outBytes = m.out+1, m.outBytes+int64(size)
		return b[:n]
	}
	if len(m.rest) < size {
		c, err := unix.Mmap(-1, 0, chunkSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return heapBytes(n)
		}
		m.chunks = append(m.chunks, c)
		m.rest = c // what was left of the last is never touched: not resident
	}
	b := m.rest[:size:size]
	m.rest = m.rest[size:]
	m.classOf[&b[0]] = size
	m.out, m.outBytes = m.out+1, m.outBytes+int64(size)
	return b[:n]
}

// heapBytes returns n bytes on the heap aligned as alloc's (for view).
func heapBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)[:n]
}

// size returns the memory a buffer from alloc holds.
func (m *offHeap) size(b []byte) int64 {
	if n := m.mappedSize(unsafe.SliceData(b)); n > 0 {
		return n
	}
	return int64(cap(b))
}

// mappedSize returns the memory of a buffer from alloc that is mapped, 0
// for a heap slice.
func (m *offHeap) mappedSize(p *byte) int64 {
	if p == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.classOf[p]; ok {
		return int64(n)
	}
	return int64(m.own[p])
}

// release takes back a buffer from alloc, which nothing may use again; a
// heap slice is left to the collector.
func (m *offHeap) release(p *byte) {
	if p == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if size, ok := m.own[p]; ok {
		delete(m.own, p)
		m.out, m.outBytes = m.out-1, m.outBytes-int64(size)
		_ = unix.Munmap(unsafe.Slice(p, size))
		m.unmapIfDone()
		return
	}
	size, ok := m.classOf[p]
	if !ok {
		return
	}
	m.out, m.outBytes = m.out-1, m.outBytes-int64(size)
	b := unsafe.Slice(p, size)
	if testing.Testing() {
		// A read that kept a view of the cache past its pin reads this,
		// not the values it had: the engine's differential tests see it.
		for i := range b {
			b[i] = 0xa5
		}
	}
	if m.freeBytes+int64(size) <= m.maxFree {
		m.free[size] = append(m.free[size], p)
		m.freeBytes += int64(size)
	} else {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
		m.cold[size] = append(m.cold[size], p)
	}
	m.unmapIfDone()
}

// close unmaps the cache's memory once every buffer is released (at once
// if none is handed out).
func (m *offHeap) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.unmapIfDone()
}

// unmapIfDone unmaps the chunks of a closed offHeap that has no buffer
// out. REQUIRES: m.mu.
func (m *offHeap) unmapIfDone() {
	if !m.closed || m.out > 0 {
		return
	}
	for _, c := range m.chunks {
		_ = unix.Munmap(c)
	}
	m.chunks, m.rest = nil, nil
	clear(m.classOf)
	clear(m.free)
	clear(m.cold)
	m.freeBytes = 0
}

// residentBytes returns the memory of the buffers handed out and of the
// free ones not given back: what of the mappings may be resident.
func (m *offHeap) residentBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.outBytes + m.freeBytes
}

// mappings returns how many mappings the buffers are cut from or have.
func (m *offHeap) mappings() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.chunks) + len(m.own)
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
