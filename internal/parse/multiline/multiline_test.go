package multiline

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/logfmt"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/parse/text"
	"github.com/sluicelog/sluice/internal/record"
)

// run feeds input to j in chunks, as parsetest.Run does for a line parser.
func run(j *Joiner, maxLine int, input []byte, chunks []int) parsetest.Result {
	j.Reset()
	sp := lines.Splitter{MaxLineSize: maxLine}
	return parsetest.Feed(&sp, record.DefaultConfig(), input, chunks, j.Run)
}

const javaTrace = `2026-01-15 08:00:00,123 ERROR [main] com.example.App: request failed
java.lang.IllegalStateException: boom
	at com.example.App.handle(App.java:42)
	at com.example.App.main(App.java:10)
Caused by: java.io.IOException: disk full
	at com.example.Store.write(Store.java:7)
	... 2 more
2026-01-15 08:00:01,000 INFO [main] com.example.App: recovered
`

const pyTrace = `[2026-01-15 08:00:02] ERROR worker crashed
Traceback (most recent call last):
  File "worker.py", line 12, in <module>
    main()
  File "worker.py", line 8, in main
    raise ValueError("bad input")
ValueError: bad input
[2026-01-15 08:00:03] INFO worker restarted
`

// loghubLike mimics Loghub's Zookeeper and Hadoop samples (made up, not
// copied): one line per record, timestamped, with a continuation.
const loghubLike = `2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0.0.0.0:2181:FastLeaderElection@774] - Notification time out: 3200
2015-07-29 19:04:12,394 - INFO  [/10.10.34.11:3888:QuorumCnxManager$Listener@493] - Received connection request /10.10.34.11:45307
2015-07-29 19:04:29,071 - WARN  [SendWorker:188978561024:QuorumCnxManager$SendWorker@688] - Send worker leaving thread
java.net.SocketException: Broken pipe
	at java.net.SocketOutputStream.socketWrite0(Native Method)
2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster
`

var cases = []struct {
	name   string
	cfg    Config
	in     string
	lines  []string // each record's joined line
	errors []string
}{
	{
		name: "java stack trace",
		in:   javaTrace,
		lines: []string{
			strings.Join(strings.Split(javaTrace, "\n")[:7], "\n"),
			"2026-01-15 08:00:01,000 INFO [main] com.example.App: recovered",
		},
	},
	{
		name: "python traceback",
		in:   pyTrace,
		lines: []string{
			strings.Join(strings.Split(pyTrace, "\n")[:7], "\n"),
			"[2026-01-15 08:00:03] INFO worker restarted",
		},
	},
	{
		name: "loghub-like",
		in:   loghubLike,
		lines: []string{
			strings.Split(loghubLike, "\n")[0],
			strings.Split(loghubLike, "\n")[1],
			strings.Join(strings.Split(loghubLike, "\n")[2:5], "\n"),
			strings.Split(loghubLike, "\n")[5],
		},
	},
	{
		name:  "untimed: indented lines join",
		in:    "Exception in thread \"main\" java.lang.Error: x\n\tat A.b(A.java:1)\nCaused by: java.lang.Error: y\n\tat C.d(C.java:2)\nnext record\n  more\nlast",
		lines: []string{"Exception in thread \"main\" java.lang.Error: x\n\tat A.b(A.java:1)\nCaused by: java.lang.Error: y\n\tat C.d(C.java:2)", "next record\n  more", "last"},
	},
	{
		name:  "untimed python needs a start pattern",
		cfg:   Config{Start: `^Traceback|^\[`},
		in:    "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nKeyError: 'k'\n[main] done",
		lines: []string{"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nKeyError: 'k'", "[main] done"},
	},
	{
		name:  "start pattern with literal prefix",
		cfg:   Config{Start: `^BEGIN `},
		in:    "BEGIN a\nx\nBEGINNING\nBEGIN b\n",
		lines: []string{"BEGIN a\nx\nBEGINNING", "BEGIN b"},
	},
	{
		name:  "start pattern unanchored",
		cfg:   Config{Start: `\d{4}-\d\d-\d\d`},
		in:    "a 2026-01-15 x\nb\nc 2026-01-16\n",
		lines: []string{"a 2026-01-15 x\nb", "c 2026-01-16"},
	},
	{
		name:  "leading continuation lines",
		in:    "\tat orphan\n  also\n2026-01-15T08:00:00Z x\n",
		lines: []string{"\tat orphan\n  also", "2026-01-15T08:00:00Z x"},
	},
	{
		name:  "max lines",
		cfg:   Config{MaxLines: 2},
		in:    "2026-01-15T08:00:00Z a\n b\n c\n d\n e\n",
		lines: []string{"2026-01-15T08:00:00Z a\n b", " c\n d", " e"},
	},
	{
		name:  "max bytes",
		cfg:   Config{MaxBytes: 10},
		in:    "start\n 1\n 2\n 3\n 4\nlonger than ten\n x\n",
		lines: []string{"start\n 1", " 2\n 3\n 4", "longer than ten", " x"},
	},
	{
		name:  "blank lines and crlf stay inside",
		in:    "2026-01-15T08:00:00Z a\r\n\r\n\tb\r\n2026-01-15T08:00:01Z c\r\n",
		lines: []string{"2026-01-15T08:00:00Z a\r\n\r\n\tb", "2026-01-15T08:00:01Z c"},
	},
}

func TestJoin(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, err := New(text.Parser{}, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := run(j, 0, []byte(tc.in), nil)
			if !slices.Equal(got.Lines, tc.lines) {
				t.Errorf("lines:\n got %q\nwant %q", got.Lines, tc.lines)
			}
			if !slices.Equal(got.Errors, tc.errors) {
				t.Errorf("errors:\n got %q\nwant %q", got.Errors, tc.errors)
			}
			chunked := run(j, 0, []byte(tc.in), parsetest.RandomChunks(len(tc.in), 7))
			if !equal(got, chunked) {
				t.Errorf("chunked differs:\n got %q %q\nwant %q %q", chunked.Records, chunked.Errors, got.Records, got.Errors)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	j, err := New(text.Parser{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := run(j, 0, []byte(javaTrace), nil)
	want := []string{
		`{"_time":"2026-01-15T08:00:00.123000000Z","_stream":"{}","_msg":"2026-01-15 08:00:00,123 ERROR [main] com.example.App: request failed\njava.lang.IllegalStateException: boom\n\tat com.example.App.handle(App.java:42)\n\tat com.example.App.main(App.java:10)\nCaused by: java.io.IOException: disk full\n\tat com.example.Store.write(Store.java:7)\n\t... 2 more","level":"ERROR"}`,
		`{"_time":"2026-01-15T08:00:01.000000000Z","_stream":"{}","_msg":"2026-01-15 08:00:01,000 INFO [main] com.example.App: recovered","level":"INFO"}`,
	}
	if !slices.Equal(got.Records, want) {
		t.Errorf("records:\n got %q\nwant %q", got.Records, want)
	}
}

// TestErrors checks line numbers and order of errors from the inner
// parser and from the Splitter, whole and in chunks.
func TestErrors(t *testing.T) {
	in := "a=1\n" + // 1
		"b=\"open\n" + // 2: starts a group that the inner parser fails
		" cont\n" + // 3
		"\n" + // 4
		strings.Repeat("x", 40) + "\n" + // 5: too long
		" orphan\n" + // 6
		"c=2\n" + // 7
		"d=\"x\n" + // 8
		strings.Repeat("y", 50) // 9: too long, unterminated
	j, err := New(logfmt.Parser{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	whole := run(j, 32, []byte(in), nil)
	wantErrs := []string{
		`2:3: logfmt: unterminated quoted value for key "b"`,
		"5:33: line longer than 32 bytes",
		`8:3: logfmt: unterminated quoted value for key "d"`,
		"9:33: line longer than 32 bytes",
	}
	if !slices.Equal(whole.Errors, wantErrs) {
		t.Errorf("errors:\n got %q\nwant %q", whole.Errors, wantErrs)
	}
	wantLines := []string{"a=1", " orphan", "c=2"}
	if !slices.Equal(whole.Lines, wantLines) {
		t.Errorf("lines:\n got %q\nwant %q", whole.Lines, wantLines)
	}
	for seed := range uint64(200) {
		chunked := run(j, 32, []byte(in), parsetest.RandomChunks(len(in), seed))
		if !equal(whole, chunked) {
			t.Fatalf("seed %d: chunked differs:\n got %q %q\nwant %q %q", seed, chunked.Lines, chunked.Errors, whole.Lines, whole.Errors)
		}
	}
}

func TestNew(t *testing.T) {
	for _, cfg := range []Config{{Start: "("}, {MaxLines: -1}, {MaxBytes: -1}, {MaxBytes: 2 << 30}} {
		if _, err := New(text.Parser{}, cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
	for expr, want := range map[string]bool{`^abc`: true, `(^a)b`: true, `^(a|b)`: true, `a^`: false, `abc`: false, `(?m)^a`: false, `a|^b`: false} {
		if got := anchored(expr); got != want {
			t.Errorf("anchored(%q) = %v, want %v", expr, got, want)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	j, err := New(text.Parser{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	in := []byte(strings.Repeat(javaTrace+pyTrace, 4))
	b := &record.Batch{Data: in}
	bl := record.NewBuilder(record.DefaultConfig())
	var sp lines.Splitter
	runOnce := func() {
		b.Records, b.Fields, b.Errors = b.Records[:0], b.Fields[:0], b.Errors[:0]
		bl.Start(b)
		sp.Reset()
		j.Reset()
		j.Run(&sp, bl, false)
	}
	runOnce()
	if allocs := testing.AllocsPerRun(50, runOnce); allocs != 0 {
		t.Errorf("%v allocs per run, want 0", allocs)
	}
}

func equal(a, b parsetest.Result) bool {
	return slices.Equal(a.Records, b.Records) && slices.Equal(a.Errors, b.Errors) && slices.Equal(a.Lines, b.Lines)
}

func FuzzJoin(f *testing.F) {
	for _, tc := range cases {
		f.Add([]byte(tc.in), tc.cfg.Start, uint8(tc.cfg.MaxLines), uint16(tc.cfg.MaxBytes), uint64(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, start string, maxLines uint8, maxBytes uint16, seed uint64) {
		j, err := New(text.Parser{}, Config{Start: start, MaxLines: int(maxLines), MaxBytes: int(maxBytes)})
		if err != nil {
			return
		}
		whole := run(j, 64, in, nil)
		chunked := run(j, 64, in, parsetest.RandomChunks(len(in), seed))
		if !equal(whole, chunked) {
			t.Fatalf("chunked differs:\nwhole   %q %q\nchunked %q %q", whole.Lines, whole.Errors, chunked.Lines, chunked.Errors)
		}
	})
}

// TestSynthetic checks the benchmark's corpus: one record per timestamped
// line, traces joined to theirs.
func TestSynthetic(t *testing.T) {
	in := synthetic(64 << 10)
	j, err := New(text.Parser{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := run(j, 0, in, parsetest.RandomChunks(len(in), 3))
	want := 0
	for _, l := range strings.Split(string(in), "\n") {
		if strings.HasPrefix(l, "2026-") {
			want++
		}
	}
	if len(got.Records) != want || len(got.Errors) != 0 {
		t.Errorf("%d records, want %d; errors %q", len(got.Records), want, got.Errors)
	}
}
