package part_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// clausesOf returns clauses written as text: a literal starting with
// (?i) folds (its text lowercased), with (?I) it folds ASCII case alone
// (Literal.ASCII); one between <_> and <_> (after those) is Inner.
func clausesOf(spec [][]string) []part.Clause {
	cs := make([]part.Clause, 0, len(spec))
	for _, alts := range spec {
		c := part.Clause{}
		for _, a := range alts {
			var l part.Literal
			if low, ok := strings.CutPrefix(a, "(?i)"); ok {
				l, a = part.Literal{Fold: true}, low
			} else if low, ok := strings.CutPrefix(a, "(?I)"); ok {
				l, a = part.Literal{Fold: true, ASCII: true}, low
			}
			if in, ok := strings.CutPrefix(a, "<_>"); ok && strings.HasSuffix(in, "<_>") && len(in) > 3 {
				l.Inner, a = true, strings.TrimSuffix(in, "<_>")
			}
			l.Text = []byte(a)
			if l.Fold {
				l.Text = lowerASCII(l.Text)
			}
			c = append(c, l)
		}
		cs = append(cs, c)
	}
	return cs
}

// holdsClauses is the reference: whether line holds one literal of each
// clause (a folding one in the line's ASCII lowercase; an Inner one at a
// place with a byte of the line before and after it).
func holdsClauses(line []byte, cs []part.Clause) bool {
	low := lowerASCII(line)
	for _, c := range cs {
		if !slices.ContainsFunc(c, func(l part.Literal) bool {
			text := line
			if l.Fold {
				text = low
			}
			for i := range text {
				if bytes.HasPrefix(text[i:], l.Text) && (!l.Inner || i > 0 && i+len(l.Text) < len(text)) {
					return true
				}
			}
			return len(l.Text) == 0 && !l.Inner
		}) {
			return false
		}
	}
	return true
}

// unicodeFolds reports whether a folding literal of cs (not ASCII) has a
// letter a non-ASCII rune folds to: a read may then keep any line with a
// non-ASCII byte besides those holding the clauses.
func unicodeFolds(cs []part.Clause) bool {
	for _, c := range cs {
		for _, l := range c {
			if l.Fold && !l.ASCII && bytes.ContainsAny(l.Text, "ks") {
				return true
			}
		}
	}
	return false
}

// clausesText writes clauses for a test's messages.
func clausesText(cs []part.Clause) string {
	var s strings.Builder
	for i, c := range cs {
		if i > 0 {
			s.WriteString(" and ")
		}
		s.WriteString("(")
		for j, l := range c {
			if j > 0 {
				s.WriteString(" or ")
			}
			s.WriteString(l.String())
		}
		s.WriteString(")")
	}
	return s.String()
}

type timedLine struct {
	time int64
	line string
}

func timedLines(b *part.Block) []timedLine {
	var out []timedLine
	for _, r := range b.Rows {
		out = append(out, timedLine{r.Time, string(r.Line)})
	}
	return out
}

// checkClauses reads block i of rd keeping the rows that hold cs, in
// every way a read can (rows with lines, into a block read before with
// other clauses, without lines, counted, the newest few), and checks
// each against the reference over the block's lines read whole.
func checkClauses(t testing.TB, rd *part.Reader, i int, cs []part.Clause, reused *part.Block) {
	t.Helper()
	name := clausesText(cs)
	var all part.Block
	if err := rd.ReadLines(i, &all, &part.LineRead{}); err != nil {
		t.Fatal(err)
	}
	var want []timedLine
	for _, r := range all.Rows {
		if holdsClauses(r.Line, cs) {
			want = append(want, timedLine{r.Time, string(r.Line)})
		}
	}
	var some part.Block
	if err := rd.ReadLines(i, &some, &part.LineRead{Contains: cs}); err != nil {
		t.Fatal(err)
	}
	got := timedLines(&some)
	// Exactly the rows wanted, and where a folding literal may match a
	// non-ASCII rune, perhaps also rows with a non-ASCII byte.
	maybe := unicodeFolds(cs)
	j := 0
	for _, g := range got {
		if j < len(want) && g == want[j] {
			j++
			continue
		}
		if !maybe || isASCII(g.line) {
			next := "no more rows"
			if j < len(want) {
				next = want[j].line
			}
			t.Fatalf("block %d, %s: kept %q, where the next row that holds the clauses is %q", i, name, g.line, next)
		}
	}
	if j != len(want) {
		t.Fatalf("block %d, %s: %d of %d matching rows kept", i, name, j, len(want))
	}

	if reused != nil {
		if err := rd.ReadLines(i, reused, &part.LineRead{Contains: cs}); err != nil {
			t.Fatal(err)
		}
		if r := timedLines(reused); !slices.Equal(r, got) {
			t.Fatalf("block %d, %s: a block read before with other clauses keeps %d rows, a new one %d", i, name, len(r), len(got))
		}
	}

	// Without lines: the same rows, a line given only where one was
	// rebuilt (and then the same line).
	var bare part.Block
	if err := rd.ReadLines(i, &bare, &part.LineRead{Contains: cs, NoLines: true}); err != nil {
		t.Fatal(err)
	}
	if len(bare.Rows) != len(got) {
		t.Fatalf("block %d, %s: %d rows without lines, %d with", i, name, len(bare.Rows), len(got))
	}
	for k, r := range bare.Rows {
		if r.Time != got[k].time || r.Line != nil && string(r.Line) != got[k].line {
			t.Fatalf("block %d, %s: row %d differs without lines", i, name, k)
		}
	}
	n, err := rd.CountLines(i, &bare, &part.LineRead{Contains: cs})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(got) || len(bare.Rows) != 0 {
		t.Fatalf("block %d, %s: %d rows counted (%d kept), %d read", i, name, n, len(bare.Rows), len(got))
	}

	// A bit per row of a block read as columns: the same rows, and a
	// block read so may be read again by lines.
	var cols part.Block
	if err := rd.ReadColumns(i, &cols); err != nil {
		t.Fatal(err)
	}
	sel, err := cols.MatchingRows(cs, []uint64{^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	var selected []timedLine
	for k, r := range all.Rows {
		if sel[k>>6]>>(k&63)&1 != 0 {
			selected = append(selected, timedLine{r.Time, string(r.Line)})
		}
	}
	if len(sel) != (len(all.Rows)+63)/64 || !slices.Equal(selected, got) {
		t.Fatalf("block %d, %s: %d rows selected in %d words, %d read", i, name, len(selected), len(sel), len(got))
	}
	// The fast paths of counts and selections against the plain loops.
	var plain part.Block
	plain.PlainCounts()
	if n, err := rd.CountLines(i, &plain, &part.LineRead{Contains: cs}); err != nil || n != len(got) {
		t.Fatalf("block %d, %s: %d rows counted by the plain loop (%v), %d read", i, name, n, err, len(got))
	}
	if err := rd.ReadColumns(i, &plain); err != nil {
		t.Fatal(err)
	}
	if psel, err := plain.MatchingRows(cs, nil); err != nil || !slices.Equal(psel, sel) {
		t.Fatalf("block %d, %s: the plain loop selects other rows (%v)", i, name, err)
	}
	// Each line's length, of every row and of the rows selected, is
	// the length of the line read whole.
	for _, of := range [][]uint64{nil, sel} {
		lens, err := cols.LineLengths(of, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range all.Rows {
			want := len(r.Line)
			if of != nil && of[k>>6]>>(k&63)&1 == 0 {
				want = 0
			}
			if len(lens) != len(all.Rows) || int(lens[k]) != want {
				t.Fatalf("block %d, %s: row %d: line length %d, want %d (%q)", i, name, k, lens[k], want, r.Line)
			}
		}
	}
	if err := rd.ReadLines(i, &cols, &part.LineRead{Contains: cs}); err != nil {
		t.Fatal(err)
	}
	if r := timedLines(&cols); !slices.Equal(r, got) {
		t.Fatalf("block %d, %s: a block whose rows were selected keeps %d rows, a new one %d", i, name, len(r), len(got))
	}

	// The newest few, within a range that leaves out the first and the
	// last row kept.
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if len(got) > 2 {
		lo, hi = got[1].time, got[len(got)-2].time
	}
	var in []timedLine
	for _, g := range got {
		if g.time >= lo && g.time <= hi {
			in = append(in, g)
		}
	}
	for _, n := range []int{1, 3, 1000} {
		var nw part.Block
		if err := rd.ReadLines(i, &nw, &part.LineRead{Contains: cs, Newest: n, From: lo, To: hi}); err != nil {
			t.Fatal(err)
		}
		if r, w := timedLines(&nw), in[max(0, len(in)-n):]; !slices.Equal(r, w) {
			t.Fatalf("block %d, %s: newest %d: %d rows, want %d", i, name, n, len(r), len(w))
		}
	}
}

// clausePart writes a part whose blocks have a column of each kind a
// literal can be found in (string, dictionary, constant, integer,
// decimal, hexadecimal, time), templates of JSON, logfmt and text, and
// lines stored raw.
func clausePart(t *testing.T) *part.Reader {
	t.Helper()
	rng := rand.New(rand.NewPCG(15, 15))
	msgs := []string{"payment declined for order %d", "upstream timeout after %dms", "user %d logged in", "cache miss %d", "Kafka rebalance %d", "\u212aafka lag %d in cla\u017fs", `said \"status\":%d`, `quoted %d \"`}
	var in strings.Builder
	for i := range 2400 {
		ts := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 1234567 * time.Microsecond)
		msg := fmt.Sprintf(msgs[rng.IntN(len(msgs))], rng.IntN(5000))
		switch i % 6 {
		case 0, 1:
			fmt.Fprintf(&in, `{"ts":"%s","svc":"api","level":"%s","msg":"%s","n":%d,"x":%d.%02d,"id":"%016x"}`+"\n",
				ts.Format(time.RFC3339Nano), []string{"info", "ERROR", "warn"}[rng.IntN(3)], msg, rng.IntN(1000), rng.IntN(100), rng.IntN(100), rng.Uint64())
		case 2:
			fmt.Fprintf(&in, "ts=%s level=%s msg=%q took=%dms\n", ts.Format(time.RFC3339), []string{"info", "debug"}[rng.IntN(2)], msg, rng.IntN(900))
		case 3:
			fmt.Fprintf(&in, "%s WARN free text line %d: %s\n", ts.Format("2006-01-02 15:04:05.000"), i, msg)
		case 4: // a time in epoch milliseconds
			fmt.Fprintf(&in, `{"time":%d,"msg":"%s","user":{"id":%d,"vip":%v}}`+"\n", ts.UnixMilli(), msg, rng.IntN(90), rng.IntN(2) == 1)
		default: // mostly keys: stored raw
			fmt.Fprintf(&in, `{"ts":%d,"a_rather_long_key_name_for_a_flag":%d,"another_long_and_wordy_key_name":"%c","payment_declined_reason_code":%d}`+"\n",
				ts.UnixMilli(), rng.IntN(2), 'a'+rune(rng.IntN(3)), rng.IntN(4))
		}
	}
	fs := vfs.NewMem()
	writePart(t, fs, "m.part", encoded(t, "auto", []byte(in.String())))
	rd, err := part.Open(fs, "m.part")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	// The cases below count on these: every kind of column, and raw rows.
	kinds := map[part.ColumnKind]bool{}
	raw := false
	for i := range rd.Blocks {
		var b part.Block
		if err := rd.ReadColumns(i, &b); err != nil {
			t.Fatal(err)
		}
		for c := range b.NumColumns() {
			kinds[b.ColumnKind(c)] = true
		}
		for tm := range b.NumTemplates() {
			raw = raw || b.TemplateRaw(tm)
		}
	}
	for _, k := range []part.ColumnKind{part.ColumnString, part.ColumnConst, part.ColumnDict, part.ColumnInt, part.ColumnDecimal, part.ColumnHex, part.ColumnTime} {
		if !kinds[k] {
			t.Fatalf("the part has no column of kind %d", k)
		}
	}
	if !raw {
		t.Fatal("the part has no raw rows")
	}
	return rd
}

// TestContainsClauses: a read keeping the rows whose line holds clauses
// of alternatives (each clause: one of its literals) keeps exactly those,
// wherever the literals are found.
func TestContainsClauses(t *testing.T) {
	rd := clausePart(t)
	var reused part.Block // read with every case in turn: what it keeps of earlier reads must not matter
	for _, tc := range []struct {
		name    string
		clauses [][]string
	}{
		{"one literal", [][]string{{"payment declined"}}},
		{"string values", [][]string{{"payment declined", "upstream timeout"}}},
		{"string values three", [][]string{{"declined", "timeout", "logged in"}}},
		{"dictionary values", [][]string{{"ERROR", "warn"}}},
		{"dictionary and string values", [][]string{{"ERROR", "logged in"}}},
		{"constant value", [][]string{{"api", "zzz"}}},
		{"constant value or none", [][]string{{"apx", "zzz"}}},
		{"integer values", [][]string{{"42", "917"}}},
		{"integer or string", [][]string{{"ms\"", "404"}}},
		{"decimal values", [][]string{{".05", "9.9"}}},
		{"hex values", [][]string{{"ab", "ff0"}}},
		{"time values", [][]string{{"08:01:1", "T08:02"}}},
		{"epoch time values", [][]string{{"768464001", "zzz"}}},
		{"epoch time or decimal values", [][]string{{"17684640", ".5"}}},
		{"time or integer values", [][]string{{"08:01:1", "917"}}},
		{"gap", [][]string{{`","level":"`, "zzz"}}},
		{"gap or value", [][]string{{"level=", "payment declined"}}},
		{"gap and values", [][]string{{"WARN free"}, {"declined", "timeout"}}},
		{"across a boundary", [][]string{{`ERROR","msg":"pay`, `declined for`}}},
		{"across a boundary or a value", [][]string{{`info","msg":"user`, "upstream timeout"}}},
		{"raw lines", [][]string{{"a_rather_long_key", "another_long"}}},
		{"raw values", [][]string{{`_code":3`, `"wordy_key_name":"b`}}},
		{"two clauses of values", [][]string{{"ERROR", "warn"}, {"declined", "logged"}}},
		{"three clauses", [][]string{{"payment", "user"}, {"1", "2"}, {"ms", "in"}}},
		{"none can hold it", [][]string{{"zzzz", "qqqq"}}},
		{"one clause none can hold", [][]string{{"ERROR"}, {"zzzz"}}},
		{"empty clause", [][]string{{}}},
		{"one byte alternatives", [][]string{{"Z", "\""}}},
		{"folded", [][]string{{"(?i)error", "(?i)DECLINED"}}},
		{"folded and exact", [][]string{{"(?i)Error", "timeout"}}},
		{"folded across a boundary", [][]string{{`(?i)error","msg":"`, "(?i)zzz"}}},
		{"folded k and s", [][]string{{"(?i)kafka", "(?i)miss"}}},
		{"ASCII-folded k and s", [][]string{{"(?I)kafka", "(?I)miss"}}},
		{"ASCII-folded with the Kelvin sign", [][]string{{"(?I)kafka", "\u212aafka"}, {"(?I)LAG", "(?I)rebalance"}}},
		{"ASCII-folded with the long s", [][]string{{"(?I)class", "cla\u017fs"}}},
		{"folded gap", [][]string{{"(?i)warn FREE", "(?i)qqq"}}},
		{"duplicates", [][]string{{"declined", "declined"}, {"declined"}}},
		// JSON string values hold a quote only escaped: a literal with
		// another quote is found across their edges only where the
		// value ends (starts) before it.
		{"a string value between its quotes", [][]string{{`"ERROR"`, `"info"`}}},
		{"quotes into a string value", [][]string{{`"level":"ERROR`, `"msg":"said`}}},
		{"quotes out of a string value", [][]string{{`ERROR","msg":"`, `ok","n"`}}},
		{"escaped quotes in a string value", [][]string{{`\"status\":4`, `said \"status`}}},
		{"escaped quote at a string value's end", [][]string{{`quoted \""`, `\"","n":`}}},
		{"across a time's edges", [][]string{{`"ts":"2026-01-15T08:01`, `Z","svc":"api`}}},
		{"across an epoch time's edges", [][]string{{`{"time":17684640`, `1","msg"`}}},
		// Inner literals: off the line's edges, as <_>text<_> wants them.
		{"inner in values", [][]string{{"<_>payment declined<_>", "<_>logged in<_>"}}},
		{"inner at a line's edges", [][]string{{`<_>{"ts":"2026<_>`, `<_>in"}<_>`, `<_>"}<_>`}}},
		{"inner or not", [][]string{{"<_>ms<_>", "WARN"}, {"<_>2026-01-15<_>"}}},
		{"inner in text lines", [][]string{{"<_>2026-01-15 08:0<_>", "<_>free text<_>"}}},
		{"inner folded", [][]string{{"(?i)<_>TS=2026<_>", "(?i)<_>LEVEL=INFO<_>"}}},
		{"inner or across a boundary", [][]string{{"<_>payment declined<_>", "text line 12", "<_>cache miss<_>"}}},
		{"inner across a boundary", [][]string{{`<_>ERROR","msg":"pay<_>`, `<_>"level":"warn<_>`}}},
		{"across a constant's edges", [][]string{{`"svc":"ap`, `pi","level`}}},
		{"across a dictionary's edges", [][]string{{`"level":"ERR`, `arn","msg`}}},
		{"out of a time or a string value", [][]string{{`3","svc`, `9","n":`}}},
		{"a quote the values cannot hold", [][]string{{`"status":4`, `d \"status":`}}},
		{"one implies another", [][]string{{"payment declined", "declined"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := clausesOf(tc.clauses)
			for i := range rd.Blocks {
				checkClauses(t, rd, i, cs, &reused)
			}
		})
	}
}

// TestContainsDictRest: literals found in, and across the edges of, the
// values of a dictionary-and-rest column (a few frequent messages, the
// rest each different), whose entries are checked once and whose rest
// values one by one.
func TestContainsDictRest(t *testing.T) {
	var in strings.Builder
	for i := range 1200 {
		msg := []string{"ok", "payment declined", "retry 7"}[i/7%3]
		if i%20 < 9 {
			msg = "id " + strconv.Itoa(i) + " declined"
		}
		fmt.Fprintf(&in, "lvl=%s m=\"%s\" n=%d\n", []string{"info", "warn"}[i%2], msg, i%7)
	}
	checkLinesClauses(t, in.String(), [][][]string{
		{{`m="id 12`}}, {{`declined" n=3`}}, {{`m="ok"`}}, {{`7" n=`, `info m="re`}},
		{{"declined"}, {`d" n=`}}, {{`(?i)M="ID 3`, `(?i)D" N=6`}},
	})
}

// checkLinesClauses stores lines in a part and checks each of specs'
// clauses on each of its blocks (checkClauses).
func checkLinesClauses(t *testing.T, lines string, specs [][][]string) {
	t.Helper()
	fs := vfs.NewMem()
	writePart(t, fs, "l.part", encoded(t, "auto", []byte(lines)))
	rd, err := part.Open(fs, "l.part")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var reused part.Block
	for _, spec := range specs {
		cs := clausesOf(spec)
		for i := range rd.Blocks {
			checkClauses(t, rd, i, cs, &reused)
		}
	}
}

// TestContainsInner: Inner literals in lines that start or end with a
// value (a template whose edges may hold the literal: its values are
// searched, then the line), in a clause with a literal that crosses into
// a value.
func TestContainsInner(t *testing.T) {
	var in strings.Builder
	words := []string{"declined", "payment declined now", "ok", "declined twice declined", "d"}
	for i := range 900 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&in, "%s n=%d took %dms\n", words[i%5], i%40, i%9)
		default:
			fmt.Fprintf(&in, "lvl=warn n=%d took %dms %s\n", i%40, i%9, words[i/3%5])
		}
	}
	checkLinesClauses(t, in.String(), [][][]string{
		{{"<_>declined<_>"}}, {{"<_>declined<_>", "n=12"}}, {{"n=1", "<_>d<_>"}, {"<_>ok<_>", "<_>twice<_>"}},
		{{"(?i)<_>DECLINED<_>", "(?i)N=3"}}, {{"<_>lvl<_>", "<_>ms<_>"}},
	})
}

// TestNewestWithoutClauses: a read of the newest few rows of a time
// range, without clauses, makes those rows' lines alone: the same as the
// block's rows read whole.
func TestNewestWithoutClauses(t *testing.T) {
	rd := clausePart(t)
	var reused part.Block
	for i := range rd.Blocks {
		var all part.Block
		if err := rd.ReadLines(i, &all, &part.LineRead{}); err != nil {
			t.Fatal(err)
		}
		rows := timedLines(&all)
		lo, hi := rows[len(rows)/4].time, rows[len(rows)*3/4].time
		var in []timedLine
		for _, r := range rows {
			if r.time >= lo && r.time <= hi {
				in = append(in, r)
			}
		}
		for _, n := range []int{1, 7, 100000} {
			if err := rd.ReadLines(i, &reused, &part.LineRead{Newest: n, From: lo, To: hi}); err != nil {
				t.Fatal(err)
			}
			if got, want := timedLines(&reused), in[max(0, len(in)-n):]; !slices.Equal(got, want) {
				t.Fatalf("block %d: newest %d: %d rows, want %d, or other rows", i, n, len(got), len(want))
			}
		}
	}
}

// TestContainsWholeHex: a literal that is a whole value of a hex column
// (a trace id) is compared with the values' bytes: found exactly, in
// capitals only when folding, and not as a longer or shorter text.
func TestContainsWholeHex(t *testing.T) {
	rd := clausePart(t)
	var blk part.Block
	if err := rd.ReadLines(0, &blk, &part.LineRead{}); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, r := range blk.Rows {
		if i := strings.Index(string(r.Line), `"id":"`); i >= 0 {
			id = string(r.Line[i+6 : i+6+16])
			break
		}
	}
	if id == "" {
		t.Fatal("no id in block 0")
	}
	var reused part.Block
	for _, c := range [][][]string{{{id}}, {{strings.ToUpper(id)}}, {{"(?i)" + strings.ToUpper(id)}}, {{id + "0"}}, {{id[1:]}}, {{id, "zzz"}}} {
		cs := clausesOf(c)
		for i := range rd.Blocks {
			checkClauses(t, rd, i, cs, &reused)
		}
	}
}

// TestContainsClausesRandom: random clauses of literals cut from the
// part's own lines (so that they are found in values, in gaps and across
// boundaries), some folding, checked as TestContainsClauses checks.
func TestContainsClausesRandom(t *testing.T) {
	rd := clausePart(t)
	var lines []string
	for i := range rd.Blocks {
		var b part.Block
		if err := rd.ReadLines(i, &b, &part.LineRead{}); err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Rows {
			lines = append(lines, string(r.Line))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var reused part.Block
	n := 300
	if testing.Short() {
		n = 50
	}
	for range n {
		var spec [][]string
		for range 1 + rng.IntN(3) {
			var alts []string
			for range 1 + rng.IntN(4) {
				l := lines[rng.IntN(len(lines))]
				a := rng.IntN(len(l))
				lit := l[a : a+1+rng.IntN(min(12, len(l)-a))]
				if rng.IntN(4) == 0 {
					lit = "(?i)" + strings.ToUpper(lit)
				}
				alts = append(alts, lit)
			}
			spec = append(spec, alts)
		}
		cs := clausesOf(spec)
		for i := range rd.Blocks {
			checkClauses(t, rd, i, cs, &reused)
		}
	}
}

// BenchmarkContains counts the rows of every block holding clauses of
// alternatives in values (service and host, dictionaries; latency, a
// decimal column; ts, a time column of epoch milliseconds), as a count of
// a|b|c reads them.
func BenchmarkContains(b *testing.B) {
	blocks, n := benchRows(b)
	fs := vfs.NewMem()
	writePart(b, fs, "p.part", blocks)
	rd, err := part.Open(fs, "p.part")
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	for _, bc := range []struct {
		name    string
		clauses [][]string
	}{
		{"alts=1", [][]string{{"s3"}}},
		{"alts=2", [][]string{{"s3", "h7"}}},
		{"alts=3", [][]string{{"s3", "h7", "12.5"}}},
		{"alts=2x2", [][]string{{"s3", "h7"}, {"h1", "s5"}}},
		{"alts=2,time", [][]string{{"s3", "4640001"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var blk part.Block
			q := part.LineRead{Contains: clausesOf(bc.clauses)}
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				for i := range rd.Blocks {
					if _, err := rd.CountLines(i, &blk, &q); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestCountByColumn checks counts where one column decides most rows
// (a count by the column's bits alone) against the lines, on blocks
// where the column is also read by a template whose rows all match (the
// literal in its gaps), and then also by a template with two values in
// it (a repeated key): either must send the count back to the rows. A
// constant column (svc) whose bits are all ones, past its values too,
// is counted by its values.
func TestCountByColumn(t *testing.T) {
	for _, repeated := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(4, 4))
		var in strings.Builder
		words := []string{"alpha zz", "beta", "gamma zz q", "delta q", "eps"}
		for i := range 1500 {
			w := words[rng.IntN(len(words))]
			ts := 1768464000000 + int64(i)*100
			switch i % 5 {
			case 0, 1:
				fmt.Fprintf(&in, `{"ts":%d,"svc":"api","key":"%s %d"}`+"\n", ts, w, i)
			case 2:
				fmt.Fprintf(&in, `{"ts":%d,"svc":"api","zz":1,"key":"%s"}`+"\n", ts, w)
			case 3:
				if repeated {
					fmt.Fprintf(&in, `{"ts":%d,"svc":"api","key":"%s","key":"%s"}`+"\n", ts, w, words[rng.IntN(len(words))])
					break
				}
				fallthrough
			default:
				fmt.Fprintf(&in, `{"ts":%d,"svc":"api","other":"%s"}`+"\n", ts, words[1+rng.IntN(2)*3])
			}
		}
		fs := vfs.NewMem()
		writePart(t, fs, "c.part", encoded(t, "auto", []byte(in.String())))
		rd, err := part.Open(fs, "c.part")
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range [][][]string{{{"zz"}}, {{"q"}}, {{"zz"}, {"q"}}, {{"beta"}}, {{"zz", "eps"}}, {{`"key":"gamma`}}, {{"1"}}, {{"api"}}} {
			cs := clausesOf(spec)
			for i := range rd.Blocks {
				checkClauses(t, rd, i, cs, nil)
			}
		}
		rd.Close()
	}
}
