package query

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// TestRegexpFilterPruned: over the Loghub lines stored in parts, a log
// query and a count with a regexp line filter (whose literals prune
// blocks and rows, ScanOptions Tokens, Needles, Contains and Any) find
// exactly the lines the regexp matches.
func TestRegexpFilterPruned(t *testing.T) {
	var lines []string
	for i, l := range strings.Split(string(parsetest.LoghubCorpus(t)), "\n") {
		// Every third line: a few thousand, from every sample. ("meta{"
		// would be read as structured metadata by load.)
		if l = strings.TrimSpace(l); i%3 == 0 && l != "" && !strings.HasPrefix(l, "meta{") {
			lines = append(lines, l)
		}
	}
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	block := make([]string, len(lines))
	for i, l := range lines {
		block[i] = fmt.Sprintf(`{app="a%d"} %dms %s`, i%4, i, l)
	}
	load(t, st, store.DefaultTenant, "loghub", len(block), block)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	sn := st.Snapshot()
	defer sn.Release()
	for _, src := range []string{
		"error|fatal|panic", "(?i)(failed|failure)", "[Ee]rror", ".*user.*root", "session (opened|closed)",
		"(?i)kernel", "authentication failure;.*user=root", "(GET|POST) /", "jk2_init\\(\\) Found child \\d+",
		"(?i)warn(ing)?", "[0-9]+ms", "connection (refused|reset|closed)", "(?i)(ssh|sk)d", "Exception.*",
		"blk_-?\\d+ (terminating|Received)", "zebra|giraffe", "core\\.\\d+", "(?i)INFO.*dfs\\.DataNode",
	} {
		re := regexp.MustCompile(src)
		want := 0
		for _, l := range lines {
			if re.MatchString(l) {
				want++
			}
		}
		q := strconv.Quote(src)
		end := t0 + int64(time.Hour)
		res, err := NewEngine(Limits{}).Exec(context.Background(), sn, Params{Tenant: store.DefaultTenant, Query: `{app=~"a.+"} |~ ` + q, Start: t0, End: end, Limit: len(lines) + 1})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got := 0
		for _, s := range res.Streams {
			got += len(s.Entries)
		}
		if got != want {
			t.Errorf("{...} |~ %s: %d lines, the regexp matches %d", q, got, want)
		}
		for _, neg := range []bool{false, true} {
			op, w := "|~", want
			if neg {
				op, w = "!~", len(lines)-want
			}
			res, err = NewEngine(Limits{}).Exec(context.Background(), sn, Params{Tenant: store.DefaultTenant, Query: `sum(count_over_time({app=~"a.+"} ` + op + ` ` + q + ` [2h]))`, Start: end, End: end, Instant: true})
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			n := 0.0
			for _, s := range res.Vector {
				n += s.Value
			}
			if int(n) != w {
				t.Errorf("count_over_time(... %s %s): %v, want %d", op, q, n, w)
			}
		}
	}
	// "or" chains: a group of their literals prunes blocks.
	for _, tc := range []struct {
		filter string
		re     string
	}{
		{`|= "error" or "fatal" or "zebra"`, `error|fatal|zebra`},
		{`|~ "error|fatal" or "(?i)warn"`, `error|fatal|(?i:warn)`},
		{`|= "giraffe" or "zebra"`, `giraffe|zebra`},
	} {
		re := regexp.MustCompile(tc.re)
		want := 0
		for _, l := range lines {
			if re.MatchString(l) {
				want++
			}
		}
		end := t0 + int64(time.Hour)
		res, err := NewEngine(Limits{}).Exec(context.Background(), sn, Params{Tenant: store.DefaultTenant, Query: `sum(count_over_time({app=~"a.+"} ` + tc.filter + ` [2h]))`, Start: end, End: end, Instant: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		n := 0.0
		for _, s := range res.Vector {
			n += s.Value
		}
		if int(n) != want {
			t.Errorf("count_over_time(... %s): %v, want %d", tc.filter, n, want)
		}
	}
}
