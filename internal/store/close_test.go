package store

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

// TestCloseStopsFlushOfManyTenants: Close during the flush of 5,000
// tenants' parts stops it between parts rather than wait for all of them
// (the WAL still has every row), and a flush writes every tenant's part,
// several at once.
func TestCloseStopsFlushOfManyTenants(t *testing.T) {
	const tenants = 5000
	mem := vfs.NewMem()
	s := open(t, mem, Options{})
	for i := range tenants {
		appendLines(t, s, fmt.Sprintf("t%d", i), []string{fmt.Sprintf(`{"msg":"hello %d","service":"a"}`, i)}, 1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened with a small head, the store flushes the replayed rows in
	// the background. Hold the first parts' syncs until Close has begun.
	fs := vfs.NewFault(mem, nil)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs.SetInjector(func(op vfs.Op, name string) error {
		if op == vfs.OpSync && strings.HasSuffix(name, ".part.tmp") {
			once.Do(func() { close(started) })
			<-release
		}
		return nil
	})
	s = open(t, fs, Options{HeadBytes: 1 << 10})
	<-started
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	<-s.ctx.Done() // Close has begun
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Parts != 0 {
		t.Errorf("%d parts committed by a flush that Close stopped", st.Parts)
	}

	s = open(t, mem, Options{})
	defer s.Close()
	want := map[string][]string{}
	for i := range tenants {
		want[fmt.Sprintf("t%d", i)] = []string{fmt.Sprintf(`{"msg":"hello %d","service":"a"}`, i)}
	}
	// The lines have no time of their own: compare them without.
	exp := expected(t, want)
	noTimes := func(rs []stored) []stored {
		for i := range rs {
			rs[i].time = 0
		}
		return rs
	}
	exp = noTimes(exp)
	diff(t, noTimes(exportAll(t, s)), exp)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Parts != tenants || st.HeadRows != 0 {
		t.Errorf("after a flush: %d parts, %d head rows; want %d and 0", st.Parts, st.HeadRows, tenants)
	}
	diff(t, noTimes(exportAll(t, s)), exp)
}
