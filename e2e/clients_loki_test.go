package e2e

// Loki's push API driven by the real clients people use, built by
// scripts/e2e-setup.sh from e2e/testdata/clients (versions pinned there):
//
// TestPromtail: Promtail (Loki v3.7.8's clients/pkg/promtail, with a main
// of our own) tails a file and pushes snappy-compressed protobuf (no
// Content-Encoding header) with tenant_id as X-Scope-OrgID. Its pipeline
// joins a record's continuation lines (a multiline stage), parses each
// record with a regex, makes its level a label and its trace_id structured
// metadata (a structured_metadata stage), and takes its time from the
// record (a timestamp stage); the stream also has the static label job,
// the client's external label shipper and Promtail's filename.
//
// TestTracingLoki: a Rust program with tracing-loki 0.2.7 (crates.io)
// sends protobuf with `Content-Encoding: snappy` (which Loki ignores: the
// protobuf body is always snappy-compressed); each line is a JSON object of
// the event (message, fields, the layer's extra fields); the labels are the
// layer's and level.
//
// TestLoki4j: a Java program with loki4j 2.0.0 and logback-classic 1.5.18
// (Maven Central) sends JSON pushes with loki4j's defaults: the labels
// agent=loki4j, app=<logback context name>, host=<host name>; the line
// "[%thread] %logger{20} - %msg%n"; level, thread, logger, the MDC and the
// key-value pairs as structured metadata.
//
// TestPinoLoki: a Node program with pino 10.4.0 and pino-loki 3.0.0 (npm)
// sends JSON pushes in batches: the line is the pino record as JSON (less
// hostname), the labels level, hostname, the transport's labels and
// propsToLabels; the record's "meta" object is structured metadata.
//
// Each client sends records of two levels with unicode, quotes, a
// backslash and, for every 7th, a message of three lines. Each test waits
// until the server has stored every line (its /metrics), then checks
// through GET /loki/api/v1/query_range that each line is there exactly
// once, in a stream with its labels, and that its metadata is queryable:
// `{...} | trace_id="..."` gives exactly the line with that trace_id, and
// `| level="..."` the lines of that level.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What scripts/e2e-setup.sh builds for each client, in toolsDir(): the
// directories are NAME-VERSION, with the versions the script names.
const (
	promtailDir    = "promtail-v3.7.8"    // PROMTAIL_VERSION
	otelcolDir     = "otelcol-v0.165.0"   // OTELCOL_VERSION
	tracingLokiDir = "tracing-loki-0.2.7" // TRACING_LOKI_VERSION
	loki4jDir      = "loki4j-2.0.0"       // LOKI4J_VERSION
	pinoLokiDir    = "pino-loki-3.0.0"    // PINO_LOKI_VERSION
)

// clientPicks are the records whose metadata is queried: a WARN one (0), a
// multi-line one (3), an INFO one (7) and the last.
func clientPicks(n int) []int { return []int{0, 3, 7, n - 1} }

func TestPromtail(t *testing.T) {
	skipIfOff(t)
	bin := clientBuild(t, promtailDir, "promtail")
	const n, tenant = 300, "team-promtail"
	dir := t.TempDir()
	s := startServer(t)

	// The records, a millisecond apart, ending a minute ago.
	base := time.Now().Add(-time.Minute - n*time.Millisecond).Truncate(time.Millisecond)
	logFile := filepath.Join(dir, "app.log")
	var text strings.Builder
	var sent []sentLine
	for i := range n {
		lvl := "INFO"
		if i%10 == 0 {
			lvl = "WARN"
		}
		ts := base.Add(time.Duration(i) * time.Millisecond).UTC().Format(time.RFC3339Nano)
		rec := fmt.Sprintf("%s %s trace_id=prom-%04d %s", ts, lvl, i, multiline("promtail", i))
		text.WriteString(rec + "\n")
		sent = append(sent, sentLine{
			key:    rec,
			labels: map[string]string{"job": "e2e-promtail", "shipper": "promtail", "level": lvl, "filename": logFile},
			meta:   map[string]string{"trace_id": fmt.Sprintf("prom-%04d", i)},
		})
	}
	writeFile(t, dir, "app.log", text.String())
	config := fmt.Sprintf(`server:
  disable: true
  log_level: warn
positions:
  filename: %[1]s/positions.yaml
clients:
  - url: %[2]s
    tenant_id: %[3]s
    batchwait: 200ms
    external_labels:
      shipper: promtail
scrape_configs:
  - job_name: e2e
    static_configs:
      - targets: [localhost]
        labels:
          job: e2e-promtail
          __path__: %[4]s
    pipeline_stages:
      - multiline:
          firstline: '^\d{4}-\d{2}-\d{2}T'
          max_wait_time: 500ms
      - regex:
          expression: '^(?P<ts>\S+) (?P<level>[A-Z]+) trace_id=(?P<trace_id>\S+) '
      - labels:
          level:
      - structured_metadata:
          trace_id:
      - timestamp:
          source: ts
          format: RFC3339Nano
`, dir, s.url("/loki/api/v1/push"), tenant, logFile)
	cfgFile := writeFile(t, dir, "promtail.yaml", config)
	p := startProc(t, "promtail", exec.Command(bin, "-config.file", cfgFile))
	s.waitStored(t, tenant, n, 2*time.Minute, func() error {
		if p.exited() {
			return fmt.Errorf("promtail exited (%v). Output:\n%s", p.err, p.out)
		}
		return nil
	})
	if err := p.stop(t, time.Minute); err != nil {
		t.Errorf("promtail exited with %v after SIGTERM. Output:\n%s", err, p.out)
	}
	s.checkNoFailedRequests(t, "loki")
	s.checkSeries(t, tenant, 2) // level INFO and WARN

	start, end := base.Add(-time.Hour), time.Now().Add(time.Hour)
	s.checkClientLines(t, tenant, `{job="e2e-promtail"}`, "", start, end, sent, identity, clientPicks(n)...)
	// The timestamp stage: each line at the time it says.
	for _, e := range s.queryRange(t, tenant, `{job="e2e-promtail", level="WARN"}`, start, end) {
		ts, _, _ := strings.Cut(e.line, " ")
		if want, err := time.Parse(time.RFC3339Nano, ts); err != nil || !e.time.Equal(want) {
			t.Errorf("line %q stored at %s, want %s (%v)", e.line, e.time.UTC().Format(time.RFC3339Nano), ts, err)
		}
	}
	s.stop(t)
}

func TestTracingLoki(t *testing.T) {
	skipIfOff(t)
	bin := clientBuild(t, tracingLokiDir, "e2e-tracing-loki")
	const n, tenant = 300, "team-rust"
	s := startServer(t)
	start := time.Now().Add(-time.Hour)

	// The program shuts the layer's task down, which sends what is queued,
	// before it exits: all is stored then.
	// (tracing-loki joins loki/api/v1/push to the URL it is given.)
	runClient(t, s, 3*time.Minute, bin, s.url("/"), tenant, strconv.Itoa(n))
	// Every line stored once. This fails while sluice refuses
	// Content-Encoding: snappy (415): tracing-loki's task, told to shut
	// down, gives up at its first failed send and drops what it holds.
	if got := s.storedLines(t, tenant); got != n {
		t.Errorf("sluice_ingest_lines_total{tenant=%q} = %d after the program exited, want %d", tenant, got, n)
	}
	if reqs := s.checkNoFailedRequests(t, "loki"); reqs == 0 {
		t.Errorf("no Loki push request reached the server")
	}

	var sent []sentLine
	for i := range n {
		lvl := "info"
		if i%10 == 0 {
			lvl = "warn"
		}
		sent = append(sent, sentLine{
			key:    multiline("rust", i),
			labels: map[string]string{"app": "e2e-rust", "env": "test", "level": lvl},
			meta:   map[string]string{"trace_id": fmt.Sprintf("rust-%04d", i), "service": "e2e-rust-svc"},
		})
	}
	// Each line is the event as JSON: its message, its fields and the
	// layer's extra field.
	key := func(line string) (string, error) {
		var ev struct {
			Message string `json:"message"`
			Seq     *int   `json:"seq"`
			TraceID string `json:"trace_id"`
			Service string `json:"service"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return "", err
		}
		if ev.Seq == nil || ev.TraceID != fmt.Sprintf("rust-%04d", *ev.Seq) || ev.Service != "e2e-rust-svc" {
			return "", fmt.Errorf("seq %v, trace_id %q, service %q: not the event logged", ev.Seq, ev.TraceID, ev.Service)
		}
		return ev.Message, nil
	}
	end := time.Now().Add(time.Hour)
	s.checkClientLines(t, tenant, `{app="e2e-rust"}`, "| json", start, end, sent, key, clientPicks(n)...)
	checkOnceQuery(t, s, tenant, `{app="e2e-rust", level="warn"}`, start, end, sent, key)
	s.checkSeries(t, tenant, 2) // level info and warn
	s.stop(t)
}

// checkOnceQuery checks that a stream selector gives exactly the sent
// lines with its labels (each name="value" of the selector).
func checkOnceQuery(t *testing.T, s *server, tenant, selector string, start, end time.Time, sent []sentLine, key func(string) (string, error)) {
	t.Helper()
	var want []sentLine
	matchers := strings.Split(strings.Trim(selector, "{}"), ",")
	for _, l := range sent {
		ok := true
		for _, m := range matchers {
			name, value, _ := strings.Cut(strings.TrimSpace(m), "=")
			if l.labels[name] != strings.Trim(value, `"`) {
				ok = false
			}
		}
		if ok {
			want = append(want, l)
		}
	}
	checkEntries(t, selector, s.queryRange(t, tenant, selector, start, end), want, key)
}

func TestLoki4j(t *testing.T) {
	skipIfOff(t)
	dir := clientBuild(t, loki4jDir, "")
	clientBuild(t, loki4jDir, filepath.Join("classes", "Main.class"))
	const n, tenant = 300, "team-java"
	s := startServer(t)
	start := time.Now().Add(-time.Hour)

	// logback's stop drains the appender's queue: all is sent when the
	// program exits (and it exits 1 if logback reported a failed send).
	runClient(t, s, 3*time.Minute, "java", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-Dlogback.configurationFile="+filepath.Join(dir, "logback.xml"),
		"-DlokiUrl="+s.url("/loki/api/v1/push"), "-DlokiTenant="+tenant,
		"-cp", filepath.Join(dir, "classes")+string(os.PathListSeparator)+filepath.Join(dir, "libs", "*"),
		"Main", strconv.Itoa(n))
	if got := s.storedLines(t, tenant); got != n {
		t.Errorf("sluice_ingest_lines_total{tenant=%q} = %d after the program exited, want %d", tenant, got, n)
	}
	s.checkNoFailedRequests(t, "loki")

	var sent []sentLine
	for i := range n {
		lvl := "INFO"
		if i%10 == 0 {
			lvl = "WARN"
		}
		sent = append(sent, sentLine{
			key:    multiline("java", i),
			labels: map[string]string{"agent": "loki4j", "app": "e2e-java"},
			meta: map[string]string{"level": lvl, "thread": "main", "logger": "e2e.java",
				"trace_id": fmt.Sprintf("java-%04d", i), "seq": strconv.Itoa(i)},
		})
	}
	// loki4j's default message pattern, "[%thread] %logger{20} - %msg%n".
	key := func(line string) (string, error) {
		msg, ok := strings.CutPrefix(line, "[main] e2e.java - ")
		if !ok {
			return "", fmt.Errorf(`not "[main] e2e.java - " and the message`)
		}
		return strings.TrimSuffix(msg, "\n"), nil
	}
	end := time.Now().Add(time.Hour)
	s.checkClientLines(t, tenant, `{app="e2e-java"}`, "", start, end, sent, key, clientPicks(n)...)
	// The label host is logback's HOSTNAME: Java's name of the local
	// host, which need not be os.Hostname().
	for _, e := range s.queryRange(t, tenant, `{agent="loki4j"}`, start, end) {
		if e.labels["host"] == "" {
			t.Errorf("a line of loki4j's without the label host: %v", e.labels)
			break
		}
	}
	s.checkSeries(t, tenant, 1)
	s.stop(t)
}

func TestPinoLoki(t *testing.T) {
	skipIfOff(t)
	script := clientBuild(t, pinoLokiDir, "send.mjs")
	clientBuild(t, pinoLokiDir, filepath.Join("node_modules", "pino-loki", "package.json"))
	const n, tenant = 300, "team-node"
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	start := time.Now().Add(-time.Hour)

	// Ending pino-loki's stream sends its batch: all is sent when the
	// program exits (and it exits 1 if pino-loki reported a failed push).
	runClient(t, s, 2*time.Minute, "node", script, s.url("/"), tenant, strconv.Itoa(n))
	if got := s.storedLines(t, tenant); got != n {
		t.Errorf("sluice_ingest_lines_total{tenant=%q} = %d after the program exited, want %d", tenant, got, n)
	}
	s.checkNoFailedRequests(t, "loki")

	var sent []sentLine
	for i := range n {
		lvl, kind := "info", "even"
		if i%10 == 0 {
			lvl = "warning"
		}
		if i%2 == 1 {
			kind = "odd"
		}
		sent = append(sent, sentLine{
			key:    multiline("node", i),
			labels: map[string]string{"app": "e2e-node", "env": "test", "level": lvl, "kind": kind, "hostname": host},
			meta:   map[string]string{"trace_id": fmt.Sprintf("node-%04d", i), "seq": strconv.Itoa(i)},
		})
	}
	// Each line is the pino record as JSON.
	key := func(line string) (string, error) {
		var rec struct {
			Msg  string `json:"msg"`
			Kind string `json:"kind"`
			Meta struct {
				TraceID string `json:"trace_id"`
				Seq     int    `json:"seq"`
			} `json:"meta"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return "", err
		}
		if rec.Meta.TraceID != fmt.Sprintf("node-%04d", rec.Meta.Seq) {
			return "", fmt.Errorf("meta %+v: not the record logged", rec.Meta)
		}
		return rec.Msg, nil
	}
	end := time.Now().Add(time.Hour)
	s.checkClientLines(t, tenant, `{app="e2e-node"}`, "", start, end, sent, key, clientPicks(n)...)
	checkOnceQuery(t, s, tenant, `{app="e2e-node", kind="odd"}`, start, end, sent, key)
	s.checkSeries(t, tenant, 3) // info even, info odd, warning even
	s.stop(t)
}
