package e2e

// TestElasticsearchPython: the official Python client, elasticsearch 9.5.1
// (with elastic-transport 9.4.2, from the virtualenv of
// scripts/e2e-setup.sh), against sluice's Elasticsearch API.
//
// What the client does, and so what sluice must answer: every request
// carries "Accept: application/vnd.elasticsearch+json; compatible-with=9"
// and, with a body, "Content-Type: application/vnd.elasticsearch+json;
// compatible-with=9" (x-ndjson for _bulk), plus the client's own headers
// (here X-Scope-OrgID, given as headers= to the client). It refuses any 2xx
// reply without "X-Elastic-Product: Elasticsearch" until one had it
// (UnsupportedProductError); it does not look at the version number, so
// sluice answering 8.11.0 to a 9.x client is fine (a real 8.11 would refuse
// compatible-with=9 with a 400). It reads replies whose Content-Type is
// application/json. It retries 429, 502, 503 and 504 and connection errors
// up to 3 times. ping() is HEAD /, info() GET /; helpers.bulk sends
// PUT /_bulk with chunk_size actions a request (the index in each action
// line, "\n" after every line) and, with raise_on_error=False, returns the
// number of items that succeeded and the failed items; index() without an
// id is POST /<index>/_doc, create() is PUT /<index>/_create/<id>.
//
// The script pings, reads info(), bulk-indexes N documents (two indices,
// some with an _id, @timestamp with milliseconds, a nested object) in
// chunks of 100, then indexes one document and creates one with a client
// made with http_compress=True (gzip bodies, Content-Encoding: gzip), and
// fails unless every item succeeded. The test checks that each document is stored
// exactly once in the tenant of the header, byte for byte as sent, at its
// @timestamp, in the stream of its service and host fields.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

const elasticScript = `
import datetime
import json
import sys

from elasticsearch import Elasticsearch, helpers

url, n, tenant, base_ms = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])


def iso(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def doc(i, host):
    return {
        "@timestamp": iso(base_ms + i * 1000 + 250),
        "message": 'es %05d "quoted" back\\slash ünïcode ✓' % i,
        "service": "e2e-es",
        "host": host,
        "level": "error" if i % 10 == 0 else "info",
        "seq": i,
        "http": {"method": "GET", "status": 200 + i % 3},
    }


es = Elasticsearch(url, headers={"X-Scope-OrgID": tenant}, request_timeout=10)
if not es.ping():
    sys.exit("ping() returned False")
info = es.info()


def actions():
    for i in range(n):
        a = doc(i, "h%d" % (i % 2))
        a["_index"] = "e2e-es-even" if i % 2 == 0 else "e2e-es-odd"
        if i % 7 == 0:
            a["_id"] = "id-%05d" % i
        yield a


ok, errors = helpers.bulk(es, actions(), chunk_size=100, raise_on_error=False, stats_only=False)
# http_compress=True: request bodies gzip-compressed (Content-Encoding: gzip).
gz = Elasticsearch(url, headers={"X-Scope-OrgID": tenant}, request_timeout=10, http_compress=True)
indexed = gz.index(index="e2e-es-single", document=doc(n, "h-single"))
created = gz.create(index="e2e-es-single", id="id-create", document=doc(n + 1, "h-single"))
print("RESULT " + json.dumps({
    "version": info["version"]["number"],
    "ok": ok,
    "errors": errors,
    "index": indexed["result"],
    "create": created["result"],
}), flush=True)
if ok != n or errors:
    sys.exit("bulk: %d of %d ok, errors: %r" % (ok, n, errors[:3]))
`

// elasticBase is the time of the first document: they are a second apart,
// plus 250 ms.
var elasticBase = time.Date(2026, 1, 15, 11, 0, 0, 0, time.UTC)

func TestElasticsearchPython(t *testing.T) {
	skipIfOff(t)
	py := venvPython(t, "elasticsearch", "elasticsearch.helpers")
	const n, tenant = 1000, "team-es"
	dir := t.TempDir()
	script := writeFile(t, dir, "es.py", elasticScript)
	s := startServer(t)

	start := time.Now()
	out := runClient(t, s, 2*time.Minute, py, script, s.url(""), strconv.Itoa(n), tenant, strconv.FormatInt(elasticBase.UnixMilli(), 10))
	t.Logf("the script ran in %v", time.Since(start).Round(time.Millisecond))
	var res struct {
		Version       string
		OK            int
		Errors        []any
		Index, Create string
	}
	scriptResult(t, out, &res)
	if res.OK != n || len(res.Errors) != 0 || res.Index != "created" || res.Create != "created" {
		t.Errorf("the client says: %d of %d bulk items ok, errors %v; index() %q, create() %q", res.OK, n, res.Errors, res.Index, res.Create)
	}
	t.Logf("info() says version %s", res.Version)
	if got := s.storedLines(t, tenant); got != n+2 {
		t.Errorf("sluice_ingest_lines_total{tenant=%q} = %d after the script, want %d", tenant, got, n+2)
	}
	// 10 bulk requests of 100 actions, then index() and create().
	if reqs := s.checkNoFailedRequests(t, "elastic"); reqs != n/100+2 {
		t.Errorf("%d Elasticsearch ingest requests, want %d", reqs, n/100+2)
	}
	s.checkSeries(t, tenant, 3)
	s.stop(t)

	var all, h0, h1 []string
	for i := range n + 2 {
		m := fmt.Sprintf(`es %05d "quoted" back\slash ünïcode ✓`, i)
		all = append(all, m)
		switch {
		case i >= n:
		case i%2 == 0:
			h0 = append(h0, m)
		default:
			h1 = append(h1, m)
		}
	}
	message := func(wantHost string) func(string) (string, error) {
		return func(line string) (string, error) { return elasticCheckLine(line, n, wantHost) }
	}
	lines := export(t, s.data, tenant)
	checkOnce(t, "tenant "+tenant, lines, all, message(""))
	checkTimes(t, s.data, tenant, lines, func(line string) (time.Time, error) {
		var doc struct {
			TS string `json:"@timestamp"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			return time.Time{}, err
		}
		return time.Parse(time.RFC3339Nano, doc.TS)
	})
	for _, c := range []struct {
		sel, host string
		want      []string
	}{
		{`{service="e2e-es"}`, "", all},
		{`{service="e2e-es", host="h0"}`, "h0", h0},
		{`{host="h1"}`, "h1", h1},
		{`{host="h-single"}`, "h-single", all[n:]},
	} {
		checkOnce(t, c.sel, export(t, s.data, tenant, "--stream", c.sel), c.want, message(c.host))
	}
	checkOnce(t, "tenant default", export(t, s.data, "default"), nil, identity)
	checkStats(t, s.data, tenant, n+2)
}

// elasticCheckLine checks a stored document against what the script sent
// (document seq, in a bulk request when seq < n) and returns its message.
func elasticCheckLine(line string, n int, wantHost string) (string, error) {
	var doc struct {
		TS      string `json:"@timestamp"`
		Message string
		Service string
		Host    string
		Level   string
		Seq     *int
		HTTP    struct {
			Method string
			Status int
		}
	}
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		return "", err
	}
	if doc.Seq == nil {
		return "", fmt.Errorf("no seq")
	}
	i := *doc.Seq
	host := "h" + strconv.Itoa(i%2)
	if i >= n {
		host = "h-single"
	}
	level := "info"
	if i%10 == 0 {
		level = "error"
	}
	ts := elasticBase.Add(time.Duration(i)*time.Second + 250*time.Millisecond).Format("2006-01-02T15:04:05.000Z")
	var problems []string
	for _, c := range [][3]string{
		{"@timestamp", doc.TS, ts},
		{"service", doc.Service, "e2e-es"},
		{"host", doc.Host, host},
		{"level", doc.Level, level},
		{"http.method", doc.HTTP.Method, "GET"},
		{"http.status", strconv.Itoa(doc.HTTP.Status), strconv.Itoa(200 + i%3)},
	} {
		if c[1] != c[2] {
			problems = append(problems, fmt.Sprintf("%s is %q, want %q", c[0], c[1], c[2]))
		}
	}
	if wantHost != "" && doc.Host != wantHost {
		problems = append(problems, fmt.Sprintf("host %q in a stream selected by host=%q", doc.Host, wantHost))
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("document %d: %s", i, strings.Join(problems, "; "))
	}
	return doc.Message, nil
}
