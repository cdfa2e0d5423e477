package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicelog/sluice/internal/store"
)

type metrics struct {
	lines, bytes, rejected, requests *prometheus.CounterVec
	inflight, inflightBytes          prometheus.Gauge
	conns                            prometheus.Gauge
	connsRefused                     prometheus.Counter
	connsServed                      *prometheus.CounterVec // by server, of a split listener
	timeFallbacks                    *prometheus.CounterVec
	syslog                           syslogMetrics
}

// syslogMetrics count what the syslog listeners truncate, refuse and close,
// beyond the lines and rejections every protocol counts.
type syslogMetrics struct {
	truncated               *prometheus.CounterVec
	conns                   prometheus.Gauge
	refused, idle, acceptEr prometheus.Counter
	udpDrops                *udpDropCollector
}

func newSyslogMetrics(reg *prometheus.Registry) syslogMetrics {
	m := syslogMetrics{
		truncated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_syslog_truncated_messages_total",
			Help: "Syslog messages stored truncated (field truncated=true), by protocol and reason: too_long (over the message limit), incomplete (the connection ended inside an octet-counted frame)."},
			[]string{"protocol", "reason"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_syslog_tcp_connections",
			Help: "Open syslog TCP connections."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_syslog_tcp_connections_refused_total",
			Help: "Syslog TCP connections closed as soon as accepted, over the connection limit."}),
		idle: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_syslog_tcp_idle_timeouts_total",
			Help: "Syslog TCP connections closed after the idle timeout."}),
		acceptEr: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_syslog_tcp_accept_errors_total",
			Help: "Failed accepts on the syslog TCP listener (out of file descriptors, say), retried."}),
		udpDrops: &udpDropCollector{srcs: map[*udpDropSource]struct{}{}},
	}
	reg.MustRegister(m.truncated, m.conns, m.refused, m.idle, m.acceptEr, m.udpDrops)
	return m
}

func newMetrics(reg *prometheus.Registry, st *store.Store) *metrics {
	m := &metrics{
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ingest_lines_total",
			Help: "Lines stored, by tenant and protocol."}, []string{"tenant", "protocol"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ingest_bytes_total",
			Help: "Bytes of stored input, by tenant and protocol."}, []string{"tenant", "protocol"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ingest_rejected_lines_total",
			Help: "Lines rejected, by protocol and reason."}, []string{"protocol", "reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ingest_requests_total",
			Help: "Ingest requests, by protocol and status code."}, []string{"protocol", "code"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_ingest_requests_in_flight",
			Help: "Ingest requests being served."}),
		inflightBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_ingest_in_flight_bytes",
			Help: "Memory reserved by the ingest requests being served."}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_http_connections_open",
			Help: "HTTP connections open."}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_http_connections_refused_total",
			Help: "HTTP connections answered 503 and closed because max_connections were open."}),
		connsServed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_http_connections_total",
			Help: "HTTP connections handed to a server by their first request, with --ingest-server fasthttp: fasthttp (an ingest POST) or net/http (any other)."}, []string{"server"}),
		timeFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_ingest_time_fallbacks_total",
			Help: "Lines whose timestamp was present but unusable (unreadable, or outside 1970 to 2262), stored at the receive time, by protocol."}, []string{"protocol"}),
	}
	reg.MustRegister(m.lines, m.bytes, m.rejected, m.requests, m.inflight, m.inflightBytes, m.conns, m.connsRefused, m.connsServed, m.timeFallbacks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(storeCollector{st})
	m.syslog = newSyslogMetrics(reg)
	return m
}

// WALSyncObserver registers the WAL fsync latency histogram in reg and
// returns the store hook that feeds it (store.Options.OnWALSync).
func WALSyncObserver(reg *prometheus.Registry) func(time.Duration, int) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_wal_fsync_duration_seconds",
		Help: "Duration of the WAL's fdatasyncs (each makes a group of appends durable).", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)})
	b := prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_wal_synced_bytes_total", Help: "Bytes made durable by WAL fdatasyncs."})
	reg.MustRegister(h, b)
	return func(d time.Duration, n int) {
		h.Observe(d.Seconds())
		b.Add(float64(n))
	}
}

// storeCollector reports the store's figures, reading its Stats once per
// scrape.
type storeCollector struct{ st *store.Store }

var storeGauges = []struct {
	desc *prometheus.Desc
	f    func(store.Stats) float64
}{
	{prometheus.NewDesc("sluice_store_parts", "Live parts.", nil, nil), func(s store.Stats) float64 { return float64(s.Parts) }},
	{prometheus.NewDesc("sluice_store_part_bytes", "Bytes of live parts on disk.", nil, nil), func(s store.Stats) float64 { return float64(s.PartBytes) }},
	{prometheus.NewDesc("sluice_store_part_rows", "Rows in live parts.", nil, nil), func(s store.Stats) float64 { return float64(s.PartRows) }},
	{prometheus.NewDesc("sluice_store_head_bytes", "Bytes held by the head (acknowledged, not yet in parts).", nil, nil), func(s store.Stats) float64 { return float64(s.HeadBytes) }},
	{prometheus.NewDesc("sluice_store_head_rows", "Rows in the head.", nil, nil), func(s store.Stats) float64 { return float64(s.HeadRows) }},
	{prometheus.NewDesc("sluice_store_block_cache_bytes", "Memory held by the block cache (parsed headers, row templates, times and small columns of blocks queries read), outside the Go heap.", nil, nil), func(s store.Stats) float64 { return float64(s.BlockCacheBytes) }},
	{prometheus.NewDesc("sluice_store_block_cache_waiting_bytes", "Memory evicted from the block cache and freed once the queries under way end.", nil, nil), func(s store.Stats) float64 { return float64(s.BlockCacheWaiting) }},
	{prometheus.NewDesc("sluice_store_block_cache_resident_bytes", "Memory of the block cache that may be resident: held, waiting, and free buffers kept to reuse.", nil, nil), func(s store.Stats) float64 { return float64(s.BlockCacheResident) }},
	{prometheus.NewDesc("sluice_wal_fsyncs_total", "WAL fdatasyncs.", nil, nil), func(s store.Stats) float64 { return float64(s.WAL.Syncs) }},
	{prometheus.NewDesc("sluice_store_flushes_total", "Head flushes.", nil, nil), func(s store.Stats) float64 { return float64(s.Flushes) }},
	{prometheus.NewDesc("sluice_store_merges_total", "Part merges.", nil, nil), func(s store.Stats) float64 { return float64(s.Merges) }},
	{prometheus.NewDesc("sluice_store_quarantined_blocks_total", "Part blocks found damaged since start: queries skip them and warn.", nil, nil), func(s store.Stats) float64 { return float64(s.QuarantinedBlocks) }},
	{prometheus.NewDesc("sluice_store_damaged_blocks", "Blocks of live parts known to be damaged (quarantined).", nil, nil), func(s store.Stats) float64 { return float64(s.BadBlocks) }},
	{prometheus.NewDesc("sluice_store_damaged_parts", "Parts that do not open (damaged header, footer or index), set aside as .corrupt: queries for their tenant and day warn.", nil, nil), func(s store.Stats) float64 { return float64(s.BadParts) }},
}

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range storeGauges {
		ch <- g.desc
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.st.Stats()
	for _, g := range storeGauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.f(s))
	}
}
