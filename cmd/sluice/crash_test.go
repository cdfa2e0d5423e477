package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashLine is line n (from 1) of cycle c: unique, with a time that grows
// with c and n, of one of twelve streams.
func crashLine(rng *rand.Rand, c, n int) string {
	// Cycles are a second apart and cross midnight, so parts of two days
	// are flushed and merged.
	ts := time.Date(2026, 1, 15, 23, 59, 45, 0, time.UTC).Add(time.Duration(c)*time.Second + time.Duration(n)*100*time.Microsecond)
	return fmt.Sprintf(`{"c":%d,"n":%d,"time":"%s","service":"svc-%d","host":"host-%d","level":"info","msg":"crash test %s"}`,
		c, n, ts.Format(time.RFC3339Nano), rng.IntN(4), rng.IntN(3), strings.Repeat("p", rng.IntN(40)))
}

// lineID reads the cycle and line number at the start of a crashLine.
func lineID(l []byte) (c, n int, ok bool) {
	rest, ok := bytes.CutPrefix(l, []byte(`{"c":`))
	if !ok {
		return 0, 0, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return 0, 0, false
	}
	c, err := strconv.Atoi(string(rest[:i]))
	if err != nil {
		return 0, 0, false
	}
	rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`"n":`))
	if !ok {
		return 0, 0, false
	}
	if i = bytes.IndexByte(rest, ','); i < 0 {
		return 0, 0, false
	}
	n, err = strconv.Atoi(string(rest[:i]))
	return c, n, err == nil
}

// readAcks returns the numbers in an ack log, in order; an unterminated
// last line (the process was killed while writing it) is left out.
func readAcks(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	var acks []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("ack log %s: %q is not a number", path, f)
		}
		acks = append(acks, n)
	}
	return acks, nil
}

func envInt(t *testing.T, name string, def int64) int64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

// TestCrashLoop kills `sluice ingest` with SIGKILL at random moments,
// cycle after cycle on one data directory, and checks after each cycle
// that `sluice export` (which recovers the directory) gives back every
// acknowledged line exactly once, no line twice and no line never
// written, and that `sluice stats` finds no damage.
//
// Each cycle's lines are split over several input files, each read as its
// own chunk, so that an ingest acknowledges several times, and the head
// (--head-bytes 65536) is flushed and parts merged while it runs. About
// one cycle in five runs to the end, so that parts of several cycles are
// merged too.
//
// SLUICE_CRASH_CYCLES sets the number of cycles (default 30) and
// SLUICE_CRASH_SEED replays a run.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 loop: skipped in -short mode")
	}
	bin := sluiceBinary(t)
	cycles := int(envInt(t, "SLUICE_CRASH_CYCLES", 30))
	seed := uint64(envInt(t, "SLUICE_CRASH_SEED", time.Now().UnixNano()))
	t.Logf("SLUICE_CRASH_SEED=%d SLUICE_CRASH_CYCLES=%d", seed, cycles)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with: SLUICE_CRASH_SEED=%d SLUICE_CRASH_CYCLES=%d go test -run TestCrashLoop ./cmd/sluice/", seed, cycles)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	work := t.TempDir()
	data := filepath.Join(work, "data")

	var (
		inputs    [][]string // per cycle, its lines
		acked     []int      // per cycle, the lines acknowledged
		persisted [][]bool   // per cycle and line, exported once already
		durations []time.Duration
		killed    int
		torn      int
		exported  int
	)
	for c := range cycles {
		n := 3000 + rng.IntN(2000)
		lines := make([]string, n)
		for i := range lines {
			lines[i] = crashLine(rng, c, i+1)
		}
		inputs = append(inputs, lines)
		persisted = append(persisted, make([]bool, n+1))
		// 1 to 12 files; each is one chunk, one WAL append and one ack.
		var files []string
		pieces := 1 + rng.IntN(12)
		for p, start := 0, 0; p < pieces; p++ {
			end := start + (n-start)/(pieces-p)
			name := filepath.Join(work, fmt.Sprintf("in-%03d-%02d.log", c, p))
			if err := os.WriteFile(name, []byte(strings.Join(lines[start:end], "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
			start = end
		}
		ackLog := filepath.Join(work, fmt.Sprintf("ack-%03d", c))

		// Kill after 5 to 300 ms, but no later than the median time an
		// uninterrupted ingest took so far, so that kills land while it
		// runs on a fast machine too. The first cycle runs to the end to
		// measure that.
		kill := c > 0 && rng.IntN(5) > 0
		limit := 300 * time.Millisecond
		if len(durations) > 0 {
			sorted := slices.Sorted(slices.Values(durations))
			limit = min(limit, max(20*time.Millisecond, sorted[len(sorted)/2]))
		}
		delay := 5*time.Millisecond + time.Duration(rng.Int64N(int64(limit-5*time.Millisecond)))

		workers := rng.IntN(5) // 0: the default, twice the CPUs
		cmd := exec.Command(bin, append([]string{"ingest", "--data", data, "--ack-log", ackLog, "--head-bytes", "65536", "--quiet",
			"--workers", strconv.Itoa(workers)}, files...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if kill {
			time.Sleep(delay)
			_ = cmd.Process.Kill() // it may have finished already
		}
		waitErr := cmd.Wait()
		took := time.Since(start)
		finished := waitErr == nil
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case finished:
			durations = append(durations, took)
		case ws.Signaled() && ws.Signal() == syscall.SIGKILL && kill:
			killed++
		default:
			t.Fatalf("cycle %d (seed %d): ingest: %v\n%s", c, seed, waitErr, stderr.String())
		}
		acks, err := readAcks(ackLog)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(acks) {
			t.Errorf("cycle %d (seed %d): ack log goes down: %v", c, seed, acks)
		}
		a := 0
		if len(acks) > 0 {
			a = acks[len(acks)-1]
		}
		if a > n {
			t.Fatalf("cycle %d (seed %d): ack log says %d lines, the input has %d", c, seed, a, n)
		}
		if finished && a != n {
			t.Errorf("cycle %d (seed %d): ingest ended normally, but the ack log says %d of %d lines", c, seed, a, n)
		}
		acked = append(acked, a)

		recovered := checkCrashDir(t, bin, data, seed, c, inputs, acked, persisted)
		torn += strings.Count(recovered.stderr, "torn tail")
		exported = recovered.total
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("cycle %2d: %4d lines in %2d files, %-22s acked %4d, exported %4d of them; %d lines in all",
			c, n, pieces, outcome(finished, kill, delay, took), a, recovered.cycle, recovered.total)
	}
	var lines, ack int
	for c := range inputs {
		lines += len(inputs[c])
		ack += acked[c]
	}
	t.Logf("%d cycles, %d killed: %d lines written, %d acknowledged, %d recovered (every acknowledged one); %d torn WAL tails repaired",
		cycles, killed, lines, ack, exported, torn)
}

func outcome(finished, kill bool, delay, took time.Duration) string {
	switch {
	case finished && kill:
		return fmt.Sprintf("done before kill@%v", delay.Round(time.Millisecond))
	case finished:
		return fmt.Sprintf("done in %v", took.Round(time.Millisecond))
	}
	return fmt.Sprintf("killed@%v", delay.Round(time.Millisecond))
}

// recovery is what checkCrashDir found.
type recovery struct {
	cycle, total int // lines of the last cycle exported, and of all cycles
	stderr       string
}

// checkCrashDir exports the data directory after cycle c and checks it
// against what was written and acknowledged.
func checkCrashDir(t *testing.T, bin, data string, seed uint64, c int, inputs [][]string, acked []int, persisted [][]bool) recovery {
	t.Helper()
	cmd := exec.Command(bin, "export", "--data", data)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cycle %d (seed %d): export: %v\n%s", c, seed, err, stderr.String())
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("cycle %d (seed %d): export found damage:\n%s", c, seed, stderr.String())
	}
	seen := make([][]uint8, len(inputs))
	for i := range inputs {
		seen[i] = make([]uint8, len(inputs[i])+1)
	}
	var rec recovery
	exported := out.Bytes()
	bad := 0
	for len(exported) > 0 {
		i := bytes.IndexByte(exported, '\n')
		if i < 0 {
			t.Errorf("cycle %d (seed %d): export output ends without a newline", c, seed)
			break
		}
		l := exported[:i]
		exported = exported[i+1:]
		lc, ln, ok := lineID(l)
		if !ok || lc < 0 || lc >= len(inputs) || ln < 1 || ln > len(inputs[lc]) || inputs[lc][ln-1] != string(l) {
			if bad++; bad <= 5 {
				t.Errorf("cycle %d (seed %d): export gave a line never written: %.200q", c, seed, l)
			}
			continue
		}
		if seen[lc][ln]++; seen[lc][ln] == 2 {
			if bad++; bad <= 5 {
				t.Errorf("cycle %d (seed %d): export gave line %d of cycle %d twice or more", c, seed, ln, lc)
			}
		}
		rec.total++
		if lc == c {
			rec.cycle++
		}
	}
	for i := range inputs {
		for n := 1; n <= len(inputs[i]); n++ {
			switch {
			case seen[i][n] == 0 && n <= acked[i]:
				if bad++; bad <= 5 {
					t.Errorf("cycle %d (seed %d): line %d of cycle %d was acknowledged (ack %d) but is lost", c, seed, n, i, acked[i])
				}
			case seen[i][n] == 0 && persisted[i][n]:
				if bad++; bad <= 5 {
					t.Errorf("cycle %d (seed %d): line %d of cycle %d was exported after an earlier cycle but is lost now", c, seed, n, i)
				}
			}
			if seen[i][n] > 0 {
				persisted[i][n] = true
			}
		}
	}
	if bad > 5 {
		t.Errorf("cycle %d (seed %d): %d problems in all", c, seed, bad)
	}
	rec.stderr = stderr.String()

	// stats opens the directory as recovered, and must count what export
	// gave.
	cmd = exec.Command(bin, "stats", "--data", data)
	out.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cycle %d (seed %d): stats: %v\n%s", c, seed, err, stderr.String())
	}
	if strings.Contains(out.String(), "damage") || strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("cycle %d (seed %d): stats reports damage:\n%s%s", c, seed, out.String(), stderr.String())
	}
	parts, head, table := statsTotals(t, out.String())
	if parts+head != int64(rec.total) || table != parts {
		t.Errorf("cycle %d (seed %d): stats counts %d lines in parts (table: %d) and %d in the head; export gave %d\n%s",
			c, seed, parts, table, head, rec.total, out.String())
	}
	err := filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".corrupt") {
			t.Errorf("cycle %d (seed %d): %s was set aside as corrupt", c, seed, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
