package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/server"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

var serveCommand = &command{
	name:  "serve",
	args:  "[--data DIR] [--listen ADDR] [flags]",
	short: "run the server: ingest and LogQL queries over HTTP on a data directory",
	long: `Runs sluice's server on --listen (default :3100, Loki's port) with the data
directory --data (created if needed; recovered first after a crash).

Ingest endpoints (a 2xx means every accepted line is durable and visible):
  POST /insert/jsonline        NDJSON; _stream_fields, _time_field, _msg_field as
                               query arguments or VL-Stream-Fields, VL-Time-Field,
                               VL-Msg-Field headers (comma-separated lists)
  POST /insert/lines?format=F  F: logfmt, text, syslog, json, auto, pattern=..., regexp=...
  POST /loki/api/v1/push       Loki push: JSON, or snappy protobuf (the default)
  POST /v1/logs                OpenTelemetry logs (OTLP/HTTP, protobuf or JSON)
  POST /_bulk, /<index>/_bulk  Elasticsearch bulk (index and create); also _doc,
                               GET /, _cluster/health, _cat/health, _license
Bodies may be gzip, deflate or zstd (Content-Encoding). X-Scope-OrgID names the
tenant (default: "default").

Query endpoints (Loki's API: Grafana's Loki data source and logcli work as is):
  GET|POST /loki/api/v1/query_range, /query     LogQL log and metric queries
  GET|POST /loki/api/v1/labels, /label/NAME/values, /series, /index/stats
  GET /loki/api/v1/tail                          a WebSocket of new lines
  GET /loki/api/v1/status/buildinfo
  GET|POST /loki/api/v1/index/volume, /index/volume_range, /detected_labels,
           /detected_fields, /detected_field/NAME/values, /patterns,
           /drilldown-limits, /format_query      Grafana Logs Drilldown
Each query is bounded by --query-timeout, --max-query-series, --max-query-bytes,
--max-query-memory, --max-query-lines and --max-query-size; queries at once by --max-concurrent-queries
and --max-tenant-concurrent-queries, tails by --max-tails and --max-tenant-tails.

Also: GET /ready (not ready, 503 with the reason, while the store refuses
writes), GET /metrics (Prometheus), /debug/pprof/ (with --pprof). With auth
configured, only /ready is open: /metrics and pprof need a credential with
admin: true, build info any credential.
SIGTERM or SIGINT drains the requests in flight, then closes the store.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o serveOpts
		o.storage.register(fs)
		cfg := server.DefaultConfig()
		o.cfg = &cfg
		fs.StringVar(&o.listen, "listen", ":3100", "the `address` to serve HTTP on")
		fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest request body accepted, as sent")
		fs.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", cfg.MaxHeaderBytes, "largest request head (request line and headers) accepted, plus 4 KiB as net/http counts it; past it 431 (0: 1 MiB)")
		fs.Int64Var(&cfg.MaxDecodedBytes, "max-decoded-bytes", cfg.MaxDecodedBytes, "largest request body accepted, decompressed")
		fs.Int64Var(&cfg.MaxWholeBodyBytes, "max-whole-body-bytes", cfg.MaxWholeBodyBytes, "largest Loki, OTLP or Elasticsearch body accepted, decompressed (they are decoded whole)")
		fs.Int64Var(&cfg.MaxInflightBytes, "max-inflight-bytes", cfg.MaxInflightBytes, "memory that ingest requests in flight may hold; more wait a second, then get 503")
		fs.Int64Var(&o.maxHeadBytes, "max-head-bytes", 0, "memory the heads not yet flushed may hold; past it ingest waits for the flush (0: an eighth of the memory, at most 1 GiB, at least twice --head-bytes)")
		fs.Int64Var(&o.blockCacheBytes, "block-cache-bytes", 0, "memory the block cache may hold, outside the Go heap: the parsed headers, row templates, times and small decompressed columns of the blocks queries read (0: a sixteenth of the memory, 64 MiB to 1 GiB; -1: no cache)")
		fs.Int64Var(&o.memLimit, "memory-limit", 0, "soft limit of the Go heap in `bytes` (0: --max-head-bytes, one more head, the in-flight bytes, concurrency+1 batches of batch_bytes per sink, the collector's floor of a quarter of --block-cache-bytes, 64 MiB, and what the block cache, outside the heap, does not use of its budget, set again every second; GOMEMLIMIT overrides)")
		fs.IntVar(&cfg.MaxInflight, "max-inflight", cfg.MaxInflight, "ingest requests served at once; more wait a second, then get 503")
		fs.IntVar(&cfg.Parse.MaxLineSize, "max-line-size", 1<<20, "reject lines longer than this many bytes")
		fs.IntVar(&cfg.Parse.Record.MaxFields, "max-fields", 1000, "reject lines with more fields than this")
		fs.BoolVar(&cfg.Pprof, "pprof", cfg.Pprof, "serve /debug/pprof/ (with auth on, to admin credentials only)")
		fs.DurationVar(&cfg.BodyIdleTimeout, "body-idle-timeout", cfg.BodyIdleTimeout, "cut off (408) a request body that brings no byte for this long (0: never)")
		fs.Int64Var(&cfg.MinBodyRate, "min-body-rate", cfg.MinBodyRate, "cut off (408) a request body that averages fewer `bytes/s` after its first 10 s (0: no minimum)")
		fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "close keep-alive connections idle this long")
		fs.StringVar(&cfg.IngestServer, "ingest-server", cfg.IngestServer, "the HTTP server of connections whose first request is an ingest POST: fasthttp or net/http (the others, and TLS, are net/http's)")
		fs.IntVar(&cfg.MaxConnections, "max-connections", cfg.MaxConnections, "HTTP connections open at once; one more is answered 503 and closed (0: half the open-file limit)")
		fs.IntVar(&cfg.MaxStreamsPerTenant, "max-streams-per-tenant", cfg.MaxStreamsPerTenant, "active streams a tenant may have (a line in the last 30 minutes); lines of new streams past it get 429 (0: no limit)")
		fs.StringVar(&o.syslogTCP, "syslog-tcp", "", "also receive syslog over TCP on this `address` (RFC 6587 octet counting or LF framing)")
		fs.StringVar(&o.syslogUDP, "syslog-udp", "", "also receive syslog datagrams on this `address`")
		fs.StringVar(&o.syslogTenant, "syslog-tenant", store.DefaultTenant, "the tenant of syslog messages")
		fs.IntVar(&cfg.Syslog.MaxMessageBytes, "syslog-max-message-bytes", cfg.Syslog.MaxMessageBytes, "truncate a longer syslog message to this many bytes (stored with truncated=true)")
		fs.DurationVar(&cfg.Syslog.IdleTimeout, "syslog-idle-timeout", cfg.Syslog.IdleTimeout, "close a syslog TCP connection that sends nothing for this long (0: never)")
		fs.IntVar(&cfg.Syslog.MaxConns, "syslog-max-connections", cfg.Syslog.MaxConns, "open syslog TCP connections at most; one more is accepted and closed at once (-1: no limit)")
		fs.IntVar(&cfg.Syslog.UDPReceiveBuffer, "syslog-udp-rcvbuf", 0, "ask the kernel for a syslog UDP receive buffer of this many `bytes` (0: the system default; Linux caps it at net.core.rmem_max without CAP_NET_ADMIN)")
		fs.DurationVar(&o.retention, "retention", 0, "drop data older than this (0: keep everything)")
		fs.Int64Var(&o.maxTenantBytes, "max-tenant-bytes", 0, "drop a tenant's oldest data past this many bytes on disk (0: no limit)")
		fs.StringVar(&cfg.TLSCertFile, "tls-cert", "", "serve HTTPS with this certificate `file` (and --tls-key)")
		fs.StringVar(&cfg.TLSKeyFile, "tls-key", "", "the private key `file` of --tls-cert")
		fs.DurationVar(&cfg.Query.Timeout, "query-timeout", cfg.Query.Timeout, "stop a query that runs longer than this")
		fs.IntVar(&cfg.Query.MaxSeries, "max-query-series", cfg.Query.MaxSeries, "refuse a metric query with more series than this")
		fs.Int64Var(&cfg.Query.MaxBytesScanned, "max-query-bytes", cfg.Query.MaxBytesScanned, "stop a query that would read more than this many bytes of lines (0: no limit)")
		fs.Int64Var(&cfg.Query.MaxMemory, "max-query-memory", 0, "stop a query that would hold more than this many bytes of series and lines in memory; it gets 400 (0: an eighth of the memory, 512 MiB to 4 GiB; -1: no limit)")
		fs.IntVar(&cfg.Query.MaxLines, "max-query-lines", cfg.Query.MaxLines, "the largest limit a log query may ask; a larger one gets 400")
		fs.IntVar(&cfg.Admission.MaxQuerySize, "max-query-size", cfg.Admission.MaxQuerySize, "the longest query text accepted, in bytes; a longer one gets 400 (0: no limit)")
		fs.IntVar(&cfg.Admission.MaxQueries, "max-concurrent-queries", cfg.Admission.MaxQueries, "queries served at once, every query endpoint counted; more wait --query-queue-wait, then get 429 (0: no limit)")
		fs.IntVar(&cfg.Admission.MaxTenantQueries, "max-tenant-concurrent-queries", cfg.Admission.MaxTenantQueries, "queries one tenant may run at once; more wait --query-queue-wait, then get 429 (0: no limit)")
		fs.DurationVar(&cfg.Admission.QueueWait, "query-queue-wait", cfg.Admission.QueueWait, "how long a query over --max-concurrent-queries or --max-tenant-concurrent-queries waits for a slot before 429")
		fs.IntVar(&cfg.Admission.MaxTails, "max-tails", cfg.Admission.MaxTails, "tail WebSockets open at once; one more gets 429 (0: no limit)")
		fs.IntVar(&cfg.Admission.MaxTenantTails, "max-tenant-tails", cfg.Admission.MaxTenantTails, "tail WebSockets one tenant may have open; one more gets 429 (0: no limit)")
		fs.StringVar(&o.discoverService, "discover-service-name", strings.Join(loki.DefaultServiceNameLabels, ","), "as Loki, give a Loki or OTLP push stream without service_name the first of these `labels` (comma-separated) it has as service_name, else unknown_service (empty: add none)")
		fs.BoolVar(&cfg.LokiFields.JSON, "loki-json-fields", true, "keep the keys of a Loki or OTLP push line that is a JSON object as fields, stored as columns that `| json` reads without the line (the line is kept byte for byte either way; the fields are no labels)")
		fs.BoolVar(&cfg.Discover.LogLevels, "discover-log-levels", true, "as Loki, give each Loki or OTLP push entry a detected_level structured metadata, from a level label, metadata or field, or the line")
		fs.StringVar(&o.rules, "rules", "", "apply the rules in this YAML `file` (see rules.example.yaml) to every line before it is stored; reloaded on change and on SIGHUP")
		fs.StringVar(&o.config, "config", "", "read settings from this YAML `file` (see sluice.example.yaml); flags given win")
		o.fs = fs
		return o.run
	},
}

type serveOpts struct {
	storage                            storageFlags
	listen, config                     string
	rules                              string // --rules
	syslogTCP, syslogUDP, syslogTenant string
	retention                          time.Duration
	maxTenantBytes, memLimit           int64
	maxHeadBytes                       int64
	blockCacheBytes                    int64
	discoverService                    string // --discover-service-name
	sinks                              []sinkConfig
	cfg                                *server.Config
	fs                                 *flag.FlagSet
}

func (o *serveOpts) run(args []string, e *env) error {
	if len(args) > 0 {
		return usageError("serve takes no arguments")
	}
	if o.config != "" {
		c, err := loadConfig(o.config)
		if err != nil {
			return err
		}
		if err := c.apply(o, o.fs); err != nil {
			return err
		}
	}
	o.cfg.LokiFields.MaxFields = o.cfg.Parse.Record.MaxFields
	o.cfg.Discover.ServiceName = nil
	for _, l := range strings.Split(o.discoverService, ",") {
		if l = strings.TrimSpace(l); l != "" {
			o.cfg.Discover.ServiceName = append(o.cfg.Discover.ServiceName, l)
		}
	}
	if v := o.cfg.IngestServer; v != server.IngestFastHTTP && v != server.IngestNetHTTP {
		return usageError("--ingest-server %q: fasthttp or net/http", v)
	}
	if (o.cfg.TLSCertFile == "") != (o.cfg.TLSKeyFile == "") {
		return usageError("--tls-cert and --tls-key go together")
	}
	if o.storage.data == "" {
		o.storage.data = "sluice-data"
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.maxHeadBytes <= 0 {
		o.maxHeadBytes = defaultMaxHeadBytes(o.storage.headBytes)
	}
	o.cfg.Query.MaxMemory = queryMemory(o.cfg.Query.MaxMemory)
	if o.blockCacheBytes == 0 {
		o.blockCacheBytes = defaultBlockCacheBytes()
	}
	floor := gcFloor(defaultGCFloor(o.blockCacheBytes))
	defer runtime.KeepAlive(floor)
	reg := prometheus.NewRegistry()
	sinks, err := buildSinks(o.sinks, o.storage.data, reg, log)
	if err != nil {
		return err
	}
	// A soft limit, so the GC keeps garbage near what is live: the heads,
	// the part being built from one, what requests in flight may hold,
	// the sinks' batches, the collector's floor, and what the block cache
	// (outside the heap) does not use of its budget (paceMemoryLimit).
	paced := false
	limit := o.maxHeadBytes + o.storage.headBytes + o.cfg.MaxInflightBytes + sinks.BatchMemory() + int64(len(floor)) + 64<<20
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
	case o.memLimit > 0:
		debug.SetMemoryLimit(o.memLimit)
	default:
		paced = true
		debug.SetMemoryLimit(limit + max(o.blockCacheBytes, 0))
	}
	st, err := o.storage.openWith(e.stderr, store.Options{Retention: o.retention, MaxTenantBytes: o.maxTenantBytes,
		MaxHeadBytes: o.maxHeadBytes, BlockCacheBytes: o.blockCacheBytes, WarmBlockCache: true, OnWALSync: server.WALSyncObserver(reg),
		WALHold: sinks.Hold})
	if err != nil {
		return err
	}
	defer st.Close()
	if paced {
		pctx, stopPacing := context.WithCancel(ctx)
		defer stopPacing() // before the store closes
		go paceMemoryLimit(pctx, limit, max(o.blockCacheBytes, 0), func() int64 { return st.Stats().BlockCacheResident })
	}
	o.cfg.WrapSink = sinks.Gate
	o.cfg.AdminRoutes = map[string]http.Handler{"/api/v1/sinks": sinks.Handler()}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := store.CheckTenant(o.syslogTenant); err != nil {
		return usageError("--syslog-tenant: %v", err)
	}
	log.Info("sluice serving", "addr", ln.Addr().String(), "data", o.storage.data, "fsync", o.storage.fsync, "version", version)
	o.cfg.FreeSpace = func() (uint64, error) { return vfs.OS.Free(o.storage.data) }
	o.cfg.Version = version
	o.cfg.Revision, _, _ = buildInfo()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.rules != "" {
		live, wait, err := startRules(ctx, o.rules, reg, log, routeSinks(o.sinks))
		if err != nil {
			return err
		}
		defer wait()
		o.cfg.Rules = live
	}
	warnRoutedSinks(o.sinks, o.rules, log)
	srv := server.New(*o.cfg, st, log, reg)
	// Sinks follow the WAL until the server has drained, then stop before
	// the store closes.
	sinkCtx, stopSinks := context.WithCancel(context.Background())
	sinksDone := make(chan struct{})
	sinks.Start(st.WAL()) // before ingest: new sinks take every line from now on
	go func() {
		defer close(sinksDone)
		sinks.Run(sinkCtx, st.WAL())
	}()
	defer func() { stopSinks(); <-sinksDone }()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- err
				cancel() // one listener failing stops the server
			}
		}()
	}
	if o.syslogTCP != "" {
		sl, err := net.Listen("tcp", o.syslogTCP)
		if err != nil {
			return fmt.Errorf("listen syslog tcp: %w", err)
		}
		log.Info("syslog over TCP", "addr", sl.Addr().String())
		run(func() error { return srv.ServeSyslogTCP(ctx, sl, o.syslogTenant) })
	}
	if o.syslogUDP != "" {
		pc, err := net.ListenPacket("udp", o.syslogUDP)
		if err != nil {
			return fmt.Errorf("listen syslog udp: %w", err)
		}
		log.Info("syslog over UDP", "addr", pc.LocalAddr().String())
		run(func() error { return srv.ServeSyslogUDP(ctx, pc, o.syslogTenant) })
	}
	run(func() error { return srv.Serve(ctx, ln) })
	wg.Wait()
	stopSinks()
	<-sinksDone
	close(errs)
	for err := range errs {
		return err
	}
	return stopStore(st, log)
}

// stopStore closes the store and only then, once it is true (the WAL
// synced and closed, parts released, the directory unlocked), says the
// server stopped cleanly.
func stopStore(st *store.Store, log *slog.Logger) error {
	log.Info("closing the store")
	start := time.Now()
	if err := st.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	log.Info("stopped cleanly", "close", time.Since(start).Round(time.Millisecond).String())
	return nil
}
