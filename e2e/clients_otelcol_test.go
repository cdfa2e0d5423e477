package e2e

// TestOpenTelemetryCollector: an OpenTelemetry Collector v0.165.0 of our
// own (e2e/testdata/clients/otelcol: the filelog receiver, the batch
// processor and the otlphttp exporter, built from the Collector's Go
// modules by scripts/e2e-setup.sh) tails a file and exports the records to
// sluice's POST /v1/logs: OTLP protobuf, gzip-compressed, with the
// exporter's headers (X-Scope-OrgID). The receiver joins a record's
// continuation lines (multiline line_start_pattern), sets the resource
// attributes service.name, deployment.environment and host.name, and
// parses each record with a regex into attributes (request_id), its time
// and its severity.
//
// The test checks the records as Loki 3 stores OTLP logs: the body is the
// line; service.name and deployment.environment, resource attributes Loki
// makes labels by default, are the stream's labels service_name and
// deployment_environment (dots as underscores); the other attributes and
// the severity are structured metadata (request_id, host_name,
// severity_text), queryable as `| request_id="..."`; each record is at the
// time it says.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenTelemetryCollector(t *testing.T) {
	skipIfOff(t)
	bin := clientBuild(t, otelcolDir, "otelcol")
	const n, tenant = 300, "team-otelcol"
	dir := t.TempDir()
	s := startServer(t)

	base := time.Now().Add(-time.Minute - n*time.Millisecond).Truncate(time.Millisecond)
	logFile := filepath.Join(dir, "app.log")
	var text strings.Builder
	var sent []sentLine
	for i := range n {
		sev := "INFO"
		if i%10 == 0 {
			sev = "WARN"
		}
		ts := base.Add(time.Duration(i) * time.Millisecond).UTC().Format(time.RFC3339Nano)
		rec := fmt.Sprintf("%s %s request_id=otel-%04d %s", ts, sev, i, multiline("otelcol", i))
		text.WriteString(rec + "\n")
		sent = append(sent, sentLine{
			key:    rec,
			labels: map[string]string{"service_name": "e2e-otelcol", "deployment_environment": "test"},
			meta: map[string]string{"request_id": fmt.Sprintf("otel-%04d", i), "severity_text": sev,
				"host_name": "e2e-otelcol-host"},
		})
	}
	writeFile(t, dir, "app.log", text.String())
	config := fmt.Sprintf(`receivers:
  file_log:
    include: [%[1]s]
    start_at: beginning
    multiline:
      line_start_pattern: '^\d{4}-\d{2}-\d{2}T'
    resource:
      service.name: e2e-otelcol
      deployment.environment: test
      host.name: e2e-otelcol-host
    operators:
      - type: regex_parser
        regex: '^(?P<ts>\S+) (?P<sev>[A-Z]+) request_id=(?P<request_id>\S+) '
        timestamp:
          parse_from: attributes.ts
          layout_type: gotime
          layout: '2006-01-02T15:04:05.999999999Z07:00'
        severity:
          parse_from: attributes.sev
processors:
  batch:
    timeout: 200ms
exporters:
  otlp_http:
    endpoint: %[2]s
    headers:
      X-Scope-OrgID: %[3]s
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    logs:
      receivers: [file_log]
      processors: [batch]
      exporters: [otlp_http]
`, logFile, s.url(""), tenant)
	cfgFile := writeFile(t, dir, "otelcol.yaml", config)
	p := startProc(t, "otelcol", exec.Command(bin, "--config", cfgFile))
	s.waitStored(t, tenant, n, 2*time.Minute, func() error {
		if p.exited() {
			return fmt.Errorf("the collector exited (%v). Output:\n%s", p.err, p.out)
		}
		return nil
	})
	if err := p.stop(t, time.Minute); err != nil {
		t.Errorf("the collector exited with %v after SIGTERM. Output:\n%s", err, p.out)
	}
	s.checkNoFailedRequests(t, "otlp")
	s.checkSeries(t, tenant, 1)

	start, end := base.Add(-time.Hour), time.Now().Add(time.Hour)
	// Loki 3's OTLP mapping: the body is the line, service_name and
	// deployment_environment the labels, the rest structured metadata.
	s.checkClientLines(t, tenant, `{service_name="e2e-otelcol"}`, "", start, end, sent, identity, clientPicks(n)...)
	for _, e := range s.queryRange(t, tenant, `{service_name="e2e-otelcol"} | severity_text="WARN"`, start, end) {
		ts, _, _ := strings.Cut(e.line, " ")
		if want, err := time.Parse(time.RFC3339Nano, ts); err != nil || !e.time.Equal(want) {
			t.Errorf("line %q stored at %s, want %s (%v)", e.line, e.time.UTC().Format(time.RFC3339Nano), ts, err)
		}
	}
	s.stop(t)
}
