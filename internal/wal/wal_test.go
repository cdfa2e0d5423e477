package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicelog/sluice/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// --- helpers ---------------------------------------------------------------

// testPayload returns payload number i of n bytes: deterministic, unique
// for n >= 8 (it starts with i), and otherwise pseudo-random.
func testPayload(i uint64, n int) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(i, 0x5eed))
	for j := range p {
		p[j] = byte(r.Uint32())
	}
	if n >= 8 {
		binary.LittleEndian.PutUint64(p, i)
	}
	return p
}

// logBuffer is an slog destination the tests can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// record is one replayed frame.
type record struct {
	pos     Pos
	payload []byte
}

// openLog opens the log, collecting what it replays, and closes it when
// the test ends.
func openLog(t *testing.T, opts Options, from uint64) (*Log, RecoveryReport, []record) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	var recs []record
	l, rep, err := Open(opts, from, func(pos Pos, p []byte) error {
		recs = append(recs, record{pos, bytes.Clone(p)})
		return nil
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, rep, recs
}

// reopen closes l and opens the log again.
func reopen(t *testing.T, l *Log, opts Options, from uint64) (*Log, RecoveryReport, []record) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openLog(t, opts, from)
}

func mustAppend(t *testing.T, l *Log, p []byte) Pos {
	t.Helper()
	pos, err := l.Append(p)
	if err != nil {
		t.Fatalf("Append(%d bytes): %v", len(p), err)
	}
	return pos
}

func readFS(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFS writes a durable file.
func writeFS(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(filepath.Dir(name)); err != nil {
		t.Fatal(err)
	}
}

// segmentFiles returns the numbers of the segment files in dir.
func segmentFiles(t *testing.T, fs vfs.FS, dir string) []uint64 {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []uint64
	for _, name := range names {
		if n, ok := parseSegmentName(name); ok {
			segs = append(segs, n)
		}
	}
	return segs
}

// syncCounter counts fdatasyncs of segment files and can slow them down,
// as a disk does, so that appenders pile up behind a sync.
func syncCounter(n *atomic.Int64, delay time.Duration) vfs.Injector {
	return func(op vfs.Op, name string) error {
		if op == vfs.OpSync && strings.HasSuffix(name, segmentSuffix) {
			n.Add(1)
			if delay > 0 {
				time.Sleep(delay)
			}
		}
		return nil
	}
}

// --- options ---------------------------------------------------------------

func TestParseSyncPolicy(t *testing.T) {
	tests := []struct {
		in      string
		want    SyncPolicy
		wantErr string
	}{
		{in: "always", want: SyncPolicy{Mode: SyncAlways}},
		{in: "never", want: SyncPolicy{Mode: SyncNever}},
		{in: "interval=10ms", want: SyncPolicy{Mode: SyncInterval, Interval: 10 * time.Millisecond}},
		{in: "interval=1s", want: SyncPolicy{Mode: SyncInterval, Interval: time.Second}},
		{in: "interval=0s", wantErr: "interval must be positive"},
		{in: "interval=-1ms", wantErr: "interval must be positive"},
		{in: "interval=soon", wantErr: "invalid duration"},
		{in: "interval", wantErr: "want always, never or interval=DURATION"},
		{in: "Always", wantErr: "want always"},
		{in: "", wantErr: "want always"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("in=%q", tt.in), func(t *testing.T) {
			got, err := ParseSyncPolicy(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSyncPolicy(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSyncPolicy(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if back, err := ParseSyncPolicy(got.String()); err != nil || back != got {
				t.Fatalf("round trip of %v: %v, %v", got, back, err)
			}
		})
	}
}

func TestOptionsInvalid(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no dir", Options{FS: vfs.NewMem()}, "Dir is empty"},
		{"interval without duration", Options{FS: vfs.NewMem(), Dir: "w", Sync: SyncPolicy{Mode: SyncInterval}}, "interval must be positive"},
		{"unknown mode", Options{FS: vfs.NewMem(), Dir: "w", Sync: SyncPolicy{Mode: 7}}, "unknown sync mode"},
		{"payload limit", Options{FS: vfs.NewMem(), Dir: "w", MaxPayload: MaxPayloadLimit + 1}, "MaxPayload"},
		{"negative segment size", Options{FS: vfs.NewMem(), Dir: "w", SegmentSize: -1}, "SegmentSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _, err := Open(tt.opts, 0, nil)
			if err == nil {
				l.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// --- format ----------------------------------------------------------------

func TestSegmentName(t *testing.T) {
	tests := []struct {
		name string
		n    uint64
		ok   bool
	}{
		{"00000000000000000042.wal", 42, true},
		{"00000000000000000000.wal", 0, true},
		{"18446744073709551615.wal", 1<<64 - 1, true},
		{"18446744073709551616.wal", 0, false},
		{"0000000000000000042.wal", 0, false},
		{"00000000000000000042.wal.tmp", 0, false},
		{"00000000000000000042.wal.corrupt", 0, false},
		{"0000000000000000004x.wal", 0, false},
		{"+0000000000000000042.wal", 0, false},
		{"LOCK", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := parseSegmentName(tt.name)
			if n != tt.n || ok != tt.ok {
				t.Fatalf("parseSegmentName(%q) = %d, %v; want %d, %v", tt.name, n, ok, tt.n, tt.ok)
			}
			if ok && segmentName(n) != tt.name {
				t.Fatalf("segmentName(%d) = %q", n, segmentName(n))
			}
		})
	}
}

// TestFormatGolden pins the bytes of a segment to docs/format/wal.md: a
// change here is a format change and needs a new FormatVersion.
func TestFormatGolden(t *testing.T) {
	b := appendSegmentHeader(nil, 42)
	b = appendFrame(b, 42, int64(len(b)), []byte("hello"))
	b = appendFrame(b, 42, int64(len(b)), nil)
	want := "" +
		"534c574c" + "01000000" + "2a00000000000000" + "32b79137" + // header
		"05000000" + "4cbb719a" + "1939dd38" + "68656c6c6f" + // frame at 20: "hello"
		"00000000" + "00000000" + "2a285523" // frame at 37: empty payload
	if got := fmt.Sprintf("%x", b); got != want {
		t.Fatalf("segment bytes\n got %s\nwant %s", got, want)
	}
}

// --- behaviour -------------------------------------------------------------

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name        string
		fs          func(t *testing.T) (vfs.FS, string)
		sync        SyncPolicy
		segmentSize int64
		count       int
		maxSize     int
	}{
		{"fs=os/sync=always", osDir, SyncPolicy{}, 4 << 10, 300, 300},
		{"fs=os/sync=never", osDir, SyncPolicy{Mode: SyncNever}, 4 << 10, 300, 300},
		{"fs=mem/sync=interval", memDir, SyncPolicy{Mode: SyncInterval, Interval: time.Millisecond}, 4 << 10, 300, 300},
		{"fs=mem/large", memDir, SyncPolicy{}, 1 << 20, 12, 700 << 10},
		{"fs=mem/one-segment", memDir, SyncPolicy{}, 0, 100, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, dir := tt.fs(t)
			opts := Options{FS: fs, Dir: dir, Sync: tt.sync, SegmentSize: tt.segmentSize}
			l, rep, recs := openLog(t, opts, 0)
			if rep.Records != 0 || len(recs) != 0 || rep.TornTail != nil || len(rep.Corrupt) != 0 {
				t.Fatalf("fresh log: report %+v", rep)
			}
			r := rand.New(rand.NewPCG(1, 2))
			var want []record
			for i := range tt.count {
				p := testPayload(uint64(i), r.IntN(tt.maxSize+1))
				pos := mustAppend(t, l, p)
				if k := len(want); k > 0 && !posLess(want[k-1].pos, pos) {
					t.Fatalf("append %d at %v, after %v", i, pos, want[k-1].pos)
				}
				want = append(want, record{pos, p})
			}
			st := l.Stats()
			if st.Appends != uint64(tt.count) {
				t.Fatalf("Stats.Appends = %d, want %d", st.Appends, tt.count)
			}
			nsegs := len(segmentFiles(t, fs, dir))
			if st.Segments != nsegs {
				t.Fatalf("Stats.Segments = %d, files %d", st.Segments, nsegs)
			}
			if tt.segmentSize != 0 && tt.segmentSize < 1<<20 && nsegs < 3 {
				t.Fatalf("%d segments, want several", nsegs)
			}

			l, rep, recs = reopen(t, l, opts, 0)
			checkRecords(t, recs, want)
			if rep.Records != len(want) || rep.TornTail != nil || len(rep.Corrupt) != 0 {
				t.Fatalf("report %+v", rep)
			}
			// Replay from a later segment gives the suffix from there.
			from := want[len(want)/2].pos.Segment
			var suffix []record
			for _, w := range want {
				if w.pos.Segment >= from {
					suffix = append(suffix, w)
				}
			}
			_, _, recs = reopen(t, l, opts, from)
			checkRecords(t, recs, suffix)
		})
	}
}

func osDir(t *testing.T) (vfs.FS, string)  { return vfs.OS, filepath.Join(t.TempDir(), "wal") }
func memDir(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/data/wal" }

func posLess(a, b Pos) bool {
	return a.Segment < b.Segment || a.Segment == b.Segment && a.Offset < b.Offset
}

func checkRecords(t *testing.T, got, want []record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].pos != want[i].pos || !bytes.Equal(got[i].payload, want[i].payload) {
			t.Fatalf("record %d: got %v (%d bytes), want %v (%d bytes)", i,
				got[i].pos, len(got[i].payload), want[i].pos, len(want[i].payload))
		}
	}
}

func TestAppendTooLarge(t *testing.T) {
	l, _, _ := openLog(t, Options{FS: vfs.NewMem(), Dir: "w", MaxPayload: 100}, 0)
	if _, err := l.Append(make([]byte, 101)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append(101 bytes) = %v, want ErrTooLarge", err)
	}
	mustAppend(t, l, make([]byte, 100))
}

func TestClose(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{FS: fs, Dir: "w", Sync: SyncPolicy{Mode: SyncNever}}
	l, _, _ := openLog(t, opts, 0)
	p := testPayload(1, 100)
	pos := mustAppend(t, l, p)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(p); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := l.Rotate(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Rotate after Close = %v, want ErrClosed", err)
	}
	if err := l.RemoveBefore(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("RemoveBefore after Close = %v, want ErrClosed", err)
	}
	// Close synced, even under SyncNever: a crash loses nothing.
	_, _, recs := openLog(t, Options{FS: fs.Crash(vfs.CrashOptions{}), Dir: "w"}, 0)
	checkRecords(t, recs, []record{{pos, p}})
}

func TestCloseCompletesWaitingAppends(t *testing.T) {
	var syncs atomic.Int64
	fs := vfs.NewFault(vfs.NewMem(), syncCounter(&syncs, time.Millisecond))
	opts := Options{FS: fs, Dir: "w"}
	l, _, _ := openLog(t, opts, 0)
	var wg sync.WaitGroup
	var acked atomic.Int64
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				_, err := l.Append(testPayload(uint64(i*100+j), 10))
				if err == nil {
					acked.Add(1)
				} else if !errors.Is(err, ErrClosed) {
					t.Errorf("Append: %v", err)
				}
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	_, rep, _ := openLog(t, opts, 0)
	if int64(rep.Records) != acked.Load() {
		t.Fatalf("replayed %d, acknowledged %d", rep.Records, acked.Load())
	}
}

func TestLocked(t *testing.T) {
	opts := Options{FS: vfs.NewMem(), Dir: "w"}
	openLog(t, opts, 0)
	if l, _, err := Open(opts, 0, nil); !errors.Is(err, vfs.ErrLocked) {
		if err == nil {
			l.Close()
		}
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestReplayError(t *testing.T) {
	opts := Options{FS: vfs.NewMem(), Dir: "w", Logger: discardLogger()}
	l, _, _ := openLog(t, opts, 0)
	mustAppend(t, l, []byte("x"))
	l.Close()
	stop := errors.New("stop")
	_, _, err := Open(opts, 0, func(Pos, []byte) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("Open = %v, want the replay error", err)
	}
	// The lock was released: the log opens again.
	openLog(t, opts, 0)
}

func TestRotateAndRemoveBefore(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{FS: fs, Dir: "w"}
	l, _, _ := openLog(t, opts, 0)
	first := l.Stats().Segment
	var want []record
	add := func(i int) {
		p := testPayload(uint64(i), 20)
		want = append(want, record{mustAppend(t, l, p), p})
	}
	add(0)
	n, err := l.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if n != first+1 || l.Stats().Segment != n {
		t.Fatalf("Rotate = %d, first segment %d, Stats.Segment %d", n, first, l.Stats().Segment)
	}
	add(1)
	if got := want[1].pos.Segment; got != n {
		t.Fatalf("append after Rotate went to segment %d, want %d", got, n)
	}
	n2, err := l.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	add(2)
	if err := l.RemoveBefore(n2 + 1); err == nil {
		t.Fatal("RemoveBefore beyond the current segment succeeded")
	}
	if err := l.RemoveBefore(n); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, fs, "w"); !slices.Equal(got, []uint64{n, n2}) {
		t.Fatalf("segments after RemoveBefore(%d): %v", n, got)
	}
	if got := l.Stats().Segments; got != 2 {
		t.Fatalf("Stats.Segments = %d, want 2", got)
	}
	l, _, recs := reopen(t, l, opts, n)
	checkRecords(t, recs, want[1:])
	// The new segment numbers go on from the last one.
	if got := l.Stats().Segment; got != n2+1 {
		t.Fatalf("after reopen appends go to %d, want %d", got, n2+1)
	}
	// from beyond every segment: nothing replayed, numbering jumps to from.
	l, _, recs = reopen(t, l, opts, 100)
	if len(recs) != 0 || l.Stats().Segment != 100 {
		t.Fatalf("Open(from=100): %d records, segment %d", len(recs), l.Stats().Segment)
	}
}

func TestGroupCommit(t *testing.T) {
	const writers, perWriter = 16, 100
	var syncs atomic.Int64
	fs := vfs.NewFault(vfs.NewMem(), nil)
	opts := Options{FS: fs, Dir: "w", SegmentSize: 64 << 10}
	l, _, _ := openLog(t, opts, 0)
	fs.SetInjector(syncCounter(&syncs, 500*time.Microsecond))
	var mu sync.Mutex
	acked := map[uint64]Pos{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for i := range perWriter {
				id := uint64(w*perWriter + i)
				pos, err := l.Append(testPayload(id, 8+r.IntN(200)))
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				acked[id] = pos
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	appends := writers * perWriter
	if n := syncs.Load(); n > int64(appends/4) {
		t.Errorf("%d fdatasyncs for %d appends: group commit is not grouping", n, appends)
	} else {
		t.Logf("%d fdatasyncs for %d appends", n, appends)
	}
	fs.SetInjector(nil)
	_, _, recs := reopen(t, l, opts, 0)
	seen := map[uint64]bool{}
	for _, r := range recs {
		id := binary.LittleEndian.Uint64(r.payload)
		if seen[id] {
			t.Fatalf("payload %d replayed twice", id)
		}
		seen[id] = true
		if !bytes.Equal(r.payload, testPayload(id, len(r.payload))) {
			t.Fatalf("payload %d replayed wrong", id)
		}
		if acked[id] != r.pos {
			t.Fatalf("payload %d replayed at %v, acknowledged at %v", id, r.pos, acked[id])
		}
	}
	if len(seen) != appends {
		t.Fatalf("replayed %d payloads, acknowledged %d", len(seen), appends)
	}
}

func TestSyncInterval(t *testing.T) {
	var syncs atomic.Int64
	mem := vfs.NewMem()
	fs := vfs.NewFault(mem, syncCounter(&syncs, 0))
	var hooked atomic.Int64
	opts := Options{FS: fs, Dir: "w", Sync: SyncPolicy{Mode: SyncInterval, Interval: 2 * time.Millisecond},
		OnSync: func(d time.Duration, bytes int) { hooked.Add(int64(bytes)) }}
	l, _, _ := openLog(t, opts, 0)
	base := syncs.Load()
	p := testPayload(1, 1000)
	pos := mustAppend(t, l, p)
	// The injector counts a sync as it starts; OnSync is told once it has
	// returned: wait for both.
	deadline := time.Now().Add(time.Minute) // only stops a test that hangs
	for syncs.Load() == base || hooked.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("under SyncInterval, in a minute: %d fdatasyncs, OnSync told of %d bytes", syncs.Load()-base, hooked.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if got := hooked.Load(); got != frameSize(len(p)) {
		t.Fatalf("OnSync saw %d bytes, want %d", got, frameSize(len(p)))
	}
	// What the interval sync covered survives a crash.
	_, _, recs := openLog(t, Options{FS: mem.Crash(vfs.CrashOptions{}), Dir: "w"}, 0)
	checkRecords(t, recs, []record{{pos, p}})
}

func TestOpenCreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "wal")
	openLog(t, Options{Dir: dir}, 0)
	if _, err := vfs.OS.Stat(filepath.Join(dir, segmentName(0))); err != nil {
		t.Fatal(err)
	}
}
