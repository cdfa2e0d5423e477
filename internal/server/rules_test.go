package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/rules"
	"github.com/sluicelog/sluice/internal/vfs"
)

// dirBytes returns the bytes of every file under dir, concatenated.
func dirBytes(t *testing.T, fs *vfs.MemFS, dir string) []byte {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, n := range names {
		p := path.Join(dir, n)
		fi, err := fs.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			out = append(out, dirBytes(t, fs, p)...)
			continue
		}
		f, err := fs.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(io.NewSectionReader(f, 0, fi.Size()))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestRulesRedactEveryProtocol pushes lines holding secrets through the
// HTTP ingest paths with a redacting rules file, then looks for the
// secrets in the data directory's raw bytes (WAL, then parts after a
// flush), in every stored line and field, and in query results.
func TestRulesRedactEveryProtocol(t *testing.T) {
	f := rulesFixture(t, `
rules:
  - name: secrets
    redact:
      detectors: [email, secret_pairs, card, aws_key, jwt, bearer]
`)
	secrets := []string{"@example.com", "Hunter2Pw", "4111 1111 1111 1111", "4111111111111111", "AKIAIOSFODNN7EXAMPLE",
		"s3cr3tT0ken", "eyJzdWIiOiJib2IifQ"}
	const ts = "2026-01-15T08:00:00Z"
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJl"
	pushes := []struct {
		name, path, ctype string
		body              []byte
		code              int
	}{
		{"jsonline", "/insert/jsonline", "", []byte(`{"time":"` + ts + `","service":"api","msg":"MARKER-jsonline login alice@example.com","password":"Hunter2Pw1","card":4111111111111111}
{"time":"` + ts + `","service":"api","msg":"MARKER-jsonline2 auth","user":{"mail":"bob@example.com","token":"s3cr3tT0ken1"},"hdr":"Bearer ` + jwt + `"}
`), 200},
		{"lines", "/insert/lines?format=logfmt", "", []byte(`time=` + ts + ` service=web msg="MARKER-logfmt pay 4111 1111 1111 1111 by carol@example.com" password=Hunter2Pw2 key=AKIAIOSFODNN7EXAMPLE
`), 200},
		{"loki json", "/loki/api/v1/push", "application/json", []byte(`{"streams":[{"stream":{"app":"x"},"values":[
["1768464000000000000","MARKER-lokijson user=dave@example.com password=Hunter2Pw3",{"api_token":"s3cr3tT0ken2","owner":"erin@example.com"}]]}]}`), 204},
		{"loki proto", "/loki/api/v1/push", "application/x-protobuf", pushProto(`{job="p"}`, "MARKER-lokiproto secret=Hunter2Pw4 AKIAIOSFODNN7EXAMPLE"), 204},
		{"otlp", "/v1/logs", "application/json", []byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"otel"}}]},
"scopeLogs":[{"logRecords":[{"timeUnixNano":"1768464000000000000","body":{"stringValue":"MARKER-otlp from frank@example.com"},
"attributes":[{"key":"user.email","value":{"stringValue":"frank@example.com"}},{"key":"db_password","value":{"stringValue":"Hunter2Pw5"}}]}]}]}]}`), 200},
		{"elastic", "/_bulk", "application/x-ndjson", []byte(`{"create":{"_index":"logs"}}
{"@timestamp":"` + ts + `","message":"MARKER-elastic grace@example.com token=s3cr3tT0ken3","client_secret":"Hunter2Pw6"}
`), 200},
	}
	for _, p := range pushes {
		code, reply := f.do("POST", p.path, p.body, "Content-Type", p.ctype)
		if code != p.code {
			t.Fatalf("%s: %d %s", p.name, code, reply)
		}
	}
	check := func(where string, data []byte) {
		t.Helper()
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				i := bytes.Index(data, []byte(s))
				t.Errorf("%s holds %q: ...%q...", where, s, data[max(i-60, 0):min(i+60, len(data))])
			}
		}
	}
	wal := dirBytes(t, f.fs, "data")
	check("the data directory (WAL)", wal)
	// The WAL is not compressed: what the rules left is there to find.
	for _, p := range pushes {
		marker := "MARKER-" + strings.NewReplacer(" ", "", "lines", "logfmt").Replace(p.name)
		if !bytes.Contains(wal, []byte(marker)) {
			t.Errorf("%s: %s not in the WAL's bytes: the search would find nothing either way", p.name, marker)
		}
	}
	if err := f.st.Flush(); err != nil {
		t.Fatal(err)
	}
	check("the data directory after a flush (parts)", dirBytes(t, f.fs, "data"))

	// Every stored line, message and field, decoded.
	sn := f.st.Snapshot()
	var stored bytes.Buffer
	n := 0
	err := sn.Lines(context.Background(), nil, math.MinInt64, math.MaxInt64, nil, func(_ string, ls record.Labels, r *rows.Row) error {
		n++
		fmt.Fprintf(&stored, "%s %s %s", ls, r.Line, r.Msg)
		for _, fl := range r.Fields {
			stored.Write(record.AppendUnescaped(nil, fl.Value, fl.Flags))
			stored.WriteByte(' ')
		}
		stored.WriteByte('\n')
		return nil
	})
	sn.Release()
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("%d lines stored, want 7:\n%s", n, stored.String())
	}
	check("the stored records", stored.Bytes())
	if !strings.Contains(stored.String(), "<redacted>") {
		t.Errorf("nothing was redacted:\n%s", stored.String())
	}

	// Query results, with and without parsing the lines.
	for _, q := range []string{`{service=~".+"}`, `{service=~".+"} | json`, `{service=~".+"} | logfmt`,
		`{app=~".+"}`, `{job=~".+"}`, `{service_name=~".+"}`} {
		code, _, body := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {q}, "start": {"1768463000000000000"},
			"end": {"1768465000000000000"}, "limit": {"100"}})
		if code != 200 {
			t.Fatalf("%s: %d %s", q, code, body)
		}
		if !strings.Contains(body, "MARKER") {
			t.Errorf("%s: no line found: %s", q, body)
		}
		check("query "+q, []byte(body))
	}
}

// TestRulesReloadUnderLoad swaps the rules file between two versions
// that tag lines differently while clients push flat out: every
// acknowledged line is stored exactly once, every request's lines carry
// one version's label (a batch is evaluated under one version), and no
// request fails because of a reload.
func TestRulesReloadUnderLoad(t *testing.T) {
	file := path.Join(t.TempDir(), "rules.yaml")
	version := func(v string) []byte {
		return []byte("rules:\n  - name: tag\n    set_labels: {version: " + v + "}\n")
	}
	if err := os.WriteFile(file, version("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := rules.Open(file, rules.NewMetrics(nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig()
	cfg.Rules = live
	f := newFixture(t, cfg)

	ctx, cancel := context.WithCancel(context.Background())
	var watchers sync.WaitGroup
	watchers.Add(1)
	go func() {
		defer watchers.Done()
		if err := live.Watch(ctx, nil); err != nil {
			t.Error(err)
		}
	}()

	const clients, perRequest = 4, 20
	stop := make(chan struct{})
	acked := make([][]string, clients) // per client, the request ids acknowledged
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; ; r++ {
				select {
				case <-stop:
					return
				default:
				}
				var body bytes.Buffer
				for l := range perRequest {
					fmt.Fprintf(&body, `{"service":"load","msg":"line","req":"c%d-r%d","n":%d}`+"\n", c, r, l)
				}
				req := httptest.NewRequest("POST", "/insert/jsonline", &body)
				rec := httptest.NewRecorder()
				f.srv.Handler().ServeHTTP(rec, req)
				if rec.Code != 200 || !strings.Contains(rec.Body.String(), fmt.Sprintf(`"accepted":%d`, perRequest)) {
					t.Errorf("client %d request %d: %d %s", c, r, rec.Code, rec.Body.String())
					return
				}
				acked[c] = append(acked[c], fmt.Sprintf("c%d-r%d", c, r))
			}
		}()
	}
	const swaps = 400
	for i := range swaps {
		v := "a"
		if i%2 == 0 {
			v = "b"
		}
		// Atomically, as a deploy tool does: the watcher may read it at
		// any moment.
		if err := os.WriteFile(file+".tmp", version(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
		if _, err := live.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	cancel()
	watchers.Wait()

	type seen struct {
		lines    int
		versions map[string]bool
	}
	stored := map[string]*seen{}
	sn := f.st.Snapshot()
	defer sn.Release()
	var reqRe = regexp.MustCompile(`"req":"(c\d+-r\d+)","n":(\d+)`)
	lineSeen := map[string]bool{}
	err = sn.Lines(context.Background(), nil, math.MinInt64, math.MaxInt64, nil, func(_ string, ls record.Labels, r *rows.Row) error {
		m := reqRe.FindSubmatch(r.Line)
		if m == nil {
			t.Errorf("stored line %q", r.Line)
			return nil
		}
		id := string(m[1]) + "/" + string(m[2])
		if lineSeen[id] {
			t.Errorf("line %s stored twice", id)
		}
		lineSeen[id] = true
		v, ok := ls.Get("version")
		if !ok || (v != "a" && v != "b") {
			t.Errorf("line %s has labels %s", id, ls)
		}
		s := stored[string(m[1])]
		if s == nil {
			s = &seen{versions: map[string]bool{}}
			stored[string(m[1])] = s
		}
		s.lines++
		s.versions[v] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total, versions := 0, map[string]bool{}
	for c := range clients {
		for _, id := range acked[c] {
			s := stored[id]
			if s == nil || s.lines != perRequest {
				t.Fatalf("request %s acknowledged, stored %v", id, s)
			}
			if len(s.versions) != 1 {
				t.Errorf("request %s stored under versions %v: a batch saw two versions", id, s.versions)
			}
			for v := range s.versions {
				versions[v] = true
			}
			total++
		}
	}
	if len(versions) != 2 {
		t.Errorf("versions stored %v: the swaps changed nothing under load", versions)
	}
	t.Logf("%d requests of %d lines, %d swaps", total, perRequest, swaps)
}

// TestRulesSeeStructuredMetadata: a rule matches a Loki push entry's
// structured metadata as a query over the stored entry would.
func TestRulesSeeStructuredMetadata(t *testing.T) {
	f := rulesFixture(t, `
rules:
  - name: drop-trace
    match: '{app="x"} | trace_id="abc"'
    drop: true
  - name: tag-by-meta
    match: '{app="x"}'
    set_labels: {team: '{{ .owner }}'}
`)
	body := []byte(`{"streams":[{"stream":{"app":"x"},"values":[["1768464000000000000","one",{"trace_id":"abc"}],
["1768464000000000001","two",{"trace_id":"def","owner":"core"}]]}]}`)
	if code, reply := f.do("POST", "/loki/api/v1/push", body, "Content-Type", "application/json"); code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
	if got := f.stored("default"); !slices.Equal(got, []string{`{app="x", team="core"} two`}) {
		t.Errorf("stored %q", got)
	}
}

// rulesFixture is a server whose rule stage is the rules file given.
func rulesFixture(t *testing.T, file string) *fixture {
	t.Helper()
	set, err := rules.Compile("rules.yaml", []byte(file), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig()
	cfg.Rules = set
	return newFixture(t, cfg)
}
