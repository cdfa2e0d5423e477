package vfs

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestFaultOps fails each operation once and checks that the error comes
// back unchanged, that the inner FS was not touched, and that the next call
// goes through.
func TestFaultOps(t *testing.T) {
	// Every case starts from an inner MemFS holding d/f = "abc" (durable)
	// and an empty directory e.
	tests := []struct {
		op Op
		// open, if set, opens the file the case works on before faults are
		// injected.
		open func(fsys FS) (File, error)
		run  func(fsys FS, f File) error
		// untouched checks that the failed call did not reach inner.
		untouched func(t *testing.T, inner *MemFS)
	}{
		{
			op: OpCreate,
			run: func(fsys FS, _ File) error {
				_, err := fsys.Create("d/g")
				return err
			},
			untouched: func(t *testing.T, inner *MemFS) { mustNotExist(t, inner, "d/g") },
		},
		{
			op: OpOpen,
			run: func(fsys FS, _ File) error {
				f, err := fsys.Open("d/f")
				if err == nil {
					f.Close()
				}
				return err
			},
		},
		{
			op: OpOpenReadWrite,
			run: func(fsys FS, _ File) error {
				f, err := fsys.OpenReadWrite("d/f")
				if err == nil {
					f.Close()
				}
				return err
			},
		},
		{
			op:        OpRemove,
			run:       func(fsys FS, _ File) error { return fsys.Remove("d/f") },
			untouched: wantContents("d/f", "abc"),
		},
		{
			op:        OpRemoveAll,
			run:       func(fsys FS, _ File) error { return fsys.RemoveAll("d") },
			untouched: wantContents("d/f", "abc"),
		},
		{
			op:  OpRename,
			run: func(fsys FS, _ File) error { return fsys.Rename("d/f", "d/g") },
			untouched: func(t *testing.T, inner *MemFS) {
				mustNotExist(t, inner, "d/g")
				wantContents("d/f", "abc")(t, inner)
			},
		},
		{
			op:        OpMkdir,
			run:       func(fsys FS, _ File) error { return fsys.MkdirAll("x/y", 0o755) },
			untouched: func(t *testing.T, inner *MemFS) { mustNotExist(t, inner, "x") },
		},
		{
			op: OpList,
			run: func(fsys FS, _ File) error {
				_, err := fsys.List("d")
				return err
			},
		},
		{
			op: OpStat,
			run: func(fsys FS, _ File) error {
				_, err := fsys.Stat("d/f")
				return err
			},
		},
		{
			op: OpSyncDir,
			run: func(fsys FS, _ File) error {
				// A file created in e only survives a crash if e is synced.
				if _, err := fsys.Create("e/new"); err != nil {
					return err
				}
				return fsys.SyncDir("e")
			},
			untouched: func(t *testing.T, inner *MemFS) {
				mustNotExist(t, inner.Crash(CrashOptions{}), "e/new")
			},
		},
		{
			op: OpLock,
			run: func(fsys FS, _ File) error {
				l, err := fsys.Lock("e/LOCK")
				if err == nil {
					l.Close()
				}
				return err
			},
			untouched: func(t *testing.T, inner *MemFS) { mustNotExist(t, inner, "e/LOCK") },
		},
		{
			op: OpMap,
			run: func(fsys FS, _ File) error {
				_, release, err := fsys.Map("d/f")
				if err == nil {
					release()
				}
				return err
			},
		},
		{
			op: OpFree,
			run: func(fsys FS, _ File) error {
				_, err := fsys.Free("d")
				return err
			},
		},
		{
			op:   OpRead,
			open: func(fsys FS) (File, error) { return fsys.Open("d/f") },
			run: func(_ FS, f File) error {
				if _, err := f.ReadAt(make([]byte, 3), 0); err != nil {
					return err
				}
				_, err := f.Read(make([]byte, 3))
				return err
			},
		},
		{
			op:   OpWrite,
			open: func(fsys FS) (File, error) { return fsys.OpenReadWrite("d/f") },
			run: func(_ FS, f File) error {
				_, err := f.Write([]byte("X"))
				return err
			},
			untouched: wantContents("d/f", "abc"),
		},
		{
			op:   OpSync,
			open: func(fsys FS) (File, error) { return fsys.OpenReadWrite("d/f") },
			run: func(_ FS, f File) error {
				if err := f.Truncate(1); err != nil {
					return err
				}
				return f.Sync()
			},
			untouched: func(t *testing.T, inner *MemFS) {
				wantContents("d/f", "abc")(t, inner.Crash(CrashOptions{}))
			},
		},
		{
			op:        OpTruncate,
			open:      func(fsys FS) (File, error) { return fsys.OpenReadWrite("d/f") },
			run:       func(_ FS, f File) error { return f.Truncate(0) },
			untouched: wantContents("d/f", "abc"),
		},
		{
			op:   OpStat,
			open: func(fsys FS) (File, error) { return fsys.Open("d/f") },
			run: func(_ FS, f File) error {
				_, err := f.Stat()
				return err
			},
		},
	}
	for _, tt := range tests {
		name := tt.op.String()
		if tt.open != nil {
			name = "file/" + name
		}
		t.Run(name, func(t *testing.T) {
			inner := NewMem()
			check(t, "mkdir", inner.MkdirAll("d", 0o755))
			check(t, "mkdir", inner.MkdirAll("e", 0o755))
			writeFile(t, inner, "d/f", "abc", true)
			for _, d := range []string{"d", "e", "/"} {
				check(t, "sync dir", inner.SyncDir(d))
			}
			ff := NewFault(inner, nil)
			var f File
			if tt.open != nil {
				var err error
				f, err = tt.open(ff)
				check(t, "open", err)
				defer f.Close()
			}
			injected := &fs.PathError{Op: "injected", Path: "x", Err: syscall.EIO}
			var seen []string
			var mu sync.Mutex
			once := FailOnce(tt.op, injected)
			ff.SetInjector(func(op Op, name string) error {
				mu.Lock()
				seen = append(seen, op.String()+" "+name)
				mu.Unlock()
				return once(op, name)
			})
			if err := tt.run(ff, f); err != injected {
				t.Fatalf("with %s failing: err = %v, want the injected error unchanged", tt.op, err)
			}
			if tt.untouched != nil {
				tt.untouched(t, inner)
			}
			if err := tt.run(ff, f); err != nil {
				t.Fatalf("second call: %v", err)
			}
			if !slicesContainPrefix(seen, tt.op.String()+" ") {
				t.Errorf("injector saw %q, not %s", seen, tt.op)
			}
		})
	}
}

func slicesContainPrefix(ss []string, prefix string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func wantContents(name, want string) func(t *testing.T, inner *MemFS) {
	return func(t *testing.T, inner *MemFS) {
		t.Helper()
		if got := readFile(t, inner, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestFaultPartialWrite(t *testing.T) {
	tests := []struct {
		name    string
		inject  error
		p       string
		wantN   int
		wantErr error
		want    string
	}{
		{"first bytes then ENOSPC", &PartialWriteError{N: 3, Err: syscall.ENOSPC}, "hello", 3, syscall.ENOSPC, "hel"},
		{"nothing", &PartialWriteError{N: 0, Err: syscall.ENOSPC}, "hello", 0, syscall.ENOSPC, ""},
		{"negative N writes nothing", &PartialWriteError{N: -1, Err: syscall.EIO}, "hello", 0, syscall.EIO, ""},
		{"N past the end writes all and fails", &PartialWriteError{N: 9, Err: syscall.EIO}, "hello", 5, syscall.EIO, "hello"},
		{"nil Err is a short write", &PartialWriteError{N: 2}, "hello", 2, io.ErrShortWrite, "he"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := NewMem()
			ff := NewFault(inner, FailOnce(OpWrite, tt.inject))
			f, err := ff.Create("f")
			check(t, "create", err)
			n, err := f.Write([]byte(tt.p))
			if n != tt.wantN || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Write = %d, %v; want %d, %v", n, err, tt.wantN, tt.wantErr)
			}
			if got := readFile(t, inner, "f"); got != tt.want {
				t.Errorf("inner holds %q, want %q", got, tt.want)
			}
			// The writer recovers by writing the rest.
			if _, err := f.Write([]byte(tt.p[n:])); err != nil {
				t.Fatalf("second Write: %v", err)
			}
			check(t, "close", f.Close())
		})
	}
	t.Run("for another op it fails with Err", func(t *testing.T) {
		ff := NewFault(NewMem(), FailOnce(OpCreate, &PartialWriteError{N: 1, Err: syscall.ENOSPC}))
		if _, err := ff.Create("f"); err != syscall.ENOSPC {
			t.Errorf("Create = %v, want ENOSPC", err)
		}
	})
	t.Run("inner ENOSPC wins", func(t *testing.T) {
		inner := NewMem()
		inner.SetCapacity(2)
		ff := NewFault(inner, FailOnce(OpWrite, &PartialWriteError{N: 4, Err: syscall.EIO}))
		f, err := ff.Create("f")
		check(t, "create", err)
		if n, err := f.Write([]byte("hello")); n != 2 || !IsNoSpace(err) {
			t.Errorf("Write = %d, %v; want 2, ENOSPC", n, err)
		}
	})
}

func TestInjectors(t *testing.T) {
	errX := ErrInjected
	// calls is a sequence of operations; want[i] says whether call i fails.
	type call struct {
		op   Op
		name string
	}
	tests := []struct {
		name   string
		inject Injector
		calls  []call
		want   []bool
	}{
		{
			name:   "fail once",
			inject: FailOnce(OpSync, errX),
			calls:  []call{{OpWrite, "a"}, {OpSync, "a"}, {OpSync, "a"}, {OpSync, "b"}},
			want:   []bool{false, true, false, false},
		},
		{
			name:   "fail after 2",
			inject: FailAfter(OpWrite, 2, errX),
			calls:  []call{{OpWrite, "a"}, {OpSync, "a"}, {OpWrite, "b"}, {OpWrite, "a"}, {OpWrite, "a"}},
			want:   []bool{false, false, false, true, false},
		},
		{
			name: "fail when",
			inject: FailWhen(func(op Op, name string) bool {
				return op == OpRename && strings.HasSuffix(name, ".tmp")
			}, errX),
			calls: []call{{OpRename, "a.tmp"}, {OpRename, "a"}, {OpRemove, "a.tmp"}, {OpRename, "b.tmp"}},
			want:  []bool{true, false, false, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, c := range tt.calls {
				err := tt.inject(c.op, c.name)
				if (err != nil) != tt.want[i] || (err != nil && err != errX) {
					t.Errorf("call %d (%s %s) = %v, want failure %v", i, c.op, c.name, err, tt.want[i])
				}
			}
		})
	}
}

func TestFailAfterConcurrent(t *testing.T) {
	const goroutines, calls = 8, 100
	ff := NewFault(NewMem(), FailAfter(OpSync, 345, ErrInjected))
	f, err := ff.Create("f")
	check(t, "create", err)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				if err := f.Sync(); errors.Is(err, ErrInjected) {
					failed.Add(1)
				} else if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() != 1 {
		t.Errorf("%d syncs failed, want 1", failed.Load())
	}
}

func TestFaultClose(t *testing.T) {
	inner := NewMem()
	ff := NewFault(inner, FailOnce(OpClose, ErrInjected))
	f, err := ff.Create("f")
	check(t, "create", err)
	wantErr(t, "close", f.Close(), ErrInjected)
	// The inner file was closed all the same.
	wantErr(t, "second close", f.Close(), fs.ErrClosed)
}

func TestFaultOnOS(t *testing.T) {
	dir := t.TempDir()
	ff := NewFault(OS, FailWhen(func(op Op, name string) bool {
		return op == OpSync && strings.HasSuffix(name, "/wal")
	}, syscall.EIO))
	f, err := ff.Create(dir + "/wal")
	check(t, "create", err)
	defer f.Close()
	_, err = f.Write([]byte("record"))
	check(t, "write", err)
	wantErr(t, "sync", f.Sync(), syscall.EIO)
	g, err := ff.Create(dir + "/other")
	check(t, "create", err)
	check(t, "sync other", g.Sync())
	check(t, "close", g.Close())
}

func TestOpString(t *testing.T) {
	seen := map[string]Op{}
	for op := OpCreate; op <= OpClose; op++ {
		s := op.String()
		if strings.HasPrefix(s, "Op(") {
			t.Errorf("%d has no name", uint8(op))
		}
		if prev, ok := seen[s]; ok {
			t.Errorf("%d and %d are both %q", uint8(prev), uint8(op), s)
		}
		seen[s] = op
	}
	for _, op := range []Op{0, OpClose + 1, 255} {
		if s := op.String(); !strings.HasPrefix(s, "Op(") {
			t.Errorf("Op(%d).String() = %q", uint8(op), s)
		}
	}
}
