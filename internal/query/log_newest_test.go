package query

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// TestLogNewestAcrossStreams: the newest lines of many streams whose
// rows share their times (the limit falls among rows of one time in
// several streams), stored in several parts and the head, some streams
// ending long before the others, some logging two lines at a time. The engine orders the streams by their
// newest row and skips the blocks and streams older than the lines it
// keeps (store.ScanOptions.NewestFloor): it answers as the reference,
// which reads every row.
func TestLogNewestAcrossStreams(t *testing.T) {
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
	var end time.Time
	for round := range 4 { // three parts, then the head
		var b strings.Builder
		for k := range 40 {
			ts := base.Add(time.Duration(round*40+k) * 10 * time.Millisecond)
			end = ts
			for s := range 7 {
				if s >= 5 && round >= 1 || round == 3 && (s > 0 || k > 2) {
					continue // services s5 and s6 end in the first part; the head holds a few rows of s0
				}
				if (k+s)%3 == 0 {
					continue // not every stream logs at every time
				}
				word := []string{"ok", "declined", "timeout"}[(k*s+round)%3]
				for rep := range 1 + s%2 { // odd services log two lines at a time
					fmt.Fprintf(&b, `{"ts":"%s","service":"s%d","msg":"%s %d-%d-%d"}`+"\n", ts.Format(time.RFC3339Nano), s, word, round, k, rep)
				}
			}
		}
		err := p.Bytes(context.Background(), []byte(b.String()), func(bt *record.Batch) error {
			return st.Append(context.Background(), store.DefaultTenant, bt)
		})
		if err == nil && round < 3 {
			err = st.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sn := st.Snapshot()
	defer sn.Release()
	for _, q := range []string{`{service=~".+"}`, `{service=~".+"} |= "declined"`, `{service=~"s[0-46]"} | json | msg=~"t.*"`, `{service=~".+"} != "ok"`, `{service=~".+"} |= "t" | json | msg=~"t.*"`,
		`{service=~".+"} | regexp "(?P<w>[a-z]+) (?P<r>[0-9])-" | w="declined"`, `{service=~".+"} | line_format "{{.service}} {{__line__}}" |= "s1 "`} {
		for _, limit := range []int{1, 2, 5, 7, 13, 30, 200} {
			// To the end, or to a time inside the blocks of the parts.
			for i, dir := range []Direction{Backward, Forward, Backward} {
				stop := end.UnixNano() + 1
				if i == 2 {
					stop = base.Add(1205 * time.Millisecond).UnixNano()
				}
				prm := Params{Tenant: store.DefaultTenant, Query: q, Start: base.UnixNano(), End: stop, Limit: limit, Direction: dir}
				want, werr := (&Engine{workers: 2, reference: true, limits: DefaultLimits}).Exec(context.Background(), sn, prm)
				if werr != nil {
					t.Fatalf("%s: %v", q, werr)
				}
				w := render(want, prm)
				if len(w) == 0 {
					t.Fatalf("%s: no line: the test tests nothing", q)
				}
				// Blocks read their newest rows first, 2, 3 or 256 of them
				// (more than a block here holds).
				for _, first := range []int{2, 3, 0} {
					got, gerr := (&Engine{workers: 2, limits: DefaultLimits, firstNewest: first}).Exec(context.Background(), sn, prm)
					if gerr != nil {
						t.Fatalf("%s: %v", q, gerr)
					}
					if g := render(got, prm); !sameLines(g, w) {
						t.Errorf("%s (limit %d, %v, first %d): answers differ:\nreference:\n  %s\nengine:\n  %s", q, limit, dir, first, strings.Join(w, "\n  "), strings.Join(g, "\n  "))
					}
				}
			}
		}
	}
}
