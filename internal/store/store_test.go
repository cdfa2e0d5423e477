package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// genLines returns n distinct lines of several formats and streams.
func genLines(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2026, 1, 15, 23, 59, 0, 0, time.UTC).UnixMilli()
	out := make([]string, n)
	for i := range out {
		ms := base + int64(i/3) + int64(rng.IntN(5)) // ties and small disorder, across midnight
		svc := []string{"api", "web", "db"}[rng.IntN(3)]
		host := fmt.Sprintf("h%d", rng.IntN(2))
		switch rng.IntN(10) {
		case 0:
			out[i] = fmt.Sprintf("ts=%s level=info msg=\"line %d\" service=%s host=%s", time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), i, svc, host)
		case 1:
			out[i] = fmt.Sprintf("%s WARN plain text line %d", time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000"), i)
		default:
			out[i] = fmt.Sprintf(`{"ts":%d,"level":"error","msg":"request %d","service":"%s","host":"%s","trace_id":"%016x%016x","http":{"status":%d,"latency_ms":%d.%03d}}`,
				ms, i, svc, host, rng.Uint64(), rng.Uint64(), 200+rng.IntN(4)*100, rng.IntN(500), rng.IntN(1000))
		}
	}
	return out
}

// appendLines parses lines in batches and appends them to s.
func appendLines(t testing.TB, s *Store, tenant string, lines []string, batch int) {
	t.Helper()
	for i := 0; i < len(lines); i += batch {
		if err := appendBatch(s, tenant, lines[i:min(i+batch, len(lines))]); err != nil {
			t.Fatal(err)
		}
	}
}

func appendBatch(s *Store, tenant string, lines []string) error {
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		return err
	}
	return p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(b *record.Batch) error {
		if len(b.Errors) > 0 {
			return fmt.Errorf("parse: %v", b.Errors[0].Msg)
		}
		return s.Append(context.Background(), tenant, b)
	})
}

type stored struct {
	tenant, stream string
	time           int64
	line           string
}

// exportAll returns every stored row in export order.
func exportAll(t testing.TB, s *Store) []stored {
	t.Helper()
	sn := s.Snapshot()
	defer sn.Release()
	var out []stored
	err := sn.Lines(context.Background(), nil, math.MinInt64, math.MaxInt64, nil, func(tenant string, ls record.Labels, r *rows.Row) error {
		out = append(out, stored{tenant, ls.String(), r.Time, string(r.Line)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expected returns what exportAll must give for lines appended in order:
// by tenant, stream, time, then arrival.
func expected(t testing.TB, byTenant map[string][]string) []stored {
	t.Helper()
	var out []stored
	for tenant, lines := range byTenant {
		p, _ := parse.New(parse.Options{Record: record.DefaultConfig()})
		_ = p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(b *record.Batch) error {
			for i := range b.Records {
				out = append(out, stored{tenant, b.Labels(i).String(), b.Records[i].Time, string(b.Bytes(b.Records[i].Line))})
			}
			return nil
		})
	}
	slices.SortStableFunc(out, func(a, b stored) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.stream, b.stream), cmp.Compare(a.time, b.time))
	})
	return out
}

func diff(t testing.TB, got, want []stored) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func open(t testing.TB, fs vfs.FS, opts Options) *Store {
	t.Helper()
	opts.FS, opts.Dir, opts.Logger = fs, "data", quiet
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAppendFlushMergeReopen(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{HeadBytes: 64 << 10, MergeFactor: 3})
	in := map[string][]string{"default": genLines(6000, 1), "team-b": genLines(2000, 2)}
	appendLines(t, s, "default", in["default"], 300)
	appendLines(t, s, "team-b", in["team-b"], 300)
	want := expected(t, in)
	diff(t, exportAll(t, s), want)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.mergeAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Flushes == 0 || st.Merges == 0 || st.HeadRows != 0 {
		t.Errorf("stats %+v: want flushes, merges and an empty head", st)
	}
	diff(t, exportAll(t, s), want)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, fs, Options{HeadBytes: 64 << 10})
	defer s.Close()
	diff(t, exportAll(t, s), want)
}

func TestReplay(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{})
	in := map[string][]string{"default": genLines(3000, 3)}
	appendLines(t, s, "default", in["default"], 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Replay with a small head: it must flush as it goes.
	s = open(t, fs, Options{HeadBytes: 16 << 10, WALSegmentSize: 32 << 10})
	defer s.Close()
	diff(t, exportAll(t, s), expected(t, in))
	if st := s.Stats(); st.RecoveredRecords != 3000 {
		t.Errorf("recovered %d records, want 3000", st.RecoveredRecords)
	}
}

func TestLocked(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{})
	defer s.Close()
	if _, err := Open(Options{FS: fs, Dir: "data", Logger: quiet}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func TestBadTenant(t *testing.T) {
	s := open(t, vfs.NewMem(), Options{})
	defer s.Close()
	for _, tenant := range []string{"", "..", "a/b", "../../etc", strings.Repeat("x", 151), "a b"} {
		if err := appendBatch(s, tenant, []string{"x"}); !errors.Is(err, ErrBadTenant) {
			t.Errorf("tenant %q: %v, want ErrBadTenant", tenant, err)
		}
	}
}

// TestCrash appends from several goroutines, with flushes and merges
// running, and takes a power-loss image of the filesystem at a random
// moment: reopened, it must hold every acknowledged line exactly once and
// nothing that was never sent.
func TestCrash(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			fs := vfs.NewMem()
			s := open(t, fs, Options{HeadBytes: 32 << 10, MergeFactor: 2, WALSegmentSize: 16 << 10})
			lines := genLines(4000, seed)
			var mu sync.Mutex
			var acked []string
			var crashed *vfs.MemFS
			var ackedAtCrash []string
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w * 50; i < len(lines); i += 150 {
						batch := lines[i:min(i+50, len(lines))]
						if err := appendBatch(s, "default", batch); err != nil {
							return
						}
						mu.Lock()
						acked = append(acked, batch...)
						mu.Unlock()
					}
				}()
			}
			rng := rand.New(rand.NewPCG(seed, 7))
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			mu.Lock()
			crashed = fs.Crash(vfs.CrashOptions{Rand: rng})
			ackedAtCrash = slices.Clone(acked)
			mu.Unlock()
			wg.Wait()
			s.Close()

			s2 := open(t, crashed, Options{})
			defer s2.Close()
			got := map[string]int{}
			for _, r := range exportAll(t, s2) {
				got[r.line]++
			}
			sent := map[string]bool{}
			for _, l := range lines {
				sent[l] = true
			}
			for l, n := range got {
				if n != 1 || !sent[l] {
					t.Fatalf("line stored %d times (sent: %v): %s", n, sent[l], l)
				}
			}
			for _, l := range ackedAtCrash {
				if got[l] != 1 {
					t.Fatalf("acknowledged line lost: %s", l)
				}
			}
			t.Logf("%d acknowledged at the crash, %d recovered", len(ackedAtCrash), len(got))
		})
	}
}

// TestNoSpace fills the disk: Append fails with ENOSPC and nothing
// acknowledged is lost; once space returns, appends work again.
func TestNoSpace(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{HeadBytes: 32 << 10})
	lines := genLines(3000, 9)
	appendLines(t, s, "default", lines[:500], 100)
	fs.SetCapacity(fsUsed(t, fs) + 40<<10)
	var acked []string
	var failed error
	for i := 500; i < 2500; i += 100 {
		batch := lines[i : i+100]
		if err := appendBatch(s, "default", batch); err != nil {
			failed = err
			continue
		}
		acked = append(acked, batch...)
	}
	if !vfs.IsNoSpace(failed) {
		t.Fatalf("appends on a full disk: last error %v, want ENOSPC", failed)
	}
	fs.SetCapacity(0)
	appendLines(t, s, "default", lines[2500:], 100)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	want := append(append(slices.Clone(lines[:500]), acked...), lines[2500:]...)
	s.Close()
	s = open(t, fs, Options{})
	defer s.Close()
	got := exportAll(t, s)
	gotLines := map[string]int{}
	for _, r := range got {
		gotLines[r.line]++
	}
	for _, l := range want {
		if gotLines[l] != 1 {
			t.Fatalf("acknowledged line stored %d times: %s", gotLines[l], l)
		}
	}
}

// fsUsed returns the bytes fs holds (the capacity minus what is free).
func fsUsed(t testing.TB, fs *vfs.MemFS) int64 {
	t.Helper()
	const capacity = 1 << 40
	fs.SetCapacity(capacity)
	free, err := fs.Free("data")
	if err != nil {
		t.Fatal(err)
	}
	return capacity - int64(free)
}

func TestRetention(t *testing.T) {
	fs := vfs.NewMem()
	now := time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC)
	s := open(t, fs, Options{Retention: 72 * time.Hour, Now: func() time.Time { return now }})
	defer s.Close()
	appendLines(t, s, "default", genLines(1000, 4), 100) // Jan 15–16: older than 72 h
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	recent := fmt.Sprintf(`{"time":"%s","msg":"recent","service":"api"}`, now.Add(-time.Hour).Format(time.RFC3339))
	appendLines(t, s, "default", []string{recent}, 1)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.applyRetention(); err != nil {
		t.Fatal(err)
	}
	got := exportAll(t, s)
	if len(got) != 1 || got[0].line != recent {
		t.Fatalf("after retention: %d rows (%v), want only the recent one", len(got), got)
	}
}

// TestMaxTenantBytes: with MaxTenantBytes set, a tenant whose parts take
// more than that loses its oldest parts, whole, until they fit; the other
// tenants keep everything, and the drop is counted and survives a reopen.
func TestMaxTenantBytes(t *testing.T) {
	fs := vfs.NewMem()
	base := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
	batch := func(b, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(`{"time":"%s","msg":"batch %d line %d %s","service":"api"}`,
				base.Add(time.Duration(b)*time.Hour+time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), b, i, strings.Repeat("x", i%50)))
		}
		return out
	}
	// Four parts of tenant big, an hour apart, and one of tenant small.
	s := open(t, fs, Options{DeferMerges: true})
	var big [][]string
	for b := range 4 {
		big = append(big, batch(b, 500))
		appendLines(t, s, "big", big[b], 100)
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	small := batch(0, 50)
	appendLines(t, s, "small", small, 50)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	var sizes []int64 // of big's parts, oldest first
	var smallSize int64
	for _, p := range s.PartStats() {
		if p.Tenant == "big" {
			sizes = append(sizes, p.Size)
		} else {
			smallSize += p.Size
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 4 {
		t.Fatalf("%d parts of tenant big, want 4", len(sizes))
	}
	// Room for the newest two parts of big: the oldest two go.
	limit := sizes[2] + sizes[3]
	if smallSize > limit {
		t.Fatalf("tenant small takes %d bytes, more than the limit %d: the test's data is wrong", smallSize, limit)
	}
	s = open(t, fs, Options{DeferMerges: true, MaxTenantBytes: limit})
	if err := s.applyRetention(); err != nil {
		t.Fatal(err)
	}
	want := expected(t, map[string][]string{"big": slices.Concat(big[2], big[3]), "small": small})
	diff(t, exportAll(t, s), want)
	if st := s.Stats(); st.DroppedParts != 2 {
		t.Errorf("DroppedParts %d, want 2", st.DroppedParts)
	}
	var total int64
	for _, p := range s.PartStats() {
		if p.Tenant == "big" {
			total += p.Size
		}
	}
	if total > limit {
		t.Errorf("tenant big takes %d bytes after retention, over MaxTenantBytes %d", total, limit)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, fs, Options{DeferMerges: true})
	defer s.Close()
	diff(t, exportAll(t, s), want)
}

// TestSyncEIO fails the WAL's fdatasync: the append fails, is not
// acknowledged, and the store refuses appends until it is reopened (an
// fsync error is never retried and then acknowledged); what was
// acknowledged before is kept.
func TestSyncEIO(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewFault(mem, nil)
	s := open(t, fs, Options{})
	lines := genLines(300, 5)
	appendLines(t, s, "default", lines[:100], 50)
	fs.SetInjector(vfs.FailWhen(func(op vfs.Op, name string) bool {
		return op == vfs.OpSync && strings.HasSuffix(name, ".wal")
	}, syscall.EIO))
	if err := appendBatch(s, "default", lines[100:200]); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fsync: %v, want EIO", err)
	}
	fs.SetInjector(nil)
	if err := appendBatch(s, "default", lines[200:]); err == nil {
		t.Fatal("append after a failed fsync succeeded: the store must refuse until reopened")
	}
	s.Close()
	s = open(t, mem.Crash(vfs.CrashOptions{}), Options{})
	defer s.Close()
	got := map[string]bool{}
	for _, r := range exportAll(t, s) {
		got[r.line] = true
	}
	for _, l := range lines[:100] {
		if !got[l] {
			t.Fatalf("acknowledged line lost: %s", l)
		}
	}
}

// TestManifestDamage flips every bit of a MANIFEST: Open must refuse it
// with an error, never read it wrong (a flipped digit of wal_from would
// skip a WAL segment).
func TestManifestDamage(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{})
	appendLines(t, s, "default", genLines(200, 6), 100)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	good, release, err := fs.Map("data/MANIFEST")
	if err != nil {
		t.Fatal(err)
	}
	good = slices.Clone(good)
	release()
	for i := range len(good) * 8 {
		bad := slices.Clone(good)
		bad[i/8] ^= 1 << (i % 8)
		f, _ := fs.Create("data/MANIFEST")
		f.Write(bad)
		f.Close()
		if s, err := Open(Options{FS: fs, Dir: "data", Logger: quiet}); err == nil {
			s.Close()
			t.Fatalf("bit %d flipped: Open accepted the manifest", i)
		}
	}
}

// waitingForRoom reports whether a goroutine waits in Store.waitForRoom
// for a flush to make room (parked in its sync.Cond).
func waitingForRoom() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("sync.(*Cond).Wait")) && bytes.Contains(g, []byte(".(*Store).waitForRoom(")) {
			return true
		}
	}
	return false
}

// TestMaxHeadBytes: while a flush cannot finish, appends go on until the
// heads hold MaxHeadBytes, then wait for it; nothing is lost either way.
func TestMaxHeadBytes(t *testing.T) {
	gate := make(chan struct{})
	var stuck atomic.Bool
	fs := vfs.NewFault(vfs.NewMem(), func(op vfs.Op, name string) error {
		if op == vfs.OpCreate && strings.Contains(name, ".part") {
			stuck.Store(true)
			<-gate
		}
		return nil
	})
	const headBytes, maxHeadBytes = 16 << 10, 256 << 10
	s := open(t, fs, Options{HeadBytes: headBytes, MaxHeadBytes: maxHeadBytes})
	lines := genLines(4000, 11)

	progress := make(chan int, len(lines))
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < len(lines); i += 20 {
			if err := appendBatch(s, "default", lines[i:i+20]); err != nil {
				errc <- err
				return
			}
			progress <- i + 20
		}
		errc <- nil
	}()
	// The appends outrun the stuck flush past twice HeadBytes, up to the
	// budget, then wait for room: the flush is stuck and the appender is
	// found parked in waitForRoom (it may park before the flusher cuts the
	// head, which changes where the bytes are, not how many). The deadline
	// only stops a test that hangs.
	done := 0
	deadline := time.Now().Add(2 * time.Minute)
	for !stuck.Load() || !waitingForRoom() {
		select {
		case done = <-progress:
		case err := <-errc:
			t.Fatalf("every append returned (err %v) while the flush was stuck", err)
		default:
			if time.Now().After(deadline) {
				t.Fatalf("no append waits for room after %d lines (stats %+v)", done, s.Stats())
			}
			time.Sleep(time.Millisecond)
		}
	}
	for len(progress) > 0 {
		done = <-progress
	}
	st := s.Stats()
	if !stuck.Load() || st.FlushingBytes == 0 {
		t.Fatalf("no flush under way (stats %+v)", st)
	}
	heads := st.HeadBytes + st.FlushingBytes
	if heads < maxHeadBytes-4<<10 || heads > maxHeadBytes+8<<10 {
		t.Errorf("appends stopped with %d bytes in the heads (%d lines acknowledged), want about MaxHeadBytes %d", heads, done, maxHeadBytes)
	}
	close(gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	diff(t, exportAll(t, s), expected(t, map[string][]string{"default": lines}))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFlushWaitsForAPause: with a budget of many heads, a full head is
// flushed once writes pause, at once when the heads hold half the budget,
// and after maxFlushDelay when writes never pause.
func TestFlushWaitsForAPause(t *testing.T) {
	var clock, reads atomic.Int64
	clock.Store(time.Date(2026, 1, 16, 0, 0, 0, 0, time.UTC).UnixNano())
	const headBytes, maxHeadBytes = 16 << 10, 256 << 10
	s := open(t, vfs.NewMem(), Options{HeadBytes: headBytes, MaxHeadBytes: maxHeadBytes,
		Now: func() time.Time { reads.Add(1); return time.Unix(0, clock.Load()) }})
	defer s.Close()
	lines := genLines(4000, 12)
	i := 0
	appendUntil := func(bytes int64) {
		for ; s.Stats().HeadBytes < bytes; i += 20 {
			appendLines(t, s, "default", lines[i:i+20], 20)
		}
	}
	// The deadlines only stop a test that hangs.
	eventually := func(what string, cond func(Stats) bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !cond(s.Stats()); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: stats %+v", what, s.Stats())
			}
		}
	}
	// deferred waits until the flusher has looked at the full head twice
	// since the last append (with retention off, only its deferFlush reads
	// the clock when no append runs): the first look saw the last append,
	// and the second means the first deferred the flush rather than run
	// it. Or until a flush ran, which the caller then reports.
	deferred := func() {
		t.Helper()
		from, flushes := reads.Load(), s.Stats().Flushes
		eventually("the flusher never looked at the full head", func(st Stats) bool {
			return reads.Load() >= from+2 || st.Flushes != flushes
		})
	}

	// The clock stands still: writes never pause.
	appendUntil(2 * headBytes)
	deferred()
	if st := s.Stats(); st.Flushes != 0 {
		t.Fatalf("a head of %d bytes was flushed while writes went on (budget %d)", st.HeadBytes, maxHeadBytes)
	}
	clock.Add(int64(time.Second)) // a pause
	eventually("no flush after writes paused", func(st Stats) bool { return st.Flushes == 1 && st.HeadBytes == 0 })

	appendUntil(maxHeadBytes / 2)
	eventually("no flush with the heads at half the budget", func(st Stats) bool { return st.Flushes == 2 })

	// Writes that never pause wait no longer than maxFlushDelay.
	appendUntil(2 * headBytes)
	deferred()
	if st := s.Stats(); st.Flushes != 2 {
		t.Fatalf("a head of %d bytes was flushed while writes went on (budget %d)", st.HeadBytes, maxHeadBytes)
	}
	// A line every 95 ms: never a pause of flushIdle.
	for step := time.Duration(0); step <= maxFlushDelay; step += 95 * time.Millisecond {
		clock.Add(int64(95 * time.Millisecond))
		appendLines(t, s, "default", lines[i:i+1], 1)
		i++
	}
	eventually("no flush after maxFlushDelay", func(st Stats) bool { return st.Flushes == 3 })
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	diff(t, exportAll(t, s), expected(t, map[string][]string{"default": lines[:i]}))
}
