package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// orStore holds 2,000 lines, each naming one or two of 6,000 users, in
// mixed case.
func orStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := rand.New(rand.NewPCG(5, 6))
	var block []string
	for i := range 2000 {
		user := fmt.Sprintf("User%04d", r.IntN(6000))
		if i%3 == 0 {
			user = strings.ToUpper(user)
		}
		block = append(block, fmt.Sprintf(`{app="a%d"} %dms login by %s from user%04d`, i%7, i, user, r.IntN(6000)))
	}
	load(t, st, store.DefaultTenant, "or", 0, block)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	return st
}

// An "or" chain of thousands of literals answers what one regexp of
// them does, for each operator that compiles into one matcher.
func TestFilterOrChain(t *testing.T) {
	st := orStore(t)
	sn := st.Snapshot()
	defer sn.Release()
	var terms []string
	for i := 0; i < 6000; i += 2 {
		terms = append(terms, fmt.Sprintf("user%04d", i))
	}
	quoted := `"` + strings.Join(terms, `" or "`) + `"`
	alt := strings.Join(terms, "|")
	ciQuoted := `"(?i)` + strings.Join(terms, `" or "(?i)`) + `"`
	for _, tc := range []struct{ chain, regexp string }{
		{`{app=~"a.*"} |= ` + quoted, `{app=~"a.*"} |~ "` + alt + `"`},
		{`{app=~"a.*"} != ` + quoted, `{app=~"a.*"} !~ "` + alt + `"`},
		{`{app=~"a.*"} |~ ` + quoted, `{app=~"a.*"} |~ "` + alt + `"`},
		{`{app=~"a.*"} |~ ` + ciQuoted, `{app=~"a.*"} |~ "(?i)(` + alt + `)"`},
		{`{app=~"a.*"} !~ ` + ciQuoted, `{app=~"a.*"} !~ "(?i)(` + alt + `)"`},
		// Literals mixed with a regexp that is not one.
		{`{app=~"a.*"} |~ ` + quoted + ` or "by USER00[0-9]1"`, `{app=~"a.*"} |~ "` + alt + `|by USER00[0-9]1"`},
		{`{app=~"a.*"} |= ` + quoted + ` or ip("10.0.0.1")`, `{app=~"a.*"} |~ "` + alt + `"`},
	} {
		run := func(q string) []string {
			p := Params{Tenant: store.DefaultTenant, Query: q, Start: t0, End: t0 + int64(time.Hour), Limit: 5000}
			res, err := NewEngine(Limits{}).Exec(context.Background(), sn, p)
			if err != nil {
				t.Fatalf("%.60s...: %v", q, err)
			}
			var out []string
			for _, s := range res.Streams {
				for _, e := range s.Entries {
					out = append(out, s.Labels.String()+" "+e.Line)
				}
			}
			return out
		}
		got, want := run(tc.chain), run(tc.regexp)
		if len(want) == 0 || len(want) == 2000 {
			t.Fatalf("%.60s...: %d lines: the case tells nothing", tc.regexp, len(want))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%.60s...: %d lines, the regexp %d", tc.chain, len(got), len(want))
		}
	}
}
