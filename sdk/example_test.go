package sdk_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"time"

	"github.com/sluicelog/sluice/sdk"
)

// fakeSluice stands in for sluice: it prints each NDJSON line it gets,
// with _time's value cut out if clockless.
func fakeSluice(clockless bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			line := sc.Text()
			if clockless {
				line = timeValue.ReplaceAllString(line, `"_time":"…"`)
			}
			fmt.Println(line)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
}

var timeValue = regexp.MustCompile(`"_time":"[^"]*"`)

func Example() {
	srv := fakeSluice(false)
	defer srv.Close()

	c, err := sdk.New(sdk.Config{
		URL:         srv.URL, // e.g. "http://127.0.0.1:3100"
		Compression: sdk.CompressionNone,
		Labels:      []sdk.Label{{Name: "service", Value: "billing"}},
	})
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC)
	_ = c.Send(t, []byte("invoice sent"), sdk.Label{Name: "host", Value: "node-1"})
	_ = c.Send(t, []byte(`{"msg":"paid","amount":12.5}`), sdk.Label{Name: "host", Value: "node-1"})
	if err := c.Close(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(c.Stats().Sent, "sent")
	// Output:
	// {"_time":"2026-01-15T08:00:00.000000000Z","service":"billing","host":"node-1","_msg":"invoice sent"}
	// {"_time":"2026-01-15T08:00:00.000000000Z","service":"billing","host":"node-1","msg":"paid","amount":12.5}
	// 2 sent
}

func ExampleNewHandler() {
	srv := fakeSluice(true)
	defer srv.Close()

	c, _ := sdk.New(sdk.Config{URL: srv.URL, Compression: sdk.CompressionNone})
	log := slog.New(sdk.NewHandler(c, &sdk.HandlerOptions{LabelKeys: []string{"service"}}))
	log = log.With("service", "billing")

	log.LogAttrs(context.Background(), slog.LevelWarn, "card declined",
		slog.Group("card", slog.String("brand", "visa")), slog.Int("attempt", 2))

	_ = c.Close(context.Background())
	// Output:
	// {"_time":"…","service":"billing","level":"WARN","msg":"card declined","card.brand":"visa","attempt":2}
}

// slog.Logger calls runtime.Callers on every call for the caller's PC,
// which a Handler without AddSource does not use; in BenchmarkLogCall
// that is over half of slog.Logger's own cost. A hot path can build the
// Record with slog's API itself, pc 0, and give it to the Handler.
func ExampleHandler_Handle() {
	srv := fakeSluice(true)
	defer srv.Close()

	c, _ := sdk.New(sdk.Config{URL: srv.URL, Compression: sdk.CompressionNone})
	h := sdk.NewHandler(c, nil).WithAttrs([]slog.Attr{slog.String("service", "api")})

	ctx := context.Background()
	if h.Enabled(ctx, slog.LevelInfo) {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "request served", 0)
		r.AddAttrs(slog.String("method", "GET"), slog.Int("status", 200))
		_ = h.Handle(ctx, r)
	}

	_ = c.Close(ctx)
	// Output:
	// {"_time":"…","level":"INFO","msg":"request served","service":"api","method":"GET","status":200}
}
