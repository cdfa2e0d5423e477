package query

import (
	"fmt"
	"math/rand"
	"testing"
	"unsafe"
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
	for _, n := range []int{1000, 65536, 400000} {
		r := rand.New(rand.NewSource(1))
		keys := make([][]byte, 1<<20)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "kubernetes_host\xffip-10-0-%d-%d.ec2.internal\xff", r.Intn(n)/256, r.Intn(256))
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
