package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

// binDir holds the sluice binary that tests which need a separate process
// (the crash loop, a second process holding the data directory) run.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// sluiceBinary returns the path of the sluice binary, built from this
// directory on first use, once per test run: tests that don't need it
// don't pay for the build.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		p := filepath.Join(binDir, "sluice")
		out, err := exec.Command("go", "build", "-o", p, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = p
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// runBinary runs the sluice binary and returns its output and exit status.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(sluiceBinary(t), args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run sluice %v: %v", args, err)
		}
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// rec is one record as `sluice ingest` stores it: its stream, its time and
// its line.
type rec struct {
	stream string
	labels record.Labels
	time   int64
	recv   bool // the time is the receive time: the line has none
	line   string
}

// ingestParse is how `sluice ingest` parses with its default flags.
var ingestParse = parse.Options{Format: "auto", Record: record.DefaultConfig(), MaxLineSize: 1 << 20}

// parseRecords parses data as `sluice ingest` does by default. Records
// with no readable time get recv, the receive time to expect: a time
// during the ingest, after every time in the test data.
func parseRecords(t *testing.T, data []byte, recv int64) []rec {
	t.Helper()
	p, err := parse.New(ingestParse)
	if err != nil {
		t.Fatal(err)
	}
	var out []rec
	err = p.Bytes(context.Background(), data, func(b *record.Batch) error {
		for i := range b.Records {
			r := rec{labels: b.Labels(i), time: b.Records[i].Time, line: string(b.Bytes(b.Records[i].Line))}
			r.stream = r.labels.String()
			if b.Records[i].TimeSource == record.FromReceive {
				r.time, r.recv = recv, true
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkExport checks that out, the output of `sluice export`, holds
// exactly the records of want, stream after stream in the order of their
// labels, and within a stream in the order of want after a stable sort
// by time.
//
// Lines without a timestamp get the receive time of their chunk, later
// than every time of the test data and rising from chunk to chunk, so
// they too must come back in input order, after the others of their
// stream (TestExportKeepsInputOrderWithoutTimestamps checks it on a large
// input).
func checkExport(t *testing.T, want []rec, out string) {
	t.Helper()
	if out != "" && !strings.HasSuffix(out, "\n") {
		t.Errorf("export output does not end with a newline")
	}
	got := parseRecords(t, []byte(out), 0)
	if n := strings.Count(out, "\n"); n != len(got) {
		t.Errorf("export wrote %d lines, of which %d parse as records", n, len(got))
	}
	// The multiset first: it says what is missing or extra.
	count := map[string]int{}
	for _, r := range want {
		count[r.line]++
	}
	for _, r := range got {
		count[r.line]--
	}
	var missing, extra []string
	for l, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, l)
		}
		for ; n < 0; n++ {
			extra = append(extra, l)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		slices.Sort(missing)
		slices.Sort(extra)
		t.Errorf("export gave %d lines, want %d: %d missing, %d extra\nmissing: %s\nextra:   %s",
			len(got), len(want), len(missing), len(extra), quoteN(missing, 3), quoteN(extra, 3))
		return
	}
	// Streams in order, each once.
	var order []string
	for i, r := range got {
		if i == 0 || r.stream != got[i-1].stream {
			if len(order) > 0 && order[len(order)-1] >= r.stream {
				t.Errorf("export line %d: stream %s after stream %s: want streams sorted, each once", i+1, r.stream, order[len(order)-1])
				return
			}
			order = append(order, r.stream)
		}
	}
	// Each stream in time order, equal times in input order.
	byStream := map[string][]rec{}
	for _, r := range want {
		byStream[r.stream] = append(byStream[r.stream], r)
	}
	i := 0
	for _, s := range order {
		w := byStream[s]
		slices.SortStableFunc(w, func(a, b rec) int { return cmp.Compare(a.time, b.time) })
		g := got[i : i+len(w)]
		i += len(w)
		for j := 0; j < len(w); j++ {
			if g[j].line != w[j].line {
				k := slices.IndexFunc(w, func(r rec) bool { return r.line == g[j].line })
				t.Errorf("stream %s, its line %d of %d (export line %d):\n got %.150q (time %d)\nwant %.150q (time %d)",
					s, j+1, len(w), i-len(w)+j+1, g[j].line, w[k].time, w[j].line, w[j].time)
				break
			}
		}
	}
}

func lines(rs []rec) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.line
	}
	return out
}

func quoteN(s []string, n int) string {
	var b strings.Builder
	for i, l := range s[:min(n, len(s))] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.120q", l)
	}
	if len(s) > n {
		b.WriteString(", ...")
	}
	return b.String()
}

// statsTotals reads the totals of `sluice stats`: lines in parts, lines
// in the head, and the lines column of the per-day table summed.
func statsTotals(t *testing.T, out string) (partLines, headLines, tableLines int64) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^parts: (\d+), (\d+) lines`).FindStringSubmatch(out)
	h := regexp.MustCompile(`(?m)^head: (\d+) lines`).FindStringSubmatch(out)
	if m == nil || h == nil {
		t.Fatalf("stats output lacks the totals:\n%s", out)
	}
	partLines, _ = strconv.ParseInt(m[2], 10, 64)
	headLines, _ = strconv.ParseInt(h[1], 10, 64)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			break
		}
		if len(f) != 8 {
			t.Fatalf("stats table row %q: want 8 columns", sc.Text())
		}
		n, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			t.Fatalf("stats table row %q: lines %v", sc.Text(), err)
		}
		tableLines += n
	}
	return partLines, headLines, tableLines
}

// checkStats runs `sluice stats` and checks that it counts lines stored
// and reports no damage.
func checkStats(t *testing.T, dir string, lines int) {
	t.Helper()
	out, errOut, st := sluice(t, "", "stats", "--data", dir)
	if st != 0 {
		t.Fatalf("stats: status %d: %s", st, errOut)
	}
	if strings.Contains(out, "damage") || errOut != "" {
		t.Errorf("stats reports damage:\n%s%s", out, errOut)
	}
	parts, head, table := statsTotals(t, out)
	if parts+head != int64(lines) || table != parts {
		t.Errorf("stats: %d lines in parts (table: %d) + %d in the head, want %d in all\n%s", parts, table, head, lines, out)
	}
}

// roundTrip ingests path into a fresh data directory, exports it and
// checks that export gives back the records of the input.
func roundTrip(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	recv := time.Now().UnixNano()
	if _, errOut, st := sluice(t, "", "ingest", "--data", dir, "--quiet", path); st != 0 {
		t.Fatalf("ingest: status %d: %.2000s", st, errOut)
	}
	want := parseRecords(t, data, recv)
	out, errOut, st := sluice(t, "", "export", "--data", dir)
	if st != 0 || errOut != "" {
		t.Fatalf("export: status %d: %s", st, errOut)
	}
	checkExport(t, want, out)
	checkStats(t, dir, len(want))
}

// genCorpus writes `gen.py ARGS` to a file, or skips when ../shared (or
// python3) is absent.
func genCorpus(t *testing.T, args ...string) string {
	t.Helper()
	gen := filepath.Join(parsetest.Shared(t, "corpus"), "gen.py")
	if _, err := os.Stat(gen); err != nil {
		t.Skipf("%s is absent: skipped", gen)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: skipped")
	}
	path := filepath.Join(t.TempDir(), strings.Join(args, "-")+".log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(py, append([]string{gen}, args...)...)
	var errOut strings.Builder
	cmd.Stdout, cmd.Stderr = f, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("gen.py %v: %v\n%s", args, err, errOut.String())
	}
	return path
}

// TestRoundTripCorpus: ingest then export gives back the generated
// corpora (JSON, logfmt, nginx and Kubernetes lines, 6-7 MB: more than
// one ingest chunk), line for line.
func TestRoundTripCorpus(t *testing.T) {
	for _, args := range [][]string{
		{"mixed", "20000", "--seed", "3"},
		{"app", "20000", "--seed", "1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			roundTrip(t, genCorpus(t, args...))
		})
	}
}

// TestRoundTripCanonical runs the round trip on the canonical corpus
// (gen.py app 2000000 --seed 1, 700 MB) when SLUICE_CORPUS names it:
// too big for every test run, it is what BENCHMARKS.md reports on.
//
//	SLUICE_CORPUS=$(bench/corpus.sh) go test -run RoundTripCanonical -timeout 30m ./cmd/sluice/
func TestRoundTripCanonical(t *testing.T) {
	path := os.Getenv("SLUICE_CORPUS")
	if path == "" {
		t.Skip("SLUICE_CORPUS is not set")
	}
	roundTrip(t, path)
}

// TestRoundTripLoghub: every Loghub sample, each as its own input.
func TestRoundTripLoghub(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(parsetest.Shared(t, "loghub"), "*", "*_2k.log"))
	if len(files) == 0 {
		t.Skip("no Loghub samples in ../shared/loghub")
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			roundTrip(t, f)
		})
	}
}

// oddLines returns lines that stress a byte-exact store: random bytes
// (invalid UTF-8, NUL, lone '\r' inside), numbers of every width and sign
// (what line templates turn into variables), near-duplicates, escapes,
// leading and trailing spaces, and long lines.
func oddLines(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 11))
	var b strings.Builder
	b.WriteString("\xEF\xBB\xBFfirst line after a byte order mark\n")
	for i := range n {
		switch rng.IntN(10) {
		case 0:
			l := make([]byte, 1+rng.IntN(200))
			for j := range l {
				for l[j] = byte(rng.IntN(256)); l[j] == '\n'; l[j] = byte(rng.IntN(256)) {
				}
			}
			if l[len(l)-1] == '\r' {
				l[len(l)-1] = 'r'
			}
			fmt.Fprintf(&b, "%d %s\n", i, l)
		case 1:
			fmt.Fprintf(&b, "id=%0*d val=%d neg=-%d f=%g hex=0x%x line %d\n", rng.IntN(12), rng.IntN(1000), rng.Int64(), rng.IntN(10), rng.Float64()*1e6, rng.Uint32(), i)
		case 2:
			fmt.Fprintf(&b, "   leading and trailing spaces %d \t \n", i)
		case 3:
			fmt.Fprintf(&b, `{"msg":"esc \" \\ \u00e9 \ud83d\ude80 \t %d","service":"odd","n":%d,"nested":{"a":[1,2,{"b":null}]}}`+"\n", i, rng.IntN(100))
		case 4:
			fmt.Fprintf(&b, "%d %s\n", i, strings.Repeat("long-"+strconv.Itoa(i)+" ", 50+rng.IntN(500)))
		case 5:
			fmt.Fprintf(&b, "user 12%d logged in from 10.0.%d.%d port %d\n", i, rng.IntN(256), rng.IntN(256), rng.IntN(65536))
		case 6:
			fmt.Fprintf(&b, "user 12%d logged in from 10.0.%d.%d port %d extra\n", i, rng.IntN(256), rng.IntN(256), rng.IntN(65536))
		case 7:
			fmt.Fprintf(&b, "level=warn msg=\"odd %d\" service=odd empty= quoted=\"\" 日本語=値\n", i)
		case 8:
			fmt.Fprintf(&b, "%d\x00nul\x00bytes\x00 and a \r carriage return inside\n", i)
		default:
			fmt.Fprintf(&b, "%d\n", i) // a bare number
		}
	}
	// Just under the default --max-line-size of 1 MiB.
	fmt.Fprintf(&b, "%s\n", strings.Repeat("z", 1<<20))
	return b.String()
}

// TestRoundTripOddLines: export gives back lines byte for byte, whatever
// bytes they hold.
func TestRoundTripOddLines(t *testing.T) {
	roundTrip(t, writeFile(t, "odd.log", oddLines(5000, 1)))
}

// genTenantLines returns n JSON lines over two days (crossing midnight),
// of three services and two hosts, with some equal times, each distinct.
func genTenantLines(n int, seed uint64, tag string) string {
	rng := rand.New(rand.NewPCG(seed, 3))
	start := time.Date(2024, 3, 9, 22, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range n {
		ts := start.Add(time.Duration(i/2) * 7 * time.Second) // pairs of equal times
		svc := []string{"api", "web", "db"}[rng.IntN(3)]
		fmt.Fprintf(&b, `{"time":"%s","service":"%s","host":"h%d","msg":"%s line %d","n":%d}`+"\n",
			ts.Format(time.RFC3339Nano), svc, rng.IntN(2), tag, i, rng.IntN(1000))
	}
	return b.String()
}

// TestExportFilters: --tenant, --from, --to and --stream select exactly
// the records they name.
func TestExportFilters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	alpha := genTenantLines(6000, 1, "alpha")
	beta := genTenantLines(3000, 2, "beta")
	if _, errOut, st := sluice(t, "", "ingest", "--data", dir, "--quiet", "--tenant", "alpha", writeFile(t, "alpha.log", alpha)); st != 0 {
		t.Fatalf("ingest alpha: status %d: %s", st, errOut)
	}
	// Standard input, with a small head so that beta is flushed while it
	// is loaded.
	if _, errOut, st := sluice(t, beta, "ingest", "--data", dir, "--quiet", "--tenant", "beta", "--head-bytes", "65536", "-"); st != 0 {
		t.Fatalf("ingest beta: status %d: %s", st, errOut)
	}
	recs := map[string][]rec{
		"alpha": parseRecords(t, []byte(alpha), 0),
		"beta":  parseRecords(t, []byte(beta), 0),
	}
	// Bounds that fall on records' times, to check they are inclusive.
	byTime := slices.Clone(recs["alpha"])
	slices.SortStableFunc(byTime, func(a, b rec) int { return cmp.Compare(a.time, b.time) })
	from, to := byTime[1001].time, byTime[4500].time
	rfc := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
	svc := func(r rec) string { v, _ := r.labels.Get("service"); return v }
	host := func(r rec) string { v, _ := r.labels.Get("host"); return v }
	filter := func(tenant string, keep func(r rec) bool) []rec {
		var out []rec
		for _, r := range recs[tenant] {
			if keep(r) {
				out = append(out, r)
			}
		}
		return out
	}
	all := func(rec) bool { return true }
	for _, tc := range []struct {
		name   string
		args   []string
		tenant string
		keep   func(r rec) bool
	}{
		{"tenant", []string{"--tenant", "alpha"}, "alpha", all},
		{"other-tenant", []string{"--tenant", "beta"}, "beta", all},
		{"no-such-tenant", []string{"--tenant", "gamma"}, "alpha", func(rec) bool { return false }},
		{"from-to-rfc3339", []string{"--tenant", "alpha", "--from", rfc(from), "--to", rfc(to)}, "alpha",
			func(r rec) bool { return r.time >= from && r.time <= to }},
		{"from-unix-seconds", []string{"--tenant", "alpha", "--from", strconv.FormatInt(from/1e9, 10)}, "alpha",
			func(r rec) bool { return r.time >= from/1e9*1e9 }},
		{"to-unix-ns", []string{"--tenant", "alpha", "--to", strconv.FormatInt(to, 10)}, "alpha",
			func(r rec) bool { return r.time <= to }},
		{"from-empty-range", []string{"--tenant", "alpha", "--from", rfc(to), "--to", rfc(from)}, "alpha",
			func(rec) bool { return false }},
		{"from-1h-ago", []string{"--tenant", "alpha", "--from", "1h"}, "alpha", func(rec) bool { return false }},
		{"to-1h-ago", []string{"--tenant", "alpha", "--to", "1h"}, "alpha", all},
		{"stream", []string{"--tenant", "beta", "--stream", `{service="api"}`}, "beta",
			func(r rec) bool { return svc(r) == "api" }},
		{"stream-regexp", []string{"--tenant", "alpha", "--stream", `{service=~"api|db", host!="h1"}`}, "alpha",
			func(r rec) bool { return (svc(r) == "api" || svc(r) == "db") && host(r) != "h1" }},
		{"all-filters", []string{"--tenant", "alpha", "--stream", `{service="web"}`, "--from", rfc(from), "--to", rfc(to)}, "alpha",
			func(r rec) bool { return svc(r) == "web" && r.time >= from && r.time <= to }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := filter(tc.tenant, tc.keep)
			out, errOut, st := sluice(t, "", append([]string{"export", "--data", dir}, tc.args...)...)
			if st != 0 || errOut != "" {
				t.Fatalf("export %v: status %d: %s", tc.args, st, errOut)
			}
			checkExport(t, want, out)
			if tc.name == "from-to-rfc3339" && len(want) < 3000 {
				t.Errorf("only %d lines in range: the bounds are wrong", len(want))
			}
		})
	}

	// Every tenant: alpha's lines, then beta's.
	outAll, errOut, st := sluice(t, "", "export", "--data", dir)
	if st != 0 {
		t.Fatalf("export: status %d: %s", st, errOut)
	}
	outAlpha, _, _ := sluice(t, "", "export", "--data", dir, "--tenant", "alpha")
	outBeta, _, _ := sluice(t, "", "export", "--data", dir, "--tenant", "beta")
	if outAll != outAlpha+outBeta {
		t.Errorf("export of every tenant (%d bytes) is not alpha's export then beta's (%d + %d bytes)", len(outAll), len(outAlpha), len(outBeta))
	}
	checkStats(t, dir, len(recs["alpha"])+len(recs["beta"]))

	for _, tc := range []struct {
		args   []string
		status int
		msg    string
	}{
		{[]string{"--tenant", "no/slash"}, 2, "--tenant"},
		{[]string{"--from", "yesterday-ish"}, 2, "--from"},
		{[]string{"--stream", `{service=}`}, 2, "--stream"},
		{[]string{"extra-arg"}, 2, "no arguments"},
	} {
		_, errOut, st := sluice(t, "", append([]string{"export", "--data", dir}, tc.args...)...)
		if st != tc.status || !strings.Contains(errOut, tc.msg) {
			t.Errorf("export %v: status %d %q, want status %d and a message about %s", tc.args, st, errOut, tc.status, tc.msg)
		}
	}
	_, errOut, st = sluice(t, "", "export", "--data", filepath.Join(t.TempDir(), "nothing-here"))
	if st != 1 || !strings.Contains(errOut, "data directory") {
		t.Errorf("export of a missing directory: status %d %q, want 1 and a message", st, errOut)
	}
}

// TestExportKeepsInputOrderOfEqualTimes: lines of one stream with one
// time must come back in input order, also when the input is more than
// one ingest chunk and the chunks are stored in parallel.
func TestExportKeepsInputOrderOfEqualTimes(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 6<<20; i++ {
		fmt.Fprintf(&b, `{"time":"2024-03-09T10:00:00Z","service":"api","msg":"line %07d %s"}`+"\n", i, strings.Repeat("x", i%50))
	}
	path := writeFile(t, "same-time.log", b.String())
	dir := filepath.Join(t.TempDir(), "data")
	for range 3 {
		if _, errOut, st := runBinary(t, "ingest", "--data", dir, "--quiet", path); st != 0 {
			t.Fatalf("ingest: status %d: %s", st, errOut)
		}
		out, errOut, st := sluice(t, "", "export", "--data", dir)
		if st != 0 {
			t.Fatalf("export: status %d: %s", st, errOut)
		}
		want := parseRecords(t, []byte(b.String()), 0)
		checkExport(t, want, out)
		if t.Failed() {
			return
		}
		os.RemoveAll(dir)
	}
}

// TestExportKeepsInputOrderWithoutTimestamps: lines without a timestamp
// get the time they were received, so a file of them must come back in
// input order, also when it is many ingest chunks parsed in
// parallel.
func TestExportKeepsInputOrderWithoutTimestamps(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 40<<20; i++ {
		fmt.Fprintf(&b, "%d plain text line without a timestamp %s\n", i, strings.Repeat("x", i%100))
	}
	path := writeFile(t, "no-time.log", b.String())
	for attempt := range 5 {
		dir := filepath.Join(t.TempDir(), "data")
		if _, errOut, st := runBinary(t, "ingest", "--data", dir, "--quiet", path); st != 0 {
			t.Fatalf("ingest: status %d: %s", st, errOut)
		}
		out, errOut, st := runBinary(t, "export", "--data", dir)
		if st != 0 {
			t.Fatalf("export: status %d: %s", st, errOut)
		}
		prev := -1
		for l := range strings.Lines(out) {
			n, err := strconv.Atoi(l[:strings.IndexByte(l, ' ')])
			if err != nil {
				t.Fatalf("export line %.80q: %v", l, err)
			}
			if n != prev+1 {
				t.Fatalf("attempt %d: export gave line %d after line %d", attempt, n, prev)
			}
			prev = n
		}
	}
}

// TestExportRefusesDirectoryInUse: while another process or Store holds
// the data directory, export fails with status 1 and says why.
func TestExportRefusesDirectoryInUse(t *testing.T) {
	t.Run("store-in-this-process", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		st, err := store.Open(store.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		_, errOut, status := runBinary(t, "export", "--data", dir)
		if status != 1 || !strings.Contains(errOut, "in use") {
			t.Errorf("export of a directory a Store holds: status %d, stderr %q; want 1 and a message saying it is in use", status, errOut)
		}
	})
	t.Run("ingest-process", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		cmd := exec.Command(sluiceBinary(t), "ingest", "--data", dir, "--quiet", "-")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			stdin.Close()
			cmd.Wait()
		}()
		// The WAL directory appears once the ingest holds the lock.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(dir, "wal")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ingest did not open the data directory within 10s: %s", errOut.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, msg, status := sluice(t, "", "export", "--data", dir)
		if status != 1 || !strings.Contains(msg, "in use") {
			t.Errorf("export while ingest runs: status %d, stderr %q; want 1 and a message saying it is in use", status, msg)
		}
		io.WriteString(stdin, `{"msg":"late line","service":"x"}`+"\n")
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("ingest: %v: %s", err, errOut.String())
		}
		out, msg, status := sluice(t, "", "export", "--data", dir)
		if status != 0 || out != `{"msg":"late line","service":"x"}`+"\n" {
			t.Errorf("export after the ingest ended: status %d %q, stdout %q", status, msg, out)
		}
	})
}
