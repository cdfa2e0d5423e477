package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// newTestSyncer returns a Syncer, or skips where io_uring is off.
func newTestSyncer(t *testing.T) *Syncer {
	t.Helper()
	s, err := NewSyncer()
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestSyncerSyncs: a file written and synced through the ring, many times
// over (the ring's entries wrap around), reads back what was written.
func TestSyncerSyncs(t *testing.T) {
	s := newTestSyncer(t)
	path := filepath.Join(t.TempDir(), "f")
	f, err := OS.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []byte
	for i := range 100 {
		line := []byte{byte('a' + i%26), '\n'}
		if _, err := f.Write(line); err != nil {
			t.Fatal(err)
		}
		want = append(want, line...)
		if err := s.Sync(f); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(want) {
		t.Fatalf("read back %q, %v; want %q", got, err, want)
	}
}

// TestSyncerError: the fdatasync's error comes back, naming the file: a
// descriptor that cannot be synced (a pipe's) fails with EINVAL.
func TestSyncerError(t *testing.T) {
	s := newTestSyncer(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	err = s.Sync(osFile{w})
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("sync of a pipe: %v, want EINVAL", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != w.Name() {
		t.Fatalf("error %v does not name %s", err, w.Name())
	}
	// The ring still works after a failed operation.
	f, err := OS.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.Sync(f); err != nil {
		t.Fatalf("sync after an error: %v", err)
	}
}

// TestSyncerOtherFS: a file of another FS is synced by its own Sync, so
// that fault injection still reaches the WAL's syncs.
func TestSyncerOtherFS(t *testing.T) {
	s := newTestSyncer(t)
	injected := errors.New("injected")
	fs := NewFault(NewMem(), nil)
	f, err := fs.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	fs.SetInjector(FailAfter(OpSync, 0, injected))
	if err := s.Sync(f); !errors.Is(err, injected) {
		t.Fatalf("sync of a faulty file: %v, want the injected error", err)
	}
}

// TestSyncerRingFailure: when the ring itself fails (here, its descriptor
// gone), the sync is done by File.Sync, and so are the later ones.
func TestSyncerRingFailure(t *testing.T) {
	s := newTestSyncer(t)
	if err := syscall.Close(s.ring); err != nil {
		t.Fatal(err)
	}
	s.ring = -1
	f, err := OS.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 2 {
		if err := s.Sync(f); err != nil {
			t.Fatalf("sync with a failed ring: %v", err)
		}
	}
	if !errors.Is(s.failed, syscall.EBADF) {
		t.Fatalf("ring failure %v, want EBADF", s.failed)
	}
}
