package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/parse/json"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

var parseCommand = &command{
	name:  "parse",
	args:  "[flags] FILE...|-",
	short: "parse log lines and print them as normalized records",
	long: `Parses each input (a file, or - for standard input) and prints every record
as one JSON object per line: _time (RFC 3339, nanoseconds), _stream, _msg, then
the fields in input order. Files are mapped into memory, not read line by line.

A line that can't be parsed is reported on standard error as FILE:LINE:COL:
message and counted; the lines around it are still parsed. With --strict the
first bad line ends the run with status 1.

With --stats nothing is printed per record: only the totals (lines, records,
fields, bytes, errors by kind, throughput).

With --whole each input is one JSON text (not NDJSON): the status is 0 if it is
valid JSON and 1 if not.

Formats: ` + parse.Formats + `. auto picks per line: JSON for '{', syslog for
'<PRI>', logfmt for key=value, text otherwise. pattern uses Loki's <name>/<_>
placeholders; regexp uses RE2 named groups (?P<name>...).`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o parseOpts
		o.input.register(fs)
		fs.BoolVar(&o.stats, "stats", false, "print only totals, not records")
		fs.BoolVar(&o.strict, "strict", false, "stop with status 1 at the first bad line")
		fs.BoolVar(&o.whole, "whole", false, "read each input as one JSON text and validate it")
		return o.run
	},
}

type parseOpts struct {
	input                inputFlags
	stats, strict, whole bool
}

// inputFlags say how input lines become records; parse and ingest share
// them.
type inputFlags struct {
	format, timeFields, msgFields, streamFields, multiline, timeLayout string
	maxLine, maxDepth                                                  int
}

func (o *inputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "format", "auto", "input format: "+parse.Formats)
	fs.StringVar(&o.timeFields, "time-field", strings.Join(record.DefaultTimeFields, ","), "fields to read the timestamp from, in order of preference")
	fs.StringVar(&o.msgFields, "msg-field", strings.Join(record.DefaultMsgFields, ","), "fields to take the message (_msg) from, in order of preference")
	fs.StringVar(&o.streamFields, "stream-fields", strings.Join(record.DefaultStreamFields, ","), "fields whose values form the stream labels")
	fs.IntVar(&o.maxLine, "max-line-size", 1<<20, "reject lines longer than this many bytes")
	fs.IntVar(&o.maxDepth, "max-depth", json.DefaultMaxDepth, "reject JSON nested deeper than this")
	fs.StringVar(&o.timeLayout, "time-layout", "auto", "the format of time fields when it cannot be detected: auto, hdfs (081109 203615), spark (17/06/09 20:10:40) or logcat (03-17 16:13:38.811)")
	fs.StringVar(&o.multiline, "multiline", "", "RE2 `regexp` matching the first line of a record; other lines are joined to the record before them")
}

// options returns the parser options the flags describe.
func (o *inputFlags) options() (parse.Options, error) {
	layout, ok := timestamp.LayoutNamed(o.timeLayout)
	if !ok {
		return parse.Options{}, usageError("unknown time layout %q: auto, hdfs, spark or logcat", o.timeLayout)
	}
	opts := parse.Options{
		Format: o.format,
		Record: record.Config{
			TimeFields:   splitList(o.timeFields),
			MsgFields:    splitList(o.msgFields),
			StreamFields: splitList(o.streamFields),
			TimeLayout:   layout,
		},
		MaxLineSize: o.maxLine,
		MaxDepth:    o.maxDepth,
		Multiline:   o.multiline,
	}
	// Check the options once, as a usage error, rather than per input.
	if _, err := parse.New(opts); err != nil {
		return opts, usageError("%v", err)
	}
	return opts, nil
}

// parseTotals are the figures --stats prints.
type parseTotals struct {
	lines, records, fields, bytes int64
	badUTF8, unmatched            int64
	errs                          [8]int64 // by record.ErrKind
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (o *parseOpts) run(args []string, e *env) error {
	if len(args) == 0 {
		return usageError("name at least one FILE, or - for standard input")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := bufio.NewWriterSize(e.stdout, 1<<20)
	defer out.Flush()
	if o.whole {
		return o.runWhole(args, e, out)
	}
	opts, err := o.input.options()
	if err != nil {
		return err
	}
	var tot parseTotals
	start := time.Now()
	var line []byte
	failed := false
	for _, name := range args {
		p, err := parse.New(opts)
		if err != nil {
			return usageError("%v", err)
		}
		each := func(b *record.Batch) error {
			tot.records += int64(len(b.Records))
			tot.fields += int64(len(b.Fields))
			tot.badUTF8 += int64(b.BadUTF8)
			tot.unmatched += int64(b.Unmatched)
			for i := range b.Errors {
				le := &b.Errors[i]
				tot.errs[le.Kind]++
				fmt.Fprintf(e.stderr, "%s:%s\n", name, le.Error())
				if o.strict {
					failed = true
					return errExit(1)
				}
			}
			if o.stats {
				return nil
			}
			for i := range b.Records {
				line = b.AppendJSON(line[:0], i)
				line = append(line, '\n')
				if _, err := out.Write(line); err != nil {
					return err
				}
			}
			return nil
		}
		if name == "-" {
			err = p.Reader(ctx, e.stdin, each)
		} else {
			err = p.File(ctx, name, each)
		}
		tot.lines += p.Lines()
		tot.bytes += p.Offset()
		if err != nil && !failed {
			return err
		}
		if failed {
			break
		}
	}
	if o.stats {
		if err := out.Flush(); err != nil {
			return err
		}
		tot.print(e.stdout, time.Since(start))
	}
	if failed {
		return errExit(1)
	}
	return nil
}

func (t *parseTotals) print(w io.Writer, elapsed time.Duration) {
	var nerr int64
	for _, n := range t.errs {
		nerr += n
	}
	fmt.Fprintf(w, "lines     %d\nrecords   %d\nfields    %d\nbytes     %d\nerrors    %d\n", t.lines, t.records, t.fields, t.bytes, nerr)
	for _, k := range record.ErrKinds() {
		if n := t.errs[k]; n > 0 {
			fmt.Fprintf(w, "  %-15s %d\n", k, n)
		}
	}
	fmt.Fprintf(w, "bad_utf8  %d\n", t.badUTF8)
	if t.unmatched > 0 {
		fmt.Fprintf(w, "unmatched %d (lines the pattern did not match, kept as plain messages)\n", t.unmatched)
	}
	sec := elapsed.Seconds()
	fmt.Fprintf(w, "elapsed   %.3fs\n", sec)
	if sec > 0 {
		fmt.Fprintf(w, "speed     %.1f MB/s, %.0f lines/s\n", float64(t.bytes)/sec/1e6, float64(t.lines)/sec)
	}
}

// runWhole validates each input as one JSON text and prints it as a record.
func (o *parseOpts) runWhole(args []string, e *env, out *bufio.Writer) error {
	bad := false
	for _, name := range args {
		var data []byte
		var err error
		if name == "-" {
			data, err = io.ReadAll(e.stdin)
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			return err
		}
		_, verr := json.Validate(data)
		var se *json.SyntaxError
		switch {
		case errors.As(verr, &se):
			fmt.Fprintf(e.stderr, "%s:%s\n", name, se.Error())
			bad = true
		case verr != nil:
			fmt.Fprintf(e.stderr, "%s: %v\n", name, verr)
			bad = true
		case !o.stats:
			p, err := parse.New(parse.Options{Format: "json", MaxDepth: o.input.maxDepth, MaxLineSize: len(data) + 1,
				Record: record.Config{TimeFields: splitList(o.input.timeFields), MsgFields: splitList(o.input.msgFields), StreamFields: splitList(o.input.streamFields)}})
			if err != nil {
				return err
			}
			// One text may span lines: parse it as a single line by
			// hiding its newlines from the splitter, which JSON reads as
			// whitespace anyway.
			flat := []byte(strings.ReplaceAll(string(data), "\n", " "))
			perr := p.Bytes(context.Background(), flat, func(b *record.Batch) error {
				for i := range b.Records {
					out.Write(b.AppendJSON(nil, i))
					out.WriteByte('\n')
				}
				return nil
			})
			if perr != nil {
				return perr
			}
		}
	}
	if bad {
		return errExit(1)
	}
	return nil
}
