package part_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// encoded parses input and returns its records as decoded rows blocks, as
// the store's head holds them.
func encoded(t testing.TB, format string, input []byte) []*rows.Block {
	t.Helper()
	p, err := parse.New(parse.Options{Format: format, Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	var blocks []*rows.Block
	err = p.Bytes(context.Background(), input, func(b *record.Batch) error {
		blk, err := rows.Decode(enc.Append(nil, "t", b))
		blocks = append(blocks, blk)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

type ref struct {
	blk *rows.Block
	i   int
}

// writePart writes the rows of blocks, grouped by stream and sorted by
// time, and returns them in that order.
func writePart(t testing.TB, fs vfs.FS, path string, blocks []*rows.Block) []ref {
	t.Helper()
	refs := sortedRefs(blocks)
	writeRefs(t, fs, path, refs)
	return refs
}

// sortedRefs returns the rows of blocks grouped by stream and sorted by time.
func sortedRefs(blocks []*rows.Block) []ref {
	var refs []ref
	for _, b := range blocks {
		for i := range b.Rows {
			refs = append(refs, ref{b, i})
		}
	}
	keys := map[*rows.Block][]string{}
	for _, b := range blocks {
		for _, ls := range b.Streams {
			keys[b] = append(keys[b], ls.String())
		}
	}
	key := func(r ref) string { return keys[r.blk][r.blk.Rows[r.i].Stream] }
	slices.SortStableFunc(refs, func(a, b ref) int {
		return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.blk.Rows[a.i].Time, b.blk.Rows[b.i].Time))
	})
	return refs
}

func writeRefs(t testing.TB, fs vfs.FS, path string, refs []ref) {
	t.Helper()
	writeRefsOpts(t, fs, path, refs, part.WriterOptions{})
}

func writeRefsOpts(t testing.TB, fs vfs.FS, path string, refs []ref, opts part.WriterOptions) {
	t.Helper()
	key := func(r ref) string { return r.blk.Streams[r.blk.Rows[r.i].Stream].String() }
	w, err := part.Create(fs, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	var fields []rows.Field
	var r rows.Row
	var last *rows.Block
	lastStream := ^uint32(0)
	lastKey := "\x00"
	for _, x := range refs {
		if s := x.blk.Rows[x.i].Stream; x.blk != last || s != lastStream {
			last, lastStream = x.blk, s
			k := key(x)
			if k == lastKey {
				goto add
			}
			lastKey = k
			if err := w.StartStream(x.blk.Streams[x.blk.Rows[x.i].Stream]); err != nil {
				t.Fatal(err)
			}
		}
	add:
		fields = x.blk.Row(x.i, &r, fields)
		if err := w.Add(&r, x.blk.Names); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

// check reads the part back and compares every row with what was written.
func check(t testing.TB, fs vfs.FS, path string, want []ref) {
	t.Helper()
	rd, err := part.Open(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	// Each stream's blocks are all in its range of the index, and no
	// other stream's are.
	for s := range rd.Streams {
		lo, hi := rd.StreamBlocks(uint32(s))
		for i, b := range rd.Blocks {
			if in := i >= lo && i < hi; in != (b.Stream == uint32(s)) {
				t.Fatalf("stream %d: blocks [%d, %d), block %d of stream %d", s, lo, hi, i, b.Stream)
			}
		}
	}
	var blk part.Block
	var wr rows.Row
	var wf []rows.Field
	k := 0
	for i := range rd.Blocks {
		if err := rd.ReadRows(i, &blk); err != nil {
			t.Fatal(err)
		}
		// The index says what the header says (version 5 on).
		if got, want := rd.Blocks[i].Fields, map[bool]part.BlockFields{false: part.FieldsInLine, true: part.FieldsOutOfLine}[blk.OutOfLine()]; got != want {
			t.Fatalf("block %d: the index says fields %d, the header %d", i, got, want)
		}
		for _, g := range blk.Rows {
			if k >= len(want) {
				t.Fatalf("more rows than written")
			}
			x := want[k]
			wf = x.blk.Row(x.i, &wr, wf)
			k++
			if !bytes.Equal(g.Line, wr.Line) {
				t.Fatalf("row %d: line\n got %q\nwant %q", k, g.Line, wr.Line)
			}
			if g.Time != wr.Time || g.TimeSource != wr.TimeSource {
				t.Fatalf("row %d: time %d/%v, want %d/%v", k, g.Time, g.TimeSource, wr.Time, wr.TimeSource)
			}
			if got, want := rd.Streams[g.Stream].String(), x.blk.Streams[wr.Stream].String(); got != want {
				t.Fatalf("row %d: stream %s, want %s", k, got, want)
			}
			if !bytes.Equal(g.Msg, wr.Msg) || g.MsgFlags != wr.MsgFlags {
				t.Fatalf("row %d: msg %q/%v, want %q/%v", k, g.Msg, g.MsgFlags, wr.Msg, wr.MsgFlags)
			}
			if len(g.Fields) != len(wr.Fields) {
				t.Fatalf("row %d: %d fields, want %d", k, len(g.Fields), len(wr.Fields))
			}
			for j := range wr.Fields {
				gf, wf := &g.Fields[j], &wr.Fields[j]
				if blk.Names[gf.Name] != x.blk.Names[wf.Name] || gf.Kind != wf.Kind || gf.Flags != wf.Flags ||
					gf.Role != wf.Role || gf.Num != wf.Num || !bytes.Equal(gf.Value, wf.Value) {
					t.Fatalf("row %d field %d: got %s=%q %v/%v/%v/%d, want %s=%q %v/%v/%v/%d", k, j,
						blk.Names[gf.Name], gf.Value, gf.Kind, gf.Flags, gf.Role, gf.Num,
						x.blk.Names[wf.Name], wf.Value, wf.Kind, wf.Flags, wf.Role, wf.Num)
				}
				if gf.InLine && !bytes.Equal(g.Line[gf.Off:int(gf.Off)+len(gf.Value)], gf.Value) {
					t.Fatalf("row %d field %d: offset does not view the value", k, j)
				}
			}
		}
	}
	if k != len(want) {
		t.Fatalf("%d rows read, %d written", k, len(want))
	}
}

var samples = map[string]string{
	"json": `{"time":"2026-01-15T08:00:00.123Z","level":"info","msg":"hello \"x\"","service":"api","host":"h1","n":42,"f":1.5,"g":-0.05,"e":1e5,"b":true,"z":null,"big":123456789012345678901234,"arr":[1,2],"http":{"status":200},"id":"7ce42c8218072e8c35bf992dc9e9c616"}
{"ts":1768464000000,"level":"error","message":"boom","service":"api","host":"h2"}
{"ts": 1768464000001, "level": "error", "message": "boom", "service": "api", "host": "h2"}
not json at all
{"msg":"no time","service":"web"}
{"@timestamp":"2026-01-15T09:00:00.123456+02:00","timestamp":"2026-01-15 08:00:00,123","msg":"two times","service":"web"}
`,
	"syslog": "<34>1 2026-01-15T08:00:00.000Z host app 123 ID47 [ex@1 a=\"b\"] the message\n<13>Jan 15 08:00:00 myhost su: 'su root' failed\n",
	"logfmt": "ts=2026-01-15T08:00:00Z level=warn msg=\"quoted \\\"value\\\"\" service=api dup=1 dup=2 bare\n",
	"text":   "2026-01-15 08:00:00,123 ERROR something broke\n\tat stack\nplain\n12345\n-7.50\nplain\n",
}

func TestRoundTrip(t *testing.T) {
	for name, in := range samples {
		t.Run("format="+name, func(t *testing.T) {
			format := name
			if name == "json" {
				format = "auto"
			}
			path := filepath.Join(t.TempDir(), "p.part")
			refs := writePart(t, vfs.OS, path, encoded(t, format, []byte(in)))
			check(t, vfs.OS, path, refs)
		})
	}
}

func TestRoundTripLoghub(t *testing.T) {
	in := parsetest.LoghubCorpus(t)
	path := filepath.Join(t.TempDir(), "p.part")
	refs := writePart(t, vfs.OS, path, encoded(t, "auto", in))
	check(t, vfs.OS, path, refs)
}

// appCorpus returns a generated sample of the canonical corpus, or skips.
func appCorpus(t testing.TB) []byte {
	p := os.Getenv("SLUICE_CORPUS")
	if p == "" {
		t.Skip("SLUICE_CORPUS not set")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 32<<20)
	n, _ := f.Read(buf)
	return buf[:bytes.LastIndexByte(buf[:n], '\n')+1]
}

func TestRoundTripApp(t *testing.T) {
	in := appCorpus(t)
	path := filepath.Join(t.TempDir(), "p.part")
	refs := writePart(t, vfs.OS, path, encoded(t, "auto", in))
	check(t, vfs.OS, path, refs)
	st, _ := os.Stat(path)
	t.Logf("%d lines, %d bytes in, %d bytes stored (%.1fx)", len(refs), len(in), st.Size(), float64(len(in))/float64(st.Size()))
}

// TestDamage truncates a part at every offset and flips bits everywhere:
// reading it must give a clean error or, for a flip in a region nothing
// reads, the right rows; never a panic and never a wrong row.
func TestDamage(t *testing.T) {
	fs := vfs.NewMem()
	refs := writePart(t, fs, "p.part", encoded(t, "auto", []byte(samples["json"]+samples["logfmt"]+samples["syslog"])))
	good, release, err := fs.Map("p.part")
	if err != nil {
		t.Fatal(err)
	}
	good = bytes.Clone(good)
	release()
	put := func(data []byte) {
		f, err := fs.Create("bad.part")
		if err != nil {
			t.Fatal(err)
		}
		f.Write(data)
		f.Close()
	}
	readAll := func() error {
		rd, err := part.Open(fs, "bad.part")
		if err != nil {
			return err
		}
		defer rd.Close()
		var blk part.Block
		for i := range rd.Blocks {
			if err := rd.ReadRows(i, &blk); err != nil {
				return err
			}
		}
		return nil
	}
	for n := range len(good) {
		put(good[:n])
		if err := readAll(); !errors.Is(err, part.ErrCorrupt) {
			t.Fatalf("truncated at %d: err %v, want ErrCorrupt", n, err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		bad := bytes.Clone(good)
		bad[rng.IntN(len(bad))] ^= 1 << rng.IntN(8)
		put(bad)
		if err := readAll(); err != nil {
			if !errors.Is(err, part.ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			continue
		}
		check(t, fs, "bad.part", refs) // a flip that no check caught must not matter
	}
}

// TestColumnStats prints where a part's bytes go: of the part named by
// SLUICE_PART, or of one written from SLUICE_CORPUS.
func TestColumnStats(t *testing.T) {
	path := os.Getenv("SLUICE_PART")
	if path == "" {
		in := appCorpus(t)
		path = filepath.Join(t.TempDir(), "p.part")
		writePart(t, vfs.OS, path, encoded(t, "auto", in))
	}
	rd, err := part.Open(vfs.OS, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	st, err := rd.Stats()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(st, func(a, b part.ColumnStat) int { return cmp.Compare(b.Bytes, a.Bytes) })
	t.Logf("%d streams, %d blocks, %d bytes", len(rd.Streams), len(rd.Blocks), rd.Meta.Size)
	for _, s := range st {
		t.Logf("%-20s %9d bytes %8d values %v", s.Name, s.Bytes, s.Values, s.Encodings)
	}
}

// benchRows returns the rows of the app corpus sample (SLUICE_CORPUS) or of
// a generated stand-in, as rows blocks.
func benchRows(b *testing.B) ([]*rows.Block, int64) {
	var in []byte
	if os.Getenv("SLUICE_CORPUS") != "" {
		in = appCorpus(b)
	} else {
		var buf bytes.Buffer
		for i := range 50000 {
			fmt.Fprintf(&buf, `{"ts":%d,"level":"info","msg":"request done","service":"s%d","host":"h%d","trace_id":"%032x","http":{"status":%d,"latency_ms":%d.%03d}}`+"\n",
				1768464000000+i, i%7, i%13, uint64(i)*0x9e3779b97f4a7c15, 200+i%3*100, i%900, i%1000)
		}
		in = buf.Bytes()
	}
	return encoded(b, "auto", in), int64(len(in))
}

func BenchmarkWrite(b *testing.B) {
	blocks, n := benchRows(b)
	refs := sortedRefs(blocks)
	fs := vfs.NewMem()
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		writeRefs(b, fs, "p.part", refs)
	}
}

func BenchmarkRead(b *testing.B) {
	blocks, n := benchRows(b)
	fs := vfs.NewMem()
	writePart(b, fs, "p.part", blocks)
	rd, err := part.Open(fs, "p.part")
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	var blk part.Block
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		for i := range rd.Blocks {
			if err := rd.ReadRows(i, &blk); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestFilter checks that every token of every line is in its block's
// filter, in any case, and that absent tokens mostly are not.
func TestFilter(t *testing.T) {
	in := []byte(samples["json"] + samples["logfmt"] + samples["syslog"] + samples["text"])
	fs := vfs.NewMem()
	writePart(t, fs, "p.part", encoded(t, "auto", in))
	rd, err := part.Open(fs, "p.part")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var blk part.Block
	tokenRE := regexp.MustCompile(`[A-Za-z0-9_\x80-\xff]+`)
	for i := range rd.Blocks {
		if err := rd.ReadRows(i, &blk); err != nil {
			t.Fatal(err)
		}
		f := rd.Filter(i)
		for _, r := range blk.Rows {
			for _, tok := range tokenRE.FindAll(r.Line, -1) {
				if !part.Indexed(tok) {
					continue
				}
				for _, v := range [][]byte{tok, bytes.ToUpper(tok), bytes.ToLower(tok)} {
					if !f.MayContain(part.TokenHash(v)) {
						t.Errorf("block %d: token %q of %q not in the filter", i, v, r.Line)
					}
				}
			}
		}
		fp := 0
		for j := range 1000 {
			if f.MayContain(part.TokenHash([]byte(fmt.Sprintf("absent%dtoken", j)))) {
				fp++
			}
		}
		if fp > 50 {
			t.Errorf("block %d: %d false positives in 1000", i, fp)
		}
	}
}

func TestLabelIndex(t *testing.T) {
	fs := vfs.NewMem()
	writePart(t, fs, "p.part", encoded(t, "auto", []byte(samples["json"])))
	rd, err := part.Open(fs, "p.part")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, tc := range []struct{ name, value, want string }{
		{"service", "api", `[{host="h1", service="api"} {host="h2", service="api"}]`},
		{"host", "h2", `[{host="h2", service="api"}]`},
		{"service", "nope", `[]`},
	} {
		var got []string
		for _, i := range rd.StreamsWith(tc.name, tc.value) {
			got = append(got, rd.Streams[i].String())
		}
		if s := fmt.Sprintf("%v", got); s != tc.want {
			t.Errorf("%s=%s: %s, want %s", tc.name, tc.value, s, tc.want)
		}
	}
}

// TestNoFilters: a part written without token filters may contain any
// token, so a query never skips its blocks.
func TestNoFilters(t *testing.T) {
	fs := vfs.NewMem()
	refs := sortedRefs(encoded(t, "auto", []byte(samples["json"])))
	w, err := part.Create(fs, "p.part", part.WriterOptions{NoFilters: true, FastCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	var r rows.Row
	var fields []rows.Field
	var last string
	for _, x := range refs {
		if k := x.blk.Streams[x.blk.Rows[x.i].Stream].String(); k != last {
			last = k
			if err := w.StartStream(x.blk.Streams[x.blk.Rows[x.i].Stream]); err != nil {
				t.Fatal(err)
			}
		}
		fields = x.blk.Row(x.i, &r, fields)
		if err := w.Add(&r, x.blk.Names); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	check(t, fs, "p.part", refs)
	rd, err := part.Open(fs, "p.part")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for i := range rd.Blocks {
		if !rd.Filter(i).MayContain(part.TokenHash([]byte("nowhere"))) {
			t.Errorf("block %d: a part without filters ruled a token out", i)
		}
	}
}

// TestRewrite merges two parts of one stream by time, reading each
// block by block into one reused Block, as the store's merge does: when
// the next block of a part has other columns, the reused Block's name
// table changes under the writer within one output block, and every
// field must keep its name.
func TestRewrite(t *testing.T) {
	var a, b strings.Builder
	for i := range 40000 {
		ts := 1768464000000 + 2*i
		if i < 32768 {
			fmt.Fprintf(&a, `{"ts":%d,"service":"s","x":%d,"y":"p"}`+"\n", ts, i)
		} else {
			fmt.Fprintf(&a, `{"ts":%d,"service":"s","z":"q%d","x":%d}`+"\n", ts, i, i)
		}
		if i%7 == 0 {
			fmt.Fprintf(&b, `{"ts":%d,"service":"s","k":%d}`+"\n", ts+1, i)
		}
	}
	fs := vfs.NewMem()
	ra := writePart(t, fs, "a.part", encoded(t, "json", []byte(a.String())))
	rb := writePart(t, fs, "b.part", encoded(t, "json", []byte(b.String())))
	want := append(ra, rb...)
	slices.SortStableFunc(want, func(x, y ref) int { return cmp.Compare(x.blk.Rows[x.i].Time, y.blk.Rows[y.i].Time) })

	type cursor struct {
		rd  *part.Reader
		blk part.Block
		bi  int
		i   int
	}
	var cs []*cursor
	for _, name := range []string{"a.part", "b.part"} {
		rd, err := part.Open(fs, name)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		c := &cursor{rd: rd}
		if err := rd.ReadRows(0, &c.blk); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	w, err := part.Create(fs, "m.part", part.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StartStream(cs[0].rd.Streams[0]); err != nil {
		t.Fatal(err)
	}
	for {
		var best *cursor
		for _, c := range cs {
			if c.i < len(c.blk.Rows) && (best == nil || c.blk.Rows[c.i].Time < best.blk.Rows[best.i].Time) {
				best = c
			}
		}
		if best == nil {
			break
		}
		if err := w.Add(&best.blk.Rows[best.i], best.blk.Names); err != nil {
			t.Fatal(err)
		}
		if best.i++; best.i == len(best.blk.Rows) && best.bi+1 < len(best.rd.Blocks) {
			best.bi, best.i = best.bi+1, 0
			if err := best.rd.ReadRows(best.bi, &best.blk); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	check(t, fs, "m.part", want)
}

// TestLiteralTokens: what a search for a literal may prune by. Tokens
// held whole (bounded inside the literal) and the ASCII edge tokens as
// needles; ASCII and non-ASCII runs are separate tokens.
func TestLiteralTokens(t *testing.T) {
	hashes := func(toks ...string) []uint64 {
		var out []uint64
		for _, tok := range toks {
			out = append(out, part.TokenHash([]byte(tok)))
		}
		return out
	}
	for _, tc := range []struct {
		lit     string
		tokens  []string
		needles []string
	}{
		{lit: "payment declined", needles: []string{"payment", "declined"}},
		{lit: "7ce42c8218072e8c35bf992dc9e9c616", needles: []string{"7ce42c8218072e8c35bf992dc9e9c616"}},
		{lit: `"msg":"payment declined",`, tokens: []string{"msg", "payment", "declined"}},
		{lit: "x abcé y", tokens: []string{"abc", "é"}, needles: []string{"x", "y"}},
		{lit: "é abc", tokens: nil, needles: []string{"abc"}},             // a non-ASCII edge is no needle
		{lit: "at 2026 now", tokens: nil, needles: []string{"at", "now"}}, // digits are not indexed
		{lit: "-", tokens: nil, needles: nil},
	} {
		t.Run(tc.lit, func(t *testing.T) {
			if got := part.AppendLiteralTokens(nil, []byte(tc.lit)); !slices.Equal(got, hashes(tc.tokens...)) {
				t.Errorf("tokens %v, want the hashes of %q", got, tc.tokens)
			}
			var got []uint64
			for _, n := range part.AppendLiteralNeedles(nil, []byte(tc.lit)) {
				got = append(got, n.Hash)
			}
			if !slices.Equal(got, hashes(tc.needles...)) {
				t.Errorf("needles %v, want the hashes of %q", got, tc.needles)
			}
		})
	}
}

// TestContains: a read that keeps only the rows whose line holds some
// literals gives exactly the rows a read of every line and a search of
// each would, for literals inside values, inside gaps, across the
// boundaries between them, and in computed text (numbers, hex, times).
// mixedPart writes a part of lines of several formats and shapes (JSON
// with escapes, arrays and duplicate-free keys, logfmt, text, lines stored
// raw) and opens it.
func mixedPart(t *testing.T) *part.Reader {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	var in strings.Builder
	for i := range 4800 {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 1234567 * time.Microsecond)
		switch i % 6 {
		case 5: // mostly keys: stored raw
			fmt.Fprintf(&in, `{"ts":%d,"a_rather_long_key_name_for_a_flag":%d,"another_long_and_wordy_key_name":"%c","payment_declined_reason_code":%d}`+"\n",
				ts.UnixMilli(), rng.IntN(2), 'a'+rune(rng.IntN(3)), rng.IntN(4))
		case 0, 1:
			fmt.Fprintf(&in, `{"ts":"%s","level":"%s","msg":"payment %s","n":%d,"x":%d.%02d,"id":"%016x","tags":["a","b"],"e":"q\"uote\\n"}`+"\n",
				ts.Format(time.RFC3339Nano), []string{"info", "error", "warn"}[rng.IntN(3)], []string{"declined", "ok", "late"}[rng.IntN(3)],
				rng.IntN(1000), rng.IntN(100), rng.IntN(100), rng.Uint64())
		case 2:
			fmt.Fprintf(&in, "ts=%s level=%s msg=\"user %d logged in\" took=%dms\n", ts.Format(time.RFC3339), []string{"info", "debug"}[rng.IntN(2)], rng.IntN(50), rng.IntN(900))
		case 3:
			fmt.Fprintf(&in, "%s WARN free text line %d with payment declined inside\n", ts.Format("2006-01-02 15:04:05.000"), i)
		default:
			// Messages mostly of a few, the rest each different: too
			// many for a dictionary (encDictRest).
			msg := []string{"a\u00e9b", "payment declined", "x"}[rng.IntN(3)]
			if rng.IntN(5) < 2 {
				msg = fmt.Sprintf([]string{"id %d: payment declined", "query %d took 5ms", "caf\u00e9 %d"}[rng.IntN(3)], i)
			}
			fmt.Fprintf(&in, `{"time":%d,"msg":"%s","user":{"id":%d,"vip":%v}}`+"\n", ts.UnixMilli(), msg, rng.IntN(9), rng.IntN(2) == 1)
		}
	}
	fs := vfs.NewMem()
	writePart(t, fs, "c.part", encoded(t, "auto", []byte(in.String())))
	rd, err := part.Open(fs, "c.part")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	if !hasColumn(t, rd, func(s part.ColumnStat) bool { return s.Encodings["dict+rest"] > 0 }) {
		t.Fatal("no column is stored as a dictionary and the rest: the tests on this part no longer cover it")
	}
	return rd
}

// hasColumn reports whether a column of rd's (by Stats) is as want says.
func hasColumn(t *testing.T, rd *part.Reader, want func(part.ColumnStat) bool) bool {
	t.Helper()
	st, err := rd.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(st, want)
}

func TestContains(t *testing.T) {
	rd := mixedPart(t)
	var reused part.Block // read with every literal in turn: what it keeps of earlier reads must not matter
	lits := []string{"payment declined", "declined", "error", `","msg":"pay`, `":"`, `"`, "d", "0", "12", "08:0", "T08:00", "Z\"", ".5", "5ms",
		`"tags":["a"`, `\"uote`, "ab", "payment_declined", `flag":1`, "_code\":3", "\u00e9", "info level", "WARN free", "vip\":true", "zzz", "}", "ms\n", "-01-15", "user", "id"}
	for _, lit := range lits {
		for _, pair := range [][]string{{lit}, {lit, "payment"}} {
			var want, got []string
			for i := range rd.Blocks {
				var all part.Block
				if err := rd.ReadLines(i, &all, &part.LineRead{}); err != nil {
					t.Fatal(err)
				}
				for _, r := range all.Rows {
					if containsEach(r.Line, pair) {
						want = append(want, fmt.Sprint(r.Time, " ", string(r.Line)))
					}
				}
				var some part.Block
				var q part.LineRead
				for _, l := range pair {
					q.Contains = append(q.Contains, part.Clause{{Text: []byte(l)}})
				}
				if err := rd.ReadLines(i, &some, &q); err != nil {
					t.Fatal(err)
				}
				for _, r := range some.Rows {
					got = append(got, fmt.Sprint(r.Time, " ", string(r.Line)))
				}
				var counted part.Block
				if n, err := rd.CountLines(i, &counted, &q); err != nil || n != len(some.Rows) {
					t.Fatalf("%q: block %d counted %d rows (%v), read %d", pair, i, n, err, len(some.Rows))
				}
				if err := rd.ReadLines(i, &reused, &q); err != nil {
					t.Fatal(err)
				}
				if len(reused.Rows) != len(some.Rows) {
					t.Fatalf("%q: a block read before with other literals keeps %d rows, a new one %d", pair, len(reused.Rows), len(some.Rows))
				}
				// The newest few, within a range: the last of those.
				for _, newest := range []int{1, 3, 1000} {
					var nw part.Block
					lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
					if len(some.Rows) > 2 {
						lo, hi = some.Rows[1].Time, some.Rows[len(some.Rows)-2].Time
					}
					if err := rd.ReadLines(i, &nw, &part.LineRead{Contains: q.Contains, Newest: newest, From: lo, To: hi}); err != nil {
						t.Fatal(err)
					}
					var in []string
					for _, r := range some.Rows {
						if r.Time >= lo && r.Time <= hi {
							in = append(in, fmt.Sprint(r.Time, " ", string(r.Line)))
						}
					}
					in = in[max(0, len(in)-newest):]
					var gotN []string
					for _, r := range nw.Rows {
						gotN = append(gotN, fmt.Sprint(r.Time, " ", string(r.Line)))
					}
					if !slices.Equal(gotN, in) {
						t.Errorf("%q newest %d: %d rows, want %d", pair, newest, len(gotN), len(in))
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%q: %d rows, want %d", pair, len(got), len(want))
			}
			// Folding case: every row whose line has the literal in any
			// case is kept (rows with non-ASCII bytes may be kept too).
			var foldWant, foldGot []string
			for i := range rd.Blocks {
				var all, some part.Block
				var q part.LineRead
				for _, l := range pair {
					q.Contains = append(q.Contains, part.Clause{{Text: []byte(strings.ToLower(l)), Fold: true}})
				}
				if err := rd.ReadLines(i, &all, &part.LineRead{}); err != nil {
					t.Fatal(err)
				}
				if err := rd.ReadLines(i, &some, &q); err != nil {
					t.Fatal(err)
				}
				for _, r := range all.Rows {
					low := strings.ToLower(string(r.Line))
					if containsEach([]byte(low), []string{strings.ToLower(pair[0]), strings.ToLower(pair[len(pair)-1])}) {
						foldWant = append(foldWant, fmt.Sprint(r.Time, " ", string(r.Line)))
					}
				}
				for _, r := range some.Rows {
					foldGot = append(foldGot, fmt.Sprint(r.Time, " ", string(r.Line)))
				}
			}
			for _, w := range foldWant {
				if !slices.Contains(foldGot, w) {
					t.Errorf("fold %q: row %q left out", pair, w)
					break
				}
			}
			for _, g := range foldGot {
				if !slices.Contains(foldWant, g) && isASCII(g) {
					t.Errorf("fold %q: row %q kept without the literal", pair, g)
					break
				}
			}
		}
	}
}

func containsEach(line []byte, lits []string) bool {
	for _, l := range lits {
		if !bytes.Contains(line, []byte(l)) {
			return false
		}
	}
	return true
}

func TestGapEdges(t *testing.T) {
	// The reference: every k.
	ends := func(g, lit string) bool {
		for k := 1; k < len(lit) && k <= len(g); k++ {
			if g[len(g)-k:] == lit[:k] {
				return true
			}
		}
		return false
	}
	starts := func(g, lit string) bool {
		for k := 1; k < len(lit) && k <= len(g); k++ {
			if g[:k] == lit[len(lit)-k:] {
				return true
			}
		}
		return false
	}
	words := []string{"", "a", "ab", "aa", "aba", "ba", "b", "abab", `","msg":"`, `":"`, "msg", "g\":", "xyz", "aab", "bba"}
	for _, g := range words {
		for _, lit := range words {
			if lit == "" {
				continue
			}
			if got, want := part.EndsWithPrefix([]byte(g), []byte(lit)), ends(g, lit); got != want {
				t.Errorf("endsWithPrefix(%q, %q) = %v, want %v", g, lit, got, want)
			}
			if got, want := part.StartsWithSuffix([]byte(g), []byte(lit)), starts(g, lit); got != want {
				t.Errorf("startsWithSuffix(%q, %q) = %v, want %v", g, lit, got, want)
			}
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// TestColumnar: walking a columnar read's rows with a Cursor rebuilds
// every line as a full read gives it: forward, back from the end, and
// keeping only the columns of one template (whose rows then still
// rebuild, while the cursor moves nothing else).
func TestColumnar(t *testing.T) {
	rd := mixedPart(t)
	whole := 0 // rows whose line is one value
	defer func() {
		if whole == 0 {
			t.Error("no row's line is one value: LineAt's views are untested")
		}
	}()
	for i := range rd.Blocks {
		var full, cb part.Block
		if err := rd.ReadLines(i, &full, &part.LineRead{}); err != nil {
			t.Fatal(err)
		}
		if err := rd.ReadColumns(i, &cb); err != nil {
			t.Fatal(err)
		}
		if cb.NumRows() != len(full.Rows) {
			t.Fatalf("block %d: %d rows, want %d", i, cb.NumRows(), len(full.Rows))
		}
		if err := cb.DecodeTimes(); err != nil {
			t.Fatal(err)
		}
		check := func(how string, k int, cur *part.Cursor) {
			t.Helper()
			line, err := cb.AppendLine(nil, cb.RowTemplate(k), cur, cb.RowTime(k))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(line, full.Rows[k].Line) || cb.RowTime(k) != full.Rows[k].Time {
				t.Fatalf("block %d row %d (%s): %q at %d, want %q at %d", i, k, how, line, cb.RowTime(k), full.Rows[k].Line, full.Rows[k].Time)
			}
			// LineAt: the same line, a view where it is one value.
			view, _, err := cb.LineAt(cb.RowTemplate(k), cur, cb.RowTime(k), make([]byte, 3))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(view, full.Rows[k].Line) {
				t.Fatalf("block %d row %d (%s): LineAt %q, want %q", i, k, how, view, full.Rows[k].Line)
			}
			if gaps, holes := cb.TemplateLine(cb.RowTemplate(k)); cb.TemplateRaw(cb.RowTemplate(k)) || len(holes) == 1 && len(gaps.At(0)) == 0 && len(gaps.Last()) == 0 {
				whole++
			}
		}
		var cur part.Cursor
		cur.Start(&cb, nil)
		for k := range cb.NumRows() {
			check("forward", k, &cur)
			cur.Next(cb.RowTemplate(k))
		}
		cur.StartAtEnd(&cb, nil)
		for k := cb.NumRows() - 1; k >= 0; k-- {
			cur.Back(cb.RowTemplate(k))
			check("back", k, &cur)
		}
		// BackOver past runs of rows, short (row by row) and long (by
		// counts per template): each row then rebuilds as walking back
		// row by row does.
		for _, run := range []int{1, 3, 2*cb.NumTemplates() + 1} {
			cur.StartAtEnd(&cb, nil)
			next := cb.NumRows()
			for k := cb.NumRows() - 1; k >= 0; k -= run {
				cur.BackOver(cb.RowTemplates()[k:next])
				next = k
				check(fmt.Sprintf("back over %d", run), k, &cur)
			}
		}
		// NextOver likewise, from the first row.
		for _, run := range []int{1, 3, 2*cb.NumTemplates() + 1} {
			cur.Start(&cb, nil)
			prev := 0
			for k := 0; k < cb.NumRows(); k += run {
				cur.NextOver(cb.RowTemplates()[prev:k])
				prev = k
				check(fmt.Sprintf("next over %d", run), k, &cur)
			}
		}
		last := cb.RowTemplate(cb.NumRows() - 1)
		keep := make([]bool, cb.NumColumns())
		for s := range cb.TemplateSlots(last) {
			keep[cb.SlotColumn(last, s)] = true
		}
		if cb.TemplateRaw(last) {
			keep[cb.LineColumn()] = true
		}
		cur.Start(&cb, keep)
		for k := range cb.NumRows() {
			tm := cb.RowTemplate(k)
			if tm == last {
				check("kept", k, &cur)
			}
			if moves := cur.Moves(tm); moves != (tm == last || sharesKept(&cb, tm, keep)) {
				t.Fatalf("block %d: template %d moves %v", i, tm, moves)
			}
			cur.Next(tm)
		}
		for c := range cb.NumColumns() {
			if !keep[c] && cur.At(c) != 0 {
				t.Fatalf("block %d: column %d not kept moved to %d", i, c, cur.At(c))
			}
		}
		// Every row passed, a kept column is where a walk keeping all
		// leaves it (its values' count), whichever columns are kept: every
		// other one, then every third (templates whose columns are a
		// mask's and the others' alike).
		cur.Start(&cb, nil)
		for k := range cb.NumRows() {
			cur.Next(cb.RowTemplate(k))
		}
		ends := make([]int, cb.NumColumns())
		for c := range ends {
			ends[c] = cur.At(c)
		}
		for _, every := range []int{2, 3} {
			for c := range keep {
				keep[c] = c%every == 0
			}
			cur.Start(&cb, keep)
			for k := range cb.NumRows() {
				cur.Next(cb.RowTemplate(k))
			}
			for c, end := range ends {
				if want := map[bool]int{true: end}[keep[c]]; cur.At(c) != want {
					t.Fatalf("block %d, every %d kept: column %d at %d, want %d", i, every, c, cur.At(c), want)
				}
			}
		}
	}
}

// sharesKept reports whether a row of template tm has a value in a kept
// column.
func sharesKept(b *part.Block, tm int, keep []bool) bool {
	for s := range b.TemplateSlots(tm) {
		if keep[b.SlotColumn(tm, s)] {
			return true
		}
	}
	return b.TemplateRaw(tm) && keep[b.LineColumn()]
}

// TestSlotJSON: a slot's JSON flags (and HoleJSON's bits of them) say exactly whether every value the
// slot takes in the block's rows is JSONStringContent, and a JSONValue.
func TestSlotJSON(t *testing.T) {
	input := `x="a \\"b\\"" n=12 v=true
x=plain n=012 v=true
x=a"b n=7 v=null
{"s":"q\\"uote","n":-1.5e3,"a":[1,{"k":"v"}],"o":{"p":"x"}}
{"s":"plain","n":0,"a":[],"o":{"p":"y"}}
`
	fs := vfs.NewMem()
	writePart(t, fs, "s.part", encoded(t, "auto", []byte(input)))
	rd, err := part.Open(fs, "s.part")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, r := range []*part.Reader{rd, mixedPart(t)} {
		seen := 0
		for i := range r.Blocks {
			var b part.Block
			if err := r.ReadColumns(i, &b); err != nil {
				t.Fatal(err)
			}
			if err := b.DecodeTimes(); err != nil {
				t.Fatal(err)
			}
			nt := b.NumTemplates()
			str, val := make([][]bool, nt), make([][]bool, nt)
			for tm := range nt {
				str[tm], val[tm] = make([]bool, b.TemplateSlots(tm)), make([]bool, b.TemplateSlots(tm))
				for s := range b.TemplateSlots(tm) {
					str[tm][s], val[tm][s] = true, true
				}
			}
			cur := make([]int, b.NumColumns())
			for k := range b.NumRows() {
				tm := b.RowTemplate(k)
				_, holes := b.TemplateLine(tm)
				for _, s := range holes {
					v, _, err := b.Value(b.SlotColumn(tm, s), cur[b.SlotColumn(tm, s)]+b.SlotRank(tm, s), b.RowTime(k), nil)
					if err != nil {
						t.Fatal(err)
					}
					str[tm][s] = str[tm][s] && part.JSONStringContent(v)
					val[tm][s] = val[tm][s] && part.JSONValue(v)
				}
				for s := range b.TemplateSlots(tm) {
					cur[b.SlotColumn(tm, s)]++
				}
				if b.TemplateRaw(tm) {
					cur[b.LineColumn()]++
				}
			}
			for tm := range nt {
				_, holes := b.TemplateLine(tm)
				hs, hv := b.HoleJSON(tm)
				for h, s := range holes {
					gs, gv := b.SlotJSON(tm, s)
					if b.TemplateRows(tm) > 0 && (gs != str[tm][s] || gv != val[tm][s]) {
						t.Errorf("block %d template %d slot %d: flags string %v value %v, the values say %v %v", i, tm, s, gs, gv, str[tm][s], val[tm][s])
					}
					if h < 64 && (hs>>h&1 == 1) != gs || h < 64 && (hv>>h&1 == 1) != gv {
						t.Errorf("block %d template %d hole %d: HoleJSON %v %v, SlotJSON %v %v", i, tm, h, hs>>h&1, hv>>h&1, gs, gv)
					}
					if gs != gv {
						seen++
					}
				}
			}
		}
		if seen == 0 {
			t.Error("no slot whose two flags differ: the input tests little")
		}
	}
}

// TestNumber: a number column's Number is what strconv.ParseFloat gives
// for the value's text.
func TestNumber(t *testing.T) {
	var in strings.Builder
	rng := rand.New(rand.NewPCG(8, 8))
	for i := range 2000 {
		// Up to 15 digits, as measurements have them, of every scale.
		scale := 1 + rng.IntN(9)
		whole := rng.Int64N(1_000_000)
		frac := fmt.Sprintf("%0*d", scale, 1+rng.Int64N(int64(math.Pow10(scale))-1))
		fmt.Fprintf(&in, `{"ts":%d,"d":%s%d.%s,"n":%d}`+"\n", 1768464000000+int64(i), []string{"", "-"}[rng.IntN(2)], whole, frac, rng.Int64()>>rng.IntN(64))
	}
	fs := vfs.NewMem()
	writePart(t, fs, "n.part", encoded(t, "auto", []byte(in.String())))
	rd, err := part.Open(fs, "n.part")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	kinds := map[part.ColumnKind]int{}
	for i := range rd.Blocks {
		var b part.Block
		if err := rd.ReadColumns(i, &b); err != nil {
			t.Fatal(err)
		}
		for col := range b.NumColumns() {
			// Numbers gives the column at once, as Number value by value.
			all, allOK := b.Numbers(col, nil)
			if allOK && len(all) != b.ColumnValues(col) {
				t.Fatalf("column %q: Numbers gives %d of %d values", b.Names[col], len(all), b.ColumnValues(col))
			}
			for vi := range b.ColumnValues(col) {
				f, ok := b.Number(col, vi)
				if allOK && (!ok || math.Float64bits(all[vi]) != math.Float64bits(f)) {
					t.Fatalf("column %q value %d: Numbers %v, Number %v (%v)", b.Names[col], vi, all[vi], f, ok)
				}
				if !ok {
					continue
				}
				kinds[b.ColumnKind(col)]++
				v, _, err := b.Value(col, vi, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, err := strconv.ParseFloat(string(v), 64)
				if err != nil || f != want {
					t.Fatalf("column %q value %q: Number %v, ParseFloat %v (%v)", b.Names[col], v, f, want, err)
				}
			}
		}
	}
	if kinds[part.ColumnDecimal] == 0 || kinds[part.ColumnInt] == 0 {
		t.Fatalf("numbers checked by column kind: %v", kinds)
	}
}

// TestWholeLines: a line is stored whole only when its values are under
// a quarter of it; JSON with short values and long keys is templated.
func TestWholeLines(t *testing.T) {
	for _, c := range []struct {
		line  string
		whole bool
	}{
		// Values (the time, warn, ok, 503) a quarter of the line: whole
		// when a half was the bound.
		{`{"ts": 1768464000000, "level": "warn", "message_text": "ok", "http_status_code": 503}`, false},
		// Values a tenth: long keys around flags.
		{`{"ts":1768464000000,"a_rather_long_key_name_for_a_flag":1,"another_long_and_wordy_key_name":"x","payment_declined_reason_code":2}`, true},
	} {
		var in strings.Builder
		for i := range 3 {
			in.WriteString(strings.Replace(c.line, "1768464000000", fmt.Sprint(1768464000000+i), 1) + "\n")
		}
		fs := vfs.NewMem()
		writePart(t, fs, "w.part", encoded(t, "auto", []byte(in.String())))
		rd, err := part.Open(fs, "w.part")
		if err != nil {
			t.Fatal(err)
		}
		var b part.Block
		if err := rd.ReadColumns(0, &b); err != nil {
			t.Fatal(err)
		}
		for k := range b.NumRows() {
			if got := b.TemplateRaw(b.RowTemplate(k)); got != c.whole {
				t.Errorf("%s: stored whole %v, want %v", c.line, got, c.whole)
			}
		}
		rd.Close()
	}
}

// TestHexNeedle: a whole trace id is found in a hex column by one search
// over the values' bytes end to end; bytes that straddle two values are
// no match, and a value held by several rows is found in each.
func TestHexNeedle(t *testing.T) {
	var in strings.Builder
	ids := make([]string, 300)
	for i := range ids {
		var b [16]byte
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		b[0], b[1] = byte(i), byte(i>>8) // distinct
		ids[i] = hex.EncodeToString(b[:])
	}
	ids[200] = ids[7] // one id twice
	for i, id := range ids {
		fmt.Fprintf(&in, `{"ts":"2026-01-15T08:00:%02d.%06dZ","trace_id":"%s","n":%d}`+"\n", i/100, i, id, i)
	}
	path := filepath.Join(t.TempDir(), "p.part")
	writePart(t, vfs.OS, path, encoded(t, "auto", []byte(in.String())))
	rd, err := part.Open(vfs.OS, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	straddle := ids[5][16:] + ids[6][:16]
	for _, c := range []struct {
		needle string
		want   int
	}{{ids[7], 2}, {ids[42], 1}, {straddle, 0}, {ids[299], 1}} {
		n := 0
		for i := range rd.Blocks {
			var b part.Block
			if err := rd.ReadLines(i, &b, &part.LineRead{Contains: []part.Clause{{{Text: []byte(c.needle)}}}}); err != nil {
				t.Fatal(err)
			}
			n += len(b.Rows)
			for _, r := range b.Rows {
				if !strings.Contains(string(r.Line), c.needle) {
					t.Fatalf("%s: line %s", c.needle, r.Line)
				}
			}
		}
		if n != c.want {
			t.Errorf("%s: %d rows, want %d", c.needle, n, c.want)
		}
	}
}
