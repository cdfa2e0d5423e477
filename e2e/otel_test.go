package e2e

// TestOpenTelemetryPython: the OpenTelemetry Python SDK (opentelemetry-sdk
// and opentelemetry-exporter-otlp-proto-http 1.45.2, from the virtualenv of
// scripts/e2e-setup.sh) exports logs to POST /v1/logs: OTLPLogExporter
// posts ExportLogsServiceRequest protobufs (Content-Type:
// application/x-protobuf, uncompressed unless told, the exporter's headers,
// here X-Scope-OrgID, on each request; Content-Encoding: gzip with
// compression=Gzip), one per batch of the
// BatchLogRecordProcessor (at most max_export_batch_size records, or what
// came within schedule_delay_millis), and retries 429, 502, 503 and 504
// (honouring Retry-After) for up to 10 s; it ignores partial_success.
//
// The script has two LoggerProviders, so two resources (two streams):
// "e2e-otel-api" (uncompressed) emits records with the logs API itself (Logger.emit: a
// timestamp with nanoseconds, severity, a string body or, for some, a map
// body, typed attributes, inside a span so that each has the span's
// trace_id and span_id; the scope has a name and a version), and
// "e2e-otel-logging" (gzip) has Python's logging module log through the SDK's
// LoggingHandler (severity text WARN/INFO from the level, the formatted
// message as body, extra={} as attributes, code.* attributes added). The
// logging records' times are set (record.created) so that each is known.
// Both providers are force-flushed and shut down, and the script fails if
// an export failed.
//
// The test checks that every record is stored exactly once in the tenant
// named by the header, as Loki 3 stores OTLP logs: the body as the line,
// service.name, service.instance.id (which the SDK adds) and
// deployment.environment as stream labels (service_name, ...), and everything else as
// structured metadata, read back through the query API with Grafana's
// categorize-labels encoding: the other resource attributes, scope name
// and version, the attributes (typed values as text), severity, trace
// context, flags, observed_timestamp and the detected_level Loki adds;
// that metadata is queryable as labels (label filters on trace_id and
// an attribute); that sluice stored each at its time (export
// --from/--to); that the default tenant got nothing; and that the stream
// of each resource is selected by {service_name="..."}, as in Loki (see
// the subtest).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const otelScript = `
import json
import logging
import sys

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

url, n_api, n_log, tenant, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
exports, failures = [], []


class Exporter(OTLPLogExporter):
    # The processor drops a failed batch after a log line; keep count to
    # fail the script.
    def export(self, batch):
        result = super().export(batch)
        exports.append(len(batch))
        if result != LogRecordExportResult.SUCCESS:
            failures.append("%d records: %s" % (len(batch), result))
        return result


def provider(service, compression):
    lp = LoggerProvider(resource=Resource.create({
        "service.name": service,
        "host.name": "e2e-otel-host",
        "deployment.environment": "test",
    }))
    exporter = Exporter(endpoint=url, headers={"X-Scope-OrgID": tenant}, timeout=10, compression=compression)
    lp.add_log_record_processor(BatchLogRecordProcessor(exporter, max_export_batch_size=50, schedule_delay_millis=100))
    return lp


tracer = trace.get_tracer("e2e", tracer_provider=TracerProvider())

# 1. The logs API.
api = provider("e2e-otel-api", Compression.NoCompression)
logger = api.get_logger("e2e.otel.api", "1.2.3")
with tracer.start_as_current_span("e2e-otel-span") as span:
    sc = span.get_span_context()
    for i in range(n_api):
        error = i % 5 == 0
        if i % 10 == 3:
            body = {"event": "login", "user": "u%04d" % i, "ok": True}
        else:
            body = 'otel api %04d "quoted" back\\slash ünïcode ✓' % i
        logger.emit(
            timestamp=(base + i) * 10**9 + 123456789,
            severity_number=SeverityNumber.ERROR if error else SeverityNumber.INFO,
            severity_text="ERROR" if error else "INFO",
            body=body,
            attributes={"seq": i, "kind": "even" if i % 2 == 0 else "odd", "ratio": i / 4, "ok": i % 2 == 0, "tags": ["a", "b"]},
        )

# 2. Python's logging through the SDK's LoggingHandler.
logging_provider = provider("e2e-otel-logging", Compression.Gzip)


class SetTime(logging.Filter):
    # A known time for each record: base + 1000 + seq seconds.
    def filter(self, record):
        record.created = float(base + 1000 + record.seq)
        return True


handler = LoggingHandler(level=logging.DEBUG, logger_provider=logging_provider)
handler.addFilter(SetTime())
log = logging.getLogger("e2e.otel.logging")
log.setLevel(logging.DEBUG)
log.propagate = False
log.addHandler(handler)
for i in range(n_log):
    level = logging.WARNING if i % 10 == 0 else logging.INFO
    log.log(level, 'otel logging %04d "quoted" ünïcode', i, extra={"seq": i, "kind": "even" if i % 2 == 0 else "odd"})

flushed = api.force_flush() and logging_provider.force_flush()
api.shutdown()
logging_provider.shutdown()
print("RESULT " + json.dumps({
    "flushed": flushed,
    "exports": exports,
    "failures": failures,
    "trace_id": "%032x" % sc.trace_id,
    "span_id": "%016x" % sc.span_id,
}), flush=True)
if failures or not flushed:
    sys.exit("exports failed: %r (flushed: %s)" % (failures, flushed))
`

// otelBase is the time of the first record of the logs API: the records
// are a second apart (plus 123456789 ns), and the logging records start
// 1000 s later.
var otelBase = time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC)

// otelResult is the script's summary.
type otelResult struct {
	Flushed  bool     `json:"flushed"`
	Exports  []int    `json:"exports"`
	Failures []string `json:"failures"`
	TraceID  string   `json:"trace_id"`
	SpanID   string   `json:"span_id"`
}

// scriptResult reads the JSON after "RESULT " in a script's output.
func scriptResult(t *testing.T, out string, v any) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			if err := json.Unmarshal([]byte(rest), v); err != nil {
				t.Fatalf("the script's RESULT line %q: %v", rest, err)
			}
			return
		}
	}
	t.Fatalf("the script printed no RESULT line. Output:\n%s", out)
}

func TestOpenTelemetryPython(t *testing.T) {
	skipIfOff(t)
	py := venvPython(t, "opentelemetry.sdk._logs", "opentelemetry.exporter.otlp.proto.http._log_exporter")
	const nAPI, nLog, tenant = 300, 200, "team-otel"
	dir := t.TempDir()
	script := writeFile(t, dir, "otel.py", otelScript)
	s := startServer(t)

	start := time.Now()
	out := runClient(t, s, 2*time.Minute, py, script, s.url("/v1/logs"), strconv.Itoa(nAPI), strconv.Itoa(nLog), tenant,
		strconv.FormatInt(otelBase.Unix(), 10))
	t.Logf("the script ran in %v", time.Since(start).Round(time.Millisecond))
	var res otelResult
	scriptResult(t, out, &res)
	// force_flush returns once every batch was exported: all are stored.
	if got := s.storedLines(t, tenant); got != nAPI+nLog {
		t.Errorf("sluice_ingest_lines_total{tenant=%q} = %d after the script, want %d", tenant, got, nAPI+nLog)
	}
	reqs := s.checkNoFailedRequests(t, "otlp")
	if reqs != len(res.Exports) {
		t.Errorf("%d OTLP requests, but the exporters exported %d batches", reqs, len(res.Exports))
	}
	// At most 50 records a batch: at least 6 + 4 requests.
	if reqs < (nAPI+49)/50+(nLog+49)/50 {
		t.Errorf("%d OTLP requests for %d + %d records in batches of at most 50", reqs, nAPI, nLog)
	}
	t.Logf("the exporters sent %d + %d records in %d requests: %v", nAPI, nLog, reqs, res.Exports)
	var want, wantAPI, wantLog []string
	for i := range nAPI {
		want = append(want, "api "+strconv.Itoa(i))
		wantAPI = append(wantAPI, "api "+strconv.Itoa(i))
	}
	for i := range nLog {
		want = append(want, "logging "+strconv.Itoa(i))
		wantLog = append(wantLog, "logging "+strconv.Itoa(i))
	}
	s.checkSeries(t, tenant, 2)
	entries := otelQuery(t, s, tenant, `{service_name=~"e2e-otel-.+"}`)
	checkOnce(t, "query of tenant "+tenant, entries, want,
		func(e string) (string, error) { return otelCheckEntry(e, res) })
	// Metadata is queryable as labels, as in Loki.
	traced := otelQuery(t, s, tenant, fmt.Sprintf(`{service_name="e2e-otel-api"} | trace_id=%q | kind="odd"`, res.TraceID))
	if len(traced) != nAPI/2 {
		t.Errorf("{service_name=\"e2e-otel-api\"} | trace_id=... | kind=\"odd\": %d lines, want %d", len(traced), nAPI/2)
	}
	s.stop(t)

	lines := export(t, s.data, tenant)
	key := func(line string) (string, error) { k, _, err := otelBodyKey(line); return k, err }
	checkOnce(t, "tenant "+tenant, lines, want, key)
	checkTimes(t, s.data, tenant, lines, func(line string) (time.Time, error) {
		_, ts, err := otelBodyKey(line)
		return ts, err
	})
	checkOnce(t, "tenant default", export(t, s.data, "default"), nil, identity)
	checkStats(t, s.data, tenant, nAPI+nLog)

	t.Run("stream selected by service_name", func(t *testing.T) {
		// As Loki, sluice makes the stream of an OTLP record from its
		// resource's service.name, deployment.environment, ...
		// (internal/protocol/otlp.IndexAttributes), named as Loki's OTLP
		// ingestion names them, dots replaced by underscores.
		for _, c := range []struct {
			service string
			want    []string
		}{{"e2e-otel-api", wantAPI}, {"e2e-otel-logging", wantLog}} {
			for _, sel := range []string{
				fmt.Sprintf(`{service_name=%q}`, c.service),
				fmt.Sprintf(`{service_name=%q, deployment_environment="test"}`, c.service),
			} {
				checkOnce(t, sel, export(t, s.data, tenant, "--stream", sel), c.want, key)
			}
		}
	})
}

// otelBodyKey reads a stored line, the body of a record the script sent,
// and returns "api SEQ" or "logging SEQ" with the time the record had.
func otelBodyKey(line string) (string, time.Time, error) {
	var seq int
	switch {
	case strings.HasPrefix(line, "otel api "):
		if _, err := fmt.Sscanf(line, "otel api %04d", &seq); err != nil || line != fmt.Sprintf(`otel api %04d "quoted" back\slash ünïcode ✓`, seq) {
			return "", time.Time{}, fmt.Errorf("not a line of the logs API")
		}
	case strings.HasPrefix(line, "{"):
		// A map body, as Loki writes it: JSON.
		var body struct {
			Event, User string
			OK          bool
		}
		if err := json.Unmarshal([]byte(line), &body); err != nil || body.Event != "login" || !body.OK {
			return "", time.Time{}, fmt.Errorf("not a map body the script sent (%v)", err)
		}
		if _, err := fmt.Sscanf(body.User, "u%04d", &seq); err != nil {
			return "", time.Time{}, fmt.Errorf("user %q", body.User)
		}
	case strings.HasPrefix(line, "otel logging "):
		if _, err := fmt.Sscanf(line, "otel logging %04d", &seq); err != nil || line != fmt.Sprintf(`otel logging %04d "quoted" ünïcode`, seq) {
			return "", time.Time{}, fmt.Errorf("not a line of the logging module")
		}
		return "logging " + strconv.Itoa(seq), otelBase.Add(time.Duration(1000+seq) * time.Second), nil
	default:
		return "", time.Time{}, fmt.Errorf("not a line the script sent")
	}
	return "api " + strconv.Itoa(seq), otelBase.Add(time.Duration(seq)*time.Second + 123456789), nil
}

// otelEntry is one value of a categorize-labels query answer, with its
// stream's labels.
type otelEntry struct {
	Stream map[string]string `json:"stream"`
	Time   string            `json:"time"`
	Line   string            `json:"line"`
	Meta   map[string]string `json:"structuredMetadata"`
	Parsed map[string]string `json:"parsed"`
}

// otelQuery runs a log query over the records' hours, as Grafana does
// (X-Loki-Response-Encoding-Flags: categorize-labels), and returns each
// entry as the JSON of an otelEntry.
func otelQuery(t *testing.T, s *server, tenant, query string) []string {
	t.Helper()
	params := url.Values{"query": {query}, "start": {otelBase.Add(-time.Minute).Format(time.RFC3339)},
		"end": {otelBase.Add(time.Hour).Format(time.RFC3339)}, "limit": {"5000"}, "direction": {"forward"}}
	req, _ := http.NewRequest("GET", s.url("/loki/api/v1/query_range?"+params.Encode()), nil)
	req.Header.Set("X-Scope-OrgID", tenant)
	req.Header.Set("X-Loki-Response-Encoding-Flags", "categorize-labels")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		Data struct {
			EncodingFlags []string `json:"encodingFlags"`
			Result        []struct {
				Stream map[string]string    `json:"stream"`
				Values [][3]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("query %s: %s %.500s", query, resp.Status, body)
	}
	if len(doc.Data.EncodingFlags) != 1 || doc.Data.EncodingFlags[0] != "categorize-labels" {
		t.Errorf("query %s: encodingFlags %q", query, doc.Data.EncodingFlags)
	}
	var out []string
	for _, r := range doc.Data.Result {
		for _, v := range r.Values {
			e := otelEntry{Stream: r.Stream}
			if err := errors.Join(json.Unmarshal(v[0], &e.Time), json.Unmarshal(v[1], &e.Line), json.Unmarshal(v[2], &e)); err != nil {
				t.Fatalf("query %s: value %s: %v", query, v, err)
			}
			j, _ := json.Marshal(e)
			out = append(out, string(j))
		}
	}
	return out
}

// otelCheckEntry checks one entry (otelQuery's) against what the script
// sent, and returns "api SEQ" or "logging SEQ".
func otelCheckEntry(entry string, res otelResult) (string, error) {
	var e otelEntry
	if err := json.Unmarshal([]byte(entry), &e); err != nil {
		return "", err
	}
	k, ts, err := otelBodyKey(e.Line)
	if err != nil {
		return "", err
	}
	var problems []string
	expect := func(what, got, want string) {
		if got != want {
			problems = append(problems, fmt.Sprintf("%s is %q, want %q", what, got, want))
		}
	}
	m := e.Meta
	seq, err := strconv.Atoi(m["seq"])
	if err != nil || k != fmt.Sprintf("%s %d", strings.Fields(k)[0], seq) {
		return "", fmt.Errorf("%s: metadata seq %q", k, m["seq"])
	}
	expect("time", e.Time, strconv.FormatInt(ts.UnixNano(), 10))
	// The SDK adds service.instance.id, a UUID: a stream label too.
	if len(e.Stream["service_instance_id"]) != 36 {
		problems = append(problems, fmt.Sprintf("stream %v: no service_instance_id", e.Stream))
	}
	delete(e.Stream, "service_instance_id")
	expect("stream", fmt.Sprint(e.Stream), fmt.Sprintf("map[deployment_environment:test service_name:e2e-otel-%s]", strings.Fields(k)[0]))
	if len(e.Parsed) > 0 {
		problems = append(problems, fmt.Sprintf("parsed labels %v", e.Parsed))
	}
	kind := "even"
	if seq%2 == 1 {
		kind = "odd"
	}
	expect("kind", m["kind"], kind)
	expect("host_name", m["host_name"], "e2e-otel-host")
	expect("telemetry_sdk_language", m["telemetry_sdk_language"], "python")
	if _, err := strconv.ParseInt(m["observed_timestamp"], 10, 64); err != nil {
		problems = append(problems, fmt.Sprintf("observed_timestamp %q", m["observed_timestamp"]))
	}
	sev, sevNum, level := "INFO", "9", "info"
	switch strings.Fields(k)[0] {
	case "api":
		if seq%5 == 0 {
			sev, sevNum, level = "ERROR", "17", "error"
		}
		expect("trace_id", m["trace_id"], res.TraceID)
		expect("span_id", m["span_id"], res.SpanID)
		if f, _ := strconv.Atoi(m["flags"]); f&1 != 1 {
			problems = append(problems, fmt.Sprintf("flags %q: not sampled", m["flags"]))
		}
		expect("scope_name", m["scope_name"], "e2e.otel.api")
		expect("scope_version", m["scope_version"], "1.2.3")
		expect("ratio", m["ratio"], strconv.FormatFloat(float64(seq)/4, 'f', -1, 64))
		expect("ok", m["ok"], strconv.FormatBool(seq%2 == 0))
		expect("tags", m["tags"], `["a","b"]`)
	case "logging":
		if seq%10 == 0 {
			sev, sevNum, level = "WARN", "13", "warn"
		}
		expect("scope_name", m["scope_name"], "e2e.otel.logging")
		expect("code_function_name", m["code_function_name"], "<module>")
		if !strings.HasSuffix(m["code_file_path"], "otel.py") {
			problems = append(problems, fmt.Sprintf("code.file.path %q", m["code_file_path"]))
		}
	}
	expect("severity_text", m["severity_text"], sev)
	expect("severity_number", m["severity_number"], sevNum)
	expect("detected_level", m["detected_level"], level)
	if len(problems) > 0 {
		return "", fmt.Errorf("%s: %s", k, strings.Join(problems, "; "))
	}
	return k, nil
}
