package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"golang.org/x/sync/semaphore"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/query"
	sinkstore "github.com/sluicelog/sluice/internal/sink/store"
	"github.com/sluicelog/sluice/internal/store"
)

// Config configures a Server.
type Config struct {
	// MaxBodyBytes bounds a request body as sent (compressed or not).
	MaxBodyBytes int64
	// MaxHeaderBytes bounds a request's head (request line and headers)
	// on both HTTP servers, counted as net/http counts it (this plus
	// 4 KiB); past it the answer is 431. 0 is net/http's default, 1 MiB.
	MaxHeaderBytes int
	// MaxDecodedBytes bounds a body once decompressed. Line protocols are
	// parsed as a stream, so this bounds the request, not memory.
	MaxDecodedBytes int64
	// MaxWholeBodyBytes bounds, decompressed, the bodies that are decoded
	// whole in memory: Loki, OTLP and Elasticsearch requests.
	MaxWholeBodyBytes int64
	// MaxInflight bounds the ingest requests served at once; the others
	// wait up to InflightWait, then get 503 with Retry-After.
	MaxInflight  int
	InflightWait time.Duration
	// MaxInflightBytes bounds the memory requests in flight may hold: a
	// line request counts its parse buffers, a whole-body request its
	// body. Past it, requests wait InflightWait, then get 503.
	MaxInflightBytes int64
	// Parse holds the defaults of line parsing (line size, nesting depth,
	// fields per line).
	Parse parse.Options
	// Loki bounds labels and lines of pushes.
	Loki loki.Limits
	// Discover is what Loki and OTLP pushes get added as Loki's
	// distributor adds it: service_name and detected_level.
	Discover loki.Discovery
	// LokiFields says which Loki and OTLP push lines keep their fields.
	LokiFields loki.LineFields
	// Pprof serves /debug/pprof/.
	Pprof bool
	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// once its context is done.
	ShutdownTimeout time.Duration
	// Auth, when not empty, requires every ingest request to present one
	// of these credentials, allowed for its tenant.
	Auth []Credential
	// TenantRate bounds each tenant's lines per second.
	TenantRate RateLimit
	// MinFreeBytes: below this much free space on the data directory's
	// filesystem, ingest answers 507 until space is freed.
	MinFreeBytes uint64
	// TLSCertFile and TLSKeyFile, when set, serve HTTPS.
	TLSCertFile, TLSKeyFile string
	// Query bounds each query's cost.
	Query query.Limits
	// Admission bounds query text and the queries and tails at once.
	Admission Admission
	// Version and Revision are reported by /loki/api/v1/status/buildinfo.
	Version, Revision string
	// BodyIdleTimeout cuts off a request body that brings no byte for
	// this long (408); MinBodyRate (bytes/s), one that averages less
	// after its first 10 s. Zero turns either off.
	BodyIdleTimeout time.Duration
	MinBodyRate     int64
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout time.Duration
	// MaxConnections bounds the HTTP connections open at once; one more
	// is answered 503 and closed (0: half the process's open-file limit).
	MaxConnections int
	// MaxStreamsPerTenant bounds each tenant's active streams (those
	// with a line in the last flow.StreamIdle); lines of new streams past it
	// are refused with 429 (0: no limit).
	MaxStreamsPerTenant int
	// FreeSpace reports the free bytes of the data directory's filesystem
	// (nil: never checked).
	FreeSpace func() (uint64, error)
	// Syslog bounds the syslog listeners.
	Syslog SyslogConfig
	// Rules, if set, is the rule stage every ingest path's batches pass
	// before admission (flow.Flow.Rules).
	Rules flow.Stage
	// WrapSink, if set, wraps the flow's sink into the store (the sinks'
	// gate: a blocked sink refuses its tenants' batches).
	WrapSink func(flow.Sink) flow.Sink
	// IngestServer is the HTTP server of the ingest connections:
	// IngestFastHTTP or IngestNetHTTP (fast.go); empty is net/http. TLS
	// is served by net/http whatever it says.
	IngestServer string
	// AdminRoutes are more GET endpoints (pattern → handler), served to
	// admin credentials when auth is on, e.g. /api/v1/sinks.
	AdminRoutes map[string]http.Handler
}

// DefaultConfig returns the limits a server runs with unless configured.
func DefaultConfig() Config {
	return Config{
		MaxBodyBytes:        1 << 30,
		MaxDecodedBytes:     4 << 30,
		MaxWholeBodyBytes:   64 << 20,
		MaxInflight:         1024, // memory is bounded by MaxInflightBytes; at 64, 256 one-line clients waited on timers for a slot
		MinFreeBytes:        256 << 20,
		InflightWait:        time.Second,
		Loki:                loki.DefaultLimits,
		Discover:            loki.DefaultDiscovery,
		LokiFields:          loki.DefaultLineFields,
		Query:               query.DefaultLimits,
		ShutdownTimeout:     30 * time.Second,
		BodyIdleTimeout:     30 * time.Second,
		MinBodyRate:         16 << 10,
		IdleTimeout:         120 * time.Second,
		MaxStreamsPerTenant: 5000,
		Syslog:              DefaultSyslogConfig(),
		Admission:           DefaultAdmission(),
		IngestServer:        IngestFastHTTP,
	}
}

// Server serves one store.
//
// Concurrency: safe for concurrent requests.
type Server struct {
	cfg      Config
	st       *store.Store
	log      *slog.Logger
	metrics  *metrics
	inflight chan struct{}
	mux      *http.ServeMux
	esMeta   esCatalog // Elasticsearch objects shippers install (elastic_meta.go)
	ready    chan struct{}
	once     sync.Once
	limits   *limiter
	disk     diskCheck
	memory   *semaphore.Weighted
	parsers  parsers
	engine   *query.Engine
	streams  *flow.StreamLimit
	flow     *flow.Flow
	queries  *gate // queries running
	tails    *gate // tails open
	tailSnap tailSnapshots
	// ingestRoutes are the ingest handlers by path, for fasthttp.
	ingestRoutes map[string]ingestRoute
	fast         atomic.Pointer[fasthttp.Server] // serving the ingest connections, if any
}

// New returns a server of st whose metrics are registered in reg.
func New(cfg Config, st *store.Store, log *slog.Logger, reg *prometheus.Registry) *Server {
	s := &Server{cfg: cfg, st: st, log: log, inflight: make(chan struct{}, max(cfg.MaxInflight, 1)), mux: http.NewServeMux(),
		ready: make(chan struct{}), ingestRoutes: map[string]ingestRoute{}, limits: &limiter{rate: cfg.TenantRate, buckets: map[string]*bucket{}}}
	if s.limits.rate.Burst <= 0 {
		s.limits.rate.Burst = s.limits.rate.LinesPerSecond
	}
	s.disk.free, s.disk.min = cfg.FreeSpace, cfg.MinFreeBytes
	s.memory = semaphore.NewWeighted(max(cfg.MaxInflightBytes, 64<<20))
	s.metrics = newMetrics(reg, st)
	s.engine = query.NewEngine(cfg.Query)
	s.streams = flow.NewStreamLimit(cfg.MaxStreamsPerTenant)
	s.flow = &flow.Flow{Sink: sinkstore.New(st), Admission: s.streams,
		Metrics: flow.Metrics{Lines: s.metrics.lines, Bytes: s.metrics.bytes, Rejected: s.metrics.rejected, TimeFallbacks: s.metrics.timeFallbacks}}
	s.flow.Rules = cfg.Rules
	if cfg.WrapSink != nil {
		s.flow.Sink = cfg.WrapSink(s.flow.Sink)
	}
	a := cfg.Admission
	s.queries = newGate("queries", "--max-concurrent-queries", "--max-tenant-concurrent-queries", a.MaxQueries, a.MaxTenantQueries)
	s.tails = newGate("tails", "--max-tails", "--max-tenant-tails", a.MaxTails, a.MaxTenantTails)
	s.queries.register(reg)
	s.tails.register(reg)
	s.routes(reg)
	return s
}

func (s *Server) routes(reg *prometheus.Registry) {
	m := s.mux
	s.addIngestRoute("POST /insert/jsonline", "jsonline", s.ingest("jsonline", s.handleLines))
	s.addIngestRoute("POST /insert/lines", "lines", s.ingest("lines", s.handleLines))
	s.addIngestRoute("POST /loki/api/v1/push", "loki", s.ingest("loki", s.handleLoki))
	s.addIngestRoute("POST /v1/logs", "otlp", s.ingest("otlp", s.handleOTLP))
	s.elasticRoutes()
	s.queryRoutes()
	s.rulesRoutes()
	// Operational endpoints: with auth on, only /ready stays open.
	m.HandleFunc("GET /ready", s.handleReady)
	m.Handle("GET /metrics", s.admin(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	for pattern, h := range s.cfg.AdminRoutes {
		m.Handle("GET "+pattern, s.admin(h))
	}
	if s.cfg.Pprof {
		m.Handle("GET /debug/pprof/", s.admin(http.HandlerFunc(pprof.Index)))
		m.Handle("GET /debug/pprof/cmdline", s.admin(http.HandlerFunc(pprof.Cmdline)))
		m.Handle("GET /debug/pprof/profile", s.admin(http.HandlerFunc(pprof.Profile)))
		m.Handle("GET /debug/pprof/symbol", s.admin(http.HandlerFunc(pprof.Symbol)))
		m.Handle("GET /debug/pprof/trace", s.admin(http.HandlerFunc(pprof.Trace)))
	}
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler { return s.mux }

// handleReady answers 200 once the server serves and its store takes
// writes; 503 with the reason otherwise (starting, the data disk nearly
// full, the store refusing writes), so that a load balancer sends
// traffic elsewhere.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.ready:
	default:
		http.Error(w, "not ready: starting", http.StatusServiceUnavailable)
		return
	}
	if free, low := s.disk.low(); low {
		http.Error(w, fmt.Sprintf("not ready: the data directory's disk is nearly full (%d bytes free, min_free_bytes %d); writes answer 507",
			free, s.cfg.MinFreeBytes), http.StatusServiceUnavailable)
		return
	}
	if err := s.st.WriteError(); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n"))
}

// Serve serves on ln until ctx is done, then stops accepting, lets the
// requests in flight finish (each one's lines become durable or are
// refused), and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: s.cfg.IdleTimeout, MaxHeaderBytes: s.maxHeaderBytes(),
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	maxConns := s.cfg.MaxConnections
	if maxConns <= 0 {
		maxConns = defaultMaxConnections()
	}
	ln = &connLimit{Listener: ln, max: int64(maxConns), tls: s.cfg.TLSCertFile != "",
		refused: s.metrics.connsRefused.Inc, opened: func(d int) { s.metrics.conns.Add(float64(d)) }}
	if s.cfg.IngestServer == IngestFastHTTP && s.cfg.TLSCertFile == "" {
		return s.serveSplit(ctx, hs, ln, maxConns)
	}
	errc := make(chan error, 1)
	go func() {
		if s.cfg.TLSCertFile != "" {
			errc <- hs.ServeTLS(ln, s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
			return
		}
		errc <- hs.Serve(ln)
	}()
	s.once.Do(func() { close(s.ready) })
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: draining requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
