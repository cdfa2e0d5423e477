// Package e2e holds end-to-end tests of `sluice serve` with real clients:
// the Python Loki handlers (python-logging-loki, loki-logger-handler), the
// OpenTelemetry Python SDK's OTLP/HTTP exporter, the elasticsearch Python
// client's helpers.bulk, rsyslog (omelasticsearch in bulk mode, omfwd
// over TCP) and syslog-ng (http(), syslog(), network()); the Loki clients
// Promtail, tracing-loki (Rust), loki4j (Java) and pino-loki (Node), and an
// OpenTelemetry Collector, whose lines are checked through the query API
// (clients_*_test.go); and Grafana's logcli querying through the Loki query
// API. Each test builds nothing itself: TestMain
// builds the sluice binary once; a test starts a server on a free port of
// 127.0.0.1 with a data directory of its own, runs the real client, stops
// the server with SIGTERM and reads back what was stored with
// `sluice export` and `sluice stats`.
//
// The clients come from scripts/e2e-setup.sh, which installs and caches
// them under ${SLUICE_E2E_DIR:-$HOME/.cache/sluice-e2e}. A test whose
// client is missing fails and says to run it; SLUICE_E2E=off skips them all.
//
// The package imports nothing of sluice: it talks to the binary as a user
// would.
package e2e
