package query

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Key slot arrays of hugeSlotBytes or more live in anonymous mappings of
// their own, advised MADV_HUGEPAGE. A count of millions of
// distinct keys probes its set at random: with 4 KiB pages nearly every
// probe is a TLB miss as well as a cache miss, and Go's heap is given
// huge pages only where the machine's transparent huge pages are
// "always" (most say "madvise"). Measured in process (bench/querycpu) on
// the 20M-line app store, count(sum by (user_id) (...)) over 7 million
// users: 1,195 -> 947 and 1,127 -> 936 ms CPU in two sets of three
// rounds (medians), 790 -> 703 at best; on 2M lines within the noise.
// Series tables' slots were tried too and gained nothing: their probes
// go on to the series, which stay on the heap; so did the block cache's
// mappings (part.offHeap). The bytes are charged to the query's budget
// as before (keySet.add), but the Go heap's soft limit does not see them.
//
// A mapping is not pooled: it is unmapped when its set lets it go (the
// kernel zeroes the next one's pages as it faults them in, 2 MiB at a
// time, which is what clearing a pooled array cost). Being outside the
// heap, a mapping is owned by a slotMapping: a set dropped without
// release (a query that failed or was canceled) has its mapping unmapped
// when the collector finds the slotMapping unreachable
// (runtime.AddCleanup).
const hugeSlotBytes = 4 << 20

// mappedSlots counts the mappings of key slots not unmapped yet.
var mappedSlots atomic.Int64

// slotMapping owns a key slot array's mapping.
type slotMapping struct{ cleanup runtime.Cleanup }

// mappedRange is a mapping's address and length, for its cleanup.
type mappedRange struct{ addr, size uintptr }

// takeKeySlots returns n empty key slots: a mapping of their own with its
// owner when they are hugeSlotBytes or more, else from keySlotPool (the
// owner nil). A mapping that fails leaves them on the heap.
func takeKeySlots(n int) ([]keySlot, *slotMapping) {
	size := n * int(unsafe.Sizeof(keySlot{}))
	if size < hugeSlotBytes {
		return keySlotPool.take(n), nil
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]keySlot, n), nil
	}
	// Huge pages as the kernel faults b in (transparent huge pages in
	// "madvise" mode, the common default; "always" gives them anyway).
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	m := &slotMapping{}
	m.cleanup = runtime.AddCleanup(m, unmapRange, mappedRange{uintptr(unsafe.Pointer(&b[0])), uintptr(size)})
	mappedSlots.Add(1)
	return unsafe.Slice((*keySlot)(unsafe.Pointer(&b[0])), n), m
}

// giveKeySlots lets go of slots from takeKeySlots and their owner m:
// unmapped now when m is not nil, else handed to keySlotPool.
func giveKeySlots(s []keySlot, m *slotMapping) {
	if m == nil {
		keySlotPool.give(s)
		return
	}
	m.cleanup.Stop()
	unmapRange(mappedRange{uintptr(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s)) * unsafe.Sizeof(keySlot{})})
}

// unmapRange unmaps r (a system call of addresses: the range is no Go
// memory to point at).
func unmapRange(r mappedRange) {
	_, _, _ = unix.Syscall(unix.SYS_MUNMAP, r.addr, r.size, 0)
	mappedSlots.Add(-1)
}
