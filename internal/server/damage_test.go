package server

import (
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
)

// damagedFixture pushes pushed's lines, flushes them into one part (a
// block per stream), closes the store, lets damage change the part's
// bytes, and serves the reopened store.
func damagedFixture(t *testing.T, damage func(data []byte, rd *part.Reader)) (*fixture, string) {
	t.Helper()
	f := newFixture(t, plainConfig()) // the streams as pushed: {app="api", env="prod"}...
	pushed(t, f, "default")
	if err := f.st.Flush(); err != nil {
		t.Fatal(err)
	}
	f.st.Close()
	days, _ := f.fs.List("data/parts/default")
	files, _ := f.fs.List("data/parts/default/" + days[0])
	p := path.Join("data/parts/default", days[0], files[0])
	rd, err := part.Open(f.fs, p)
	if err != nil {
		t.Fatal(err)
	}
	data, release, _ := f.fs.Map(p)
	b := slices.Clone(data)
	release()
	damage(b, rd)
	rd.Close()
	w, _ := f.fs.Create(p)
	w.Write(b)
	w.Close()
	st, err := store.Open(store.Options{FS: f.fs, Dir: "data", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{t: t, fs: f.fs, st: st, srv: New(plainConfig(), st, quiet, prometheus.NewRegistry())}, p
}

// TestQueryDamagedBlock: a flipped bit in one block: queries answer 200
// with the other blocks' lines and a warning naming the block skipped,
// and the metric counts it.
func TestQueryDamagedBlock(t *testing.T) {
	var bad part.BlockMeta
	f, p := damagedFixture(t, func(b []byte, rd *part.Reader) {
		for _, bm := range rd.Blocks {
			if rd.Streams[bm.Stream].String() == `{app="api", env="prod"}` {
				bad = bm
			}
		}
		b[bad.Off+bad.Len/2] ^= 0x10
	})
	for _, q := range []string{`{env="prod"} |= "error"`, `sum(count_over_time({env="prod"}[1m]))`} {
		code, doc, body := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {q}, "start": {qStart}, "end": {qEnd}, "step": {"60"}})
		if code != 200 {
			t.Fatalf("%s: %d %s", q, code, body)
		}
		w, _ := doc["warnings"].([]any)
		if len(w) != 1 || !strings.Contains(w[0].(string), p+" block ") || !strings.Contains(w[0].(string), "checksum mismatch") {
			t.Errorf("%s: warnings %v: want block %d of %s named", q, doc["warnings"], bad.Off, p)
		}
		if doc["status"] != "success" {
			t.Errorf("%s: status %v", q, doc["status"])
		}
	}
	_, _, body := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{env="prod"}`}, "start": {qStart}, "end": {qEnd}})
	if !strings.Contains(body, `render`) || strings.Contains(body, "POST /users") {
		t.Errorf("want the web stream's line and not the damaged block's: %s", body)
	}
	// A query that reads no damaged block has no warnings.
	_, doc, _ := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{env="dev"}`}, "start": {qStart}, "end": {qEnd}})
	if _, ok := doc["warnings"]; ok {
		t.Errorf("warnings on a clean query: %v", doc["warnings"])
	}
	_, metrics := f.do("GET", "/metrics", nil)
	for _, m := range []string{"sluice_store_quarantined_blocks_total 1", "sluice_store_damaged_blocks 1"} {
		if !strings.Contains(metrics, m+"\n") {
			t.Errorf("metrics lack %q", m)
		}
	}
}

// TestQueryDamagedFooter: a part whose footer is damaged is set aside,
// and a query of its tenant and time says so in its answer, not only in a
// log line.
func TestQueryDamagedFooter(t *testing.T) {
	f, p := damagedFixture(t, func(b []byte, _ *part.Reader) { b[len(b)-20] ^= 1 })
	code, doc, body := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{env="prod"}`}, "start": {qStart}, "end": {qEnd}})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	w, _ := doc["warnings"].([]any)
	if len(w) != 1 || !strings.Contains(w[0].(string), p+".corrupt") || !strings.Contains(w[0].(string), "unreadable") {
		t.Errorf("warnings %v: want %s.corrupt named", doc["warnings"], p)
	}
	if _, err := f.fs.Stat(p + ".corrupt"); err != nil {
		t.Errorf("the part was not set aside: %v", err)
	}
	_, metrics := f.do("GET", "/metrics", nil)
	if !strings.Contains(metrics, "sluice_store_damaged_parts 1\n") {
		t.Errorf("metrics lack sluice_store_damaged_parts 1")
	}
}
