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
	"github.com/sluicelog/sluice/internal/store/part"
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

The directory is read, never changed: the WAL (lines not yet in parts) is
replayed into memory, a damaged WAL tail is skipped, not cut off (sluice repair
does that). A data directory in use by another process (a running serve or
ingest) is refused, never read half-written.

Damaged data: without --skip-corrupt, export stops at the first damaged block
it meets, after writing every line before it (the output is an exact prefix of
the full export), and fails naming the part file, the block and its byte
offset; a part whose index or footer is damaged fails it before anything is
written. With --skip-corrupt it writes every readable line, lists each skipped
block or part on standard error, and exits 0. sluice check lists all damage.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o exportOpts
		o.storage.register(fs)
		fs.StringVar(&o.tenant, "tenant", "", "export only this tenant")
		fs.StringVar(&o.from, "from", "", "export lines at or after this `time`")
		fs.StringVar(&o.to, "to", "", "export lines at or before this `time`")
		fs.StringVar(&o.stream, "stream", "", "export only streams matching this LogQL `selector`")
		fs.BoolVar(&o.skipCorrupt, "skip-corrupt", false, "skip damaged blocks and parts, export the rest, and list what was skipped on standard error")
		return o.run
	},
}

type exportOpts struct {
	storage                  storageFlags
	tenant, from, to, stream string
	skipCorrupt              bool
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
	st, err := o.storage.openReadOnly(e.stderr)
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
	if !o.skipCorrupt {
		sn.FailOnDamage()
	}
	reportDamage(e.stderr, st)
	err = sn.Export(ctx, tenants, from, to, match, out)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if errors.Is(err, part.ErrCorrupt) {
		return fmt.Errorf("%w\nthe lines before the damage were written; --skip-corrupt exports the rest, sluice check lists all damage", err)
	}
	if err != nil {
		return err
	}
	if d := sn.Damage(); len(d) > 0 {
		for _, x := range d {
			fmt.Fprintf(e.stderr, "sluice export: skipped %s\n", x.Describe())
		}
		fmt.Fprintf(e.stderr, "sluice export: %d damaged blocks or parts skipped; every other line was written\n", len(d))
	}
	return st.Close()
}
