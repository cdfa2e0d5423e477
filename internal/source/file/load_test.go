package file_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/source/file"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// through is a flow without admission or metrics into s.
func through(s flow.SinkFunc) *flow.Flow { return &flow.Flow{Sink: s} }

// maxLine is the line limit of most cases: small, because a chunk's
// buffer holds ChunkSize+MaxLineSize bytes, and a tiny ChunkSize only
// forces many chunks when the limit is small too.
const maxLine = 128

// input is one input of a test: its bytes and, per line, its text without
// the terminator and the offset where it starts.
type input struct {
	name   string
	data   []byte
	lines  []string
	starts []int64
}

// makeInput joins lines with "\n" (or "\r\n"), the last one terminated
// only when final is set.
func makeInput(name string, lines []string, crlf, final bool) input {
	in := input{name: name, lines: lines}
	term := "\n"
	if crlf {
		term = "\r\n"
	}
	for i, l := range lines {
		in.starts = append(in.starts, int64(len(in.data)))
		in.data = append(in.data, l...)
		if i < len(lines)-1 || final {
			in.data = append(in.data, term...)
		}
	}
	return in
}

// genLines returns n lines: JSON records of several streams and sizes,
// and, at random, a broken JSON line, a blank line or a line over maxLine
// (some just over it, some far over). Every line but the blank ones is
// distinct, also from the lines of other seeds.
func genLines(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	for i := range out {
		no := fmt.Sprintf("%d.%d", seed, i+1)
		switch r := rng.IntN(100); {
		case r < 3:
			out[i] = fmt.Sprintf(`{"n":%s,"broken`, no)
		case r < 5:
			out[i] = ""
		case r < 6:
			// Just over the limit: the chunk holds it whole and the
			// parser rejects it.
			out[i] = longLine(no, maxLine+1+rng.IntN(8))
		case r < 7:
			// Far over: the reader skips it without holding it.
			out[i] = longLine(no, maxLine*(2+rng.IntN(20)))
		default:
			out[i] = fmt.Sprintf(`{"n":%s,"ts":%d,"service":"svc-%d","msg":"%s"}`,
				no, 1768464000000+int64(i), rng.IntN(4), strings.Repeat("m", rng.IntN(60)))
		}
	}
	return out
}

// longLine returns a distinct JSON line of exactly size bytes (size >= 32).
func longLine(no any, size int) string {
	head := fmt.Sprintf(`{"n":%v,"msg":"`, no)
	return head + strings.Repeat("x", size-len(head)-2) + `"}`
}

// lineErr is a LineError with the input it came from.
type lineErr struct {
	input string
	record.LineError
}

// reference parses each input whole, in one goroutine: the records' lines
// and the errors Load must give, whatever its chunking.
func reference(t *testing.T, popts parse.Options, ins []input) (lines []string, errs []lineErr) {
	t.Helper()
	for _, in := range ins {
		p, err := parse.New(popts)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Bytes(context.Background(), in.data, func(b *record.Batch) error {
			for i := range b.Records {
				lines = append(lines, string(b.Bytes(b.Records[i].Line)))
			}
			for _, e := range b.Errors {
				errs = append(errs, lineErr{in.name, e})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return lines, errs
}

// sink is a fake Sink that checks what Load promises: each line stored
// once, each batch a run of consecutive lines, and OnDone never ahead of
// the lines stored or rejected so far. It is slow at random, so that
// batches complete out of order.
type sink struct {
	t      *testing.T
	slow   bool
	fail   func(call int) error // the error of the call-th sink call (from 1), or nil
	cancel func(call int)       // called before the call-th sink call

	mu       sync.Mutex
	ins      []input
	base     map[string]int   // input name -> global number of its line 0
	index    map[string]int   // line text -> global line number (from 1)
	stored   []int            // per global line: times stored
	done     []bool           // per global line: stored, rejected or blank
	prefix   int              // lines 1..prefix are all done
	lastDone int64            // the last OnDone value
	dones    int              // OnDone calls
	errs     []lineErr        // in report order
	calls    int              // sink calls
	batches  int              // sink calls that returned nil
	records  []string         // stored lines, in the order stored
	ends     map[string]int64 // input name -> its number of lines
}

func newSink(t *testing.T, ins []input, ref []string, refErrs []lineErr) *sink {
	s := &sink{t: t, ins: ins, base: map[string]int{}, index: map[string]int{}, ends: map[string]int64{}}
	total := 0
	for _, in := range ins {
		s.base[in.name] = total
		s.ends[in.name] = int64(len(in.lines))
		for i, l := range in.lines {
			if l != "" {
				s.index[strings.TrimSuffix(l, "\r")] = total + i + 1
			}
		}
		total += len(in.lines)
	}
	s.stored = make([]int, total+1)
	s.done = make([]bool, total+1)
	s.done[0] = true
	// Lines that make neither a record nor an error (blank ones) are done
	// as soon as they are read.
	busy := make([]bool, total+1)
	for _, l := range ref {
		busy[s.index[l]] = true
	}
	for _, e := range refErrs {
		busy[s.base[e.input]+int(e.Line)] = true
	}
	for i := 1; i <= total; i++ {
		s.done[i] = !busy[i]
	}
	return s
}

func (s *sink) store(b *record.Batch) error {
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.mu.Unlock()
	if s.cancel != nil {
		s.cancel(call)
	}
	if s.slow {
		switch rand.IntN(4) {
		case 0:
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		case 1:
			runtime.Gosched()
		}
	}
	if s.fail != nil {
		if err := s.fail(call); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Tenant != "t" {
		s.t.Errorf("batch of tenant %q, want the Options' t", b.Tenant)
	}
	prev := 0
	for i := range b.Records {
		l := string(b.Bytes(b.Records[i].Line))
		n, ok := s.index[l]
		if !ok {
			s.t.Errorf("sink got a line that is not in the input: %.80q", l)
			continue
		}
		if n <= prev {
			s.t.Errorf("batch holds line %d after line %d", n, prev)
		}
		prev = n
		s.stored[n]++
		s.records = append(s.records, l)
	}
	// Mark the lines done only now, as a durable sink would on return.
	for i := range b.Records {
		if n, ok := s.index[string(b.Bytes(b.Records[i].Line))]; ok {
			s.done[n] = true
		}
	}
	s.batches++
	return nil
}

func (s *sink) onError(input string, e *record.LineError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, lineErr{input, *e})
	base, ok := s.base[input]
	if !ok || e.Line < 1 || e.Line > s.ends[input] {
		s.t.Errorf("error for %s line %d: no such line", input, e.Line)
		return
	}
	s.done[base+int(e.Line)] = true
}

func (s *sink) onDone(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dones++
	if n < s.lastDone {
		s.t.Errorf("OnDone(%d) after OnDone(%d): the count went down", n, s.lastDone)
	}
	s.lastDone = n
	for s.prefix+1 < len(s.done) && s.done[s.prefix+1] {
		s.prefix++
	}
	if n > int64(s.prefix) {
		s.t.Errorf("OnDone(%d), but line %d is neither stored nor rejected yet", n, s.prefix+1)
	}
}

func (s *sink) options(o file.Options) file.Options {
	o.Tenant = "t"
	o.OnDone = s.onDone
	o.OnError = s.onError
	return o
}

// check compares what the sink saw with the reference after a Load that
// returned nil.
func (s *sink) check(ref []string, refErrs []lineErr, prog *file.Progress) {
	t := s.t
	t.Helper()
	var total int64
	for _, in := range s.ins {
		total += int64(len(in.lines))
	}
	for n := 1; n < len(s.stored); n++ {
		if s.stored[n] > 1 {
			t.Errorf("line %d stored %d times", n, s.stored[n])
		}
	}
	got := slices.Clone(s.records)
	want := slices.Clone(ref)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("stored %d lines, want %d (the lines of the whole-input parse)", len(got), len(want))
	}
	if s.lastDone != total {
		t.Errorf("last OnDone(%d), want %d lines", s.lastDone, total)
	}
	if total > 0 && s.dones == 0 {
		t.Errorf("OnDone never called")
	}
	checkErrors(t, s.ins, s.errs, refErrs)
	if prog != nil {
		if n := prog.LinesDone.Load(); n != total {
			t.Errorf("Progress.LinesDone %d, want %d", n, total)
		}
		if n := prog.Records.Load(); n != int64(len(ref)) {
			t.Errorf("Progress.Records %d, want %d", n, len(ref))
		}
		var rejected int64
		for i := range prog.Rejected {
			rejected += prog.Rejected[i].Load()
		}
		if rejected != int64(len(refErrs)) {
			t.Errorf("Progress.Rejected sums to %d, want %d", rejected, len(refErrs))
		}
		var size int64
		for _, in := range s.ins {
			size += int64(len(in.data))
		}
		if n := prog.BytesRead.Load(); n != size {
			t.Errorf("Progress.BytesRead %d, want %d", n, size)
		}
	}
}

// checkErrors compares the errors Load reported with the whole-input
// parse's: the same lines, kinds and positions. A line over the limit is
// rejected by the reader or by the line splitter, depending on how far
// over it is and where the chunk ends, and the two point at different
// columns; so for those only the line and its start offset must agree.
func checkErrors(t *testing.T, ins []input, got, want []lineErr) {
	t.Helper()
	starts := map[string][]int64{}
	for _, in := range ins {
		starts[in.name] = in.starts
	}
	for _, e := range got {
		st := starts[e.input]
		if e.Line < 1 || int(e.Line) > len(st) {
			continue // reported by onError
		}
		if lineStart := e.Offset - int64(e.Col-1); lineStart != st[e.Line-1] {
			t.Errorf("%s:%d:%d: offset %d puts the line's start at %d, want %d", e.input, e.Line, e.Col, e.Offset, lineStart, st[e.Line-1])
		}
	}
	key := func(e lineErr) string {
		if e.Kind == record.ErrLineTooLong {
			return fmt.Sprintf("%s:%d: %v at line offset %d", e.input, e.Line, e.Kind, e.Offset-int64(e.Col-1))
		}
		return fmt.Sprintf("%s:%d:%d: %v at offset %d: %s", e.input, e.Line, e.Col, e.Kind, e.Offset, e.Msg)
	}
	var g, w []string
	for _, e := range got {
		g = append(g, key(e))
	}
	for _, e := range want {
		w = append(w, key(e))
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("errors differ from the whole-input parse's\n got %d: %s\nwant %d: %s", len(g), firstN(g, 8), len(w), firstN(w, 8))
	}
}

func firstN(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], "; ") + "; ..."
	}
	return strings.Join(s, "; ")
}

func writeInputs(t *testing.T, ins []input) []string {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for i := range ins {
		p := filepath.Join(dir, fmt.Sprintf("in%d.log", i))
		if err := os.WriteFile(p, ins[i].data, 0o644); err != nil {
			t.Fatal(err)
		}
		ins[i].name = p
		names = append(names, p)
	}
	return names
}

var jsonOpts = parse.Options{Format: "json", Record: record.DefaultConfig(), MaxLineSize: maxLine}

// TestLoad loads inputs with bad, blank and too-long lines through many
// chunk sizes and worker counts, with a sink that finishes batches out of
// order: every line must reach the sink exactly once, every error must
// match the whole-input parse's, and OnDone must never run ahead of the
// lines stored.
func TestLoad(t *testing.T) {
	for _, chunk := range []int{1, 2, 7, 64, 300, 0} {
		for _, workers := range []int{1, 2, 3, 8} {
			t.Run(fmt.Sprintf("chunk=%d/workers=%d", chunk, workers), func(t *testing.T) {
				seed := uint64(chunk*100 + workers)
				ins := []input{
					makeInput("", genLines(1500, seed), false, true),
					makeInput("", genLines(300, seed+1), seed%2 == 0, seed%3 == 0),
				}
				names := writeInputs(t, ins)
				ref, refErrs := reference(t, jsonOpts, ins)
				s := newSink(t, ins, ref, refErrs)
				s.slow = true
				var prog file.Progress
				opts := s.options(file.Options{Parse: jsonOpts, Workers: workers, ChunkSize: chunk})
				if err := file.Load(context.Background(), names, nil, opts, through(s.store), &prog); err != nil {
					t.Fatal(err)
				}
				s.check(ref, refErrs, &prog)
				if chunk > 0 && chunk < 100 && s.batches < 20 {
					t.Errorf("only %d batches with ChunkSize %d: the test does not cut many chunks", s.batches, chunk)
				}
			})
		}
	}
}

// TestLoadLineErrors puts broken JSON lines deep into a long input cut
// into many chunks: each must be reported with its line number and byte
// offset in the whole input, not in its chunk.
func TestLoadLineErrors(t *testing.T) {
	const n = 3000
	bad := map[int]string{ // line number -> text
		1:    `{"n":1,"broken`,
		1000: `{"n":1000,"msg":"x",}`,
		1001: `{"n":1001 "msg":"x"}`,
		2999: `not json at all 2999`,
		3000: `{"n":3000,"msg":"unterminated`,
	}
	var lines []string
	for i := 1; i <= n; i++ {
		if l, ok := bad[i]; ok {
			lines = append(lines, l)
			continue
		}
		lines = append(lines, fmt.Sprintf(`{"n":%d,"service":"api","msg":"%s"}`, i, strings.Repeat("y", i%37)))
	}
	for _, tc := range []struct {
		name  string
		crlf  bool
		final bool
	}{
		{"lf", false, true},
		{"crlf", true, true},
		{"no-final-newline", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := []input{makeInput("", lines, tc.crlf, tc.final)}
			names := writeInputs(t, ins)
			ref, refErrs := reference(t, jsonOpts, ins)
			if len(refErrs) != len(bad) {
				t.Fatalf("the whole-input parse reports %d errors, want %d", len(refErrs), len(bad))
			}
			s := newSink(t, ins, ref, refErrs)
			s.slow = true
			opts := s.options(file.Options{Parse: jsonOpts, Workers: 4, ChunkSize: 256})
			if err := file.Load(context.Background(), names, nil, opts, through(s.store), nil); err != nil {
				t.Fatal(err)
			}
			s.check(ref, refErrs, nil)
			for _, e := range s.errs {
				if _, ok := bad[int(e.Line)]; !ok {
					t.Errorf("error at line %d, which is good JSON: %v", e.Line, e.Error())
				}
				// The offset may point just past the line's end, at
				// "unexpected end of line".
				if e.Offset < ins[0].starts[e.Line-1] || e.Offset > ins[0].starts[e.Line-1]+int64(len(lines[e.Line-1])) {
					t.Errorf("line %d error offset %d is outside the line [%d, %d]", e.Line, e.Offset,
						ins[0].starts[e.Line-1], ins[0].starts[e.Line-1]+int64(len(lines[e.Line-1])))
				}
			}
		})
	}
}

// TestLoadTooLong: a line over MaxLineSize is rejected once with
// ErrLineTooLong, wherever it falls and however long it is, and the lines
// after it are loaded and numbered right.
func TestLoadTooLong(t *testing.T) {
	good := func(no int) string { return fmt.Sprintf(`{"n":%d,"msg":"ok"}`, no) }
	for _, tc := range []struct {
		name  string
		sizes map[int]int // line number -> size of a too-long line there
		crlf  bool
		final bool
	}{
		{"first", map[int]int{1: maxLine + 1}, false, true},
		{"first-far", map[int]int{1: 50 * maxLine}, false, true},
		{"just-over", map[int]int{10: maxLine + 1, 20: maxLine + 2}, false, true},
		{"exactly-max-is-fine", map[int]int{}, false, true},
		{"crlf", map[int]int{5: maxLine + 1, 6: 3 * maxLine}, true, true},
		{"consecutive", map[int]int{7: 2 * maxLine, 8: 9 * maxLine, 9: maxLine + 1, 10: 100 * maxLine}, false, true},
		{"last-no-newline", map[int]int{40: 20 * maxLine}, false, false},
		{"last-just-over-no-newline", map[int]int{40: maxLine + 1}, false, false},
		{"huge", map[int]int{3: 2000 * maxLine, 30: 1000*maxLine + 1}, false, true},
	} {
		for _, chunk := range []int{1, 16, 4 * maxLine, 0} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tc.name, chunk), func(t *testing.T) {
				var lines []string
				for i := 1; i <= 40; i++ {
					if size, ok := tc.sizes[i]; ok {
						lines = append(lines, longLine(i, size))
					} else if i%11 == 0 {
						lines = append(lines, fmt.Sprintf(`{"n":%d,"bad`, i)) // its number must be right
					} else if i == 15 {
						lines = append(lines, longLine(i, maxLine)) // at the limit: kept
					} else {
						lines = append(lines, good(i))
					}
				}
				ins := []input{makeInput("", lines, tc.crlf, tc.final)}
				names := writeInputs(t, ins)
				ref, refErrs := reference(t, jsonOpts, ins)
				s := newSink(t, ins, ref, refErrs)
				opts := s.options(file.Options{Parse: jsonOpts, Workers: 3, ChunkSize: chunk})
				var prog file.Progress
				if err := file.Load(context.Background(), names, nil, opts, through(s.store), &prog); err != nil {
					t.Fatal(err)
				}
				s.check(ref, refErrs, &prog)
				tooLong := map[int64]int{}
				for _, e := range s.errs {
					if e.Kind == record.ErrLineTooLong {
						tooLong[e.Line]++
					}
				}
				for no := range tc.sizes {
					if tooLong[int64(no)] != 1 {
						t.Errorf("line %d (%d bytes): rejected as too long %d times, want once", no, tc.sizes[no], tooLong[int64(no)])
					}
				}
				if len(tooLong) != len(tc.sizes) {
					t.Errorf("%d lines rejected as too long, want %d: %v", len(tooLong), len(tc.sizes), tooLong)
				}
				if n := prog.Rejected[record.ErrLineTooLong].Load(); n != int64(len(tc.sizes)) {
					t.Errorf("Progress.Rejected[line_too_long] = %d, want %d", n, len(tc.sizes))
				}
			})
		}
	}
}

// TestLoadChunkSize: "ChunkSize is the size of the reads, and so of the
// batches": a batch holds at most ChunkSize bytes and the rest of the
// line it cuts, whatever MaxLineSize is.
func TestLoadChunkSize(t *testing.T) {
	var lines []string
	for i := 0; len(lines)*100 < 4<<20; i++ {
		lines = append(lines, fmt.Sprintf(`{"n":%d,"msg":"%s"}`, i, strings.Repeat("c", 80)))
	}
	ins := []input{makeInput("", lines, false, true)}
	names := writeInputs(t, ins)
	popts := parse.Options{Format: "json", Record: record.DefaultConfig()} // MaxLineSize: the default, 1 MiB
	for _, chunk := range []int{64 << 10, 0} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			limit := chunk
			if chunk == 0 {
				limit = 1 << 20 // the documented default
			}
			var mu sync.Mutex
			largest := 0
			err := file.Load(context.Background(), names, nil, file.Options{Parse: popts, Tenant: "t", ChunkSize: chunk, Workers: 2},
				through(func(b *record.Batch) error {
					mu.Lock()
					largest = max(largest, len(b.Data))
					mu.Unlock()
					return nil
				}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if largest > limit+200 {
				t.Errorf("a batch of %d bytes with ChunkSize %d: want at most ChunkSize and one line", largest, chunk)
			}
		})
	}
}

// TestLoadEdges: inputs without a final newline, with CRLF, empty, blank,
// and several inputs at once, whose line counts add up in OnDone.
func TestLoadEdges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inputs []string
		lines  int64 // the total OnDone must reach
		stored []string
	}{
		{"empty", []string{""}, 0, nil},
		{"two-empty", []string{"", ""}, 0, nil},
		{"only-newlines", []string{"\n\n\n"}, 3, nil},
		{"crlf-blank", []string{"\r\n\r\n"}, 2, nil},
		{"no-final-newline", []string{"{\"a\":1}\n{\"a\":2}"}, 2, []string{`{"a":1}`, `{"a":2}`}},
		{"one-line-no-newline", []string{`{"a":1}`}, 1, []string{`{"a":1}`}},
		{"crlf", []string{"{\"a\":1}\r\n{\"a\":2}\r\n"}, 2, []string{`{"a":1}`, `{"a":2}`}},
		{"crlf-no-final", []string{"{\"a\":1}\r\n{\"a\":2}"}, 2, []string{`{"a":1}`, `{"a":2}`}},
		{"bom", []string{"\xEF\xBB\xBF{\"a\":1}\n{\"a\":2}\n"}, 2, []string{`{"a":1}`, `{"a":2}`}},
		{"several", []string{"{\"a\":1}\n", "", "{\"a\":2}", "\n{\"a\":3}\n{\"a\":4}\n"}, 5,
			[]string{`{"a":1}`, `{"a":2}`, `{"a":3}`, `{"a":4}`}},
	} {
		for _, chunk := range []int{1, 0} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tc.name, chunk), func(t *testing.T) {
				dir := t.TempDir()
				var names []string
				for i, data := range tc.inputs {
					p := filepath.Join(dir, fmt.Sprint(i))
					if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
						t.Fatal(err)
					}
					names = append(names, p)
				}
				var mu sync.Mutex
				var stored []string
				var last int64 = -1
				opts := file.Options{Parse: jsonOpts, Tenant: "t", Workers: 2, ChunkSize: chunk,
					OnDone: func(n int64) { last = n },
					OnError: func(in string, e *record.LineError) {
						t.Errorf("%s:%v", in, e.Error())
					}}
				err := file.Load(context.Background(), names, nil, opts, through(func(b *record.Batch) error {
					mu.Lock()
					defer mu.Unlock()
					for i := range b.Records {
						stored = append(stored, string(b.Bytes(b.Records[i].Line)))
					}
					return nil
				}), nil)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(stored)
				if !slices.Equal(stored, tc.stored) {
					t.Errorf("stored %q, want %q", stored, tc.stored)
				}
				if tc.lines > 0 && last != tc.lines || tc.lines == 0 && last > 0 {
					t.Errorf("last OnDone(%d), want %d", last, tc.lines)
				}
			})
		}
	}
}

// TestLoadStdin: "-" reads the stdin reader, alone or between files, and
// errors name it "-".
func TestLoadStdin(t *testing.T) {
	stdinLines := genLines(400, 99)
	fileLines := genLines(200, 98)
	for _, tc := range []struct {
		name  string
		order []string // "-" or "file"
	}{
		{"alone", []string{"-"}},
		{"between-files", []string{"file", "-", "file2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ins []input
			for _, o := range tc.order {
				switch o {
				case "-":
					ins = append(ins, makeInput("-", stdinLines, false, true))
				case "file":
					ins = append(ins, makeInput("", fileLines, false, true))
				default:
					ins = append(ins, makeInput("", genLines(100, 97), true, false))
				}
			}
			var files []input
			for i := range ins {
				if ins[i].name != "-" {
					files = append(files, ins[i])
				}
			}
			paths := writeInputs(t, files)
			var names []string
			var stdin io.Reader
			for i := range ins {
				if ins[i].name == "-" {
					stdin = trickleReader{bytes.NewReader(ins[i].data)}
				} else {
					ins[i].name, paths = paths[0], paths[1:]
				}
				names = append(names, ins[i].name)
			}
			ref, refErrs := reference(t, jsonOpts, ins)
			s := newSink(t, ins, ref, refErrs)
			opts := s.options(file.Options{Parse: jsonOpts, Workers: 3, ChunkSize: 50})
			if err := file.Load(context.Background(), names, stdin, opts, through(s.store), nil); err != nil {
				t.Fatal(err)
			}
			s.check(ref, refErrs, nil)
		})
	}
}

// trickleReader reads a few bytes at a time, as a pipe may.
type trickleReader struct{ r io.Reader }

func (r trickleReader) Read(p []byte) (int, error) {
	return r.r.Read(p[:min(len(p), 1+len(p)%13)])
}

var errSink = errors.New("disk on fire")

// TestLoadSinkError: the first sink error stops Load, which returns it;
// OnDone never counts the batch that failed.
func TestLoadSinkError(t *testing.T) {
	lines := genLines(3000, 5)
	for _, tc := range []struct {
		name     string
		failAt   int
		workers  int
		fromCall bool // every call from failAt on fails
	}{
		{"first", 1, 4, false},
		{"later", 20, 4, false},
		{"later-one-worker", 20, 1, false},
		{"all-after", 10, 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := []input{makeInput("", lines, false, true)}
			names := writeInputs(t, ins)
			ref, refErrs := reference(t, jsonOpts, ins)
			s := newSink(t, ins, ref, refErrs)
			s.slow = true
			s.fail = func(call int) error {
				if call == tc.failAt || tc.fromCall && call > tc.failAt {
					return fmt.Errorf("store batch: %w", errSink)
				}
				return nil
			}
			opts := s.options(file.Options{Parse: jsonOpts, Workers: tc.workers, ChunkSize: 64})
			err := file.Load(context.Background(), names, nil, opts, through(s.store), nil)
			if !errors.Is(err, errSink) {
				t.Fatalf("Load returned %v, want the sink's error", err)
			}
			if s.lastDone >= int64(len(lines)) {
				t.Errorf("OnDone reached %d of %d lines although a batch failed", s.lastDone, len(lines))
			}
			for n := 1; n < len(s.stored); n++ {
				if s.stored[n] > 1 {
					t.Errorf("line %d stored %d times", n, s.stored[n])
				}
			}
		})
	}
}

// TestLoadCancel: cancelling ctx stops Load, which returns the context's
// error, without leaking a goroutine (goleak checks at the end).
func TestLoadCancel(t *testing.T) {
	lines := genLines(5000, 6)
	ins := []input{makeInput("", lines, false, true)}
	names := writeInputs(t, ins)
	ref, refErrs := reference(t, jsonOpts, ins)

	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s := newSink(t, ins, ref, refErrs)
		err := file.Load(ctx, names, nil, s.options(file.Options{Parse: jsonOpts, Workers: 2, ChunkSize: 64}), through(s.store), nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Load returned %v, want context.Canceled", err)
		}
	})
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("during/workers=%d", workers), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := newSink(t, ins, ref, refErrs)
			s.slow = true
			s.cancel = func(call int) {
				if call == 30 {
					cancel()
				}
			}
			err := file.Load(ctx, names, nil, s.options(file.Options{Parse: jsonOpts, Workers: workers, ChunkSize: 64}), through(s.store), nil)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Load returned %v, want context.Canceled", err)
			}
			// Workers already past their check of ctx may store one
			// batch each; no one starts another.
			if s.calls > 30+workers || s.lastDone >= int64(len(lines)) {
				t.Errorf("Load went on after the cancel at sink call 30: %d sink calls, OnDone(%d)", s.calls, s.lastDone)
			}
		})
	}
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		s := newSink(t, ins, ref, refErrs)
		slowSink := through(func(b *record.Batch) error {
			time.Sleep(time.Millisecond)
			return s.store(b)
		})
		err := file.Load(ctx, names, nil, s.options(file.Options{Parse: jsonOpts, Workers: 1, ChunkSize: 16}), slowSink, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Load returned %v, want context.DeadlineExceeded", err)
		}
	})
}

// TestLoadCancelBlockedStdin: cancelling ctx while standard input has no
// more data for now (a terminal, a quiet pipe) must end Load. `sluice
// ingest -` catches SIGINT into its context, so if Load waits for the
// next read, Ctrl-C does nothing until more input or EOF arrives.
func TestLoadCancelBlockedStdin(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		// Some lines, then silence: the writer is alive but idle.
		fmt.Fprintf(pw, "{\"n\":1}\n{\"n\":2}\n")
	}()
	ctx, cancel := context.WithCancel(context.Background())
	stored := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- file.Load(ctx, []string{"-"}, pr, file.Options{Parse: jsonOpts, Tenant: "t", Workers: 2, ChunkSize: 4},
			through(func(b *record.Batch) error {
				select {
				case stored <- struct{}{}:
				default:
				}
				return nil
			}), nil)
	}()
	select {
	case <-stored:
	case <-time.After(time.Minute): // only stops a test that hangs
		t.Fatal("no batch stored from the lines written so far")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Load returned %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // only stops a test that hangs
		pw.Close() // let Load end, so that the test does not leak it
		<-errc
		t.Fatal("Load did not return within a minute of the cancel while stdin was idle")
	}
}

// multilineInput returns 500 records of one to five lines (stack
// traces), each record's text, and the number of lines.
func multilineInput() (data string, records []string, lines int) {
	var b strings.Builder
	for i := range 500 {
		rec := fmt.Sprintf("2026-01-15 08:00:%02d,%03d ERROR request %d failed", i%60, i%1000, i)
		for j := range i % 4 {
			rec += fmt.Sprintf("\n\tat com.example.Handler.call%d(Handler.java:%d)", j, 10+j)
		}
		if i%7 == 0 {
			rec += "\nCaused by: java.lang.IllegalStateException: boom"
		}
		records = append(records, rec)
		lines += strings.Count(rec, "\n") + 1
		b.WriteString(rec)
		b.WriteByte('\n')
	}
	return b.String(), records, lines
}

var multilineOpts = parse.Options{Format: "text", Record: record.DefaultConfig(), Multiline: `^\d{4}-\d{2}-\d{2} `}

// loadMultiline loads data from the inputs ("file" or "-") and returns
// the records stored, in order, and the OnDone calls.
func loadMultiline(t *testing.T, inputs []string, data string) (got []string, dones []int64, prog *file.Progress) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.log")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range inputs {
		if in == "file" {
			names = append(names, path)
		} else {
			names = append(names, in)
		}
	}
	var mu sync.Mutex
	opts := file.Options{Parse: multilineOpts, Tenant: "t", ChunkSize: 64, Workers: 4,
		OnDone: func(n int64) { dones = append(dones, n) },
		OnError: func(in string, e *record.LineError) {
			t.Errorf("%s:%s", in, e.Error())
		}}
	prog = new(file.Progress)
	err := file.Load(context.Background(), names, strings.NewReader(data), opts, through(func(b *record.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		for i := range b.Records {
			got = append(got, string(b.Bytes(b.Records[i].Line)))
		}
		return nil
	}), prog)
	if err != nil {
		t.Fatal(err)
	}
	return got, dones, prog
}

// TestLoadMultiline: with Parse.Multiline the continuation lines are
// joined to the record they follow, for files and stdin.
func TestLoadMultiline(t *testing.T) {
	data, records, lines := multilineInput()
	for _, inputs := range [][]string{{"file"}, {"-"}, {"file", "-", "file"}} {
		t.Run(strings.Join(inputs, ","), func(t *testing.T) {
			got, dones, _ := loadMultiline(t, inputs, data)
			var want []string
			for range inputs {
				want = append(want, records...)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %d records, want %d joined ones; first difference:\n%s", len(got), len(want), firstDiff(got, want))
			}
			if len(dones) != len(inputs) || !slices.IsSorted(dones) {
				t.Errorf("OnDone calls %v: want one per input, growing", dones)
			}
			// A file that fits one parse buffer is counted right; see
			// TestLoadMultilineLineCount for the rest.
			if inputs[0] == "file" && (len(dones) == 0 || dones[0] != int64(lines)) {
				t.Errorf("OnDone calls %v, want the first to be %d", dones, lines)
			}
		})
	}
}

// TestLoadMultilineLineCount: OnDone (and so `sluice ingest --ack-log`)
// must count each input line once, also when a record spans two parse
// buffers, as it does on stdin (and in files over 4 MiB).
func TestLoadMultilineLineCount(t *testing.T) {
	data, _, lines := multilineInput()
	for _, inputs := range [][]string{{"-"}, {"file", "-"}} {
		t.Run(strings.Join(inputs, ","), func(t *testing.T) {
			_, dones, prog := loadMultiline(t, inputs, data)
			var want []int64
			for i := range inputs {
				want = append(want, int64((i+1)*lines))
			}
			if !slices.Equal(dones, want) {
				t.Errorf("OnDone calls %v, want %v", dones, want)
			}
			if n := prog.LinesDone.Load(); n != int64(len(inputs)*lines) {
				t.Errorf("Progress.LinesDone %d, want %d", n, len(inputs)*lines)
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("record %d:\n got %q\nwant %q", i, g, w)
		}
	}
	return "none"
}

// TestLoadNoTenant: without Options.Tenant the flow refuses the first
// batch, on both paths (chunks in parallel, and joined lines), and Load
// says why.
func TestLoadNoTenant(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "in.log")
	if err := os.WriteFile(name, []byte("2026-01-15 one\n2026-01-15 two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, popts := range []parse.Options{jsonOpts, multilineOpts} {
		t.Run("multiline="+popts.Multiline, func(t *testing.T) {
			stored := 0
			err := file.Load(context.Background(), []string{name}, nil, file.Options{Parse: popts, Workers: 1},
				through(func(b *record.Batch) error { stored++; return nil }), nil)
			if !errors.Is(err, flow.ErrNoTenant) {
				t.Errorf("err %v, want %v", err, flow.ErrNoTenant)
			}
			if stored != 0 {
				t.Errorf("%d batches stored without a tenant", stored)
			}
		})
	}
}
