package vfs_test

import (
	"fmt"
	"io"
	"syscall"

	"github.com/sluicelog/sluice/internal/vfs"
)

// A record is durable once its file is synced and the file's directory
// entry is synced; a crash loses everything after that.
func ExampleMemFS_Crash() {
	m := vfs.NewMem()
	f, _ := m.Create("wal")
	f.Write([]byte("synced;"))
	f.Sync()
	m.SyncDir("/")
	f.Write([]byte("lost;"))

	after := m.Crash(vfs.CrashOptions{})
	g, _ := after.Open("wal")
	b, _ := io.ReadAll(g)
	fmt.Printf("%q\n", b)
	// Output: "synced;"
}

// A disk that fills up in the middle of a write.
func ExampleFaultFS() {
	fsys := vfs.NewFault(vfs.NewMem(), vfs.FailOnce(vfs.OpWrite,
		&vfs.PartialWriteError{N: 3, Err: syscall.ENOSPC}))
	f, _ := fsys.Create("wal")
	n, err := f.Write([]byte("record"))
	fmt.Println(n, vfs.IsNoSpace(err))
	// Output: 3 true
}
