package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicelog/sluice/sdk"
)

// TestSDKToQuery sends records with the SDK, over both of its protocols
// and through its slog Handler, and reads them back through
// /loki/api/v1/query_range: each arrives once, with its stream labels,
// time and fields.
func TestSDKToQuery(t *testing.T) {
	skipIfOff(t)
	s := startServer(t)
	const tenant = "sdk"
	const n = 500
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	for _, tc := range []struct {
		name        string
		protocol    sdk.Protocol
		compression sdk.Compression
	}{
		{"ndjson-zstd", sdk.NDJSON, sdk.CompressionZstd},
		{"ndjson-gzip", sdk.NDJSON, sdk.CompressionGzip},
		{"loki-protobuf", sdk.LokiProtobuf, sdk.CompressionSnappy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := sdk.New(sdk.Config{URL: s.url(""), Protocol: tc.protocol, Compression: tc.compression,
				Tenant: tenant, BatchRecords: 64, Labels: []sdk.Label{{Name: "job", Value: tc.name}}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				ts := start.Add(time.Duration(i) * time.Millisecond)
				line := fmt.Appendf(nil, `{"msg":"record %d","i":%d}`, i, i)
				if err := c.Send(ts, line, sdk.Label{Name: "pod", Value: fmt.Sprint("p", i%2)}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := c.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.Sent != n || st.Dropped+st.Failed != 0 {
				t.Fatalf("stats %+v, want %d sent", st, n)
			}
			got := s.queryRange(t, tenant, fmt.Sprintf(`{job=%q}`, tc.name), start.Add(-time.Second), time.Now().Add(time.Minute))
			if len(got) != n {
				t.Fatalf("%d entries back, want %d", len(got), n)
			}
			seen := map[int]bool{}
			for _, e := range got {
				i := int(e.time.Sub(start) / time.Millisecond)
				if seen[i] {
					t.Errorf("record %d twice", i)
				}
				seen[i] = true
				if e.labels["pod"] != fmt.Sprint("p", i%2) {
					t.Errorf("record %d: labels %v", i, e.labels)
				}
				if tc.protocol == sdk.LokiProtobuf {
					if want := fmt.Sprintf(`{"msg":"record %d","i":%d}`, i, i); e.line != want {
						t.Errorf("record %d: line %q, want %q", i, e.line, want)
					}
				} else {
					// sluice keeps the object as the line.
					var m map[string]any
					if err := json.Unmarshal([]byte(e.line), &m); err != nil || m["i"] != float64(i) || m["msg"] != fmt.Sprintf("record %d", i) {
						t.Errorf("record %d: line %q (%v)", i, e.line, err)
					}
				}
			}
		})
	}

	t.Run("slog", func(t *testing.T) {
		c, err := sdk.New(sdk.Config{URL: s.url(""), Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(sdk.NewHandler(c, &sdk.HandlerOptions{LabelKeys: []string{"service"}})).With("service", "e2e-slog")
		for i := range 10 {
			log.Warn("disk slow", "op", i, slog.Group("dev", "name", "sda"))
		}
		if err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := s.queryRange(t, tenant, `{service="e2e-slog"}`, start, time.Now().Add(time.Minute))
		if len(got) != 10 {
			t.Fatalf("%d entries back, want 10: %v", len(got), got)
		}
		for k, e := range got {
			var m map[string]any
			if err := json.Unmarshal([]byte(e.line), &m); err != nil || m["level"] != "WARN" || m["msg"] != "disk slow" ||
				m["op"] != float64(k) || m["dev.name"] != "sda" {
				t.Errorf("entry %d: line %q (%v)", k, e.line, err)
			}
		}
	})
}
