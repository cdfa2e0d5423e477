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
// named by the header, as sluice's JSON rendering of it: time (RFC 3339
// with nanoseconds), severity, body, trace context, resource, scope and
// attributes; that sluice stored each at its time (export --from/--to);
// that the default tenant got nothing; and that the stream of each
// resource is selected by {service_name="..."}, as in Loki (see the
// subtest).

import (
	"encoding/json"
	"fmt"
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
	s.checkSeries(t, tenant, 2)
	s.stop(t)

	lines := export(t, s.data, tenant)
	var want, wantAPI, wantLog []string
	for i := range nAPI {
		want = append(want, "api "+strconv.Itoa(i))
		wantAPI = append(wantAPI, "api "+strconv.Itoa(i))
	}
	for i := range nLog {
		want = append(want, "logging "+strconv.Itoa(i))
		wantLog = append(wantLog, "logging "+strconv.Itoa(i))
	}
	key := func(line string) (string, error) { return otelCheckLine(line, res) }
	checkOnce(t, "tenant "+tenant, lines, want, key)
	checkTimes(t, s.data, tenant, lines, func(line string) (time.Time, error) {
		var rec struct {
			Time string `json:"time"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return time.Time{}, err
		}
		return time.Parse(time.RFC3339Nano, rec.Time)
	})
	checkOnce(t, "tenant default", export(t, s.data, "default"), nil, identity)
	checkStats(t, s.data, tenant, nAPI+nLog)

	t.Run("stream selected by service_name", func(t *testing.T) {
		// sluice makes the stream of an OTLP record from its resource's
		// service.name, host.name, ... (internal/ingest/otlp.StreamFields),
		// named as Loki's OTLP ingestion names them, dots replaced by
		// underscores: service_name, host_name.
		for _, c := range []struct {
			service string
			want    []string
		}{{"e2e-otel-api", wantAPI}, {"e2e-otel-logging", wantLog}} {
			for _, sel := range []string{
				fmt.Sprintf(`{service_name=%q}`, c.service),
				fmt.Sprintf(`{service_name=%q, host_name="e2e-otel-host"}`, c.service),
			} {
				checkOnce(t, sel, export(t, s.data, tenant, "--stream", sel), c.want, key)
			}
		}
	})
}

// otelCheckLine checks one stored OTLP line against what the script sent,
// and returns "api SEQ" or "logging SEQ".
func otelCheckLine(line string, res otelResult) (string, error) {
	var rec map[string]any
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&rec); err != nil {
		return "", err
	}
	str := func(k string) string { s, _ := rec[k].(string); return s }
	num := func(k string) int64 {
		n, ok := rec[k].(json.Number)
		if !ok {
			return -1
		}
		v, err := n.Int64()
		if err != nil {
			return -1
		}
		return v
	}
	var problems []string
	expect := func(k string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			problems = append(problems, fmt.Sprintf("%s is %v, want %v", k, got, want))
		}
	}
	seq := num("seq")
	if seq < 0 {
		return "", fmt.Errorf("no integer seq attribute")
	}
	kind := "even"
	if seq%2 == 1 {
		kind = "odd"
	}
	expect("kind", str("kind"), kind)
	expect("host_name", str("host_name"), "e2e-otel-host")
	expect("deployment_environment", str("deployment_environment"), "test")
	expect("telemetry_sdk_language", str("telemetry_sdk_language"), "python")
	if _, err := time.Parse(time.RFC3339Nano, str("observed_time")); err != nil {
		problems = append(problems, fmt.Sprintf("observed_time %q: %v", str("observed_time"), err))
	}
	var k string
	switch service := str("service_name"); service {
	case "e2e-otel-api":
		k = "api " + strconv.FormatInt(seq, 10)
		expect("time", str("time"), otelBase.Add(time.Duration(seq)*time.Second+123456789).Format(time.RFC3339Nano))
		sev, sevNum := "INFO", int64(9)
		if seq%5 == 0 {
			sev, sevNum = "ERROR", 17
		}
		expect("severity_text", str("severity_text"), sev)
		expect("severity_number", num("severity_number"), sevNum)
		if seq%10 == 3 {
			body, _ := rec["body"].(map[string]any)
			expect("body.user", body["user"], fmt.Sprintf("u%04d", seq))
			expect("body.event", body["event"], "login")
			expect("body.ok", body["ok"], true)
		} else {
			expect("body", str("body"), fmt.Sprintf(`otel api %04d "quoted" back\slash ünïcode ✓`, seq))
		}
		expect("trace_id", str("trace_id"), res.TraceID)
		expect("span_id", str("span_id"), res.SpanID)
		if num("flags")&1 != 1 {
			problems = append(problems, fmt.Sprintf("flags %v: not sampled", rec["flags"]))
		}
		expect("scope_name", str("scope_name"), "e2e.otel.api")
		expect("scope_version", str("scope_version"), "1.2.3")
		expect("ratio", rec["ratio"], json.Number(strconv.FormatFloat(float64(seq)/4, 'g', -1, 64)))
		expect("ok", rec["ok"], seq%2 == 0)
		expect("tags", rec["tags"], []any{"a", "b"})
	case "e2e-otel-logging":
		k = "logging " + strconv.FormatInt(seq, 10)
		expect("time", str("time"), otelBase.Add(time.Duration(1000+seq)*time.Second).Format(time.RFC3339Nano))
		sev, sevNum := "INFO", int64(9)
		if seq%10 == 0 {
			sev, sevNum = "WARN", 13
		}
		expect("severity_text", str("severity_text"), sev)
		expect("severity_number", num("severity_number"), sevNum)
		expect("body", str("body"), fmt.Sprintf(`otel logging %04d "quoted" ünïcode`, seq))
		expect("scope_name", str("scope_name"), "e2e.otel.logging")
		expect("code_function_name", str("code_function_name"), "<module>")
		if !strings.HasSuffix(str("code_file_path"), "otel.py") {
			problems = append(problems, fmt.Sprintf("code.file.path %q", str("code_file_path")))
		}
	default:
		return "", fmt.Errorf("service_name %q: not one the script sent", service)
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("%s: %s", k, strings.Join(problems, "; "))
	}
	return k, nil
}
