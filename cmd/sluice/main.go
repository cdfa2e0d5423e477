package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// left empty, it is the main module's version that the go command stamps
// from VCS (a tag, or a pseudo-version naming the commit, +dirty for a
// modified tree; needs -buildvcs, as the Makefile and scripts/test.sh
// build), or "dev" for a binary without one (go run, -buildvcs=false).
var version = ""

func init() {
	bi, _ := debug.ReadBuildInfo()
	version = resolveVersion(version, bi)
}

// resolveVersion returns set, or else the main module's version in bi,
// or else "dev".
func resolveVersion(set string, bi *debug.BuildInfo) string {
	switch {
	case set != "":
		return set
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return bi.Main.Version
	}
	return "dev"
}

// command is one subcommand.
type command struct {
	name  string
	args  string // the synopsis after the name
	short string // one line for `sluice help`
	long  string // the rest of `sluice CMD -h`
	flags func(fs *flag.FlagSet) func(args []string, env *env) error
}

// env is what a command reads and writes besides its flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// ctx, when set, ends long-running commands (tail) when done; they
	// also end on an interrupt.
	ctx context.Context
}

// context returns the context a command runs in: e.ctx or the
// background, ended by an interrupt too.
func (e *env) context() (context.Context, context.CancelFunc) {
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt)
}

// errExit ends the program with a status without printing anything more:
// the command already said why.
type errExit int

func (e errExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

var commands []*command

func init() {
	commands = []*command{serveCommand, ingestCommand, queryCommand, tailCommand, exportCommand, statsCommand, checkCommand, repairCommand, parseCommand, rulesCommand, sinkCommand, benchCommand, versionCommand}
}

func main() {
	// SLUICE_CPUPROFILE=FILE profiles any command, for performance work.
	if path := os.Getenv("SLUICE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sluice: SLUICE_CPUPROFILE: %v\n", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "sluice: SLUICE_CPUPROFILE: %v\n", err)
			os.Exit(1)
		}
		code := run(os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}))
}

// run executes a command line and returns the exit status: 0 on success,
// 1 when the command failed, 2 for a usage error.
func run(args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				c.usage(e.stdout, nil)
				return 0
			}
			fmt.Fprintf(e.stderr, "sluice: unknown command %q\n", args[1])
			return 2
		}
		usage(e.stdout)
		return 0
	case "-version", "--version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(e.stderr, "sluice: unknown command %q; run 'sluice help' for the list\n", name)
		return 2
	}
	fs := flag.NewFlagSet("sluice "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runFn := c.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.usage(e.stdout, fs)
			return 0
		}
		fmt.Fprintf(e.stderr, "sluice %s: %v\n", c.name, err)
		fmt.Fprintf(e.stderr, "usage: sluice %s %s\nrun 'sluice %s -h' for details\n", c.name, c.args, c.name)
		return 2
	}
	err := runFn(fs.Args(), e)
	var ex errExit
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ex):
		return int(ex)
	case errors.Is(err, errUsage):
		fmt.Fprintf(e.stderr, "sluice %s: %v\nusage: sluice %s %s\n", c.name, err, c.name, c.args)
		return 2
	default:
		fmt.Fprintf(e.stderr, "sluice %s: %v\n", c.name, err)
		return 1
	}
}

// errUsage wraps errors in how a command was called.
var errUsage = errors.New("usage")

func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sluice ingests logs, stores them durably and answers LogQL queries.

Usage: sluice COMMAND [flags] [args]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.short)
	}
	fmt.Fprint(w, "\nRun 'sluice COMMAND -h' for a command's flags.\n")
}

func (c *command) usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: sluice %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.long))
	if fs == nil {
		fs = flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

var versionCommand = &command{
	name:  "version",
	short: "print the version and the commit it was built from",
	long:  "Prints sluice's version, the VCS commit and time it was built from, and the Go version.",
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		return func(args []string, e *env) error {
			if len(args) > 0 {
				return usageError("version takes no arguments")
			}
			commit, when, goVersion := buildInfo()
			if goVersion != "" {
				fmt.Fprintf(e.stdout, "sluice %s commit %s%s %s\n", version, commit, when, goVersion)
				return nil
			}
			fmt.Fprintf(e.stdout, "sluice %s commit %s\n", version, commit)
			return nil
		}
	},
}

// buildInfo returns the commit the binary was built from ("unknown", with
// "+dirty" for a modified tree), " " and its time when known, and the Go
// version ("" when the binary has no build information).
func buildInfo() (commit, when, goVersion string) {
	commit = "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return commit, "", ""
	}
	dirty := ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			when = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	return commit + dirty, when, bi.GoVersion
}
