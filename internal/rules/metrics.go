package rules

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/stage"
)

// Metrics are the rule stage's counters: per rule (kept across reloads
// by the rule's name), the rules' own metrics (kept by metric name while
// its labels stay the same), and reloads. A nil *Metrics counts into
// counters nobody exports (for `sluice rules test`).
//
// Concurrency: safe for concurrent use.
type Metrics struct {
	mu      sync.Mutex
	rules   map[string]*ruleCounters
	metrics map[string]*userMetric
	// limiters are the rules' rate limits by rule name, kept across
	// reloads that do not change them.
	limiters map[string]*limiter

	reloads    *prometheus.CounterVec // by result: ok, error, unchanged
	loadedTime prometheus.Gauge
	active     prometheus.Gauge
}

// ruleCounters count what one rule did.
type ruleCounters struct {
	matched, dropped, sampledOut, redactions, relabeled, extracted, fieldsSet, rewritten, rateLimited, errors atomic.Uint64
	routed                                                                                                    atomic.Uint64
	// evalN, evalNanos and evalBuckets are the histogram of the rule's
	// evaluation time on the lines sampled (evalSample): observations,
	// their sum, and per bucket of evalBounds (not cumulative; the last
	// is above them all).
	evalN, evalNanos atomic.Uint64
	evalBuckets      [len(evalBounds) + 1]atomic.Uint64
}

// evalSample is how many lines an evaluator applies the rules to per
// line whose rules it times: each rule's time on it (its match and its
// actions) goes into the rule's histogram. Timing every line would cost
// two clock reads per rule and line; one in 256 costs nothing measurable.
const evalSample = 256

// evalBounds are the upper bounds of the evaluation time histogram's
// buckets, in nanoseconds: 1 us to 10 ms.
var evalBounds = [...]uint64{1e3, 1e4, 1e5, 1e6, 1e7}

// observeEval counts one evaluation of ns nanoseconds.
func (c *ruleCounters) observeEval(ns uint64) {
	k := 0
	for k < len(evalBounds) && ns > evalBounds[k] {
		k++
	}
	c.evalBuckets[k].Add(1)
	c.evalNanos.Add(ns)
	c.evalN.Add(1)
}

// NewMetrics returns the counters, registered in reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{rules: map[string]*ruleCounters{}, metrics: map[string]*userMetric{}, limiters: map[string]*limiter{}}
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_rules_reloads_total",
		Help: "Loads of the rules file, by result: ok (a new version runs), unchanged (same bytes), error (the old version keeps running).",
	}, []string{"result"})
	m.loadedTime = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sluice_rules_loaded_timestamp_seconds",
		Help: "When the running version of the rules file was loaded.",
	})
	m.active = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sluice_rules_active",
		Help: "Rules in the running version of the rules file.",
	})
	if reg != nil {
		reg.MustRegister(m.reloads, m.loadedTime, m.active, (*collector)(m))
	}
	return m
}

// rule returns the counters of the rule named name.
func (m *Metrics) rule(name string) *ruleCounters {
	if m == nil {
		return new(ruleCounters)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.rules[name]
	if !ok {
		c = new(ruleCounters)
		m.rules[name] = c
	}
	return c
}

// Rule returns what the rule named name has counted: matched, dropped,
// sampled out, redactions, relabeled, extracted, fields set, rewritten,
// rate limited, errors and routed.
func (m *Metrics) Rule(name string) RuleCounts {
	c := m.rule(name)
	return RuleCounts{Matched: c.matched.Load(), Dropped: c.dropped.Load(), SampledOut: c.sampledOut.Load(),
		Redactions: c.redactions.Load(), Relabeled: c.relabeled.Load(), Extracted: c.extracted.Load(), FieldsSet: c.fieldsSet.Load(), Rewritten: c.rewritten.Load(), RateLimited: c.rateLimited.Load(), Errors: c.errors.Load(),
		Routed: c.routed.Load(), EvalSampled: c.evalN.Load(), EvalSeconds: float64(c.evalNanos.Load()) / 1e9}
}

// RuleCounts is a snapshot of one rule's counters.
type RuleCounts struct {
	Matched, Dropped, SampledOut, Redactions, Relabeled, Extracted, FieldsSet, Rewritten, RateLimited, Errors uint64
	// Routed counts the lines the rule routed to its sinks and that were
	// kept (a line a later rule drops is neither stored nor routed).
	Routed uint64
	// EvalSampled is how many of the lines the rule was evaluated on
	// were timed (one in evalSample of each evaluator's), and EvalSeconds
	// the time it took on them.
	EvalSampled uint64
	EvalSeconds float64
}

// userMetric is a rule's metric: a counter, gauge or histogram by label
// values, at most max series; lines of further label sets count as
// overflow. A counter counts lines, or adds the unwrapped value; a gauge
// is the last unwrapped value; a histogram observes it.
type userMetric struct {
	name, help string
	typ        string // counter, gauge, histogram
	unwrap     string // the label whose number is the value; "": none
	buckets    []float64
	labels     []string
	max        int

	mu       sync.Mutex
	series   map[string]*series // key: label values joined by 0xff
	overflow atomic.Uint64
}

// series is one label set's value.
type series struct {
	n       atomic.Uint64   // a counter without unwrap: lines; a histogram: observations
	v       atomic.Uint64   // float64 bits: a counter's sum, a gauge's value, a histogram's sum
	buckets []atomic.Uint64 // a histogram's observations per bucket (not cumulative)
}

// addFloat adds d to the float64 whose bits a holds.
func addFloat(a *atomic.Uint64, d float64) {
	for {
		old := a.Load()
		if a.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// userMetric returns the metric a spec describes: the one already
// counting under its name if it is described the same.
func (m *Metrics) userMetric(s *metricSpec) *userMetric {
	fresh := &userMetric{name: s.name, help: s.help, typ: s.typ, unwrap: s.unwrap, buckets: s.buckets,
		labels: s.labels, max: s.maxSeries, series: map[string]*series{}}
	if fresh.help == "" {
		fresh.help = "Lines counted by a sluice rule."
	}
	if m == nil {
		return fresh
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.metrics[s.name]; ok && slices.Equal(old.labels, s.labels) && old.max == s.maxSeries && old.help == fresh.help &&
		old.typ == s.typ && old.unwrap == s.unwrap && slices.Equal(old.buckets, s.buckets) {
		return old
	}
	m.metrics[s.name] = fresh
	return fresh
}

// value returns the number a line gives the metric: its unwrap label's
// value (false when absent or not a number), or 1.
func (u *userMetric) value(lb *stage.Labels) (float64, bool) {
	if u.unwrap == "" {
		return 1, true
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(lb.Get(u.unwrap)), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// count adds v, a line's value, to the series of its labels lb; false
// when its label set is past the bound.
func (u *userMetric) count(lb *stage.Labels, v float64, key *[]byte) bool {
	k := (*key)[:0]
	for i, name := range u.labels {
		if i > 0 {
			k = append(k, 0xff)
		}
		v := lb.Get(name)
		if !utf8.ValidString(v) {
			v = strings.ToValidUTF8(v, "\uFFFD") // Prometheus takes UTF-8 only; 0xff never is, so it can join
		}
		k = append(k, v...)
	}
	*key = k
	u.mu.Lock()
	c, ok := u.series[string(k)]
	if !ok {
		if len(u.series) >= u.max {
			u.mu.Unlock()
			u.overflow.Add(1)
			return false
		}
		c = &series{}
		if u.typ == "histogram" {
			c.buckets = make([]atomic.Uint64, len(u.buckets))
		}
		u.series[string(k)] = c
	}
	u.mu.Unlock()
	switch {
	case u.typ == "gauge":
		c.v.Store(math.Float64bits(v))
	case u.typ == "histogram":
		// The first bucket whose upper bound is v or above; past the
		// last, only +Inf (the count) holds it.
		if b, _ := slices.BinarySearch(u.buckets, v); b < len(u.buckets) {
			c.buckets[b].Add(1)
		}
		c.n.Add(1)
		addFloat(&c.v, v)
	case u.unwrap != "":
		addFloat(&c.v, v)
	default:
		c.n.Add(1)
	}
	return true
}

// metric returns the Prometheus sample of one series.
func (u *userMetric) metric(desc *prometheus.Desc, c *series, values []string) prometheus.Metric {
	switch {
	case u.typ == "gauge":
		return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, math.Float64frombits(c.v.Load()), values...)
	case u.typ == "histogram":
		cum := make(map[float64]uint64, len(u.buckets))
		var n uint64
		for i, ub := range u.buckets {
			n += c.buckets[i].Load()
			cum[ub] = n
		}
		return prometheus.MustNewConstHistogram(desc, c.n.Load(), math.Float64frombits(c.v.Load()), cum, values...)
	case u.unwrap != "":
		return prometheus.MustNewConstMetric(desc, prometheus.CounterValue, math.Float64frombits(c.v.Load()), values...)
	default:
		return prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(c.n.Load()), values...)
	}
}

// evalHistogram returns the rule's evaluation time histogram.
func (c *ruleCounters) evalHistogram(name string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(evalBounds))
	var cum uint64
	for k, ub := range evalBounds {
		cum += c.evalBuckets[k].Load()
		buckets[float64(ub)/1e9] = cum
	}
	// The count after the buckets, so that no bucket exceeds it while
	// observations land.
	n := max(c.evalN.Load(), cum)
	return prometheus.MustNewConstHistogram(ruleEvalDesc, n, float64(c.evalNanos.Load())/1e9, buckets, name)
}

// collector exports the per-rule counters and the rules' metrics. It is
// unchecked (Describe sends nothing): the rules' metric names change
// with the file.
type collector Metrics

var (
	ruleLinesDesc = prometheus.NewDesc("sluice_rule_lines_total",
		"Lines a rule acted on, by rule and action: matched, dropped, sampled_out, relabeled, extracted (fields stored), fields_set, rewritten, rate_limited, routed.", []string{"rule", "action"}, nil)
	ruleRedactionsDesc = prometheus.NewDesc("sluice_rule_redactions_total",
		"Values a rule's redact replaced.", []string{"rule"}, nil)
	ruleErrorsDesc = prometheus.NewDesc("sluice_rule_errors_total",
		"Lines a rule failed on (a label template that failed, say) and left as they were.", []string{"rule"}, nil)
	rateOverflowDesc = prometheus.NewDesc("sluice_rule_rate_limit_overflow_total",
		"Lines of a label set past a rule's rate_limit max_sets, limited together in one shared bucket.", []string{"rule"}, nil)
	ruleEvalDesc = prometheus.NewDesc("sluice_rule_eval_seconds",
		"Time a rule took on a line it was evaluated on (its match, and its actions when it matched), sampled: one line in 256 of each goroutine that applies the rules.", []string{"rule"}, nil)
	overflowDesc = prometheus.NewDesc("sluice_rule_metric_overflow_total",
		"Lines a rule's metric did not count because a new label set was past its max_series.", []string{"metric"}, nil)
)

func (c *collector) Describe(chan<- *prometheus.Desc) {}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := (*Metrics)(c)
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, rc := range m.rules {
		for _, v := range []struct {
			action string
			n      *atomic.Uint64
		}{{"matched", &rc.matched}, {"dropped", &rc.dropped}, {"sampled_out", &rc.sampledOut}, {"relabeled", &rc.relabeled}, {"extracted", &rc.extracted}, {"fields_set", &rc.fieldsSet}, {"rewritten", &rc.rewritten}, {"rate_limited", &rc.rateLimited}, {"routed", &rc.routed}} {
			ch <- prometheus.MustNewConstMetric(ruleLinesDesc, prometheus.CounterValue, float64(v.n.Load()), name, v.action)
		}
		ch <- prometheus.MustNewConstMetric(ruleRedactionsDesc, prometheus.CounterValue, float64(rc.redactions.Load()), name)
		ch <- prometheus.MustNewConstMetric(ruleErrorsDesc, prometheus.CounterValue, float64(rc.errors.Load()), name)
		ch <- rc.evalHistogram(name)
	}
	for name, l := range m.limiters {
		ch <- prometheus.MustNewConstMetric(rateOverflowDesc, prometheus.CounterValue, float64(l.overflow.Load()), name)
	}
	for _, u := range m.metrics {
		desc := prometheus.NewDesc(u.name, u.help, u.labels, nil)
		u.mu.Lock()
		for k, n := range u.series {
			values := strings.Split(k, "\xff")
			if len(u.labels) == 0 {
				values = nil
			}
			ch <- u.metric(desc, n, values)
		}
		u.mu.Unlock()
		ch <- prometheus.MustNewConstMetric(overflowDesc, prometheus.CounterValue, float64(u.overflow.Load()), u.name)
	}
}
