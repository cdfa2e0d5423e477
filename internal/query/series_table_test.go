package query

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicelog/sluice/internal/store"
)

// TestSeriesTable checks the table against a map: every key added is
// found with its series, no other key is, and the series come back in
// the order they were added, across many growths.
func TestSeriesTable(t *testing.T) {
	var tab seriesTable
	want := map[string]*rangeSeries{}
	var order []*rangeSeries
	r := rand.New(rand.NewSource(1))
	key := []byte{}
	for i := range 50000 {
		key = fmt.Appendf(key[:0], "host\xffnode-%d\xff", r.Intn(30000))
		if i%7 == 0 {
			key = key[:0] // the empty key is a key too
		}
		got := tab.get(key)
		if got != want[string(key)] {
			t.Fatalf("get(%q) = %p, want %p", key, got, want[string(key)])
		}
		if got == nil {
			s := &rangeSeries{}
			if k := tab.add(key, s); k != string(key) {
				t.Fatalf("add(%q) kept %q", key, k)
			}
			want[string(key)] = s
			order = append(order, s)
		}
	}
	if tab.len() != len(want) {
		t.Fatalf("len %d, want %d", tab.len(), len(want))
	}
	for i, s := range tab.all() {
		if s != order[i] {
			t.Fatalf("series %d out of order", i)
		}
	}
	n := 0
	tab.each(func(k string, s *rangeSeries) {
		if want[k] != s {
			t.Fatalf("each: %q has %p, want %p", k, s, want[k])
		}
		n++
	})
	if n != len(want) {
		t.Fatalf("each visited %d, want %d", n, len(want))
	}
	for i := range 1000 {
		key = fmt.Appendf(key[:0], "host\xffnode-%d\xff", 30000+i)
		if s := tab.get(key); s != nil {
			t.Fatalf("get(%q) of a key never added = %p", key, s)
		}
	}
	// A key kept by the table does not change when the caller's buffer
	// does.
	var small seriesTable
	buf := []byte("a\xffb\xff")
	k := small.add(buf, &rangeSeries{})
	buf[0] = 'z'
	if k != "a\xffb\xff" || small.getString("a\xffb\xff") == nil || small.get(buf) != nil {
		t.Fatalf("kept key %q changed with the buffer", k)
	}
}

// BenchmarkSeriesTable adds a sample to one of n series per row, as a
// high-cardinality range aggregation does, in the table and in the Go
// map it replaced.
func BenchmarkSeriesTable(b *testing.B) {
	for _, n := range []int{1000, 65536, 400000, 1 << 20} {
		r := rand.New(rand.NewSource(1))
		keys := make([][]byte, 1<<20)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "kubernetes_host\xffip-10-0-%d-%d.ec2.internal\xff", r.Intn(n)/256, r.Intn(256))
			if n == len(keys) { // every row its own series (a pod name per line)
				keys[i] = fmt.Appendf(nil, "kubernetes_pod_name\xffreports-%08x-%d\xff", r.Uint32(), i)
			}
		}
		b.Run(fmt.Sprintf("table/%d", n), func(b *testing.B) {
			for range b.N {
				var tab seriesTable
				for _, k := range keys {
					s := tab.get(k)
					if s == nil {
						s = &rangeSeries{}
						s.n = s.one[:1:1]
						tab.add(k, s)
					}
					s.n[0]++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/row")
		})
		b.Run(fmt.Sprintf("map/%d", n), func(b *testing.B) {
			for range b.N {
				m := map[string]*rangeSeries{}
				for _, k := range keys {
					s := m[unsafe.String(unsafe.SliceData(k), len(k))]
					if s == nil {
						s = &rangeSeries{n: make([]float64, 1)}
						m[string(k)] = s
					}
					s.n[0]++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/row")
		})
	}
}

// TestRangeSeriesLayout: a one-step series' hot fields share its first
// cache line, and the struct's size keeps every series of a chunk on a
// line boundary.
func TestRangeSeriesLayout(t *testing.T) {
	var s rangeSeries
	if sz := unsafe.Sizeof(s); sz%64 != 0 {
		t.Errorf("rangeSeries is %d bytes, not a multiple of 64", sz)
	}
	if end := unsafe.Offsetof(s.v) + unsafe.Sizeof(s.v); end > 64 {
		t.Errorf("one, n and v end at byte %d, past the first cache line", end)
	}
}

// TestSeriesLabelsWithSeparator: a label value holding the byte 0xff,
// which separates a series key's names and values (a line that is no
// UTF-8), gives a series with that value, not labels misread from its
// key (keyHolds), on the row path and the columnar one.
func TestSeriesLabelsWithSeparator(t *testing.T) {
	st := openMem(t)
	// c first: a sweep has batched it when it meets the separator.
	lines := "{\"ts\":\"2026-01-15T08:00:00Z\",\"service\":\"api\",\"v\":\"c\"}\n" +
		"{\"ts\":\"2026-01-15T08:00:01Z\",\"service\":\"api\",\"v\":\"a\xffb\"}\n" +
		"{\"ts\":\"2026-01-15T08:00:02Z\",\"service\":\"api\",\"v\":\"a\xffb\"}\n"
	appendText(t, st, lines)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	sn := st.Snapshot()
	defer sn.Release()
	at := time.Date(2026, 1, 15, 8, 1, 0, 0, time.UTC).UnixNano()
	for _, q := range []string{
		`sum by (v) (count_over_time({service="api"} | json v [1h]))`,
		`sum by (v) (count_over_time({service="api"} | regexp "\"v\":\"(?P<v>[^\"]*)\"" [1h]))`,
	} {
		for _, ref := range []bool{false, true} {
			res, err := (&Engine{workers: 1, reference: ref}).Exec(context.Background(), sn, Params{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			got := map[string]float64{}
			for _, s := range res.Vector {
				if len(s.Labels) != 1 || s.Labels[0].Name != "v" {
					t.Fatalf("%s (reference %v): labels %q", q, ref, s.Labels)
				}
				got[s.Labels[0].Value] = s.Point.Value
			}
			if len(got) != 2 || got["c"] != 1 || got["a\xffb"] != 2 && got["a\ufffdb"] != 2 {
				t.Errorf("%s (reference %v): %v", q, ref, got)
			}
		}
	}
	// A count of distinct values of one label, counted by key hashes
	// alone (the separator in a value changes nothing there).
	q := `count(sum by (v) (count_over_time({service="api"} | json v [1h])))`
	for _, ref := range []bool{false, true} {
		res, err := (&Engine{workers: 1, reference: ref}).Exec(context.Background(), sn, Params{Tenant: store.DefaultTenant, Query: q, Start: at, End: at, Instant: true})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(res.Vector) != 1 || res.Vector[0].Point.Value != 2 {
			t.Errorf("%s (reference %v): %v", q, ref, res.Vector)
		}
	}
}

// TestKeySet: a set of keys by their hashes counts each key once, in
// one set or across a union, whichever is larger.
func TestKeySet(t *testing.T) {
	var tbl seriesTable
	fill := func(s *keySet, from, to int) {
		for i := from; i < to; i++ {
			s.add(tbl.hashString(fmt.Sprint("user-", i)))
		}
	}
	var a, b, c keySet
	if a.touch([]uint64{1, 2}) != 0 { // no slots yet: none read
		t.Fatal("an empty set's touch read a slot")
	}
	fill(&a, 0, 100000)
	// Any hash falls in the slots.
	a.touch([]uint64{1, 1 << 63, ^uint64(0)})
	fill(&a, 0, 1000) // again: no new key
	if a.used != 100000 {
		t.Fatalf("%d keys, want 100000", a.used)
	}
	fill(&b, 90000, 95000)
	b.union(&a) // the larger into the smaller's place
	if b.used != 100000 || a.used != 0 {
		t.Fatalf("union: %d keys (%d left in the other), want 100000", b.used, a.used)
	}
	fill(&c, 99000, 300000) // past 256 Ki slots: it grows four times
	b.union(&c)
	if b.used != 300000 {
		t.Fatalf("union: %d keys, want 300000", b.used)
	}
	fill(&b, 0, 300000) // again: no new key
	var empty keySet
	b.union(&empty)
	if b.used != 300000 {
		t.Fatalf("union with none: %d keys", b.used)
	}
}

// TestKeySlotPool: slot arrays let go are handed out again empty, to a
// set of their length only, and the pool holds no more than its bound.
func TestKeySlotPool(t *testing.T) {
	n := minPooledSlots
	s := keySlotPool.take(n)
	for i := range s {
		s[i] = keySlot{h1: uint64(i) + 1, h2: 7}
	}
	keySlotPool.give(s)
	if other := keySlotPool.take(2 * n); &other[0] == &s[0] {
		t.Fatal("an array went to a set of another length")
	}
	got := keySlotPool.take(n)
	if &got[0] != &s[0] {
		t.Fatal("the array let go was not handed out again")
	}
	for i, sl := range got {
		if sl != (keySlot{}) {
			t.Fatalf("slot %d holds %v", i, sl)
		}
	}
	for range maxPooledSlotBytes/(16*n) + 2 {
		keySlotPool.give(make([]keySlot, n))
	}
	if b := keySlotPool.bytes; b > maxPooledSlotBytes {
		t.Fatalf("the pool holds %d bytes, more than %d", b, maxPooledSlotBytes)
	}
	for len(keySlotPool.free[n]) > 0 { // leave it as the other tests found it
		keySlotPool.take(n)
	}
}

// A range series is a multiple of 64 bytes, so that every one in
// seriesAlloc's chunks starts a cache line, and a series of a sum or a
// count keeps nothing beside its windows.
func TestRangeSeriesSize(t *testing.T) {
	if n := unsafe.Sizeof(rangeSeries{}); n%64 != 0 || n > 128 {
		t.Errorf("rangeSeries is %d bytes, want a multiple of 64 of at most 128", n)
	}
	var a seriesAlloc
	for _, op := range []rangeOp{opSum, opMin, opMax, opAvg} {
		if s := a.series(nil, op, 1); s.seriesMore != nil {
			t.Errorf("op %d: a series keeps more than its windows", op)
		}
	}
	for _, op := range []rangeOp{opFirst, opLast, opVar, opList, opValues} {
		if s := a.series(nil, op, 3); s.seriesMore == nil {
			t.Errorf("op %d: a series keeps nothing beside its windows", op)
		}
	}
}

// TestSeriesTableSeal: a sealed table's series stay readable in order,
// its slots go to tableSlotPool cleared (no series kept alive by the
// pool), and adding to it is refused.
func TestSeriesTableSeal(t *testing.T) {
	var tb seriesTable
	const n = minPooledSlots
	var key []byte
	for i := range n {
		key = fmt.Appendf(key[:0], "user-%d", i)
		tb.add(key, &rangeSeries{one: [2]float64{float64(i), 0}})
	}
	slots := tb.slots
	tb.seal()
	if tb.len() != n || len(tb.all()) != n || tb.all()[n-1].one[0] != n-1 {
		t.Fatalf("sealed: %d series, want %d in order", tb.len(), n)
	}
	got := tableSlotPool.take(len(slots))
	if &got[0] != &slots[0] {
		t.Fatal("the sealed table's slots were not handed out again")
	}
	for i, sl := range got {
		if sl != (tableSlot{}) {
			t.Fatalf("slot %d holds %v", i, sl)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a sealed table took a new series")
		}
	}()
	tb.add([]byte("one more"), &rangeSeries{})
}

// TestSeriesTableUnion: a union merges the series of keys both tables
// hold and appends the others in the other table's order, whether it
// keeps t's table of slots for more unions (not last) or only its order
// (last, t sealed after), also into an empty table.
func TestSeriesTableUnion(t *testing.T) {
	fill := func(keys ...int) *seriesTable {
		var tb seriesTable
		for _, k := range keys {
			tb.add(fmt.Appendf(nil, "k%d", k), &rangeSeries{one: [2]float64{1, float64(k)}})
		}
		return &tb
	}
	merge := func(into, s *rangeSeries) { into.one[0] += s.one[0] }
	for _, last := range []bool{false, true} {
		var empty seriesTable
		empty.union(fill(3, 1), merge, false)
		a := fill(1, 2, 3)
		a.union(fill(4, 2, 5), merge, false)
		a.union(fill(5, 6, 1), merge, last)
		empty.union(fill(7), merge, last)
		var none seriesTable
		none.union(fill(8, 9, 10), merge, last)
		// More than a batch of keys into an empty table.
		var many []int
		for k := range 600 {
			many = append(many, 100+k)
		}
		var none2 seriesTable
		none2.union(fill(many...), merge, last)
		if none2.len() != 600 || none2.all()[599].one[1] != 699 {
			t.Errorf("last %v: %d series into an empty table, want 600", last, none2.len())
		}
		var got []string
		for _, tb := range []*seriesTable{a, &empty, &none} {
			tb.each(func(k string, s *rangeSeries) { got = append(got, fmt.Sprintf("%s=%g", k, s.one[0])) })
		}
		want := "[k1=2 k2=2 k3=1 k4=1 k5=2 k6=1 k3=1 k1=1 k7=1 k8=1 k9=1 k10=1]"
		if fmt.Sprint(got) != want || a.len() != 6 || empty.len() != 3 || none.len() != 3 {
			t.Errorf("last %v: %v (%d, %d and %d series), want %s", last, got, a.len(), empty.len(), none.len(), want)
		}
		if a.sealed != last {
			t.Errorf("last %v: sealed %v", last, a.sealed)
		}
	}
}
