package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/sink/postgres"
)

// TestSinkConfigErrors: every mistake in a sinks: entry is refused at
// start with the sink and the key named.
func TestSinkConfigErrors(t *testing.T) {
	file := func(c sinkConfig) sinkConfig { c.File.Dir = "/tmp/x"; return c }
	for _, tc := range []struct {
		name string
		cfgs []sinkConfig
		want string
	}{
		{"no name", []sinkConfig{file(sinkConfig{Type: "file"})}, `sinks[0]: name ""`},
		{"twice", []sinkConfig{file(sinkConfig{Name: "a", Type: "file"}), file(sinkConfig{Name: "a", Type: "file"})}, `sink "a": named twice`},
		{"type", []sinkConfig{{Name: "k", Type: "nats"}}, `sink "k": type "nats": want postgres, file, loki, elasticsearch or kafka`},
		{"kafka brokers", []sinkConfig{{Name: "k", Type: "kafka", Kafka: kfSinkConfig{Topic: "logs"}}}, `sink "k": kafka.brokers: none`},
		{"kafka topic", []sinkConfig{{Name: "k", Type: "kafka", Kafka: kfSinkConfig{Brokers: []string{"k:9092"}}}}, `sink "k": kafka.topic: empty`},
		{"kafka compression", []sinkConfig{{Name: "k", Type: "kafka", Kafka: kfSinkConfig{Brokers: []string{"k:9092"}, Topic: "logs",
			Compression: "brotli"}}}, `sink "k": kafka.compression "brotli"`},
		{"kafka value", []sinkConfig{{Name: "k", Type: "kafka", Kafka: kfSinkConfig{Brokers: []string{"k:9092"}, Topic: "logs",
			Value: "xml"}}}, `sink "k": kafka.value "xml"`},
		{"kafka timeout", []sinkConfig{{Name: "k", Type: "kafka", Kafka: kfSinkConfig{Brokers: []string{"k:9092"}, Topic: "logs",
			TransactionTimeout: "long"}}}, `sink "k": kafka.transaction_timeout "long"`},
		{"loki url", []sinkConfig{{Name: "lk", Type: "loki"}}, `sink "lk": loki.url ""`},
		{"concurrency file", []sinkConfig{file(sinkConfig{Name: "f", Type: "file", Concurrency: 2})},
			`sink "f": concurrency 2: the file destination delivers one batch at a time`},
		{"concurrency drop_oldest", []sinkConfig{{Name: "p", Type: "postgres", Concurrency: 2, Policy: "drop_oldest",
			Postgres: pgSinkConfig{DSN: "postgres://127.0.0.1/x"}}}, `sink "p": concurrency 2 needs policy block`},
		{"pace 1", []sinkConfig{file(sinkConfig{Name: "f", Type: "file", Pace: 1})},
			`sink "f": pace 1: want at least 0 (never pause) and below 1`},
		{"loki timeout", []sinkConfig{{Name: "lk", Type: "loki", Loki: lokiSinkConfig{URL: "http://l/", Timeout: "1"}}},
			`sink "lk": loki.timeout "1"`},
		{"loki auth", []sinkConfig{{Name: "lk", Type: "loki", Loki: lokiSinkConfig{URL: "http://l/", User: "u", BearerToken: "t"}}},
			`sink "lk": loki: set basic auth`},
		{"es index", []sinkConfig{{Name: "es", Type: "elasticsearch", Elastic: esSinkConfig{URL: "http://e:9200", Index: "Logs"}}},
			`sink "es": elasticsearch.index: index name "Logs" is not lower case`},
		{"es action", []sinkConfig{{Name: "es", Type: "elasticsearch", Elastic: esSinkConfig{URL: "http://e:9200", Index: "logs",
			Action: "update"}}}, `sink "es": elasticsearch.action "update"`},
		{"es url", []sinkConfig{{Name: "es", Type: "elasticsearch", Elastic: esSinkConfig{Index: "logs"}}}, `sink "es": elasticsearch.url ""`},
		{"policy", []sinkConfig{file(sinkConfig{Name: "p", Type: "file", Policy: "drop_newest"})}, `sink "p": policy "drop_newest"`},
		{"linger", []sinkConfig{file(sinkConfig{Name: "l", Type: "file", Linger: "soon"})}, `sink "l": linger "soon"`},
		{"selector", []sinkConfig{file(sinkConfig{Name: "s", Type: "file", Selector: `{app=}`})}, `sink "s": sink "s": selector`},
		{"dsn", []sinkConfig{{Name: "pg", Type: "postgres"}}, `sink "pg": postgres sink "pg": no dsn`},
		{"bad dsn", []sinkConfig{{Name: "pg", Type: "postgres", Postgres: pgSinkConfig{DSN: "postgres://a:b@host:notaport/db"}}}, `postgres sink "pg": dsn`},
		{"json_type", []sinkConfig{{Name: "pg", Type: "postgres", Postgres: pgSinkConfig{DSN: "postgres://a@h/db", JSONType: "hstore"}}},
			`postgres sink "pg": json_type "hstore": want jsonb, json or text`},
		{"compression", []sinkConfig{{Name: "f", Type: "file", File: fileSinkConfig{Dir: "/tmp/x", Compression: "brotli"}}}, `compression "brotli"`},
		{"from", []sinkConfig{file(sinkConfig{Name: "f", Type: "file", From: "rule"})}, `sink "f": sink "f": from "rule": want rules`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := buildSinks(tc.cfgs, t.TempDir(), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestPostgresDefaultConcurrency: a postgres sink of policy block without
// a concurrency takes postgres.DefaultConcurrency (so it holds that many
// batches and one more), unless its pool is smaller; drop_oldest and the
// other types deliver one batch at a time.
func TestPostgresDefaultConcurrency(t *testing.T) {
	pg := func(c sinkConfig) sinkConfig {
		c.Name, c.Type = "pg", "postgres"
		c.Postgres.DSN = "postgres://127.0.0.1/x"
		return c
	}
	for _, tc := range []struct {
		name    string
		cfg     sinkConfig
		batches int64
	}{
		{"postgres", pg(sinkConfig{}), postgres.DefaultConcurrency + 1},
		{"postgres, concurrency 1", pg(sinkConfig{Concurrency: 1}), 2},
		{"postgres, concurrency 3", pg(sinkConfig{Concurrency: 3}), 4},
		{"postgres, pool 1", pg(sinkConfig{Postgres: pgSinkConfig{Pool: 1}}), 2},
		{"postgres, drop_oldest", pg(sinkConfig{Policy: "drop_oldest"}), 2},
		{"file", sinkConfig{Name: "f", Type: "file", File: fileSinkConfig{Dir: t.TempDir()}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := buildSinks([]sinkConfig{tc.cfg}, t.TempDir(), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := m.BatchMemory(), tc.batches*sink.DefaultBatchBytes; got != want {
				t.Fatalf("batch memory %d, want %d batches (%d)", got, tc.batches, want)
			}
		})
	}
}

func TestSinkDeadLetterCommand(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "sinks", "audit")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line := `{"line":"x","reason":"check constraint"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "dead-letter.ndjson"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, st := sluice(t, "", "sink", "dead-letter", "--data", data, "audit")
	if st != 0 || out != line {
		t.Fatalf("status %d, out %q, err %q", st, out, errOut)
	}
	_, errOut, st = sluice(t, "", "sink", "dead-letter", "--data", data, "other")
	if st != 0 || !strings.Contains(errOut, `sink "other" has no dead letter`) {
		t.Fatalf("no file: status %d, err %q", st, errOut)
	}
	if _, errOut, st = sluice(t, "", "sink", "dead-letter", "audit"); st != 2 || !strings.Contains(errOut, "needs --data") {
		t.Fatalf("without --data: status %d, err %q", st, errOut)
	}
}
