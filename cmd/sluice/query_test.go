package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/server"
	"github.com/sluicelog/sluice/internal/store"
)

const queryInput = `{"ts":"2026-01-15T08:00:00Z","level":"info","msg":"up","service":"api"}
{"ts":"2026-01-15T08:00:01Z","level":"error","msg":"payment declined","service":"api"}
{"ts":"2026-01-15T08:00:02Z","level":"error","msg":"disk full","service":"db"}
`

// TestQueryData: sluice query on a data directory, each output.
func TestQueryData(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if _, stderr, status := sluice(t, queryInput, "ingest", "--data", data, "--quiet", "-"); status != 0 {
		t.Fatalf("ingest: %s", stderr)
	}
	span := []string{"--data", data, "--from", "2026-01-15T00:00:00Z", "--to", "2026-01-16T00:00:00Z"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--output", "raw", `{service=~".+"} | json | level="error"`},
			`{"ts":"2026-01-15T08:00:02Z","level":"error","msg":"disk full","service":"db"}` + "\n" +
				`{"ts":"2026-01-15T08:00:01Z","level":"error","msg":"payment declined","service":"api"}` + "\n"},
		{[]string{"--forward", "--limit", "1", `{service="api"}`},
			`2026-01-15T08:00:00Z {service="api"} {"ts":"2026-01-15T08:00:00Z","level":"info","msg":"up","service":"api"}` + "\n"},
		{[]string{"-o", "jsonl", `{service="db"}`},
			`{"time":"2026-01-15T08:00:02Z","labels":{"service":"db"},"line":"{\"ts\":\"2026-01-15T08:00:02Z\",\"level\":\"error\",\"msg\":\"disk full\",\"service\":\"db\"}"}` + "\n"},
		{[]string{`sum by (service) (count_over_time({service=~".+"}[1d]))`},
			"TIME                  SERIES           VALUE\n2026-01-16T00:00:00Z  {service=\"api\"}  2\n2026-01-16T00:00:00Z  {service=\"db\"}   1\n"},
		{[]string{"--step", "1h", "--from", "2026-01-15T08:00:00Z", "--to", "2026-01-15T09:00:00Z", `count_over_time({service="db"}[1h])`},
			"TIME                  SERIES          VALUE\n2026-01-15T09:00:00Z  {service=\"db\"}  1\n"}, // 08:00's window ends before 08:00:02
	} {
		stdout, stderr, status := sluice(t, "", append(append([]string{"query"}, span...), tc.args...)...)
		if status != 0 || stdout != tc.want {
			t.Errorf("query %q: status %d, stderr %q\n got %q\nwant %q", tc.args, status, stderr, stdout, tc.want)
		}
	}
	if _, stderr, status := sluice(t, "", "query", "--data", data, `{service="api"`); status != 1 || !strings.Contains(stderr, "parse error at line 1, col 15") {
		t.Errorf("a bad query: status %d, %q", status, stderr)
	}
}

// syncWriter is a writer several goroutines may use.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestQueryAndTailURL: sluice query and sluice tail against a server.
func TestQueryAndTailURL(t *testing.T) {
	st, err := store.Open(store.Options{Dir: filepath.Join(t.TempDir(), "data"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := server.New(server.DefaultConfig(), st, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	push := func(line string) {
		body := `{"streams":[{"stream":{"app":"api"},"values":[["` + itoa(time.Now().UnixNano()) + `",` + quote(line) + `]]}]}`
		resp, err := ts.Client().Post(ts.URL+"/loki/api/v1/push", "application/json", strings.NewReader(body))
		if err != nil || resp.StatusCode != 204 {
			t.Fatalf("push: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	push("first line")
	stdout, stderr, status := sluice(t, "", "query", "--url", ts.URL, "--tenant", "default", "-o", "raw", `{app="api"}`)
	if status != 0 || stdout != "first line\n" {
		t.Fatalf("query --url: %d %q %q", status, stdout, stderr)
	}

	var out syncWriter
	done := make(chan int)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- run([]string{"tail", "--url", ts.URL, "-o", "raw", `{app="api"}`}, &env{stdout: &out, stderr: io.Discard, ctx: ctx})
	}()
	// Once the first line is out, tail is polling: the second can only
	// come out live. The deadline only stops a test that hangs.
	deadline := time.Now().Add(2 * time.Minute)
	waitFor := func(line string) {
		t.Helper()
		for !strings.Contains(out.String(), line) {
			if time.Now().After(deadline) {
				t.Fatalf("tail printed %q, want %q", out.String(), line)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("first line")
	push("second line")
	waitFor("second line")
	if got := out.String(); got != "first line\nsecond line\n" {
		t.Errorf("tail printed %q", got)
	}
	cancel()
	select {
	case status := <-done:
		if status != 0 {
			t.Errorf("tail ended with status %d", status)
		}
	case <-time.After(time.Minute): // only stops a test that hangs
		t.Fatal("tail did not end when interrupted")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func quote(s string) string { return strconv.Quote(s) }
