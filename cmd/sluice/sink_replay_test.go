package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSinkDeadLetterReplayCommand: the mistakes `sluice sink dead-letter
// --replay` refuses, each named. The replay itself is tested against a real
// PostgreSQL in internal/sink/postgres (TestDeadLetterReplay).
func TestSinkDeadLetterReplayCommand(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "sluice.yaml")
	conf := `data: ` + data + `
sinks:
  - name: files
    type: file
    file: {dir: ` + filepath.Join(dir, "out") + `}
  - name: audit
    type: postgres
    postgres: {dsn: "postgres://nobody@127.0.0.1:1/none?sslmode=disable"}
`
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"files", "audit"} {
		if err := os.MkdirAll(filepath.Join(data, "sinks", name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bad := `{"time":"2026-01-15T08:00:00Z","tenant":"t","labels":{},"fields":{},"line":"x","wal":"00000000000000000001.wal:0","row":0,"reason":"r"}` +
		"\n" + `{"time":"2026-01-15T08:00:00Z","tenant":"t","labels":{},"fields":{},"line":"y","wal":"nowhere","row":1,"reason":"r"}` + "\n"
	if err := os.WriteFile(filepath.Join(data, "sinks", "audit", "dead-letter.ndjson"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		want   string
	}{
		{"no config", []string{"--replay", "--data", data, "audit"}, 2, "needs --config"},
		{"flags after the name", []string{"audit", "--replay", "--data", data}, 2, "needs --config"},
		{"two names", []string{"audit", "--replay", "files"}, 2, "takes the sink's name"},
		{"unknown sink", []string{"--replay", "--config", cfg, "other"}, 1, `has no sink "other"`},
		{"file sink", []string{"--replay", "--config", cfg, "files"}, 1, `sink "files": a file destination cannot replay`},
		{"bad dead letter", []string{"--replay", "--config", cfg, "audit"}, 1, `dead-letter.ndjson:2: wal: position "nowhere"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, st := sluice(t, "", append([]string{"sink", "dead-letter"}, tc.args...)...)
			if st != tc.status || !strings.Contains(errOut, tc.want) {
				t.Fatalf("status %d, err %q; want %d and %q", st, errOut, tc.status, tc.want)
			}
		})
	}
	// Nothing was rewritten.
	if got, err := os.ReadFile(filepath.Join(data, "sinks", "audit", "dead-letter.ndjson")); err != nil || string(got) != bad {
		t.Fatalf("dead letter after refused replays: %q (%v)", got, err)
	}
}
