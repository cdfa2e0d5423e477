package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// scanLines returns the lines of every stream of a tenant, stream by
// stream, as Scan yields them.
func scanLines(t *testing.T, sn *Snapshot, opts ScanOptions) []string {
	var lines []string
	t.Helper()
	for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
		err := sn.Scan(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, opts, func(r *rows.Row, _ []string) error {
			lines = append(lines, string(r.Line))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return lines
}

// partsAndHead stores 4000 lines, 3000 in parts and the rest in the head,
// and returns them with a snapshot (released, and the store closed, when
// the test ends).
func partsAndHead(t *testing.T, seed uint64) ([]string, *Snapshot) {
	t.Helper()
	s := open(t, vfs.NewMem(), Options{HeadBytes: 32 << 10})
	t.Cleanup(func() { s.Close() })
	lines := genLines(4000, seed)
	appendLines(t, s, "default", lines[:3000], 250)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	appendLines(t, s, "default", lines[3000:], 250) // some in the head
	sn := s.Snapshot()
	t.Cleanup(sn.Release)
	return lines, sn
}

func TestScanBackwardAndTokens(t *testing.T) {
	lines, sn := partsAndHead(t, 3)

	fwd := scanLines(t, sn, ScanOptions{})
	if lo := scanLines(t, sn, ScanOptions{LinesOnly: true}); !slices.Equal(lo, fwd) {
		t.Fatal("a scan of lines only yields other lines")
	}
	if len(fwd) != len(lines) {
		t.Fatalf("forward scan: %d lines, want %d", len(fwd), len(lines))
	}
	// Backward is forward reversed per stream, ties included.
	var want []string
	for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
		var one []string
		_ = sn.Scan(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, ScanOptions{}, func(r *rows.Row, _ []string) error {
			one = append(one, string(r.Line))
			return nil
		})
		slices.Reverse(one)
		want = append(want, one...)
	}
	bwd := scanLines(t, sn, ScanOptions{Backward: true})
	if !slices.Equal(bwd, want) {
		t.Fatal("a backward scan is not the forward scan reversed")
	}

	// A token no line holds prunes every block of the parts; the head
	// still yields its rows, which the caller filters.
	absent := scanLines(t, sn, ScanOptions{Tokens: []uint64{part.TokenHash([]byte("zebra"))}})
	if len(absent) == 0 || len(absent) > 1000 {
		t.Errorf("with an absent token: %d rows, want only the head's", len(absent))
	}
	// A present token keeps every block that holds it.
	got := scanLines(t, sn, ScanOptions{Tokens: []uint64{part.TokenHash([]byte("WARN"))}})
	var n, m int
	for _, l := range lines {
		if strings.Contains(l, " WARN ") {
			n++
		}
	}
	for _, l := range got {
		if strings.Contains(l, " WARN ") {
			m++
		}
	}
	if m != n {
		t.Errorf("token scan yields %d lines with WARN, want %d", m, n)
	}

	// A needle: a whole trace id, as long as the blocks' longest token,
	// rules out every block of the parts but the one that holds it.
	var id string
	for _, l := range lines[:3000] {
		if i := strings.Index(l, `"trace_id":"`); i >= 0 {
			id = l[i+12 : i+44]
			break
		}
	}
	got = scanLines(t, sn, ScanOptions{Needles: AppendLiteralNeedles(nil, []byte(id))})
	found := slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, id) })
	if !found || len(got) > 2000 {
		t.Errorf("needle %s: %d rows, found %v; want the block that holds it (and the head's rows)", id, len(got), found)
	}
}

// TestScanAny: a group of literals keeps the blocks that may hold any
// of them and rules out those that can hold none.
func TestScanAny(t *testing.T) {
	lines, sn := partsAndHead(t, 3)
	all := scanLines(t, sn, ScanOptions{})
	headRows := len(scanLines(t, sn, ScanOptions{Tokens: []uint64{part.TokenHash([]byte("zebra"))}}))
	probes := func(lits ...string) []Probe {
		var g []Probe
		for _, l := range lits {
			g = append(g, NewProbe([]byte(l)))
		}
		return g
	}
	// No literal of the group in any line: the head's rows come, and
	// those of the few blocks where the filter has a false positive.
	if got := scanLines(t, sn, ScanOptions{Any: [][]Probe{probes(" zebra ", " giraffe ")}}); len(got) < headRows || len(got) > headRows+(len(all)-headRows)/4 {
		t.Errorf("absent group: %d rows, want the head's %d and few more (of %d)", len(got), headRows, len(all))
	}
	// One literal present: every line holding it comes.
	got := scanLines(t, sn, ScanOptions{Any: [][]Probe{probes(" zebra ", " WARN ")}})
	count := func(ls []string) (n int) {
		for _, l := range ls {
			if strings.Contains(l, " WARN ") {
				n++
			}
		}
		return n
	}
	if count(got) != count(lines) {
		t.Errorf("group with WARN: %d lines with WARN, want %d", count(got), count(lines))
	}
	// A literal without tokens rules nothing out, so neither does its group.
	if got := scanLines(t, sn, ScanOptions{Any: [][]Probe{probes(" zebra ", "-")}}); len(got) != len(all) {
		t.Errorf("group with a probe that rules nothing out: %d rows, want all %d", len(got), len(all))
	}
}

// TestScanClauses: a scan with Contains clauses of alternatives yields
// every row holding one literal of each clause (the head's rows all
// come, for the caller to check) and, without lines, the same rows;
// backward for the newest few, the newest of them.
func TestScanClauses(t *testing.T) {
	lines, sn := partsAndHead(t, 5)
	cs := []Clause{{{Text: []byte("WARN plain")}, {Text: []byte(`"status":500`)}}, {{Text: []byte("api")}, {Text: []byte("line 1")}}}
	holds := func(l string) bool {
		return (strings.Contains(l, "WARN plain") || strings.Contains(l, `"status":500`)) && (strings.Contains(l, "api") || strings.Contains(l, "line 1"))
	}
	want := 0
	for _, l := range lines {
		if holds(l) {
			want++
		}
	}
	for _, noLines := range []bool{false, true} {
		got := 0
		for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
			err := sn.Scan(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, ScanOptions{LinesOnly: true, Contains: cs, NoLines: noLines}, func(r *rows.Row, _ []string) error {
				if r.Line == nil && !noLines {
					t.Fatal("a row without its line")
				}
				if r.Line == nil || holds(string(r.Line)) {
					got++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if got != want {
			t.Errorf("NoLines %v: %d rows hold the clauses, want %d", noLines, got, want)
		}
	}
	// The newest 3 of each stream: the stored rows yielded are the
	// newest stored ones holding the clauses.
	for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
		var all, newest []string
		for _, o := range []ScanOptions{{LinesOnly: true, Backward: true}, {LinesOnly: true, Backward: true, Contains: cs, Newest: 3}} {
			var out []string
			err := sn.Scan(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, o, func(r *rows.Row, _ []string) error {
				if holds(string(r.Line)) {
					out = append(out, string(r.Line))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if o.Newest == 0 {
				all = out
			} else {
				newest = out
			}
		}
		if len(newest) < min(3, len(all)) || !slices.Equal(newest[:min(3, len(all))], all[:min(3, len(all))]) {
			t.Errorf("stream %s: newest %q, want the first 3 of %q", ls.Key, newest, all[:min(3, len(all))])
		}
	}
}

// TestScanFirstNewest: a backward scan that reads each stored block's
// newest rows first (FirstNewest) yields the rows a plain one does, in
// its order, with clauses or without, whether the caller stops early or
// reads on; with NewestFloor, the rows at or after the floor.
func TestScanFirstNewest(t *testing.T) {
	_, sn := partsAndHead(t, 6)
	cs := []Clause{{{Text: []byte("WARN")}, {Text: []byte("api")}}}
	for _, contains := range [][]Clause{nil, cs} {
		for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
			scan := func(o ScanOptions, stop int) []string {
				var out []string
				o.LinesOnly, o.Backward, o.Contains = true, true, contains
				err := sn.Scan(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, o, func(r *rows.Row, _ []string) error {
					out = append(out, fmt.Sprintf("%d %s", r.Time, r.Line))
					if len(out) == stop {
						return errStop
					}
					return nil
				})
				if err != nil && err != errStop {
					t.Fatal(err)
				}
				return out
			}
			all := scan(ScanOptions{}, -1)
			if len(all) < 20 {
				t.Fatalf("stream %s: %d rows: the test tests little", ls.Key, len(all))
			}
			for _, first := range []int{1, 3, 7, 1000} {
				if got := scan(ScanOptions{FirstNewest: first}, -1); !slices.Equal(got, all) {
					t.Errorf("stream %s, FirstNewest %d: %d rows, want the %d of a plain scan", ls.Key, first, len(got), len(all))
				}
				if got := scan(ScanOptions{FirstNewest: first}, 10); !slices.Equal(got, all[:10]) {
					t.Errorf("stream %s, FirstNewest %d, stopped at 10: %q", ls.Key, first, got)
				}
				// A floor at the time of the 15th row: the rows from
				// it on come first, as in a plain scan.
				var floor int64
				fmt.Sscan(all[14], &floor)
				n := 0
				for n < len(all) {
					var t0 int64
					fmt.Sscan(all[n], &t0)
					if t0 < floor {
						break
					}
					n++
				}
				got := scan(ScanOptions{FirstNewest: first, NewestFloor: func() (int64, bool) { return floor, true }}, -1)
				if len(got) < n || !slices.Equal(got[:n], all[:n]) {
					t.Errorf("stream %s, FirstNewest %d, floor %d: %d rows, the first %d not a plain scan's", ls.Key, first, floor, len(got), n)
				}
			}
		}
	}
}

var errStop = errors.New("stop")

// TestScanBlockCount: a scan that counts the stored blocks it may counts
// as many rows as it would yield, and yields the others.
func TestScanBlockCount(t *testing.T) {
	_, sn := partsAndHead(t, 4)
	opts := ScanOptions{LinesOnly: true, NoLines: true, Contains: []Clause{{{Text: []byte("request 1")}}}}
	scan := func(opts ScanOptions) (yielded int) {
		for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
			err := sn.Scan(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, opts, func(r *rows.Row, _ []string) error {
				if r.Line == nil || strings.Contains(string(r.Line), "request 1") {
					yielded++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return yielded
	}
	countHalf(t, scan, opts, scan(opts))
}

// countHalf scans with opts, BlockCount counting every other stored
// block, and fails unless the rows yielded and counted come to want.
func countHalf(t *testing.T, scan func(ScanOptions) int, opts ScanOptions, want int) {
	t.Helper()
	var counted, blocks int
	half := true
	opts.BlockCount = func(lo, hi int64) func(int) error {
		half = !half // every other block
		if half {
			return nil
		}
		return func(n int) error {
			counted += n
			blocks++
			return nil
		}
	}
	yielded := scan(opts)
	if blocks == 0 || yielded+counted != want {
		t.Fatalf("%d rows yielded and %d counted in %d blocks, want %d in all", yielded, counted, blocks, want)
	}
}

// TestScanCountAll: a scan that counts every row counts from the index
// the stored blocks BlockCount takes, and yields the others' rows and the
// head's: as many rows in all as a plain scan yields.
func TestScanCountAll(t *testing.T) {
	_, sn := partsAndHead(t, 4)
	scan := func(opts ScanOptions) (yielded int) {
		for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
			err := sn.Scan(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, opts, func(*rows.Row, []string) error {
				yielded++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return yielded
	}
	countHalf(t, scan, ScanOptions{LinesOnly: true, Meta: true, CountAll: true}, scan(ScanOptions{LinesOnly: true, Meta: true}))
}

// TestShards: the shares of a stream (Shard) hold each of its rows once,
// for Scan and for ScanColumns, and the shares of ScanColumns come
// newest block first.
func TestShards(t *testing.T) {
	lines, sn := partsAndHead(t, 9)
	whole := scanLines(t, sn, ScanOptions{})
	slices.Sort(whole)
	if len(whole) != len(lines) {
		t.Fatalf("%d lines scanned, %d stored", len(whole), len(lines))
	}
	for n := 1; n <= 3; n++ {
		var got, cols []string
		var blocks int
		for i := range n {
			got = append(got, scanLines(t, sn, ScanOptions{Shard: Shard{I: i, N: n}})...)
			for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
				last := int64(math.MaxInt64)
				err := sn.ScanColumns(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, Shard{I: i, N: n}, NewestFirst,
					func(b *part.Block) error {
						blocks++
						if _, hi := b.TimeRange(); hi > last {
							t.Errorf("shard %d/%d: a block with rows up to %d after one up to %d", i, n, hi, last)
						} else {
							last = hi
						}
						var cur part.Cursor
						cur.Start(b, nil)
						if err := b.DecodeTimes(); err != nil {
							return err
						}
						for k := range b.NumRows() {
							tm := b.RowTemplate(k)
							line, err := b.AppendLine(nil, tm, &cur, b.RowTime(k))
							if err != nil {
								return err
							}
							cols = append(cols, string(line))
							cur.Next(tm)
						}
						return nil
					}, nil,
					func(r *rows.Row, _ []string) error {
						cols = append(cols, string(r.Line))
						return nil
					})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		slices.Sort(got)
		slices.Sort(cols)
		if !slices.Equal(got, whole) {
			t.Errorf("%d shards: Scan read %d lines, want the %d of the whole once each", n, len(got), len(whole))
		}
		if !slices.Equal(cols, whole) {
			t.Errorf("%d shards: ScanColumns read %d lines, want the %d of the whole once each", n, len(cols), len(whole))
		}
		if blocks == 0 {
			t.Errorf("%d shards: no stored block read", n)
		}
	}
}

// TestCountIndexed: where the index alone counts a stream's rows in a
// range (CountIndexed ok), the count is the rows a scan yields, share by
// share; and it is ok for the streams whose rows are all in stored blocks
// within the range, not for a range that cuts a block or meets the head's
// rows.
func TestCountIndexed(t *testing.T) {
	_, sn := partsAndHead(t, 11)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 1))
	okAll, okSome, notOK := 0, 0, 0
	for round := range 40 {
		from, to := int64(math.MinInt64), int64(math.MaxInt64)
		if round > 0 {
			// Around the stored rows' times (genLines: from 23:59 on, a
			// millisecond every third line).
			base := time.Date(2026, 1, 15, 23, 59, 0, 0, time.UTC).UnixNano()
			from = base + rng.Int64N(int64(1500*time.Millisecond))
			to = from + rng.Int64N(int64(1500*time.Millisecond))
		}
		for n := 1; n <= 3; n++ {
			for i := range n {
				shard := Shard{I: i, N: n}
				for _, ls := range sn.Streams("default", from, to) {
					got, ok := sn.CountIndexed("default", ls.Key, from, to, shard)
					if !ok {
						notOK++
						continue
					}
					if round == 0 {
						okAll++
					} else {
						okSome++
					}
					want := 0
					err := sn.Scan(ctx, "default", ls, from, to, ScanOptions{Shard: shard}, func(*rows.Row, []string) error {
						want++
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("%s in [%d, %d], share %d/%d: %d rows counted from the index, %d scanned", ls.Key, from, to, i, n, got, want)
					}
				}
			}
		}
	}
	if okAll == 0 || okSome == 0 || notOK == 0 {
		t.Errorf("counted from the index over all time %d times, over a part of it %d, not %d: want each", okAll, okSome, notOK)
	}
}

// TestStreamsOfOnePart: where one part alone has a tenant's rows in a
// range, Streams takes its streams in its order, and they are those of
// the set and sort of every part and head (streamsMerged).
func TestStreamsOfOnePart(t *testing.T) {
	s := open(t, vfs.NewMem(), Options{HeadBytes: 32 << 10})
	t.Cleanup(func() { s.Close() })
	appendLines(t, s, "default", genLines(3000, 12), 250) // across midnight: a part a day
	appendLines(t, s, "team-b", genLines(500, 13), 250)
	// Streams of their own within a part's day, in a few rows each.
	var few []string
	for i := range 40 {
		few = append(few, fmt.Sprintf(`{"ts":"2026-01-15T23:59:00.%03dZ","service":"few%d","msg":"x"}`, 20*i, i))
	}
	appendLines(t, s, "default", few, 10)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// In the head: streams no part has.
	appendLines(t, s, "team-b", []string{`{"ts":"2026-01-15T23:59:00.300Z","service":"headonly","msg":"x"}`, `{"ts":"2026-01-16T00:00:00.100Z","service":"headonly2","msg":"x"}`}, 2)
	sn := s.Snapshot()
	t.Cleanup(sn.Release)
	rng := rand.New(rand.NewPCG(12, 1))
	base := time.Date(2026, 1, 15, 23, 59, 0, 0, time.UTC).UnixNano()
	fast := 0
	for round := range 200 {
		from := base + rng.Int64N(int64(1200*time.Millisecond)) - int64(100*time.Millisecond)
		to := from + rng.Int64N(int64(time.Second))
		if round == 0 {
			from, to = math.MinInt64, math.MaxInt64
		}
		for _, tenant := range []string{"default", "team-b", "nobody"} {
			if _, ok := sn.streamsOfOnePart(tenant, from, to); ok {
				fast++
			}
			got, want := sn.Streams(tenant, from, to), sn.streamsMerged(tenant, from, to)
			// The same streams, and each key its labels' String.
			if !slices.EqualFunc(got, want, func(a, b Stream) bool {
				return a.Key == b.Key && a.Key == a.Labels.String() && b.Key == b.Labels.String()
			}) || got == nil {
				t.Fatalf("%s in [%d, %d]: streams %v, want %v", tenant, from, to, got, want)
			}
		}
	}
	if fast < 100 {
		t.Errorf("one part alone answered %d times of 600", fast)
	}
}
