package part_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// TestBlockCache: reads served from a cache smaller than a part's
// headers give the rows uncached reads give, in any order and as a
// scan's; the cache stays in its budget, and a reader's headers leave
// it when the reader closes.
func TestBlockCache(t *testing.T) {
	var in strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&in, `{"ts":%d,"service":"s%d","level":"%s","msg":"m %d","k%d":%d}`+"\n",
			1768464000000+i, i%10, []string{"info", "error"}[i%3/2], i%7, i%13, i)
	}
	fs := vfs.NewMem()
	writePart(t, fs, "p.part", encoded(t, "auto", []byte(in.String())))
	plain, err := part.Open(fs, "p.part")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if len(plain.Blocks) < 10 {
		t.Fatalf("%d blocks, want 10", len(plain.Blocks))
	}
	// A read of each kind: lines, a count of the lines holding a
	// literal, the newest of them, and a columnar walk of the rows (the
	// last three take the rows' templates from a cached header's row
	// skeleton once one read has made it).
	cacheOf := map[*part.Reader]*part.BlockCache{}
	read := func(rd *part.Reader, i int, scan bool) (string, error) {
		if c := cacheOf[rd]; c != nil { // a read through a cache is pinned, as a store's snapshot pins it
			defer c.Leave(c.Enter())
		}
		var s strings.Builder
		b := part.Block{Scan: scan}
		if err := rd.ReadLines(i, &b, &part.LineRead{}); err != nil {
			return "", err
		}
		for _, r := range b.Rows {
			fmt.Fprintf(&s, "%d %s\n", r.Time, r.Line)
		}
		c := part.Block{Scan: scan}
		errs := []part.Clause{{{Text: []byte("error")}}}
		n, err := rd.CountLines(i, &c, &part.LineRead{Contains: errs})
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&s, "%d hold error\n", n)
		nw := part.Block{Scan: scan}
		if err := rd.ReadLines(i, &nw, &part.LineRead{Contains: errs, Newest: 2, From: math.MinInt64, To: math.MaxInt64}); err != nil {
			return "", err
		}
		for _, r := range nw.Rows {
			fmt.Fprintf(&s, "newest %d %s\n", r.Time, r.Line)
		}
		col := part.Block{Scan: scan}
		if err := rd.ReadColumns(i, &col); err != nil {
			return "", err
		}
		if err := col.DecodeTimes(); err != nil {
			return "", err
		}
		for k := range col.NumRows() {
			fmt.Fprintf(&s, "%d:%d ", col.RowTime(k), col.RowTemplate(k))
		}
		for tm := range col.NumTemplates() {
			fmt.Fprintf(&s, "t%d=%d ", tm, col.TemplateRows(tm))
		}
		// Every value of every column: the small ones decoded, from the
		// second read on, from the stream the cache keeps decompressed.
		for ci := range col.NumColumns() {
			if col.ColumnKind(ci) == part.ColumnTime {
				continue
			}
			for vi := range col.ColumnValues(ci) {
				v, _, err := col.Value(ci, vi, 0, nil)
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&s, "c%d:%q ", ci, v)
			}
		}
		return s.String(), nil
	}
	want := make([]string, len(plain.Blocks))
	for i := range want {
		if want[i], err = read(plain, i, false); err != nil {
			t.Fatal(err)
		}
	}

	// The budget of about half the headers.
	probe := part.NewBlockCache(1 << 30)
	rd, err := part.Open(fs, "p.part")
	if err != nil {
		t.Fatal(err)
	}
	rd.UseBlockCache(probe)
	cacheOf[rd] = probe
	if _, err := read(rd, 0, false); err != nil {
		t.Fatal(err)
	}
	one := probe.Used()
	rd.Close()
	if one == 0 || probe.Used() != 0 {
		t.Fatalf("one header holds %d bytes; after close %d", one, probe.Used())
	}
	budget := one * int64(len(want)) / 2
	c := part.NewBlockCache(budget)
	rd, err = part.Open(fs, "p.part")
	if err != nil {
		t.Fatal(err)
	}
	rd.UseBlockCache(c)
	cacheOf[rd] = c
	order := []int{}
	for i := range want {
		order = append(order, i)
	}
	for round := range 4 {
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			if got, err := read(rd, i, round == 3); err != nil || got != want[i] {
				t.Fatalf("round %d, block %d: rows differ from an uncached read (%v)", round, i, err)
			}
			if u := c.Used(); u > budget {
				t.Fatalf("cache holds %d bytes, budget %d", u, budget)
			}
		}
	}
	if c.Used() == 0 {
		t.Fatal("nothing cached")
	}
	// Readers at once, as a query's workers are: each of them finds,
	// adds and evicts while the others read (the race detector watches).
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for w := range 4 {
		wg.Go(func() {
			for k := range 3 * len(want) {
				i := (k*7 + w*3) % len(want)
				if got, err := read(rd, i, false); err != nil || got != want[i] {
					errs <- fmt.Sprintf("worker %d, block %d: rows differ from an uncached read (%v)", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if u := c.Used(); u > budget {
		t.Fatalf("cache holds %d bytes, budget %d", u, budget)
	}
	rd.Close()
	if u := c.Used(); u != 0 {
		t.Fatalf("%d bytes cached after the reader closed", u)
	}
	c.Leave(c.Enter()) // no read under way: what was retired is freed
	c.Close()
	if r, m := c.Resident(), c.Mappings(); r != 0 || m != 0 {
		t.Fatalf("%d bytes resident in %d mappings after the cache closed", r, m)
	}
}

// TestBlockCacheFreesAfterReads: what the cache held is freed once it has
// been evicted and every read that began before has left, not before: a
// view a read holds stays intact while others evict it, and is poisoned
// (a test binary's freed memory) once that read leaves.
func TestBlockCacheFreesAfterReads(t *testing.T) {
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, `{"ts":%d,"service":"s%d","msg":"message %d of a test, long enough to be stored apart %d"}`+"\n", 1768464000000+i, i%8, i, i*7919)
	}
	fs := vfs.NewMem()
	writePart(t, fs, "p.part", encoded(t, "auto", []byte(in.String())))
	msg := func(rd *part.Reader, i int) []byte {
		var b part.Block
		if err := rd.ReadColumns(i, &b); err != nil {
			t.Fatal(err)
		}
		for ci := range b.NumColumns() {
			if b.Names[ci] == "msg" {
				v, _, err := b.Value(ci, 0, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatal("no msg column")
		return nil
	}
	open := func(c *part.BlockCache) *part.Reader {
		rd, err := part.Open(fs, "p.part")
		if err != nil {
			t.Fatal(err)
		}
		rd.UseBlockCache(c)
		return rd
	}
	// A budget of about one block's header and message column.
	probe := part.NewBlockCache(1 << 30)
	rd := open(probe)
	if len(rd.Blocks) < 4 {
		t.Fatalf("%d blocks, want 4", len(rd.Blocks))
	}
	e := probe.Enter()
	msg(rd, 0)
	one := probe.Used()
	probe.Leave(e)
	rd.Close()
	probe.Close()

	c := part.NewBlockCache(one * 3 / 2)
	rd = open(c)
	defer rd.Close()
	first := c.Enter()
	v := msg(rd, 0)
	held := string(v)
	if !strings.HasPrefix(held, "message ") {
		t.Fatalf("block 0's first message %q", held)
	}
	other := c.Enter()
	for i := 1; i < len(rd.Blocks); i++ {
		msg(rd, i)
	}
	c.Leave(other)
	if string(v) != held {
		t.Fatalf("block 0's message freed while the read that holds it is under way: %q, was %q", v, held)
	}
	c.Leave(first)
	if string(v) == held {
		t.Fatal("block 0's message not freed once evicted and its read gone")
	}
	if u, r := c.Used(), c.Resident(); u > one*3/2 || r > u+4<<20 {
		t.Fatalf("%d bytes resident, %d of them held: more than the budget %d and the free buffers", r, u, one*3/2)
	}
}
