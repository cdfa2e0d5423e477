package part_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// Golden parts: the records of testdata/golden/input.txt (8 lines: JSON
// and text, 3 streams, a time column, a dictionary column, hex, numbers,
// an escaped message, non-ASCII text), parsed with format "auto" and the
// default record configuration and written as one part (3 blocks, one per
// stream) by the writer of each frozen format version:
//
//   - v1.part: format version 1, written at commit 3536a93 (the parent of
//     1a84e54, which introduced version 2);
//   - v2.part: format version 2, written at commit 5d851ee (the parent of
//     06a0528, which introduced version 3; version 2's tokens as 5470d2d
//     fixed them);
//   - v3.part: format version 3, written at commit 6e6673f (the parent
//     of the commit that introduced version 4);
//   - v4.part: format version 4, as the writer wrote it until commit 308e986 (the parent
//     of the commit that introduced version 5);
//   - v5.part: format version 5, as the writer wrote it until commit
//     d00b2dd (the parent of the commit that introduced version 6);
//   - v6.part: format version 6, as the writer wrote it until the
//     commit that introduced version 7;
//   - v7.part: format version 7, as the writer wrote it until the
//     commit that introduced version 8;
//   - v8.part: format version 8, the current writer's; `go test
//     ./internal/store/part -run TestGoldenParts -update` rewrites it.
//
// v1 and v2 were made with a temporary test file in a git worktree of
// that commit outside the repository (the writer has no version option):
//
//	git worktree add --detach /tmp/gen-v1 3536a93
//	# internal/store/part/gen_golden_test.go in it:
//	#   writePart(t, vfs.OS, os.Getenv("GOLDEN_OUT"), encoded(t, "auto", input.txt's bytes))
//	cd /tmp/gen-v1 && GOLDEN_IN=.../testdata/golden/input.txt \
//	    GOLDEN_OUT=.../testdata/golden/v1.part go test -run TestGenGolden ./internal/store/part/
//	git worktree remove --force /tmp/gen-v1
//
// They are never rewritten: a change that makes one read differently
// breaks old data. vN.want is what each must read as, row by row: the
// block index (stream, rows, time range, longest token: unknown in
// version 1), then each row's time, time source, stream, line, message
// and fields, byte-exact, then each column's encodings (ts is a time
// column, level a dictionary in the api block). The .want files were
// dumped by dumpPart when the parts were added and checked by hand
// against input.txt; they differ only in version 1's unknown longest
// tokens; v4.want adds the JSON flags of the templates' slots (jsontext.go);
// v5.want each block's fields flag from the index (BlockMeta.Fields);
// v6.want is v5.want (version 6 added an encoding the input has no use
// for: TestGoldenDictRest freezes it); v7.want differs from v6.want in
// the text lines' level fields, which version 7 keeps as holes of lines
// that are their message (tmplMsgLine), where version 6 held them apart
// (and its readers took them for structured metadata); TestGoldenMsgLine
// freezes the same for Loki pushes with metadata; v8.want is v7.want
// (version 8 changed the token filters alone, which checkGoldenFilters
// and checkGoldenSearch read).
// A new version adds its vN.part and vN.want; none is removed.
var goldenVersions = []int{1, 2, 3, 4, 5, 6, 7, 8}

func TestGoldenParts(t *testing.T) {
	if *update {
		in, err := os.ReadFile("testdata/golden/input.txt")
		if err != nil {
			t.Fatal(err)
		}
		writeGolden(t, filepath.Join("testdata", "golden", fmt.Sprintf("v%d.part", part.Version)), encoded(t, "auto", in))
	}
	if last := goldenVersions[len(goldenVersions)-1]; last != part.Version {
		t.Fatalf("part.Version is %d, the newest golden part v%d: add testdata/golden/v%d.part (-update) and its .want",
			part.Version, last, part.Version)
	}
	input, err := os.ReadFile("testdata/golden/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(input), "\n"), "\n")
	for _, v := range goldenVersions {
		t.Run(fmt.Sprintf("version=%d", v), func(t *testing.T) {
			path := filepath.Join("testdata", "golden", fmt.Sprintf("v%d.part", v))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := int(data[8]); got != v {
				t.Fatalf("%s: header version %d, want %d", path, got, v)
			}
			rd, err := part.Open(vfs.OS, path)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			got := dumpPart(t, rd)
			want, err := os.ReadFile(strings.TrimSuffix(path, ".part") + ".want")
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s reads differently from %s.want: old data no longer reads as written\n got:\n%s", path, strings.TrimSuffix(path, ".part"), got)
			}
			checkGoldenFilters(t, rd, v)
			checkGoldenSearch(t, rd, lines)
		})
	}
}

// writeGolden writes the part of blocks to path (-update), whole or not
// at all.
func writeGolden(t *testing.T, path string, blocks []*rows.Block) {
	t.Helper()
	writePart(t, vfs.OS, path+".tmp", blocks)
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// dumpPart renders a part's index and every row of its blocks as text.
func dumpPart(t *testing.T, rd *part.Reader) string {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "streams %d blocks %d\n", len(rd.Streams), len(rd.Blocks))
	var blk part.Block
	for i, bm := range rd.Blocks {
		fmt.Fprintf(&sb, "block %d stream %s rows %d time %d..%d longest %d",
			i, rd.Streams[bm.Stream], bm.Rows, bm.MinTime, bm.MaxTime, bm.LongestToken)
		if bm.Fields != part.FieldsUnknown {
			fmt.Fprintf(&sb, " fields out of line %v", bm.Fields == part.FieldsOutOfLine)
		}
		sb.WriteByte('\n')
		if err := rd.ReadRows(i, &blk); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		for _, r := range blk.Rows {
			dumpRow(&sb, &r, blk.Names, rd.Streams[r.Stream].String())
		}
		for tm := range blk.NumTemplates() {
			for sl := range blk.TemplateSlots(tm) {
				if s, v := blk.SlotJSON(tm, sl); s || v {
					fmt.Fprintf(&sb, "  template %d slot %d (%q) json string %v value %v\n", tm, sl, blk.Names[blk.SlotColumn(tm, sl)], s, v)
				}
			}
		}
	}
	stats, err := rd.Stats()
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	slices.SortFunc(stats, func(a, b part.ColumnStat) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range stats {
		if len(c.Encodings) == 0 {
			continue
		}
		encs := make([]string, 0, len(c.Encodings))
		for e, n := range c.Encodings {
			encs = append(encs, fmt.Sprintf("%s=%d", e, n))
		}
		slices.Sort(encs)
		fmt.Fprintf(&sb, "column %s values %d blocks by encoding %s\n", c.Name, c.Values, strings.Join(encs, " "))
	}
	return sb.String()
}

// dumpRow renders one row: every member a reader sees, the byte slices
// quoted.
func dumpRow(sb *strings.Builder, r *rows.Row, names []string, stream string) {
	fmt.Fprintf(sb, "  row time %d source %d stream %s\n", r.Time, r.TimeSource, stream)
	fmt.Fprintf(sb, "    line %s\n", strconv.Quote(string(r.Line)))
	fmt.Fprintf(sb, "    msg %s flags %d\n", strconv.Quote(string(r.Msg)), r.MsgFlags)
	for _, f := range r.Fields {
		where := "inline" // (held apart from the line)
		switch {
		case f.InLine:
			where = fmt.Sprintf("at %d", f.Off)
		case f.FromLine:
			where = "parsed"
		}
		fmt.Fprintf(sb, "    field %s=%s kind %s flags %d role %d num %d %s\n",
			names[f.Name], strconv.Quote(string(f.Value)), f.Kind, f.Flags, f.Role, f.Num, where)
	}
}

// checkGoldenFilters checks that each block's token filter holds every
// token of its lines (version 2 on; version 1 filters are not used).
func checkGoldenFilters(t *testing.T, rd *part.Reader, v int) {
	t.Helper()
	var blk part.Block
	for i := range rd.Blocks {
		f := rd.Filter(i)
		if v == 1 {
			if f != nil {
				t.Errorf("block %d: a version 1 filter is used", i)
			}
			continue
		}
		if len(f) == 0 {
			t.Fatalf("block %d: no filter", i)
		}
		if err := rd.ReadRows(i, &blk); err != nil {
			t.Fatal(err)
		}
		for _, r := range blk.Rows {
			// Spaces around the line make every token of it an inner token.
			for _, h := range part.AppendLiteralTokens(nil, []byte(" "+string(r.Line)+" ")) {
				if !f.MayContain(h) {
					t.Errorf("block %d: the filter lacks a token of %q", i, r.Line)
				}
			}
		}
	}
}

// checkGoldenSearch searches the part for literals as the store does
// (token filters and longest tokens skip blocks, the reader's gram
// filters skip columns) and compares the lines found with the input
// lines holding them.
func checkGoldenSearch(t *testing.T, rd *part.Reader, lines []string) {
	t.Helper()
	for _, lit := range []part.Literal{
		{Text: []byte("GET /health")},
		{Text: []byte("名前")},
		// Version 1 made one token of 名前query: a reader using its
		// filter would skip the block.
		{Text: []byte(`slow 名前query"`)},
		{Text: []byte("user=bob")},
		{Text: []byte(`\"main\"`)},
		{Text: []byte("0123456789abcdef0123456789abcdef")},
		{Text: []byte("1500.5")},
		{Text: []byte("not in any line")},
		{Text: []byte("error"), Fold: true},
	} {
		var want []string
		for _, l := range lines {
			in := l
			if lit.Fold {
				in = strings.ToLower(l)
			}
			if strings.Contains(in, string(lit.Text)) {
				want = append(want, l)
			}
		}
		var got []string
		var blk part.Block
		q := part.LineRead{Contains: []part.Clause{{lit}}}
		toks := part.AppendLiteralTokens(nil, lit.Text)
		needles := part.AppendLiteralNeedles(nil, lit.Text)
	blocks:
		for i, bm := range rd.Blocks {
			// Skip blocks as the store's reader does (store/read.go).
			f := rd.Filter(i)
			for _, h := range toks {
				if !f.MayContain(h) {
					continue blocks
				}
			}
			for _, n := range needles {
				if bm.LongestToken <= n.Len && !f.MayContain(n.Hash) {
					continue blocks
				}
			}
			if err := rd.ReadLines(i, &blk, &q); err != nil {
				t.Fatal(err)
			}
			for _, r := range blk.Rows {
				got = append(got, string(r.Line))
			}
		}
		// A part keeps rows by stream, not in input order.
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("search %q (fold %v): got %q, want %q", lit.Text, lit.Fold, got, want)
		}
	}
}

// dictRestInput is the input of testdata/golden/dictrest-v6.part: 1000
// JSON lines of one stream whose messages are mostly three, the rest
// each different (a dictionary-and-rest column, encDictRest).
func dictRestInput() []string {
	lines := make([]string, 1000)
	for i := range lines {
		msg := []string{"payment declined", "cache miss", "caf\u00e9 ouvert"}[i%3]
		if i%5 < 2 {
			msg = fmt.Sprintf("query %d took %dms", i*7919%1000, i%97)
		}
		lines[i] = fmt.Sprintf(`{"ts":%d,"msg":"%s","n":"x%d"}`, 1768464000000+int64(i)*250, msg, i%4)
	}
	return lines
}

// TestGoldenDictRest reads the part version 6's writer made of
// dictRestInput, whose message column is a dictionary and the rest: it
// must read as written, row by row and through a search, as long as
// version 6 is read.
func TestGoldenDictRest(t *testing.T) {
	path := filepath.Join("testdata", "golden", "dictrest-v6.part")
	lines := dictRestInput()
	if *update && part.Version == 6 {
		writeGolden(t, path, encoded(t, "auto", []byte(strings.Join(lines, "\n")+"\n")))
	}
	rd, err := part.Open(vfs.OS, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if !hasColumn(t, rd, func(s part.ColumnStat) bool { return s.Name == "msg" && s.Encodings["dict+rest"] == 1 }) {
		t.Fatalf("%s: its msg column is not a dictionary and the rest", path)
	}
	var got []string
	var blk part.Block
	for i := range rd.Blocks {
		if err := rd.ReadRows(i, &blk); err != nil {
			t.Fatal(err)
		}
		for _, r := range blk.Rows {
			got = append(got, string(r.Line))
		}
	}
	if !slices.Equal(got, lines) {
		t.Fatalf("%s: %d lines read, not the %d written", path, len(got), len(lines))
	}
	checkGoldenSearch(t, rd, lines)
	for _, lit := range []string{"declined", "took 4", "query 7", "caf\u00e9", "ms\""} {
		var want, found []string
		for _, l := range lines {
			if strings.Contains(l, lit) {
				want = append(want, l)
			}
		}
		for i := range rd.Blocks {
			if err := rd.ReadLines(i, &blk, &part.LineRead{Contains: []part.Clause{{{Text: []byte(lit)}}}}); err != nil {
				t.Fatal(err)
			}
			for _, r := range blk.Rows {
				found = append(found, string(r.Line))
			}
		}
		if !slices.Equal(found, want) {
			t.Errorf("%q: %d lines found, want %d", lit, len(found), len(want))
		}
	}
}

// msgLineBody is the Loki push of testdata/golden/msgline-v7.part: JSON
// lines (one with a key its structured metadata also has, one nested,
// one with an escape, one kept whole: a raw template), a line that is
// not JSON and one that is not an object, as protocol/loki decodes them
// with JSON fields and detected levels.
const msgLineBody = `{"streams":[{"stream":{"app":"shop"},"values":[
["1768464000000000000","{\"level\":\"info\",\"msg\":\"order placed\",\"id\":17}"],
["1768464001000000000","{\"level\":\"error\",\"msg\":\"card \\\"declined\\\"\",\"id\":18}",{"trace":"ab12"}],
["1768464002000000000","{\"level\":\"warn\",\"trace\":\"line\",\"http\":{\"status\":503}}",{"trace":"meta"}],
["1768464003000000000","plain text at level error"],
["1768464004000000000","[1,2,3]"],
["1768464005000000000","{\"level\":\"info\",\"msg\":\"order placed\",\"id\":19}"],
["1768464006000000000","{\"a_key_much_longer_than_its_value_so_that_the_line_stays_whole\":\"x\"}",{"trace":"cd34"}]
]}]}`

// TestGoldenMsgLine reads the part version 7's writer made of
// msgLineBody: rows whose message is their line around fields parsed
// from it (tmplMsgLine), beside structured metadata held apart. It must
// read as written, row by row, as long as version 7 is read: each row's
// message its line, the JSON keys in the line (no metadata), the
// metadata apart.
func TestGoldenMsgLine(t *testing.T) {
	path := filepath.Join("testdata", "golden", "msgline-v7.part")
	if *update && part.Version == 7 {
		d := loki.Decoder{Limits: loki.DefaultLimits, Discover: loki.Discovery{LogLevels: true}, Fields: loki.DefaultLineFields}
		b := &record.Batch{}
		if _, err := d.DecodeJSON([]byte(msgLineBody), b); err != nil {
			t.Fatal(err)
		}
		var enc rows.Encoder
		blk, err := rows.Decode(enc.Append(nil, "t", b))
		if err != nil {
			t.Fatal(err)
		}
		writeGolden(t, path, []*rows.Block{blk})
	}
	rd, err := part.Open(vfs.OS, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := dumpPart(t, rd)
	wantPath := strings.TrimSuffix(path, ".part") + ".want"
	if *update && part.Version == 7 {
		if err := os.WriteFile(wantPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(wantPath)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s reads differently from %s: old data no longer reads as written\n got:\n%s", path, wantPath, got)
	}
	var blk part.Block
	if err := rd.ReadRows(0, &blk); err != nil {
		t.Fatal(err)
	}
	var metas []string
	inLine := 0
	for _, r := range blk.Rows {
		if !r.MsgIsLine() || !r.MsgInLine || r.MsgOff != 0 || string(r.Msg) != string(r.Line) {
			t.Errorf("row %q: message %q, not its line", r.Line, r.Msg)
		}
		for k := range r.Fields {
			f := &r.Fields[k]
			if r.IsMetadata(f) {
				metas = append(metas, blk.Names[f.Name]+"="+string(f.Value))
			} else if f.FromLine {
				inLine++
				if !strings.Contains(string(r.Line), string(f.Value)) {
					t.Errorf("row %q: field %s=%q is not in its line", r.Line, blk.Names[f.Name], f.Value)
				}
			} else if f.InLine {
				inLine++
				if string(r.Line[f.Off:int(f.Off)+len(f.Value)]) != string(f.Value) {
					t.Errorf("row %q: field %s=%q is not its line's bytes at %d", r.Line, blk.Names[f.Name], f.Value, f.Off)
				}
			} else {
				t.Errorf("row %q: field %s neither metadata nor in the line", r.Line, blk.Names[f.Name])
			}
		}
	}
	wantMeta := []string{"detected_level=info", "trace=ab12", "detected_level=error", "trace=meta", "detected_level=warn",
		"detected_level=error", "detected_level=unknown", "detected_level=info", "trace=cd34", "detected_level=unknown"}
	if !slices.Equal(metas, wantMeta) {
		t.Errorf("metadata %q, want %q", metas, wantMeta)
	}
	if inLine != 3+3+3+3+1 {
		t.Errorf("%d fields parsed from the lines, want 13", inLine)
	}
	if rd.Blocks[0].Fields != part.FieldsOutOfLine {
		t.Errorf("block fields %v: its rows' metadata are out of their lines", rd.Blocks[0].Fields)
	}
}
