package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicelog/sluice/internal/server"
)

// fileConfig is the YAML config file of `sluice serve` (sluice.example.yaml
// documents every key). A flag given on the command line wins over the
// file.
type fileConfig struct {
	Listen         string              `yaml:"listen"`
	IngestServer   string              `yaml:"ingest_server"`
	Data           string              `yaml:"data"`
	Fsync          string              `yaml:"fsync"`
	HeadBytes      int64               `yaml:"head_bytes"`
	MaxHeadBytes   int64               `yaml:"max_head_bytes"`
	BlockCache     int64               `yaml:"block_cache_bytes"`
	Retention      string              `yaml:"retention"`
	MaxTenantBytes int64               `yaml:"max_tenant_bytes"`
	Pprof          *bool               `yaml:"pprof"`
	LokiJSONFields *bool               `yaml:"loki_json_fields"`
	Discover       discoverConfig      `yaml:"discover"`
	Limits         limitsConfig        `yaml:"limits"`
	Syslog         syslogConfig        `yaml:"syslog"`
	Auth           []server.Credential `yaml:"auth"`
	Rules          string              `yaml:"rules"`
	Sinks          []sinkConfig        `yaml:"sinks"`
	TLS            struct {
		CertFile string `yaml:"cert_file"`
		KeyFile  string `yaml:"key_file"`
	} `yaml:"tls"`
}

type limitsConfig struct {
	MaxBodyBytes    int64            `yaml:"max_body_bytes"`
	MaxHeaderBytes  int              `yaml:"max_header_bytes"`
	MaxDecodedBytes int64            `yaml:"max_decoded_bytes"`
	MaxWholeBody    int64            `yaml:"max_whole_body_bytes"`
	MaxInflight     int              `yaml:"max_inflight"`
	MaxInflightByte int64            `yaml:"max_inflight_bytes"`
	MaxLineSize     int              `yaml:"max_line_size"`
	MaxFields       int              `yaml:"max_fields"`
	MinFreeBytes    uint64           `yaml:"min_free_bytes"`
	BodyIdleTimeout string           `yaml:"body_idle_timeout"`
	MinBodyRate     int64            `yaml:"min_body_rate"`
	IdleTimeout     string           `yaml:"idle_timeout"`
	MaxConnections  int              `yaml:"max_connections"`
	MaxStreams      int              `yaml:"max_streams_per_tenant"`
	TenantRate      server.RateLimit `yaml:"tenant_rate"`
	Query           struct {
		Timeout   string `yaml:"timeout"`
		MaxSeries int    `yaml:"max_series"`
		MaxBytes  int64  `yaml:"max_bytes"`
		MaxLines  int    `yaml:"max_lines"`
		MaxMemory int64  `yaml:"max_memory"`
		// Admission: see server.Admission.
		MaxSize                int    `yaml:"max_size"`
		MaxConcurrent          int    `yaml:"max_concurrent"`
		MaxConcurrentPerTenant int    `yaml:"max_concurrent_per_tenant"`
		QueueWait              string `yaml:"queue_wait"`
		MaxTails               int    `yaml:"max_tails"`
		MaxTailsPerTenant      int    `yaml:"max_tails_per_tenant"`
	} `yaml:"query"`
	Loki struct {
		MaxLabels          int `yaml:"max_labels"`
		MaxLabelNameLength int `yaml:"max_label_name_length"`
		MaxLabelValueLen   int `yaml:"max_label_value_length"`
		MaxLineSize        int `yaml:"max_line_size"`
	} `yaml:"loki"`
}

// discoverConfig is what Loki and OTLP pushes get added (as Loki does).
type discoverConfig struct {
	ServiceName *[]string `yaml:"service_name"` // [] turns it off
	LogLevels   *bool     `yaml:"log_levels"`
}

type syslogConfig struct {
	TCP             string `yaml:"tcp"`
	UDP             string `yaml:"udp"`
	Tenant          string `yaml:"tenant"`
	MaxMessageBytes int    `yaml:"max_message_bytes"`
	IdleTimeout     string `yaml:"idle_timeout"`
	MaxConnections  int    `yaml:"max_connections"`
	UDPReceiveBuf   int    `yaml:"udp_receive_buffer_bytes"`
}

// loadConfig reads a config file strictly: an unknown key is an error, so
// that a typo never passes silently.
func loadConfig(path string) (*fileConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	for i, a := range c.Auth {
		if (a.Token == "") == (a.User == "") || len(a.Tenants) == 0 && !a.Admin {
			return nil, fmt.Errorf("config %s: auth entry %d: give either token or user and password, and the tenants it may use (or admin: true)", path, i+1)
		}
	}
	return &c, nil
}

// apply copies the file's settings into the serve options, except those
// whose flags were given on the command line.
func (c *fileConfig) apply(o *serveOpts, fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	str := func(flag string, dst *string, v string) {
		if v != "" && !set[flag] {
			*dst = v
		}
	}
	num := func(flag string, dst *int64, v int64) {
		if v != 0 && !set[flag] {
			*dst = v
		}
	}
	intv := func(flag string, dst *int, v int) {
		if v != 0 && !set[flag] {
			*dst = v
		}
	}
	cfg := o.cfg
	str("listen", &o.listen, c.Listen)
	str("ingest-server", &cfg.IngestServer, c.IngestServer)
	str("data", &o.storage.data, c.Data)
	str("fsync", &o.storage.fsync, c.Fsync)
	num("head-bytes", &o.storage.headBytes, c.HeadBytes)
	num("max-head-bytes", &o.maxHeadBytes, c.MaxHeadBytes)
	num("block-cache-bytes", &o.blockCacheBytes, c.BlockCache)
	num("max-tenant-bytes", &o.maxTenantBytes, c.MaxTenantBytes)
	if c.Retention != "" && !set["retention"] {
		d, err := time.ParseDuration(c.Retention)
		if err != nil {
			return fmt.Errorf("config: retention: %v", err)
		}
		o.retention = d
	}
	if c.Pprof != nil && !set["pprof"] {
		cfg.Pprof = *c.Pprof
	}
	if c.LokiJSONFields != nil && !set["loki-json-fields"] {
		cfg.LokiFields.JSON = *c.LokiJSONFields
	}
	if c.Discover.ServiceName != nil && !set["discover-service-name"] {
		o.discoverService = strings.Join(*c.Discover.ServiceName, ",")
	}
	if c.Discover.LogLevels != nil && !set["discover-log-levels"] {
		cfg.Discover.LogLevels = *c.Discover.LogLevels
	}
	num("max-body-bytes", &cfg.MaxBodyBytes, c.Limits.MaxBodyBytes)
	intv("max-header-bytes", &cfg.MaxHeaderBytes, c.Limits.MaxHeaderBytes)
	num("max-decoded-bytes", &cfg.MaxDecodedBytes, c.Limits.MaxDecodedBytes)
	num("max-whole-body-bytes", &cfg.MaxWholeBodyBytes, c.Limits.MaxWholeBody)
	intv("max-inflight", &cfg.MaxInflight, c.Limits.MaxInflight)
	num("max-inflight-bytes", &cfg.MaxInflightBytes, c.Limits.MaxInflightByte)
	intv("max-line-size", &cfg.Parse.MaxLineSize, c.Limits.MaxLineSize)
	intv("max-fields", &cfg.Parse.Record.MaxFields, c.Limits.MaxFields)
	if c.Limits.MinFreeBytes != 0 {
		cfg.MinFreeBytes = c.Limits.MinFreeBytes
	}
	for _, d := range []struct {
		flag, key, v string
		dst          *time.Duration
	}{{"body-idle-timeout", "body_idle_timeout", c.Limits.BodyIdleTimeout, &cfg.BodyIdleTimeout},
		{"idle-timeout", "idle_timeout", c.Limits.IdleTimeout, &cfg.IdleTimeout}} {
		if d.v != "" && !set[d.flag] {
			v, err := time.ParseDuration(d.v)
			if err != nil {
				return fmt.Errorf("config: limits.%s: %v", d.key, err)
			}
			*d.dst = v
		}
	}
	num("min-body-rate", &cfg.MinBodyRate, c.Limits.MinBodyRate)
	intv("max-connections", &cfg.MaxConnections, c.Limits.MaxConnections)
	intv("max-streams-per-tenant", &cfg.MaxStreamsPerTenant, c.Limits.MaxStreams)
	if c.Limits.TenantRate.LinesPerSecond != 0 {
		cfg.TenantRate = c.Limits.TenantRate
	}
	if q := c.Limits.Query; q.Timeout != "" && !set["query-timeout"] {
		d, err := time.ParseDuration(q.Timeout)
		if err != nil {
			return fmt.Errorf("config: limits.query.timeout: %v", err)
		}
		cfg.Query.Timeout = d
	}
	intv("max-query-series", &cfg.Query.MaxSeries, c.Limits.Query.MaxSeries)
	num("max-query-bytes", &cfg.Query.MaxBytesScanned, c.Limits.Query.MaxBytes)
	intv("max-query-lines", &cfg.Query.MaxLines, c.Limits.Query.MaxLines)
	num("max-query-memory", &cfg.Query.MaxMemory, c.Limits.Query.MaxMemory)
	intv("max-query-size", &cfg.Admission.MaxQuerySize, c.Limits.Query.MaxSize)
	intv("max-concurrent-queries", &cfg.Admission.MaxQueries, c.Limits.Query.MaxConcurrent)
	intv("max-tenant-concurrent-queries", &cfg.Admission.MaxTenantQueries, c.Limits.Query.MaxConcurrentPerTenant)
	intv("max-tails", &cfg.Admission.MaxTails, c.Limits.Query.MaxTails)
	intv("max-tenant-tails", &cfg.Admission.MaxTenantTails, c.Limits.Query.MaxTailsPerTenant)
	if q := c.Limits.Query; q.QueueWait != "" && !set["query-queue-wait"] {
		d, err := time.ParseDuration(q.QueueWait)
		if err != nil {
			return fmt.Errorf("config: limits.query.queue_wait: %v", err)
		}
		cfg.Admission.QueueWait = d
	}
	l := c.Limits.Loki
	for _, p := range []struct {
		dst *int
		v   int
	}{{&cfg.Loki.MaxLabels, l.MaxLabels}, {&cfg.Loki.MaxLabelNameLen, l.MaxLabelNameLength},
		{&cfg.Loki.MaxLabelValLen, l.MaxLabelValueLen}, {&cfg.Loki.MaxLineSize, l.MaxLineSize}} {
		if p.v != 0 {
			*p.dst = p.v
		}
	}
	str("syslog-tcp", &o.syslogTCP, c.Syslog.TCP)
	str("syslog-udp", &o.syslogUDP, c.Syslog.UDP)
	str("syslog-tenant", &o.syslogTenant, c.Syslog.Tenant)
	intv("syslog-max-message-bytes", &cfg.Syslog.MaxMessageBytes, c.Syslog.MaxMessageBytes)
	if c.Syslog.IdleTimeout != "" && !set["syslog-idle-timeout"] {
		d, err := time.ParseDuration(c.Syslog.IdleTimeout)
		if err != nil {
			return fmt.Errorf("config: syslog.idle_timeout: %v", err)
		}
		cfg.Syslog.IdleTimeout = d
	}
	intv("syslog-max-connections", &cfg.Syslog.MaxConns, c.Syslog.MaxConnections)
	intv("syslog-udp-rcvbuf", &cfg.Syslog.UDPReceiveBuffer, c.Syslog.UDPReceiveBuf)
	cfg.Auth = c.Auth
	str("tls-cert", &cfg.TLSCertFile, c.TLS.CertFile)
	str("tls-key", &cfg.TLSKeyFile, c.TLS.KeyFile)
	str("rules", &o.rules, c.Rules)
	o.sinks = c.Sinks
	return nil
}
