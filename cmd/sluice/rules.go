package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rules"
	"github.com/sluicelog/sluice/internal/store"
)

var rulesCommand = &command{
	name:  "rules",
	args:  "check FILE | test [flags] FILE [INPUT]",
	short: "check a rules file, or show what it does to sample lines",
	long: `sluice rules check FILE loads FILE as sluice serve --rules and ingest --rules
would, and prints each problem as FILE:LINE:COL: message (exit status 1), or
how many rules it holds.

sluice rules test FILE [INPUT] parses INPUT (default: standard input) as
sluice ingest would (--format and the other input flags), applies the rules to
each record, and prints, per record, which rules matched and what each did,
then the record that would be stored (its labels and line, and its fields when
a rule changed them, and the sinks a route sends it to) or that it is dropped.

With --config FILE (sluice serve's config), both check every route against
its sinks: as sluice serve does, a route to a sink that is not there, or has
no from: rules, is an error. Without, route's sink names are not checked.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o rulesOpts
		o.input.register(fs)
		fs.StringVar(&o.tenant, "tenant", store.DefaultTenant, "the tenant the records belong to (rules with tenant: apply to it only)")
		fs.StringVar(&o.config, "config", "", "check routes against the sinks of this config `file` (sluice serve's)")
		return func(args []string, e *env) error {
			// Flags may follow the subcommand too: rules test --format json FILE.
			if len(args) > 0 {
				if err := fs.Parse(args[1:]); err != nil {
					return usageError("%v", err)
				}
				args = append(args[:1], fs.Args()...)
			}
			return o.run(args, e)
		}
	},
}

type rulesOpts struct {
	input  inputFlags
	tenant string
	config string // --config: the sinks routes may name
}

func (o *rulesOpts) run(args []string, e *env) error {
	if len(args) < 2 {
		return usageError("want check FILE or test FILE [INPUT]")
	}
	data, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	var sinks rules.Sinks
	if o.config != "" {
		cfg, err := loadConfig(o.config)
		if err != nil {
			return err
		}
		sinks = routeSinks(cfg.Sinks)
	}
	set, err := rules.CompileRouted(args[1], data, nil, sinks)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return errExit(1)
	}
	switch args[0] {
	case "check":
		if len(args) > 2 {
			return usageError("check takes one FILE")
		}
		fmt.Fprintf(e.stdout, "%s: %d rules, sha256 %s\n", args[1], set.Len(), set.Hash)
		return nil
	case "test":
		if len(args) > 3 {
			return usageError("test takes FILE and at most one INPUT")
		}
		in := e.stdin
		if len(args) == 3 && args[2] != "-" {
			f, err := os.Open(args[2])
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		return o.test(set, in, e.stdout)
	}
	return usageError("unknown rules subcommand %q: want check or test", args[0])
}

// test prints what set does to each record of in.
func (o *rulesOpts) test(set *rules.Set, in io.Reader, w io.Writer) error {
	popts, err := o.input.options()
	if err != nil {
		return err
	}
	p, err := parse.New(popts)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	n := 0
	return p.Bytes(context.Background(), data, func(b *record.Batch) error {
		b.Tenant = o.tenant
		for i := range b.Errors {
			fmt.Fprintf(w, "rejected by the parser: %s\n", b.Errors[i].Error())
		}
		steps := make([][]rules.Step, len(b.Records))
		set.Trace(b, func(s rules.Step) { steps[s.Record] = append(steps[s.Record], s) })
		for i := range b.Records {
			n++
			fmt.Fprintf(w, "record %d:\n", n)
			printSteps(w, steps[i])
			if !b.Kept(i) {
				fmt.Fprintf(w, "  dropped\n")
				continue
			}
			fmt.Fprintf(w, "  stored %s %s\n", b.Labels(i), b.Bytes(b.Records[i].Line))
			if r := b.RouteOf(i); r != nil {
				fmt.Fprintf(w, "  routed to %s\n", strings.Join(r, ", "))
			}
			changed := false
			for _, s := range steps[i] {
				changed = changed || s.Action == rules.Redacted || s.Action == rules.Extracted || s.Action == rules.FieldsSet
			}
			if changed {
				for _, f := range b.RecordFields(i) {
					fmt.Fprintf(w, "    %s=%s\n", b.Name(&f), b.AppendString(nil, &f))
				}
			}
		}
		return nil
	})
}

// printSteps prints one record's steps, a line per rule.
func printSteps(w io.Writer, steps []rules.Step) {
	for k := 0; k < len(steps); {
		j := k
		var acts []string
		for ; j < len(steps) && steps[j].Rule == steps[k].Rule; j++ {
			a := steps[j].Action.String()
			if steps[j].Detail != "" {
				a += " (" + steps[j].Detail + ")"
			}
			acts = append(acts, a)
		}
		fmt.Fprintf(w, "  rule %s: %s\n", steps[k].Rule, strings.Join(acts, ", "))
		k = j
	}
}

// startRules loads the rules file for the server and keeps it current:
// reloaded on SIGHUP and when its directory changes, until ctx ends or
// stop is called (which waits for both watchers).
func startRules(ctx context.Context, path string, reg *prometheus.Registry, log *slog.Logger, sinks rules.Sinks) (*rules.Live, func(), error) {
	live, err := rules.OpenRouted(path, rules.NewMetrics(reg), log, sinks)
	if err != nil {
		return nil, nil, fmt.Errorf("rules: %w", err)
	}
	log.Info("rules loaded", "file", path, "rules", live.Current().Len(), "sha256", live.Current().Hash)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				live.Reload() // logs and counts a failure itself
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			err := live.Watch(ctx, nil)
			if err == nil || ctx.Err() != nil {
				return
			}
			// Without inotify (a full watch table, say), SIGHUP still
			// reloads; try again later.
			log.Warn("rules: cannot watch the rules file; SIGHUP reloads it", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Minute):
			}
		}
	}()
	return live, func() { cancel(); wg.Wait() }, nil
}

// printRuleCounts prints what each rule that matched a line did, for
// ingest's summary.
func printRuleCounts(w io.Writer, set *rules.Set, m *rules.Metrics) {
	for _, name := range set.Names() {
		c := m.Rule(name)
		if c.Matched == 0 && c.Errors == 0 {
			continue
		}
		fmt.Fprintf(w, "rule %s: %d matched, %d dropped, %d sampled out, %d redactions, %d relabeled, %d errors",
			name, c.Matched, c.Dropped, c.SampledOut, c.Redactions, c.Relabeled, c.Errors)
		// The newer actions' counts, when a rule has them.
		for _, x := range []struct {
			n    uint64
			what string
		}{{c.RateLimited, "rate limited"}, {c.Extracted, "extracted"}, {c.FieldsSet, "fields set"}, {c.Rewritten, "rewritten"}} {
			if x.n > 0 {
				fmt.Fprintf(w, ", %d %s", x.n, x.what)
			}
		}
		fmt.Fprintln(w)
	}
}
