// Command promtail runs Grafana Promtail from Loki's module
// (github.com/grafana/loki/v3/clients/pkg/promtail). Loki 3.7 ships the
// Promtail library but no longer its command, so scripts/e2e-setup.sh
// builds this one in a wrapper module that requires Loki (as it builds
// logcli). It reads one YAML config file, as Promtail's -config.file does,
// over the defaults of Promtail's flags, logs at the config's
// server.log_level, and runs until SIGTERM or SIGINT.
//
// Usage: promtail -config.file FILE
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v2"

	"github.com/grafana/loki/v3/clients/pkg/promtail"
	"github.com/grafana/loki/v3/clients/pkg/promtail/client"
	"github.com/grafana/loki/v3/clients/pkg/promtail/config"
	util_log "github.com/grafana/loki/v3/pkg/util/log"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "promtail:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config.Config
	fs := flag.NewFlagSet("promtail", flag.ContinueOnError)
	cfg.RegisterFlags(fs) // the defaults
	file := fs.String("config.file", "", "the YAML config file")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("-config.file is required")
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	var lvl level.Option
	switch l := cfg.ServerConfig.LogLevel.String(); l {
	case "debug":
		lvl = level.AllowDebug()
	case "info":
		lvl = level.AllowInfo()
	case "warn":
		lvl = level.AllowWarn()
	case "error":
		lvl = level.AllowError()
	default:
		return fmt.Errorf("server.log_level %q: want debug, info, warn or error", l)
	}
	logger := level.NewFilter(log.With(log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)), "ts", log.DefaultTimestampUTC), lvl)
	util_log.Logger = logger
	cfg.Setup(logger)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	reg := prometheus.DefaultRegisterer
	p, err := promtail.New(cfg, func() (*config.Config, error) { return &cfg, nil }, client.NewMetrics(reg), false,
		promtail.WithLogger(logger), promtail.WithRegisterer(reg))
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	level.Info(logger).Log("msg", "promtail started")
	err = p.Run() // until a signal
	p.Shutdown()
	level.Info(logger).Log("msg", "promtail stopped")
	return err
}
