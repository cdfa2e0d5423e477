// Command sdkload sends generated records to a sluice server through the
// Go SDK, from one process with one Client shared by G goroutines, and
// prints how long it took until Close returned: every record sent and
// acknowledged (durable on the server) or counted as lost. bench/sdk.sh
// runs it against a fresh `sluice serve`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/sluicelog/sluice/sdk"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:3100", "sluice's base URL")
	n := flag.Int("records", 2000000, "records to send")
	g := flag.Int("goroutines", 4, "goroutines calling Send on the one Client")
	protocol := flag.String("protocol", "ndjson", "ndjson or loki")
	senders := flag.Int("senders", 0, "requests in flight at once (sdk.Config.Senders; 0: its default)")
	batchRecords := flag.Int("batch-records", 0, "records per batch (sdk.Config.BatchRecords; 0: its default)")
	batchBytes := flag.Int("batch-bytes", 0, "bytes per batch (sdk.Config.BatchBytes; 0: its default)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	cfg := sdk.Config{URL: *url, Tenant: "sdkload", Labels: []sdk.Label{{Name: "service", Value: "sdkload"}},
		Overflow: sdk.OverflowBlock, Senders: *senders, BatchRecords: *batchRecords, BatchBytes: *batchBytes}
	switch *protocol {
	case "ndjson":
		cfg.Protocol, cfg.Compression = sdk.NDJSON, sdk.CompressionZstd
	case "loki":
		cfg.Protocol, cfg.Compression = sdk.LokiProtobuf, sdk.CompressionSnappy
	default:
		fmt.Fprintf(os.Stderr, "sdkload: -protocol %q: want ndjson or loki\n", *protocol)
		os.Exit(2)
	}
	c, err := sdk.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdkload:", err)
		os.Exit(2)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "sdkload: -cpuprofile:", err)
			os.Exit(2)
		}
		defer f.Close()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range *g {
		wg.Go(func() {
			line := make([]byte, 0, 256)
			for i := w; i < *n; i += *g {
				line = append(line[:0], `{"level":"info","msg":"request served","route":"/api/v1/orders","status":200,"latency_ms":`...)
				line = strconv.AppendInt(line, int64(i%997), 10)
				line = append(line, `,"seq":`...)
				line = strconv.AppendInt(line, int64(i), 10)
				line = append(line, '}')
				if err := c.Send(time.Now(), line); err != nil {
					fmt.Fprintln(os.Stderr, "sdkload: send:", err)
					os.Exit(1)
				}
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "sdkload: close:", err)
		os.Exit(1)
	}
	d := time.Since(start)
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	st := c.Stats()
	fmt.Printf("records %d sent %d dropped %d failed %d requests %d retries %d seconds %.3f records/s %.0f\n",
		*n, st.Sent, st.Dropped, st.Failed, st.Requests, st.Retries, d.Seconds(), float64(st.Sent)/d.Seconds())
	if st.Sent != uint64(*n) {
		os.Exit(1)
	}
}
