package sink

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metrics are the per-sink series, labelled by sink name.
type metrics struct {
	records, bytes, batches, retries, deadLettered, dropped, paused *prometheus.CounterVec
	queue, age                                                      *prometheus.GaugeVec
	latency                                                         *prometheus.HistogramVec
}

// sinkMetrics are one sink's series.
type sinkMetrics struct {
	records, bytes, batches, retries, deadLettered, dropped, paused prometheus.Counter
	queue, age                                                      prometheus.Gauge
	latency                                                         prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	c := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_sink_" + name, Help: help}, []string{"sink"})
	}
	g := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_sink_" + name, Help: help}, []string{"sink"})
	}
	m := &metrics{
		records:      c("records_sent_total", "Records a sink delivered."),
		bytes:        c("bytes_sent_total", "Bytes of lines a sink delivered."),
		batches:      c("batches_total", "Batches a sink delivered."),
		retries:      c("retries_total", "Failed deliveries a sink retried."),
		deadLettered: c("dead_lettered_total", "Records a destination rejected for good, written to the sink's dead-letter file."),
		dropped:      c("dropped_total", "Records a sink skipped: over its budget with policy drop_oldest, or in a corrupt WAL frame."),
		paused:       c("paused_seconds_total", "Seconds a sink with pace paused to leave the CPU to ingest while it was behind."),
		queue:        g("queue_bytes", "WAL bytes after the sink's position: what it has still to deliver."),
		age:          g("oldest_unsent_age_seconds", "Age of the oldest record the sink read and has not delivered yet (0: none)."),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_sink_delivery_seconds",
			Help: "Duration of one delivery of a batch to the destination, failed ones included.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)},
			[]string{"sink"}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.records, m.bytes, m.batches, m.retries, m.deadLettered, m.dropped, m.paused, m.queue, m.age, m.latency} {
			reg.MustRegister(col)
		}
	}
	return m
}

func (m *metrics) of(name string) *sinkMetrics {
	return &sinkMetrics{records: m.records.WithLabelValues(name), bytes: m.bytes.WithLabelValues(name),
		batches: m.batches.WithLabelValues(name), retries: m.retries.WithLabelValues(name),
		deadLettered: m.deadLettered.WithLabelValues(name), dropped: m.dropped.WithLabelValues(name), paused: m.paused.WithLabelValues(name),
		queue: m.queue.WithLabelValues(name), age: m.age.WithLabelValues(name), latency: m.latency.WithLabelValues(name)}
}

// value reads a counter.
func value(c prometheus.Counter) float64 {
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		return 0
	}
	return d.GetCounter().GetValue()
}
