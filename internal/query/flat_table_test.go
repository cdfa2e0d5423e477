package query

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// flatFill adds rows of keys drawn from [from, to) with random samples
// to f, a batch at a time as flushFlat does, and the same rows to the
// series of want, as the series path does.
func flatFill(t *testing.T, f *flatTable, want map[string]*rangeSeries, r *rand.Rand, from, to, rows int) {
	t.Helper()
	var tbl seriesTable
	long := strings.Repeat("v", flatChunk/4+1) // a key of a chunk of its own
	var keys [][]byte
	var h1s, h2s []uint64
	flush := func() {
		f.touch(h1s, h2s)
		for i, k := range keys {
			sl, added := f.find(k, h1s[i], h2s[i])
			if _, ok := want[string(k)]; ok == added {
				t.Fatalf("find(%q): added %v, known before %v", k, added, ok)
			}
			v := float64(r.Intn(1000)) / 8
			if r.Intn(50) == 0 {
				v = math.NaN()
			}
			f.add(sl, v)
			s := want[string(k)]
			if s == nil {
				s = (&seriesAlloc{}).series(nil, f.op, 1)
				want[string(k)] = s
			}
			s.add(f.op, 0, 0, v)
		}
		keys, h1s, h2s = keys[:0], h1s[:0], h2s[:0]
	}
	for range rows {
		var k []byte
		switch n := from + r.Intn(to-from); {
		case n%997 == 0:
			k = []byte{} // the empty key is a key too
		case n%991 == 0:
			k = fmt.Appendf(nil, "user_id\xff%s-%d\xff", long, n)
		default:
			k = fmt.Appendf(nil, "user_id\xffuser-%d\xff", n)
		}
		h1, h2 := tbl.hash(k)
		keys, h1s, h2s = append(keys, k), append(h1s, h1), append(h2s, h2)
		if len(keys) == keyBatchRows {
			flush()
		}
	}
	flush()
}

// sameState reports whether a flat table's state and a series' agree,
// NaN equal to NaN.
func sameState(n, v float64, s *rangeSeries) bool {
	return n == s.n[0] && (v == s.v[0] || math.IsNaN(v) && math.IsNaN(s.v[0]))
}

// TestFlatTable checks the flat table against series fed the same rows:
// every key's count and value, across growths, a union of two tables
// (the larger taking the smaller's states) and the series made from it.
func TestFlatTable(t *testing.T) {
	for _, op := range []rangeOp{opSum, opMin, opMax, opAvg} {
		t.Run(fmt.Sprint(op), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(op)))
			a, b := &flatTable{op: op}, &flatTable{op: op}
			wantA, wantB := map[string]*rangeSeries{}, map[string]*rangeSeries{}
			flatFill(t, a, wantA, r, 0, 40000, 60000)
			if op == opSum {
				flatFill(t, b, wantB, r, 30000, 400000, 300000) // past 256 Ki slots
			} else {
				flatFill(t, b, wantB, r, 30000, 100000, 80000)
			}
			check := func(f *flatTable, want map[string]*rangeSeries) {
				t.Helper()
				n := 0
				f.each(func(k string, sl *flatSlot) {
					s := want[k]
					if s == nil || !sameState(sl.n, sl.v, s) {
						t.Fatalf("%q: n %v v %v, want %+v", k, sl.n, sl.v, s)
					}
					n++
				})
				if n != len(want) || f.used != n {
					t.Fatalf("%d states (used %d), want %d", n, f.used, len(want))
				}
			}
			check(a, wantA)
			check(b, wantB)
			for k, s := range wantA {
				if o := wantB[k]; o != nil {
					o.merge(op, s)
				} else {
					wantB[k] = s
				}
			}
			a.union(b) // the larger, b, takes a's states
			if b.used != 0 {
				t.Fatalf("union left %d states in the other", b.used)
			}
			check(a, wantB)
			// The series made from it: one per key, its state.
			tab := seriesTable{flat: a}
			if tab.len() != len(wantB) || tab.flat != nil {
				t.Fatalf("unflat: %d series, want %d", tab.len(), len(wantB))
			}
			tab.each(func(k string, s *rangeSeries) {
				if w := wantB[k]; !sameState(s.n[0], s.v[0], w) {
					t.Fatalf("series %q: %v %v, want %v %v", k, s.n[0], s.v[0], w.n[0], w.v[0])
				}
			})
			for k := range wantB {
				if tab.getString(k) == nil {
					t.Fatalf("series %q not found after unflat", k)
				}
			}
		})
	}
}

// TestFlatTouch: a table's touch reads no slot before it has any, and
// any hash falls in its slots.
func TestFlatTouch(t *testing.T) {
	f := &flatTable{op: opSum}
	if f.touch([]uint64{1, 2}, []uint64{3, 4}) != 0 {
		t.Fatal("an empty table's touch read a slot")
	}
	var tbl seriesTable
	for i := range 1000 {
		k := fmt.Appendf(nil, "k\xff%d\xff", i)
		h1, h2 := tbl.hash(k)
		f.find(k, h1, h2)
	}
	f.touch([]uint64{1, 1 << 63, ^uint64(0)}, []uint64{0, ^uint64(0), 1 << 57})
}

// TestFlatSameAsSeries: range aggregations at one step whose states are
// kept flat answer as the reference engine does, over keys of every
// kind (many, empty, a value that holds the separator), with rows taken
// alone (whose keys' states move to series) among the batched ones; and
// so do a top-k, a max and a min that read the states as they are
// (rangeAggregationK, rangeFold); and a top-k of states that nearly all
// tie (flatBestTied: keys of one row each, a few of two).
func TestFlatSameAsSeries(t *testing.T) {
	for _, shape := range []string{"odd", "even", "ties"} {
		odd := shape == "odd"
		st := openMem(t)
		var sb strings.Builder
		rows := 3000
		if shape == "ties" {
			rows = 3 * maxKeyTies // more ties than the loop breaks on keys
		}
		for i := range rows {
			v := fmt.Sprintf("u%d", i%700)
			switch {
			case odd && i%101 == 0:
				v = ""
			case odd && i%211 == 0:
				v = "a\xffb" // its row taken alone
			case shape == "ties" && i%1000 == 7:
				v = fmt.Sprintf("hot%d", i/1000%3) // of four rows each
			case shape == "ties":
				v = fmt.Sprintf("t%d", (i*7919)%rows)
			}
			ts := time.Date(2026, 1, 15, 7, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second * 3000 / time.Duration(rows))
			fmt.Fprintf(&sb, "{\"ts\":\"%s\",\"service\":\"api%d\",\"v\":\"%s\",\"n\":%d}\n", ts.Format(time.RFC3339Nano), i%3, v, i%17-5)
		}
		appendText(t, st, sb.String())
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
		sn := st.Snapshot()
		for _, q := range []string{
			`sum by (v) (count_over_time({service=~"api.*"} | json v [2h]))`,
			`topk(3, sum by (v) (count_over_time({service=~"api.*"} | json v [2h])))`,
			`bottomk(4, sum by (v) (sum_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h])))`,
			`max by (v) (max_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h]))`,
			`min by (v) (min_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h]))`,
			`avg by (v) (avg_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h]))`,
			`sum(sum by (v) (rate({service=~"api.*"} | json v | v!="" [2h])))`,
			`count(sum by (v, service) (count_over_time({service=~"api.*"} | json v [2h])))`,
			`max(sum by (v) (sum_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h])))`,
			`min by () (sum by (v) (sum_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h])))`,
			`max(max_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h]))`,
			`min(avg_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h]) by (v))`,
			`max(sum by (v) (count_over_time({service=~"api.*"} | json v [2h])) > 3)`,
			`sum(sum by (v) (sum_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h])))`,
			`sum(avg_over_time({service=~"api.*"} | json v, n | unwrap n | __error__="" [2h]) by (v))`,
			`topk(5, sum by (v) (count_over_time({service=~"api.*"} | json v [2h])))`,
			`bottomk(2, sum by (v) (count_over_time({service=~"api.*"} | json v [2h])))`,
		} {
			if d := sameAnswer(sn, q, false, false); d != "" {
				t.Errorf("%s (keys %s): %s", q, shape, d)
			}
		}
		sn.Release()
	}
}

// TestFlatKeysTooLong: a batch with a key too long for a flat table's
// refs makes the worker's states series, for good.
func TestFlatKeysTooLong(t *testing.T) {
	w := &rangeWorker{op: opSum, shape: &matrix{steps: 1}}
	if !w.flatKeys(10) || w.series.flat == nil {
		t.Fatal("a one-step sum's batch did not go flat")
	}
	k := []byte("u\xffa\xff")
	h1, h2 := w.series.hash(k)
	sl, _ := w.series.flat.find(k, h1, h2)
	w.series.flat.add(sl, 2)
	if w.flatKeys(maxFlatKey + 1) {
		t.Fatal("a key too long went flat")
	}
	if w.series.flat != nil || !w.noFlat || w.series.len() != 1 || w.series.get(k).v[0] != 2 {
		t.Fatalf("the flat states were not made series: flat %v, %d series", w.series.flat != nil, w.series.len())
	}
	if w.flatKeys(10) {
		t.Fatal("the worker went flat again")
	}
}
