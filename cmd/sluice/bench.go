package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/loadgen"
)

var benchCommand = &command{
	name:  "bench",
	args:  "[--protocol P] [--client raw|nethttp] [--corpus FILE] [--rate N] [--conns N] [--batch N] [--duration D | --requests N] URL",
	short: "send ingest load to a server and report throughput and latency",
	long: `Sends lines (a corpus file's, over and over, or generated web-server lines)
to URL in batches of --batch lines per request, over --conns connections,
flat out or at --rate requests per second in all. Protocols: ` + strings.Join(loadgen.Protocols, ", ") + `.
URL is the server's base URL (http://127.0.0.1:3100) for HTTP protocols,
host:port for syslog. Reports requests and lines per second, errors by
status, and latency percentiles from an HDR histogram (3 significant
digits). At a fixed rate latency counts from when each request was meant
to be sent, as wrk2 does, so a stalled server shows in every request that
waited behind it (coordinated omission corrected). A syslog write has no
answer: its latency is the write's. HTTP goes through --client raw, a bare
HTTP/1.1 keep-alive client (one request at a time per connection, no
pipelining) that costs the client little CPU, so a one-core server is
what is measured (http:// only; the default there), or --client nethttp,
Go's net/http client (the default for https://).`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var cfg loadgen.Config
		var corpus string
		fs.StringVar(&cfg.Protocol, "protocol", "jsonline", "ingest protocol: "+strings.Join(loadgen.Protocols, ", "))
		fs.StringVar(&cfg.Client, "client", "", "HTTP client: raw (default for http://) or nethttp (default for https://)")
		fs.StringVar(&corpus, "corpus", "", "file of lines to replay (default: generated lines)")
		fs.Float64Var(&cfg.Rate, "rate", 0, "requests per second over all connections (0: flat out)")
		fs.IntVar(&cfg.Conns, "conns", 1, "connections, each with one request in flight")
		fs.IntVar(&cfg.Batch, "batch", 1, "lines per request")
		fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to run")
		fs.IntVar(&cfg.Requests, "requests", 0, "stop after this many requests (0: no bound)")
		fs.StringVar(&cfg.Tenant, "tenant", "", "X-Scope-OrgID to send")
		return func(args []string, e *env) error {
			if len(args) != 1 {
				return usageError("bench takes one URL")
			}
			cfg.Target = args[0]
			if corpus != "" {
				lines, err := loadgen.ReadCorpus(corpus)
				if err != nil {
					return err
				}
				cfg.Lines = lines
			}
			ctx, cancel := e.context()
			defer cancel()
			fmt.Fprintf(e.stderr, "bench: %s to %s, %d connections, %d lines a request, ", cfg.Protocol, cfg.Target, cfg.Conns, cfg.Batch)
			if cfg.Rate > 0 {
				fmt.Fprintf(e.stderr, "%g requests/s\n", cfg.Rate)
			} else {
				fmt.Fprintln(e.stderr, "flat out")
			}
			res, err := loadgen.Run(ctx, cfg)
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			res.Report(e.stdout)
			return nil
		}
	},
}
