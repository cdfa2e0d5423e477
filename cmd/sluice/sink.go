package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/rules"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/sink/elastic"
	"github.com/sluicelog/sluice/internal/sink/file"
	"github.com/sluicelog/sluice/internal/sink/kafka"
	"github.com/sluicelog/sluice/internal/sink/loki"
	"github.com/sluicelog/sluice/internal/sink/postgres"
)

// sinkConfig is one entry of `sinks:` in the config file.
type sinkConfig struct {
	Name     string `yaml:"name"`
	Type     string `yaml:"type"`     // postgres, file, loki, elasticsearch, kafka
	Tenant   string `yaml:"tenant"`   // a tenant, or "*" (the default) for all
	Selector string `yaml:"selector"` // a LogQL stream selector
	From     string `yaml:"from"`     // rules: only what the rules route to the sink
	Batch    int    `yaml:"batch"`    // records per batch
	Linger   string `yaml:"linger"`   // a duration
	Retry    struct {
		Initial string `yaml:"initial"`
		Max     string `yaml:"max"`
	} `yaml:"retry"`

	BatchBytes int `yaml:"batch_bytes"` // bytes per batch at most (lines, labels, fields)
	// Concurrency is how many batches may be in the destination at once
	// (postgres only, policy block; 0: postgres.DefaultConcurrency for a
	// postgres sink of policy block, 1 otherwise).
	Concurrency int `yaml:"concurrency"`
	// Pace, between 0 and 1, is the share of its time a sink behind
	// ingest works while the WAL grows faster than it reads (0: never
	// pauses).
	Pace float64 `yaml:"pace"`

	Budget   int64          `yaml:"budget_bytes"`
	Policy   string         `yaml:"policy"` // block, drop_oldest
	Postgres pgSinkConfig   `yaml:"postgres"`
	File     fileSinkConfig `yaml:"file"`
	Loki     lokiSinkConfig `yaml:"loki"`
	Elastic  esSinkConfig   `yaml:"elasticsearch"`
	Kafka    kfSinkConfig   `yaml:"kafka"`
}

// kfSinkConfig is the kafka: block of a sink.
type kfSinkConfig struct {
	Brokers            []string `yaml:"brokers"`
	Topic              string   `yaml:"topic"`
	Compression        string   `yaml:"compression"` // zstd, lz4, snappy, gzip, none
	Value              string   `yaml:"value"`       // line, json
	Headers            string   `yaml:"headers"`     // labels, none
	TransactionalID    string   `yaml:"transactional_id"`
	ClientID           string   `yaml:"client_id"`
	Timeout            string   `yaml:"timeout"`
	TransactionTimeout string   `yaml:"transaction_timeout"`
	MaxRecordBytes     int      `yaml:"max_record_bytes"`
	Partitions         int      `yaml:"partitions"` // create the topic with this many if absent
}

// lokiSinkConfig is the loki: block of a sink.
type lokiSinkConfig struct {
	URL         string `yaml:"url"`
	OrgID       string `yaml:"org_id"`
	User        string `yaml:"user"`
	Password    string `yaml:"password"`
	BearerToken string `yaml:"bearer_token"`
	Timeout     string `yaml:"timeout"`
}

// esSinkConfig is the elasticsearch: block of a sink.
type esSinkConfig struct {
	URL         string `yaml:"url"`
	Index       string `yaml:"index"`
	Action      string `yaml:"action"`
	IDPrefix    string `yaml:"id_prefix"`
	OrgID       string `yaml:"org_id"`
	User        string `yaml:"user"`
	Password    string `yaml:"password"`
	APIKey      string `yaml:"api_key"`
	BearerToken string `yaml:"bearer_token"`
	Timeout     string `yaml:"timeout"`
}

// pgSinkConfig is the postgres: block of a sink.
type pgSinkConfig struct {
	DSN     string            `yaml:"dsn"`
	Table   string            `yaml:"table"`
	Columns map[string]string `yaml:"columns"`
	Pool    int               `yaml:"pool"`
	Timeout string            `yaml:"timeout"`
	// JSONType is the type of labels and fields in the default table
	// the sink creates: jsonb (the default), json or text.
	JSONType string `yaml:"json_type"`
}

// fileSinkConfig is the file: block of a sink.
type fileSinkConfig struct {
	Dir         string `yaml:"dir"`
	MaxBytes    int64  `yaml:"max_bytes"`
	MaxAge      string `yaml:"max_age"`
	Compression string `yaml:"compression"`
}

var sinkName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// sinksDir is where the sinks of a data directory keep their positions
// and dead letters.
func sinksDir(data string) string { return filepath.Join(data, "sinks") }

// buildSinks checks the sinks' config and returns their manager; it reads
// their positions, so it runs before the store opens (store.Options.WALHold).
func buildSinks(cfgs []sinkConfig, data string, reg prometheus.Registerer, log *slog.Logger) (*sink.Manager, error) {
	seen := map[string]bool{}
	var sinks []*sink.Sink
	for i, c := range cfgs {
		where := fmt.Sprintf("config: sinks[%d]", i)
		if !sinkName.MatchString(c.Name) {
			return nil, fmt.Errorf("%s: name %q: want 1 to 64 letters, digits, '_', '.', '-'", where, c.Name)
		}
		where = fmt.Sprintf("config: sink %q", c.Name)
		if seen[c.Name] {
			return nil, fmt.Errorf("%s: named twice", where)
		}
		seen[c.Name] = true
		dur := func(key, v string) (time.Duration, error) {
			if v == "" {
				return 0, nil
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return 0, fmt.Errorf("%s: %s %q: want a positive duration such as 500ms", where, key, v)
			}
			return d, nil
		}
		linger, err := dur("linger", c.Linger)
		if err != nil {
			return nil, err
		}
		rmin, err := dur("retry.initial", c.Retry.Initial)
		if err != nil {
			return nil, err
		}
		rmax, err := dur("retry.max", c.Retry.Max)
		if err != nil {
			return nil, err
		}
		policy, err := sink.ParsePolicy(c.Policy)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		conc := c.Concurrency
		if conc == 0 && c.Type == "postgres" && policy == sink.Block {
			conc = postgres.DefaultConcurrency
			if c.Postgres.Pool > 0 {
				conc = min(conc, c.Postgres.Pool) // a pool set for one batch at a time
			}
		}
		var dest sink.Destination
		switch c.Type {
		case "postgres":
			var timeout time.Duration
			if timeout, err = dur("postgres.timeout", c.Postgres.Timeout); err == nil {
				dest, err = postgres.New(postgres.Config{Sink: c.Name, DSN: c.Postgres.DSN, Table: c.Postgres.Table,
					Columns: c.Postgres.Columns, Pool: c.Postgres.Pool, Timeout: timeout, JSONType: c.Postgres.JSONType,
					Concurrency: conc})
			}
		case "file":
			var age time.Duration
			if age, err = dur("file.max_age", c.File.MaxAge); err == nil {
				dest, err = file.New(file.Config{Sink: c.Name, Dir: c.File.Dir, MaxBytes: c.File.MaxBytes, MaxAge: age,
					Compression: c.File.Compression})
			}
		case "loki":
			var timeout time.Duration
			if timeout, err = dur("loki.timeout", c.Loki.Timeout); err == nil {
				dest, err = loki.New(loki.Config{Sink: c.Name, URL: c.Loki.URL, OrgID: c.Loki.OrgID, User: c.Loki.User,
					Password: c.Loki.Password, BearerToken: c.Loki.BearerToken, Timeout: timeout})
			}
		case "elasticsearch":
			var timeout time.Duration
			if timeout, err = dur("elasticsearch.timeout", c.Elastic.Timeout); err == nil {
				dest, err = elastic.New(elastic.Config{Sink: c.Name, URL: c.Elastic.URL, Index: c.Elastic.Index,
					Action: c.Elastic.Action, IDPrefix: c.Elastic.IDPrefix, OrgID: c.Elastic.OrgID, User: c.Elastic.User,
					Password: c.Elastic.Password, APIKey: c.Elastic.APIKey, BearerToken: c.Elastic.BearerToken, Timeout: timeout})
			}
		case "kafka":
			var timeout, txTimeout time.Duration
			if timeout, err = dur("kafka.timeout", c.Kafka.Timeout); err == nil {
				if txTimeout, err = dur("kafka.transaction_timeout", c.Kafka.TransactionTimeout); err == nil {
					dest, err = kafka.New(kafka.Config{Sink: c.Name, Brokers: c.Kafka.Brokers, Topic: c.Kafka.Topic,
						Compression: c.Kafka.Compression, Value: c.Kafka.Value, Headers: c.Kafka.Headers,
						TransactionalID: c.Kafka.TransactionalID, ClientID: c.Kafka.ClientID, Timeout: timeout,
						TransactionTimeout: txTimeout, MaxRecordBytes: c.Kafka.MaxRecordBytes, Partitions: c.Kafka.Partitions})
				}
			}
		default:
			err = fmt.Errorf("type %q: want postgres, file, loki, elasticsearch or kafka", c.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		s, err := sink.New(sink.Config{Name: c.Name, Type: c.Type, Tenant: c.Tenant, Selector: c.Selector, From: c.From, BatchSize: c.Batch, BatchBytes: c.BatchBytes,
			Linger: linger, Retry: sink.Backoff{Initial: rmin, Max: rmax}, Budget: c.Budget, Policy: policy,
			Dir: filepath.Join(sinksDir(data), c.Name), Concurrency: conc, Pace: c.Pace}, dest, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		sinks = append(sinks, s)
	}
	return sink.NewManager(sinks, reg, log), nil
}

// routeSinks returns the sinks a rules file may route to: every
// configured sink by name, true for those with from: rules.
func routeSinks(cfgs []sinkConfig) rules.Sinks {
	out := rules.Sinks{}
	for _, c := range cfgs {
		out[c.Name] = c.From == sink.FromRules
	}
	return out
}

// warnRoutedSinks logs each sink with from: rules when there is no rules
// file: nothing routes to it.
func warnRoutedSinks(cfgs []sinkConfig, rulesFile string, log *slog.Logger) {
	for _, c := range cfgs {
		if c.From == sink.FromRules && rulesFile == "" {
			log.Warn("sink takes only what rules route to it, and no rules file is given: it gets nothing", "sink", c.Name)
		}
	}
}

var sinkCommand = &command{
	name:  "sink",
	args:  "status [--url URL] | dead-letter --data DIR NAME [--replay --config FILE]",
	short: "show the sinks' state, or print a sink's dead letter",
	long: `sluice sink status asks a running server (GET /api/v1/sinks) for each sink's
position, backlog (WAL bytes not yet delivered) against its budget, policy,
the age of the oldest undelivered record, and its counters: records sent,
batches, retries, dead-lettered, dropped by policy; and the last error.
--json prints the server's JSON as it is.

sluice sink dead-letter NAME prints the dead-letter file of sink NAME of the
data directory --data: one JSON object per record the destination rejected
for good, with the reason.

sluice sink dead-letter NAME --replay --config FILE sends those records back
through the sink's destination, as the config file defines it (after the
cause was fixed, a table's constraint for example), removes from the dead
letter what was delivered, keeps what is rejected again with the new reason,
and prints the counts. PostgreSQL takes each record at most once, however
often a replay runs or crashes; Loki and Elasticsearch at least once; a file
sink cannot replay. It may run while the server runs.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var url, data string
		var raw, replay bool
		var config string
		fs.BoolVar(&replay, "replay", false, "send the dead letter back through the destination (dead-letter)")
		fs.StringVar(&config, "config", "", "the config `file` that defines the sink (dead-letter --replay)")
		fs.StringVar(&url, "url", "", "the server (default $SLUICE_URL or http://localhost:3100)")
		fs.StringVar(&data, "data", "", "the data `directory` (dead-letter)")
		fs.BoolVar(&raw, "json", false, "print the status as JSON")
		return func(args []string, e *env) error {
			if len(args) == 0 {
				return usageError("sink wants status or dead-letter")
			}
			// Flags may follow the subcommand too, and the sink's name.
			rest, pos := args[1:], []string(nil)
			for {
				if err := fs.Parse(rest); err != nil {
					return usageError("%v", err)
				}
				if rest = fs.Args(); len(rest) == 0 {
					break
				}
				pos, rest = append(pos, rest[0]), rest[1:]
			}
			args = append(args[:1], pos...)
			switch args[0] {
			case "status":
				if len(args) != 1 {
					return usageError("sink status takes no arguments")
				}
				ctx, cancel := e.context()
				defer cancel()
				return sinkStatus(ctx, e, cmp.Or(url, os.Getenv("SLUICE_URL"), "http://localhost:3100"), raw)
			case "dead-letter":
				if len(args) != 2 {
					return usageError("sink dead-letter takes the sink's name")
				}
				if replay {
					ctx, cancel := e.context()
					defer cancel()
					return sinkReplay(ctx, e, config, data, args[1])
				}
				if data == "" {
					return usageError("sink dead-letter needs --data")
				}
				if !sinkName.MatchString(args[1]) {
					return usageError("sink dead-letter: %q is not a sink name", args[1])
				}
				f, err := os.Open(sink.DeadLetterPath(filepath.Join(sinksDir(data), args[1])))
				if os.IsNotExist(err) {
					fmt.Fprintf(e.stderr, "sink %q has no dead letter in %s (nothing was rejected)\n", args[1], data)
					return nil
				}
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = io.Copy(e.stdout, f)
				return err
			}
			return usageError("sink %q: want status or dead-letter", args[0])
		}
	},
}

func sinkStatus(ctx context.Context, e *env, base string, raw bool) error {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/sinks", nil)
	if err != nil {
		return err
	}
	if tok := os.Getenv("SLUICE_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sink status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("sink status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sink status: %s: %s", resp.Status, body)
	}
	if raw {
		_, err := e.stdout.Write(body)
		return err
	}
	var st struct {
		Sinks []sink.Status `json:"sinks"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("sink status: reply: %w", err)
	}
	if len(st.Sinks) == 0 {
		fmt.Fprintln(e.stdout, "no sinks configured")
		return nil
	}
	fmt.Fprint(e.stdout, sink.FormatStatus(st.Sinks))
	return nil
}
