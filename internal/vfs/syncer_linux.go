package vfs

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Syncer makes an OS file durable as File.Sync does (fdatasync), but
// through an io_uring: the fdatasync runs in a kernel worker while the
// calling goroutine waits on an eventfd in Go's network poller, holding
// no P. File.Sync is a blocking syscall that keeps its P until sysmon
// takes it back, and with GOMAXPROCS=1 that is the only P: nothing else
// runs meanwhile (issue 18's profile: a fifth of a core idle under
// one-line pushes, docs/small-request.md).
//
// Files that are not the OS's (a fault-injecting or in-memory FS) are
// synced by their own Sync.
//
// Concurrency: one goroutine at a time (the WAL's writer); Close after
// the last Sync.
type Syncer struct {
	ring    int
	event   *os.File // the eventfd the ring signals completions on
	sq, cq  []byte   // the rings, mapped
	sqes    []byte
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
	buf     [8]byte
	failed  error // the ring's failure: File.Sync from then on
}

// The kernel's ABI (include/uapi/linux/io_uring.h).
const (
	uringOffSQRing      = 0
	uringOffCQRing      = 0x8000000
	uringOffSQEs        = 0x10000000
	uringOpFsync        = 3
	uringFsyncDatasync  = 1
	uringRegisterEvent  = 4
	uringSQESize        = 64
	uringCQESize        = 16
	uringEntries        = 2
	uringSQEOpcode      = 0
	uringSQEFd          = 4
	uringSQEFsyncFlags  = 28
	uringSQEUserData    = 32
	uringCQEUserDataOff = 0
	uringCQEResOff      = 8
)

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// NewSyncer sets up an io_uring for fdatasyncs. It fails where io_uring
// is not to be had (an old kernel, kernel.io_uring_disabled, a seccomp
// profile that blocks it, as Docker's default does): the caller then
// syncs with File.Sync.
func NewSyncer() (*Syncer, error) {
	var p uringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	s := &Syncer{ring: int(fd)}
	fail := func(what string, err error) (*Syncer, error) {
		s.Close()
		return nil, fmt.Errorf("io_uring: %s: %w", what, err)
	}
	var err error
	if s.sq, err = unix.Mmap(s.ring, uringOffSQRing, int(p.sqOff.array+p.sqEntries*4), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fail("map the submission ring", err)
	}
	if s.cq, err = unix.Mmap(s.ring, uringOffCQRing, int(p.cqOff.cqes+p.cqEntries*uringCQESize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fail("map the completion ring", err)
	}
	if s.sqes, err = unix.Mmap(s.ring, uringOffSQEs, int(p.sqEntries*uringSQESize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fail("map the submission entries", err)
	}
	s.sqTail = (*uint32)(unsafe.Pointer(&s.sq[p.sqOff.tail]))
	s.sqMask = *(*uint32)(unsafe.Pointer(&s.sq[p.sqOff.ringMask]))
	s.sqArray = unsafe.Pointer(&s.sq[p.sqOff.array])
	s.cqHead = (*uint32)(unsafe.Pointer(&s.cq[p.cqOff.head]))
	s.cqTail = (*uint32)(unsafe.Pointer(&s.cq[p.cqOff.tail]))
	s.cqMask = *(*uint32)(unsafe.Pointer(&s.cq[p.cqOff.ringMask]))
	s.cqes = unsafe.Pointer(&s.cq[p.cqOff.cqes])
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fail("eventfd", err)
	}
	// Non-blocking: os.NewFile puts it in the network poller.
	s.event = os.NewFile(uintptr(efd), "io_uring eventfd")
	e := int32(efd)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(s.ring), uringRegisterEvent, uintptr(unsafe.Pointer(&e)), 1, 0, 0); errno != 0 {
		return fail("register the eventfd", errno)
	}
	// A first fdatasync, of a file of its own: a ring that cannot sync
	// is found now, not when the WAL trusts it.
	probe, err := os.CreateTemp("", "sluice-io_uring-*")
	if err != nil {
		return fail("create a file to probe", err)
	}
	defer os.Remove(probe.Name())
	defer probe.Close()
	if err := s.Sync(osFile{probe}); err != nil || s.failed != nil {
		return fail("probe", errors.Join(err, s.failed))
	}
	return s, nil
}

// Sync makes f durable: through the ring if it is an OS file, else by
// its Sync.
func (s *Syncer) Sync(f File) error {
	of, ok := f.(osFile)
	if !ok {
		return f.Sync()
	}
	sc, err := of.SyscallConn()
	if err != nil {
		return f.Sync()
	}
	// The descriptor stays valid until the file is closed, which its
	// owner (the same goroutine) does not do while it syncs.
	var fd int
	if err := sc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return f.Sync()
	}
	if s.failed == nil {
		res, err := s.datasync(fd)
		if err == nil {
			if res != nil {
				return &os.PathError{Op: "fdatasync", Path: of.Name(), Err: res}
			}
			return nil
		}
		// The ring failed, not the fdatasync: it is not used again (an
		// operation may be left in it), and this sync is done the
		// blocking way, from the start.
		s.failed = err
	}
	return f.Sync()
}

// datasync submits an fdatasync of fd and waits for its completion. It
// returns the fdatasync's result, or err when the ring failed.
func (s *Syncer) datasync(fd int) (res, err error) {
	tail := atomic.LoadUint32(s.sqTail)
	idx := tail & s.sqMask
	sqe := s.sqes[idx*uringSQESize : (idx+1)*uringSQESize]
	clear(sqe)
	sqe[uringSQEOpcode] = uringOpFsync
	*(*int32)(unsafe.Pointer(&sqe[uringSQEFd])) = int32(fd)
	*(*uint32)(unsafe.Pointer(&sqe[uringSQEFsyncFlags])) = uringFsyncDatasync
	*(*uint64)(unsafe.Pointer(&sqe[uringSQEUserData])) = uint64(tail)
	*(*uint32)(unsafe.Add(s.sqArray, 4*idx)) = idx
	atomic.StoreUint32(s.sqTail, tail+1)
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(s.ring), 1, 0, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return nil, fmt.Errorf("io_uring_enter: %w", errno)
		}
		if n != 1 {
			return nil, fmt.Errorf("io_uring_enter: submitted %d of 1", n)
		}
		break
	}
	for {
		head := atomic.LoadUint32(s.cqHead)
		if head != atomic.LoadUint32(s.cqTail) {
			cqe := unsafe.Add(s.cqes, uintptr(head&s.cqMask)*uringCQESize)
			user := *(*uint64)(unsafe.Add(cqe, uringCQEUserDataOff))
			res := *(*int32)(unsafe.Add(cqe, uringCQEResOff))
			atomic.StoreUint32(s.cqHead, head+1)
			if user != uint64(tail) {
				// INVARIANT: one submission in flight at a time.
				panic(fmt.Sprintf("io_uring: completion of %d while waiting for %d", user, tail))
			}
			if res < 0 {
				return syscall.Errno(-res), nil
			}
			return nil, nil
		}
		// Parks in the network poller until the ring signals; a
		// signal left from a completion already taken just loops.
		if _, err := s.event.Read(s.buf[:]); err != nil {
			return nil, fmt.Errorf("io_uring: wait for the completion: %w", err)
		}
	}
}

// Close releases the ring.
func (s *Syncer) Close() error {
	for _, m := range [][]byte{s.sq, s.cq, s.sqes} {
		if m != nil {
			_ = unix.Munmap(m)
		}
	}
	s.sq, s.cq, s.sqes = nil, nil, nil
	if s.event != nil {
		_ = s.event.Close()
		s.event = nil
	}
	if s.ring >= 0 {
		err := unix.Close(s.ring)
		s.ring = -1
		return err
	}
	return nil
}
