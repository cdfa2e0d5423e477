package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"sync"
	"syscall"
	"testing"
)

func TestMemCrash(t *testing.T) {
	// durable writes a synced file whose entry in / is durable.
	durable := func(t *testing.T, m *MemFS, name, data string) {
		t.Helper()
		writeFile(t, m, name, data, true)
		check(t, "sync dir", m.SyncDir("/"))
	}
	tests := []struct {
		name string
		do   func(t *testing.T, m *MemFS)
		want map[string]string // files and their contents after the crash
		gone []string          // names that must not exist after the crash
	}{
		{
			name: "unsynced data is lost",
			do: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "f", "abc", false)
				check(t, "sync dir", m.SyncDir("/"))
			},
			want: map[string]string{"f": ""},
		},
		{
			name: "synced data is kept",
			do: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "f", "abc", true)
				check(t, "sync dir", m.SyncDir("/"))
			},
			want: map[string]string{"f": "abc"},
		},
		{
			name: "sync dir before the data",
			do: func(t *testing.T, m *MemFS) {
				f, err := m.Create("f")
				check(t, "create", err)
				check(t, "sync dir", m.SyncDir("/"))
				_, err = f.Write([]byte("abc"))
				check(t, "write", err)
				check(t, "sync", f.Sync())
				_, err = f.Write([]byte("def"))
				check(t, "write", err)
			},
			want: map[string]string{"f": "abc"},
		},
		{
			name: "synced file in an unsynced directory entry is lost",
			do: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "f", "abc", true)
			},
			gone: []string{"f"},
		},
		{
			name: "unsynced rename reverts",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "a", "old")
				durable(t, m, "a.tmp", "new")
				check(t, "rename", m.Rename("a.tmp", "a"))
			},
			want: map[string]string{"a": "old", "a.tmp": "new"},
		},
		{
			name: "synced rename holds",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "a", "old")
				durable(t, m, "a.tmp", "new")
				check(t, "rename", m.Rename("a.tmp", "a"))
				check(t, "sync dir", m.SyncDir("/"))
			},
			want: map[string]string{"a": "new"},
			gone: []string{"a.tmp"},
		},
		{
			name: "rename across directories with only the target synced",
			do: func(t *testing.T, m *MemFS) {
				check(t, "mkdir", m.MkdirAll("d1", 0o755))
				check(t, "mkdir", m.MkdirAll("d2", 0o755))
				check(t, "sync dir", m.SyncDir("/"))
				writeFile(t, m, "d1/f", "abc", true)
				check(t, "sync dir", m.SyncDir("d1"))
				check(t, "rename", m.Rename("d1/f", "d2/f"))
				check(t, "sync dir", m.SyncDir("d2"))
			},
			want: map[string]string{"d1/f": "abc", "d2/f": "abc"},
		},
		{
			name: "unsynced remove reverts",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "f", "abc")
				check(t, "remove", m.Remove("f"))
			},
			want: map[string]string{"f": "abc"},
		},
		{
			name: "synced remove holds",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "f", "abc")
				check(t, "remove", m.Remove("f"))
				check(t, "sync dir", m.SyncDir("/"))
			},
			gone: []string{"f"},
		},
		{
			name: "unsynced remove all reverts",
			do: func(t *testing.T, m *MemFS) {
				check(t, "mkdir", m.MkdirAll("d", 0o755))
				check(t, "sync dir", m.SyncDir("/"))
				writeFile(t, m, "d/f", "abc", true)
				check(t, "sync dir", m.SyncDir("d"))
				check(t, "remove all", m.RemoveAll("d"))
			},
			want: map[string]string{"d/f": "abc"},
		},
		{
			name: "directory whose own entry was not synced is lost",
			do: func(t *testing.T, m *MemFS) {
				check(t, "mkdir", m.MkdirAll("d/e", 0o755))
				writeFile(t, m, "d/e/f", "abc", true)
				check(t, "sync dir", m.SyncDir("d/e"))
				check(t, "sync dir", m.SyncDir("d"))
			},
			gone: []string{"d"},
		},
		{
			name: "directory synced all the way up",
			do: func(t *testing.T, m *MemFS) {
				check(t, "mkdir", m.MkdirAll("d/e", 0o755))
				writeFile(t, m, "d/e/f", "abc", true)
				for _, d := range []string{"d/e", "d", "/"} {
					check(t, "sync dir", m.SyncDir(d))
				}
			},
			want: map[string]string{"d/e/f": "abc"},
		},
		{
			name: "synced directory rename moves its durable files",
			do: func(t *testing.T, m *MemFS) {
				check(t, "mkdir", m.MkdirAll("d", 0o755))
				check(t, "sync dir", m.SyncDir("/"))
				writeFile(t, m, "d/f", "abc", true)
				check(t, "sync dir", m.SyncDir("d"))
				check(t, "rename", m.Rename("d", "e"))
				check(t, "sync dir", m.SyncDir("/"))
			},
			want: map[string]string{"e/f": "abc"},
			gone: []string{"d"},
		},
		{
			name: "unsynced truncate reverts",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "f", "abcdef")
				f, err := m.OpenReadWrite("f")
				check(t, "open", err)
				check(t, "truncate", f.Truncate(2))
			},
			want: map[string]string{"f": "abcdef"},
		},
		{
			name: "synced truncate holds",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "f", "abcdef")
				f, err := m.OpenReadWrite("f")
				check(t, "open", err)
				check(t, "truncate", f.Truncate(2))
				check(t, "sync", f.Sync())
			},
			want: map[string]string{"f": "ab"},
		},
		{
			name: "unsynced overwrite reverts",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "f", "abcdef")
				f, err := m.OpenReadWrite("f")
				check(t, "open", err)
				_, err = f.Write([]byte("XY"))
				check(t, "write", err)
			},
			want: map[string]string{"f": "abcdef"},
		},
		{
			name: "synced overwrite in the middle holds",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "f", "abcdef")
				f, err := m.OpenReadWrite("f")
				check(t, "open", err)
				_, err = f.Write([]byte("XY"))
				check(t, "write", err)
				check(t, "sync", f.Sync())
				_, err = f.Write([]byte("Z"))
				check(t, "write", err)
			},
			want: map[string]string{"f": "XYcdef"},
		},
		{
			name: "unsynced create over a durable file reverts",
			do: func(t *testing.T, m *MemFS) {
				durable(t, m, "f", "abc")
				writeFile(t, m, "f", "xy", false)
			},
			want: map[string]string{"f": "abc"},
		},
		{
			name: "many syncs",
			do: func(t *testing.T, m *MemFS) {
				f, err := m.Create("f")
				check(t, "create", err)
				check(t, "sync dir", m.SyncDir("/"))
				for i := range 100 {
					_, err := fmt.Fprintf(f, "%d,", i)
					check(t, "write", err)
					if i%10 == 9 {
						check(t, "sync", f.Sync())
					}
				}
			},
			want: map[string]string{"f": manyRecords(99)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMem()
			tt.do(t, m)
			before := snapshot(t, m)
			c := m.Crash(CrashOptions{})
			for name, want := range tt.want {
				if got := readFile(t, c, name); got != want {
					t.Errorf("after crash %s = %q, want %q", name, got, want)
				}
			}
			for _, name := range tt.gone {
				mustNotExist(t, c, name)
			}
			if after := snapshot(t, m); after != before {
				t.Errorf("Crash changed the original FS:\nbefore %s\nafter  %s", before, after)
			}
			// Everything that survived a crash is durable.
			if again, once := snapshot(t, c.Crash(CrashOptions{})), snapshot(t, c); again != once {
				t.Errorf("second crash lost data:\nonce  %s\nagain %s", once, again)
			}
		})
	}
}

// manyRecords returns "0,1,...,n," for the "many syncs" case.
func manyRecords(n int) string {
	var b bytes.Buffer
	for i := range n + 1 {
		fmt.Fprintf(&b, "%d,", i)
	}
	return b.String()
}

// snapshot describes every name and file content in fsys, in order.
func snapshot(t *testing.T, fsys FS) string {
	t.Helper()
	var b bytes.Buffer
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fsys.List(dir)
		check(t, "list", err)
		for _, n := range names {
			p := path.Join(dir, n)
			st, err := fsys.Stat(p)
			check(t, "stat", err)
			if st.IsDir() {
				fmt.Fprintf(&b, "%s/ ", p)
				walk(p)
				continue
			}
			fmt.Fprintf(&b, "%s=%q ", p, readFile(t, fsys, p))
		}
	}
	walk("/")
	return b.String()
}

func TestMemCrashTorn(t *testing.T) {
	const syncedLen, tailLen = 100, 1000
	synced := bytes.Repeat([]byte("S"), syncedLen)
	tail := make([]byte, tailLen)
	for i := range tail {
		tail[i] = byte('a' + i%26)
	}
	m := NewMem()
	f, err := m.Create("f")
	check(t, "create", err)
	check(t, "sync dir", m.SyncDir("/"))
	_, err = f.Write(synced)
	check(t, "write", err)
	check(t, "sync", f.Sync())
	_, err = f.Write(tail)
	check(t, "write", err)

	var none, all, partial, damaged int
	for seed := range uint64(400) {
		opts := CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1))}
		got := []byte(readFile(t, m.Crash(opts), "f"))
		again := readFile(t, m.Crash(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1))}), "f")
		if string(got) != again {
			t.Fatalf("seed %d: two crashes with the same seed differ", seed)
		}
		if len(got) < syncedLen || len(got) > syncedLen+tailLen {
			t.Fatalf("seed %d: length %d out of [%d, %d]", seed, len(got), syncedLen, syncedLen+tailLen)
		}
		if !bytes.Equal(got[:syncedLen], synced) {
			t.Fatalf("seed %d: synced bytes changed: %q", seed, got[:syncedLen])
		}
		kept := got[syncedLen:]
		switch len(kept) {
		case 0:
			none++
		case tailLen:
			all++
		default:
			partial++
		}
		// The kept part is a prefix of the tail, but for one damaged range.
		i, j := 0, len(kept)
		for i < j && kept[i] == tail[i] {
			i++
		}
		for j > i && kept[j-1] == tail[j-1] {
			j--
		}
		if i < j {
			damaged++
			// Garbage may match the tail by chance, so only check that the
			// range was damaged in one of the two ways when it is zeroed.
			if bytes.Count(kept[i:j], []byte{0}) == j-i {
				continue
			}
			if j-i > 1 && bytes.Equal(kept[i:j], tail[i:j]) {
				t.Fatalf("seed %d: damaged range equals the tail", seed)
			}
		}
	}
	for what, n := range map[string]int{"none kept": none, "all kept": all, "partial": partial, "damaged": damaged} {
		if n == 0 {
			t.Errorf("no crash in 400 had %s", what)
		}
	}
}

func TestMemCrashIndependent(t *testing.T) {
	m := NewMem()
	f, err := m.Create("f")
	check(t, "create", err)
	check(t, "sync dir", m.SyncDir("/"))
	_, err = f.Write([]byte("abc"))
	check(t, "write", err)
	check(t, "sync", f.Sync())

	c := m.Crash(CrashOptions{})
	// The open file goes on writing to m.
	_, err = f.Write([]byte("def"))
	check(t, "write", err)
	check(t, "sync", f.Sync())
	if got := readFile(t, m, "f"); got != "abcdef" {
		t.Errorf("original = %q", got)
	}
	if got := readFile(t, c, "f"); got != "abc" {
		t.Errorf("crashed copy = %q after writing to the original", got)
	}
	// Writing to the copy leaves m alone.
	cf, err := c.OpenReadWrite("f")
	check(t, "open", err)
	_, err = cf.Write([]byte("XYZ"))
	check(t, "write", err)
	check(t, "remove", c.Remove("f"))
	if got := readFile(t, m, "f"); got != "abcdef" {
		t.Errorf("original = %q after writing to the copy", got)
	}
	check(t, "close", f.Close())
	check(t, "close", cf.Close())
}

func TestMemCapacity(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, m *MemFS)
	}{
		{"partial write then ENOSPC", func(t *testing.T, m *MemFS) {
			m.SetCapacity(10)
			f, err := m.Create("f")
			check(t, "create", err)
			if n, err := f.Write([]byte("123456")); n != 6 || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			n, err := f.Write([]byte("abcdef"))
			if n != 4 || !errors.Is(err, syscall.ENOSPC) || !IsNoSpace(err) {
				t.Fatalf("Write past capacity = %d, %v; want 4, ENOSPC", n, err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != "f" {
				t.Errorf("error %v is not a *fs.PathError for f", err)
			}
			if got := readFile(t, m, "f"); got != "123456abcd" {
				t.Errorf("contents %q", got)
			}
			if n, err := f.Write([]byte("x")); n != 0 || !IsNoSpace(err) {
				t.Errorf("Write on a full FS = %d, %v", n, err)
			}
			wantFree(t, m, 0)
		}},
		{"overwrite needs no space", func(t *testing.T, m *MemFS) {
			m.SetCapacity(4)
			writeFile(t, m, "f", "abcd", false)
			f, err := m.OpenReadWrite("f")
			check(t, "open", err)
			if n, err := f.Write([]byte("XYZW")); n != 4 || err != nil {
				t.Errorf("overwrite = %d, %v", n, err)
			}
			if n, err := f.Write([]byte("!")); n != 0 || !IsNoSpace(err) {
				t.Errorf("append on a full FS = %d, %v", n, err)
			}
		}},
		{"remove gives space back", func(t *testing.T, m *MemFS) {
			m.SetCapacity(10)
			writeFile(t, m, "a", "12345678", false)
			wantFree(t, m, 2)
			f, err := m.Create("b")
			check(t, "create", err)
			if n, err := f.Write([]byte("abcd")); n != 2 || !IsNoSpace(err) {
				t.Fatalf("Write = %d, %v", n, err)
			}
			check(t, "remove", m.Remove("a"))
			wantFree(t, m, 8)
			if n, err := f.Write([]byte("cd")); n != 2 || err != nil {
				t.Fatalf("Write after Remove = %d, %v", n, err)
			}
			if got := readFile(t, m, "b"); got != "abcd" {
				t.Errorf("b = %q", got)
			}
		}},
		{"truncate gives space back", func(t *testing.T, m *MemFS) {
			m.SetCapacity(10)
			f, err := m.Create("f")
			check(t, "create", err)
			_, err = f.Write(make([]byte, 10))
			check(t, "write", err)
			check(t, "truncate", f.Truncate(3))
			wantFree(t, m, 7)
			wantErr(t, "truncate past capacity", f.Truncate(11), syscall.ENOSPC)
			check(t, "truncate up to capacity", f.Truncate(10))
			wantFree(t, m, 0)
		}},
		{"rename over a file and remove all give space back", func(t *testing.T, m *MemFS) {
			m.SetCapacity(100)
			check(t, "mkdir", m.MkdirAll("d/e", 0o755))
			writeFile(t, m, "d/e/f", "0123456789", false)
			writeFile(t, m, "d/g", "0123456789", false)
			writeFile(t, m, "a", "0123456789", false)
			writeFile(t, m, "b", "01234", false)
			wantFree(t, m, 65)
			check(t, "rename", m.Rename("b", "a"))
			wantFree(t, m, 75)
			check(t, "remove all", m.RemoveAll("d"))
			wantFree(t, m, 95)
		}},
		{"removed open file is not charged", func(t *testing.T, m *MemFS) {
			m.SetCapacity(10)
			f, err := m.Create("f")
			check(t, "create", err)
			check(t, "remove", m.Remove("f"))
			if n, err := f.Write(make([]byte, 20)); n != 20 || err != nil {
				t.Errorf("Write = %d, %v", n, err)
			}
			wantFree(t, m, 10)
		}},
		{"crash keeps the capacity and counts survivors", func(t *testing.T, m *MemFS) {
			m.SetCapacity(10)
			writeFile(t, m, "a", "123", true)
			writeFile(t, m, "b", "456", false)
			check(t, "sync dir", m.SyncDir("/"))
			wantFree(t, m.Crash(CrashOptions{}), 7)
		}},
		{"unlimited", func(t *testing.T, m *MemFS) {
			wantFree(t, m, math.MaxInt64)
			m.SetCapacity(5)
			wantFree(t, m, 5)
			m.SetCapacity(0)
			wantFree(t, m, math.MaxInt64)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, NewMem()) })
	}
}

func wantFree(t *testing.T, m *MemFS, want uint64) {
	t.Helper()
	free, err := m.Free("/")
	check(t, "free", err)
	if free != want {
		t.Errorf("Free = %d, want %d", free, want)
	}
}

func TestMemLock(t *testing.T) {
	m := NewMem()
	check(t, "mkdir", m.MkdirAll("db", 0o755))
	l, err := m.Lock("db/LOCK")
	check(t, "lock", err)
	for _, name := range []string{"db/LOCK", "/db/LOCK", "db/../db/./LOCK"} {
		if _, err := m.Lock(name); !errors.Is(err, ErrLocked) {
			t.Errorf("Lock(%q) = %v, want ErrLocked", name, err)
		}
	}
	// The lock is the inode's, as with flock.
	check(t, "rename", m.Rename("db/LOCK", "db/LOCK2"))
	if _, err := m.Lock("db/LOCK2"); !errors.Is(err, ErrLocked) {
		t.Errorf("Lock after rename = %v, want ErrLocked", err)
	}
	check(t, "sync dir", m.SyncDir("db"))
	check(t, "sync dir", m.SyncDir("/"))
	c := m.Crash(CrashOptions{})
	cl, err := c.Lock("db/LOCK2")
	check(t, "lock on a crashed copy", err)
	check(t, "unlock", cl.Close())
	check(t, "unlock", l.Close())
	wantErr(t, "second unlock", l.Close(), fs.ErrClosed)
	l, err = m.Lock("db/LOCK2")
	check(t, "lock after unlock", err)
	check(t, "unlock", l.Close())
	_, err = m.Lock("missing/LOCK")
	wantErr(t, "lock in a missing dir", err, fs.ErrNotExist)
}

func TestMemMapIsACopy(t *testing.T) {
	m := NewMem()
	writeFile(t, m, "f", "abc", false)
	data, release, err := m.Map("f")
	check(t, "map", err)
	data[0] = 'X'
	check(t, "release", release())
	if got := readFile(t, m, "f"); got != "abc" {
		t.Errorf("writing to the mapped bytes changed the file: %q", got)
	}
}

func TestMemPaths(t *testing.T) {
	m := NewMem()
	check(t, "mkdir", m.MkdirAll("a/b", 0o755))
	writeFile(t, m, "a/b/f", "x", false)
	for _, name := range []string{"a/b/f", "/a/b/f", "./a/b/f", "a//b/f", "a/b/../b/f", "/../a/b/f"} {
		if got := readFile(t, m, name); got != "x" {
			t.Errorf("%q = %q", name, got)
		}
	}
	_, err := m.Open("")
	wantErr(t, "open empty name", err, fs.ErrNotExist)
	wantErr(t, "remove root", m.Remove("/"), syscall.EBUSY)
	if err := m.RemoveAll("."); err == nil {
		t.Error(`RemoveAll(".") succeeded`)
	}
	names, err := m.List(".")
	check(t, "list", err)
	if !slices.Equal(names, []string{"a"}) {
		t.Errorf("List(.) = %q", names)
	}
}

// TestMemConcurrent is for -race: goroutines write, sync, read, rename and
// crash one MemFS at once.
func TestMemConcurrent(t *testing.T) {
	m := NewMem()
	m.SetCapacity(1 << 30)
	shared, err := m.Create("shared")
	check(t, "create", err)
	const workers, rounds = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := range workers {
		wg.Go(func() {
			name := fmt.Sprintf("w%d", w)
			f, err := m.Create(name)
			if err != nil {
				errs <- err
				return
			}
			for i := range rounds {
				if _, err := f.Write([]byte("record\n")); err != nil {
					errs <- err
					return
				}
				if _, err := shared.Write([]byte("x")); err != nil {
					errs <- err
					return
				}
				if i%10 == 0 {
					if err := f.Sync(); err != nil {
						errs <- err
						return
					}
					if err := m.SyncDir("/"); err != nil {
						errs <- err
						return
					}
				}
				if _, err := f.ReadAt(make([]byte, 7), 0); err != nil {
					errs <- err
					return
				}
			}
			if err := f.Close(); err != nil {
				errs <- err
				return
			}
			if err := m.Rename(name, name+".done"); err != nil {
				errs <- err
			}
		})
	}
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			c := m.Crash(CrashOptions{Rand: r})
			if _, err := c.List("/"); err != nil {
				errs <- err
				return
			}
			if _, err := m.Free("/"); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, err := shared.Stat()
	check(t, "stat", err)
	if st.Size() != workers*rounds {
		t.Errorf("shared size = %d, want %d", st.Size(), workers*rounds)
	}
	names, err := m.List("/")
	check(t, "list", err)
	if len(names) != workers+1 {
		t.Errorf("List = %q", names)
	}
}

func BenchmarkMemWriteSync(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			m := NewMem()
			f, err := m.Create("f")
			if err != nil {
				b.Fatal(err)
			}
			p := make([]byte, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := f.Write(p); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
