package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rules"
	sinkstore "github.com/sluicelog/sluice/internal/sink/store"
	"github.com/sluicelog/sluice/internal/source/file"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/wal"
)

var ingestCommand = &command{
	name:  "ingest",
	args:  "--data DIR [flags] FILE...|-",
	short: "load log files durably into a data directory",
	long: `Parses each input (a file, or - for standard input) on every core and stores
its records durably in the data directory, creating it if needed. Inputs are
read in large chunks; each chunk is acknowledged once the WAL has it on disk
(--fsync always, the default), then the head is flushed into parts and
merged.

On a terminal a progress line shows bytes, lines/s and the time left. At the
end a summary gives the lines stored, the lines rejected by reason (each is
also reported on standard error as FILE:LINE:COL: message), and the bytes on
disk.

With --ack-log FILE, after each durable group commit the number of input lines
(counted across all inputs) whose every line is now durable (or rejected) is
appended to FILE as a line of text, so that a test can kill the process and
check what survived.

With --rules FILE, every line goes through the rules before it is stored, as
in sluice serve. A rule's route names sinks: they are checked against the sinks
of --config FILE (sluice serve's config), as sluice serve checks them; a route
to a sink that is not there, or has no from: rules, is an error naming the
rule and the sink, and so is any route without --config.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o ingestOpts
		o.input.register(fs)
		o.storage.register(fs)
		fs.StringVar(&o.tenant, "tenant", store.DefaultTenant, "the tenant the records belong to")
		fs.StringVar(&o.ackLog, "ack-log", "", "append the count of durable input lines to this `file` after each commit")
		fs.IntVar(&o.workers, "workers", 0, "parsing and storing goroutines (0: twice the CPUs)")
		fs.BoolVar(&o.quiet, "quiet", false, "no progress line and no summary")
		fs.StringVar(&o.rules, "rules", "", "apply the rules in this YAML `file` (see rules.example.yaml) to every line before it is stored")
		fs.StringVar(&o.config, "config", "", "check the rules' routes against the sinks of this config `file` (sluice serve's)")
		fs.Int64Var(&o.memLimit, "memory-limit", 0, "soft limit of the Go heap in `bytes`, which the GC works to stay under (0: three heads and 32 MiB, at least 128 MiB; GOMEMLIMIT overrides)")
		return o.run
	},
}

type ingestOpts struct {
	input    inputFlags
	storage  storageFlags
	tenant   string
	ackLog   string
	workers  int
	quiet    bool
	memLimit int64
	rules    string // --rules
	config   string // --config: the sinks the rules' routes may name
}

// storageFlags open a data directory.
type storageFlags struct {
	data         string
	fsync        string
	headBytes    int64
	blockingSync bool
}

func (o *storageFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.data, "data", "", "the data `directory`")
	fs.StringVar(&o.fsync, "fsync", "always", "WAL sync policy: always (durable before acknowledging), interval=10ms, or never (UNSAFE: a crash loses acknowledged data)")
	fs.Int64Var(&o.headBytes, "head-bytes", store.DefaultHeadBytes, "flush the in-memory head to parts at this size")
	fs.BoolVar(&o.blockingSync, "wal-blocking-sync", false, "fdatasync the WAL by a blocking syscall, not through an io_uring (used where the kernel offers one)")
}

func (o *storageFlags) open(stderr io.Writer) (*store.Store, error) {
	return o.openWith(stderr, store.Options{})
}

// openWith opens the data directory with opts, filling in the flags.
func (o *storageFlags) openWith(stderr io.Writer, opts store.Options) (*store.Store, error) {
	if o.data == "" {
		return nil, usageError("--data DIR is required")
	}
	sync, err := wal.ParseSyncPolicy(o.fsync)
	if err != nil {
		return nil, usageError("%v", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts.Dir, opts.Sync, opts.HeadBytes, opts.Logger = o.data, sync, o.headBytes, log
	opts.WALBlockingSync = o.blockingSync
	return store.Open(opts)
}

func (o *ingestOpts) run(args []string, e *env) error {
	if len(args) == 0 {
		return usageError("name at least one FILE, or - for standard input")
	}
	popts, err := o.input.options()
	if err != nil {
		return err
	}
	if err := store.CheckTenant(o.tenant); err != nil {
		return usageError("--tenant: %v", err)
	}
	// The rules before the data directory: a bad file creates nothing.
	var live *rules.Live
	ruleCounts := rules.NewMetrics(nil)
	if o.rules != "" {
		// Routes name the sinks of a server's config, which sluice serve
		// checks them against: so does ingest, and without a config no
		// sink is there to route to.
		sinks := rules.Sinks{}
		if o.config != "" {
			cfg, err := loadConfig(o.config)
			if err != nil {
				return err
			}
			sinks = routeSinks(cfg.Sinks)
		}
		if live, err = rules.OpenRouted(o.rules, ruleCounts, nil, sinks); err != nil {
			return fmt.Errorf("rules: %w", err)
		}
	} else if o.config != "" {
		return usageError("--config is for the rules' routes: give --rules FILE too")
	}
	var ack *os.File
	if o.ackLog != "" {
		if ack, err = os.OpenFile(o.ackLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return err
		}
		defer ack.Close()
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The head and the head being flushed are most of the heap; without
		// a limit the GC lets garbage grow to the size of the live heap.
		limit := o.memLimit
		if limit <= 0 {
			limit = max(128<<20, 3*o.storage.headBytes+32<<20)
		}
		debug.SetMemoryLimit(limit)
	}
	// Parts are merged once, at the end (Compact), not level by level.
	st, err := o.storage.openWith(e.stderr, store.Options{DeferMerges: true})
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var prog file.Progress
	var total int64
	for _, name := range args {
		if name != "-" {
			if fi, err := os.Stat(name); err == nil {
				total += fi.Size()
			}
		}
	}
	start := time.Now()
	bar := newProgressBar(e.stderr, o.quiet, total, &prog, start)
	var ackErr error
	var ackBuf []byte
	opts := file.Options{
		Parse:   popts,
		Tenant:  o.tenant,
		Workers: o.workers,
		OnDone: func(lines int64) {
			if ack == nil || ackErr != nil {
				return
			}
			ackBuf = strconv.AppendInt(ackBuf[:0], lines, 10)
			ackBuf = append(ackBuf, '\n')
			_, ackErr = ack.Write(ackBuf)
		},
		OnError: func(input string, le *record.LineError) {
			bar.clear()
			fmt.Fprintf(e.stderr, "%s:%s\n", input, le.Error())
		},
	}
	// The same flow as the server's protocols, without a stream limit
	// (a bulk load is the operator's own) or metrics (the summary counts).
	fl := &flow.Flow{Sink: sinkstore.New(st)}
	if live != nil {
		fl.Rules = live
	}
	err = file.Load(ctx, args, e.stdin, opts, fl, &prog)
	bar.stop()
	if err != nil {
		return err
	}
	if ackErr != nil {
		return fmt.Errorf("write ack log: %w", ackErr)
	}
	loaded := time.Since(start)
	if err := st.Compact(ctx); err != nil {
		return err
	}
	if !o.quiet {
		printIngestSummary(e.stdout, &prog, st.Stats(), loaded, time.Since(start))
		if live != nil {
			printRuleCounts(e.stdout, live.Current(), ruleCounts)
		}
	}
	return st.Close()
}

func printIngestSummary(w io.Writer, p *file.Progress, s store.Stats, loaded, all time.Duration) {
	var rejected int64
	for i := range p.Rejected {
		rejected += p.Rejected[i].Load()
	}
	lines := p.LinesDone.Load()
	bytes := p.BytesDone.Load()
	fmt.Fprintf(w, "lines read     %d (%.1f MB)\n", lines, float64(bytes)/1e6)
	fmt.Fprintf(w, "lines stored   %d\n", p.Records.Load())
	fmt.Fprintf(w, "lines rejected %d\n", rejected+p.Refused.Load())
	for _, k := range record.ErrKinds() {
		if n := p.Rejected[k].Load(); n > 0 {
			fmt.Fprintf(w, "  %-15s %d\n", k, n)
		}
	}
	if n := p.Refused.Load(); n > 0 {
		fmt.Fprintf(w, "  %-15s %d\n", "refused", n)
	}
	if n := p.BadUTF8.Load(); n > 0 {
		fmt.Fprintf(w, "values with invalid UTF-8 (kept, see docs) %d\n", n)
	}
	ratio := 0.0
	if s.PartBytes > 0 {
		ratio = float64(s.LineBytes) / float64(s.PartBytes)
	}
	fmt.Fprintf(w, "bytes on disk  %d in %d parts (%.1fx smaller than the lines)\n", s.PartBytes, s.Parts, ratio)
	fmt.Fprintf(w, "durable in     %.2fs (%.0f lines/s, %.1f MB/s); flushed and merged in %.2fs\n",
		loaded.Seconds(), float64(lines)/loaded.Seconds(), float64(bytes)/1e6/loaded.Seconds(), all.Seconds())
}

// progressBar redraws one status line on a terminal.
type progressBar struct {
	w     io.Writer
	on    bool
	mu    sync.Mutex
	done  chan struct{}
	wg    sync.WaitGroup
	total int64
	p     *file.Progress
	start time.Time
}

func newProgressBar(w io.Writer, quiet bool, total int64, p *file.Progress, start time.Time) *progressBar {
	b := &progressBar{w: w, total: total, p: p, start: start, done: make(chan struct{})}
	if f, ok := w.(*os.File); ok && !quiet {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			b.on = true
		}
	}
	if b.on {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-b.done:
					return
				case <-t.C:
					b.draw()
				}
			}
		}()
	}
	return b
}

func (b *progressBar) draw() {
	b.mu.Lock()
	defer b.mu.Unlock()
	sec := time.Since(b.start).Seconds()
	done := b.p.BytesDone.Load()
	lines := b.p.LinesDone.Load()
	s := fmt.Sprintf("\r%8.1f MB  %9.0f lines/s", float64(done)/1e6, float64(lines)/sec)
	if b.total > 0 && done > 0 {
		left := time.Duration(float64(b.total-done) / float64(done) * sec * float64(time.Second))
		s += fmt.Sprintf("  %5.1f%%  ETA %s", 100*float64(done)/float64(b.total), left.Round(time.Second))
	}
	fmt.Fprint(b.w, s+"\x1b[K")
}

// clear erases the status line so a message can be printed.
func (b *progressBar) clear() {
	if b.on {
		b.mu.Lock()
		fmt.Fprint(b.w, "\r\x1b[K")
		b.mu.Unlock()
	}
}

func (b *progressBar) stop() {
	if b.on {
		close(b.done)
		b.wg.Wait()
		b.clear()
	}
}
