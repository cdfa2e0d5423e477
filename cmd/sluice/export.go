package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/timestamp"
)

var exportCommand = &command{
	name:  "export",
	args:  "--data DIR [--tenant T] [--from T] [--to T] [--stream '{...}']",
	short: "write stored lines back out, byte-exact",
	long: `Writes the stored lines of a data directory to standard output, one per line,
exactly as they were ingested, ordered by tenant, then stream, then time.

All tenants are exported unless --tenant names one. --from and --to bound the
time (inclusive): RFC 3339, Unix seconds/ms/µs/ns, or a duration before now
(1h, 30m). --stream is a LogQL stream selector such as {service="api"}.

After a crash the directory is recovered first (the WAL is replayed). A data
directory in use by another process (a running serve or ingest) is refused,
never read half-written.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o exportOpts
		o.storage.register(fs)
		fs.StringVar(&o.tenant, "tenant", "", "export only this tenant")
		fs.StringVar(&o.from, "from", "", "export lines at or after this `time`")
		fs.StringVar(&o.to, "to", "", "export lines at or before this `time`")
		fs.StringVar(&o.stream, "stream", "", "export only streams matching this LogQL `selector`")
		return o.run
	},
}

type exportOpts struct {
	storage                  storageFlags
	tenant, from, to, stream string
}

// parseTimeFlag reads a time bound: empty (def), RFC 3339 or epoch text,
// or a Go duration before now.
func parseTimeFlag(name, s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d).UnixNano(), nil
	}
	if ns, ok := timestamp.Parse([]byte(s), time.Now().UnixNano()); ok {
		return ns, nil
	}
	return 0, usageError("--%s %q: not an RFC 3339 time, a Unix timestamp or a duration", name, s)
}

func (o *exportOpts) run(args []string, e *env) error {
	if len(args) > 0 {
		return usageError("export takes no arguments")
	}
	from, err := parseTimeFlag("from", o.from, math.MinInt64)
	if err != nil {
		return err
	}
	to, err := parseTimeFlag("to", o.to, math.MaxInt64)
	if err != nil {
		return err
	}
	var match func(record.Labels) bool
	if o.stream != "" {
		sel, err := logql.ParseSelector(o.stream)
		if err != nil {
			return usageError("--stream: %v", err)
		}
		match = func(ls record.Labels) bool {
			return sel.Matches(ls.Value)
		}
	}
	var tenants []string
	if o.tenant != "" {
		if err := store.CheckTenant(o.tenant); err != nil {
			return usageError("--tenant: %v", err)
		}
		tenants = []string{o.tenant}
	}
	if _, err := os.Stat(o.storage.data); o.storage.data != "" && err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	st, err := o.storage.open(e.stderr)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%v: stop the process that uses it (sluice serve or ingest) first", err)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := bufio.NewWriterSize(e.stdout, 1<<20)
	sn := st.Snapshot()
	defer sn.Release()
	if err := sn.Export(ctx, tenants, from, to, match, out); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	return st.Close()
}
