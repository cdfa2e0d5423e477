package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"syscall"
	"testing"
)

// writeFile creates name holding data, synced when sync is set, and closes
// it.
func writeFile(t *testing.T, fsys FS, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustNotExist(t *testing.T, fsys FS, name string) {
	t.Helper()
	if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(%q) = %v, want not exist", name, err)
	}
}

func check(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

// semanticsCases are the ordinary behaviours that OS and MemFS must agree
// on. Each runs in an existing, empty directory dir of fsys.
var semanticsCases = []struct {
	name string
	run  func(t *testing.T, fsys FS, dir string)
}{
	{"write then read back", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		f, err := fsys.Create(name)
		check(t, "create", err)
		if f.Name() != name {
			t.Errorf("Name() = %q, want %q", f.Name(), name)
		}
		for _, s := range []string{"hello", " ", "world"} {
			n, err := f.Write([]byte(s))
			if n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", s, n, err)
			}
		}
		check(t, "close", f.Close())
		if got := readFile(t, fsys, name); got != "hello world" {
			t.Fatalf("read back %q", got)
		}
	}},
	{"read at EOF", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "abc", false)
		f, err := fsys.Open(name)
		check(t, "open", err)
		defer f.Close()
		buf := make([]byte, 8)
		if n, err := f.Read(buf); n != 3 || err != nil {
			t.Fatalf("first Read = %d, %v", n, err)
		}
		if n, err := f.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("Read at EOF = %d, %v; want 0, EOF", n, err)
		}
		if n, err := f.Read(nil); n != 0 || err != nil {
			t.Fatalf("empty Read = %d, %v; want 0, nil", n, err)
		}
	}},
	{"read at offsets", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "hello world", false)
		f, err := fsys.Open(name)
		check(t, "open", err)
		defer f.Close()
		tests := []struct {
			off     int64
			size    int
			want    string
			wantEOF bool
		}{
			{0, 5, "hello", false},
			{6, 5, "world", false},
			{6, 10, "world", true},
			{11, 1, "", true},
			{50, 1, "", true},
			{3, 0, "", false},
		}
		for _, tt := range tests {
			buf := make([]byte, tt.size)
			n, err := f.ReadAt(buf, tt.off)
			if string(buf[:n]) != tt.want || (err == io.EOF) != tt.wantEOF || (err != nil && err != io.EOF) {
				t.Errorf("ReadAt(%d bytes, %d) = %q, %v", tt.size, tt.off, buf[:n], err)
			}
		}
		if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
			t.Error("ReadAt at a negative offset succeeded")
		}
		// ReadAt does not move the offset Read uses.
		buf := make([]byte, 5)
		if n, err := f.Read(buf); n != 5 || string(buf) != "hello" {
			t.Errorf("Read after ReadAt = %q, %v", buf[:n], err)
		}
	}},
	{"create truncates", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "hello", true)
		f, err := fsys.Create(name)
		check(t, "create", err)
		st, err := f.Stat()
		check(t, "stat", err)
		if st.Size() != 0 {
			t.Errorf("size after Create = %d", st.Size())
		}
		check(t, "close", f.Close())
	}},
	{"open read write starts at 0", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "hello", false)
		f, err := fsys.OpenReadWrite(name)
		check(t, "open", err)
		_, err = f.Write([]byte("J"))
		check(t, "write", err)
		buf := make([]byte, 10)
		n, err := f.Read(buf)
		if string(buf[:n]) != "ello" || err != nil {
			t.Errorf("Read after Write = %q, %v", buf[:n], err)
		}
		check(t, "close", f.Close())
		if got := readFile(t, fsys, name); got != "Jello" {
			t.Errorf("contents %q", got)
		}
	}},
	{"truncate keeps the offset", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		f, err := fsys.Create(name)
		check(t, "create", err)
		_, err = f.Write([]byte("hello"))
		check(t, "write", err)
		check(t, "truncate", f.Truncate(2))
		_, err = f.Write([]byte("X"))
		check(t, "write", err)
		check(t, "truncate", f.Truncate(8))
		check(t, "close", f.Close())
		if got := readFile(t, fsys, name); got != "he\x00\x00\x00X\x00\x00" {
			t.Errorf("contents %q", got)
		}
	}},
	{"read-only file", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "abc", false)
		f, err := fsys.Open(name)
		check(t, "open", err)
		defer f.Close()
		if _, err := f.Write([]byte("x")); err == nil {
			t.Error("Write on a read-only file succeeded")
		}
		if err := f.Truncate(0); err == nil {
			t.Error("Truncate on a read-only file succeeded")
		}
		check(t, "sync", f.Sync())
	}},
	{"closed file", func(t *testing.T, fsys FS, dir string) {
		f, err := fsys.Create(path.Join(dir, "f"))
		check(t, "create", err)
		check(t, "close", f.Close())
		_, err = f.Write([]byte("x"))
		wantErr(t, "write", err, fs.ErrClosed)
		_, err = f.Read(make([]byte, 1))
		wantErr(t, "read", err, fs.ErrClosed)
		wantErr(t, "sync", f.Sync(), fs.ErrClosed)
		wantErr(t, "close", f.Close(), fs.ErrClosed)
	}},
	{"stat", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "abc", false)
		st, err := fsys.Stat(name)
		check(t, "stat", err)
		if st.Name() != "f" || st.Size() != 3 || st.IsDir() || !st.Mode().IsRegular() {
			t.Errorf("Stat(file) = %s %d %v %v", st.Name(), st.Size(), st.IsDir(), st.Mode())
		}
		check(t, "mkdir", fsys.MkdirAll(path.Join(dir, "d"), 0o755))
		st, err = fsys.Stat(path.Join(dir, "d"))
		check(t, "stat", err)
		if st.Name() != "d" || !st.IsDir() || !st.Mode().IsDir() {
			t.Errorf("Stat(dir) = %s %v %v", st.Name(), st.IsDir(), st.Mode())
		}
		f, err := fsys.Open(name)
		check(t, "open", err)
		defer f.Close()
		st, err = f.Stat()
		check(t, "file stat", err)
		if st.Name() != "f" || st.Size() != 3 {
			t.Errorf("File.Stat = %s %d", st.Name(), st.Size())
		}
	}},
	{"list", func(t *testing.T, fsys FS, dir string) {
		for _, n := range []string{"c", "a", "b"} {
			writeFile(t, fsys, path.Join(dir, n), n, false)
		}
		check(t, "mkdir", fsys.MkdirAll(path.Join(dir, "d", "e"), 0o755))
		got, err := fsys.List(dir)
		check(t, "list", err)
		if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
			t.Errorf("List = %q, want %q", got, want)
		}
		got, err = fsys.List(path.Join(dir, "d", "e"))
		if len(got) != 0 || err != nil {
			t.Errorf("List(empty) = %q, %v", got, err)
		}
		_, err = fsys.List(path.Join(dir, "missing"))
		wantErr(t, "list missing", err, fs.ErrNotExist)
		_, err = fsys.List(path.Join(dir, "a"))
		wantErr(t, "list file", err, syscall.ENOTDIR)
	}},
	{"missing names", func(t *testing.T, fsys FS, dir string) {
		missing := path.Join(dir, "missing")
		_, err := fsys.Open(missing)
		wantErr(t, "open", err, fs.ErrNotExist)
		_, err = fsys.OpenReadWrite(missing)
		wantErr(t, "open read write", err, fs.ErrNotExist)
		_, err = fsys.Stat(missing)
		wantErr(t, "stat", err, fs.ErrNotExist)
		wantErr(t, "remove", fsys.Remove(missing), fs.ErrNotExist)
		wantErr(t, "rename", fsys.Rename(missing, path.Join(dir, "x")), fs.ErrNotExist)
		wantErr(t, "sync dir", fsys.SyncDir(missing), fs.ErrNotExist)
		_, _, err = fsys.Map(missing)
		wantErr(t, "map", err, fs.ErrNotExist)
		_, err = fsys.Create(path.Join(missing, "f"))
		wantErr(t, "create in missing dir", err, fs.ErrNotExist)
		if !IsNotExist(err) {
			t.Error("IsNotExist is false")
		}
		writeFile(t, fsys, path.Join(dir, "file"), "", false)
		_, err = fsys.Create(path.Join(dir, "file", "f"))
		wantErr(t, "create under a file", err, syscall.ENOTDIR)
		check(t, "remove all", fsys.RemoveAll(missing))
		check(t, "remove all", fsys.RemoveAll(path.Join(missing, "deeper")))
	}},
	{"directories", func(t *testing.T, fsys FS, dir string) {
		d := path.Join(dir, "a", "b")
		check(t, "mkdir", fsys.MkdirAll(d, 0o755))
		check(t, "mkdir again", fsys.MkdirAll(d, 0o755))
		check(t, "sync dir", fsys.SyncDir(d))
		_, err := fsys.Create(d)
		wantErr(t, "create a directory", err, syscall.EISDIR)
		_, err = fsys.OpenReadWrite(d)
		wantErr(t, "open a directory read write", err, syscall.EISDIR)
		f, err := fsys.Open(d)
		check(t, "open a directory", err)
		_, err = f.Read(make([]byte, 1))
		wantErr(t, "read a directory", err, syscall.EISDIR)
		check(t, "close", f.Close())
		writeFile(t, fsys, path.Join(d, "f"), "x", false)
		wantErr(t, "mkdir over a file", fsys.MkdirAll(path.Join(d, "f"), 0o755), syscall.ENOTDIR)
		wantErr(t, "mkdir under a file", fsys.MkdirAll(path.Join(d, "f", "g"), 0o755), syscall.ENOTDIR)
		wantErr(t, "remove non-empty", fsys.Remove(d), syscall.ENOTEMPTY)
		check(t, "remove file", fsys.Remove(path.Join(d, "f")))
		check(t, "remove empty dir", fsys.Remove(d))
		mustNotExist(t, fsys, d)
	}},
	{"remove all", func(t *testing.T, fsys FS, dir string) {
		check(t, "mkdir", fsys.MkdirAll(path.Join(dir, "a", "b", "c"), 0o755))
		writeFile(t, fsys, path.Join(dir, "a", "f"), "1", false)
		writeFile(t, fsys, path.Join(dir, "a", "b", "c", "g"), "2", false)
		check(t, "remove all", fsys.RemoveAll(path.Join(dir, "a")))
		mustNotExist(t, fsys, path.Join(dir, "a"))
		names, err := fsys.List(dir)
		if len(names) != 0 || err != nil {
			t.Errorf("List after RemoveAll = %q, %v", names, err)
		}
		writeFile(t, fsys, path.Join(dir, "f"), "1", false)
		check(t, "remove all of a file", fsys.RemoveAll(path.Join(dir, "f")))
		mustNotExist(t, fsys, path.Join(dir, "f"))
	}},
	{"rename", func(t *testing.T, fsys FS, dir string) {
		a, b := path.Join(dir, "a"), path.Join(dir, "b")
		writeFile(t, fsys, a, "1", false)
		writeFile(t, fsys, b, "2", false)
		check(t, "rename", fsys.Rename(a, b))
		mustNotExist(t, fsys, a)
		if got := readFile(t, fsys, b); got != "1" {
			t.Errorf("b = %q after rename", got)
		}
		check(t, "rename to itself", fsys.Rename(b, b))
		d := path.Join(dir, "d")
		check(t, "mkdir", fsys.MkdirAll(path.Join(d, "e"), 0o755))
		wantErr(t, "rename a file over a directory", fsys.Rename(b, d), syscall.EEXIST)
		wantErr(t, "rename a directory over a file", fsys.Rename(d, b), syscall.ENOTDIR)
		wantErr(t, "rename a directory under itself", fsys.Rename(d, path.Join(d, "e", "d")), syscall.EINVAL)
		wantErr(t, "rename into a missing directory", fsys.Rename(b, path.Join(dir, "x", "b")), fs.ErrNotExist)
		writeFile(t, fsys, path.Join(d, "e", "f"), "3", false)
		check(t, "rename a directory", fsys.Rename(d, path.Join(dir, "moved")))
		if got := readFile(t, fsys, path.Join(dir, "moved", "e", "f")); got != "3" {
			t.Errorf("moved file = %q", got)
		}
	}},
	{"open file outlives remove", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "abc", false)
		f, err := fsys.OpenReadWrite(name)
		check(t, "open", err)
		check(t, "remove", fsys.Remove(name))
		_, err = f.Write([]byte("X"))
		check(t, "write", err)
		buf := make([]byte, 3)
		n, err := f.ReadAt(buf, 0)
		if string(buf[:n]) != "Xbc" || err != nil {
			t.Errorf("ReadAt after remove = %q, %v", buf[:n], err)
		}
		check(t, "close", f.Close())
		mustNotExist(t, fsys, name)
	}},
	{"lock", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "LOCK")
		l, err := fsys.Lock(name)
		check(t, "lock", err)
		if _, err := fsys.Stat(name); err != nil {
			t.Errorf("Lock did not create the file: %v", err)
		}
		_, err = fsys.Lock(name)
		wantErr(t, "second lock", err, ErrLocked)
		l2, err := fsys.Lock(path.Join(dir, "OTHER"))
		check(t, "other lock", err)
		check(t, "unlock", l.Close())
		l, err = fsys.Lock(name)
		check(t, "lock after unlock", err)
		check(t, "unlock", l.Close())
		check(t, "unlock", l2.Close())
	}},
	{"map", func(t *testing.T, fsys FS, dir string) {
		name := path.Join(dir, "f")
		writeFile(t, fsys, name, "mapped bytes", true)
		data, release, err := fsys.Map(name)
		check(t, "map", err)
		if string(data) != "mapped bytes" {
			t.Errorf("Map = %q", data)
		}
		check(t, "release", release())
		writeFile(t, fsys, name, "", true)
		data, release, err = fsys.Map(name)
		check(t, "map empty", err)
		if len(data) != 0 {
			t.Errorf("Map(empty) = %q", data)
		}
		check(t, "release", release())
	}},
	{"sync and free", func(t *testing.T, fsys FS, dir string) {
		f, err := fsys.Create(path.Join(dir, "f"))
		check(t, "create", err)
		_, err = f.Write(bytes.Repeat([]byte("x"), 4096))
		check(t, "write", err)
		check(t, "sync", f.Sync())
		check(t, "close", f.Close())
		check(t, "sync dir", fsys.SyncDir(dir))
		free, err := fsys.Free(dir)
		check(t, "free", err)
		if free == 0 {
			t.Error("Free = 0")
		}
		_, err = fsys.Free(path.Join(dir, "missing"))
		wantErr(t, "free of a missing dir", err, fs.ErrNotExist)
	}},
}

// TestSemantics runs the same checks on OS and on MemFS, so that the tests
// of the WAL and the store, which run on MemFS, mean something for OS.
func TestSemantics(t *testing.T) {
	impls := []struct {
		name  string
		setup func(t *testing.T) (FS, string)
	}{
		{"os", func(t *testing.T) (FS, string) { return OS, t.TempDir() }},
		{"mem", func(t *testing.T) (FS, string) {
			m := NewMem()
			check(t, "mkdir", m.MkdirAll("/data/test", 0o755))
			return m, "/data/test"
		}},
	}
	for _, tc := range semanticsCases {
		for _, impl := range impls {
			t.Run(tc.name+"/fs="+impl.name, func(t *testing.T) {
				fsys, dir := impl.setup(t)
				tc.run(t, fsys, dir)
			})
		}
	}
}
