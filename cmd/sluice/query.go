package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/query"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
)

var queryCommand = &command{
	name:  "query",
	args:  "[--data DIR | --url URL] [--since D | --from T --to T] [--limit N] [--output text|jsonl|raw] 'LOGQL'",
	short: "run a LogQL query on a data directory or a server",
	long: `Runs a LogQL query and prints its result. A log query prints lines, newest
first unless --forward: as text (time, labels, line; coloured on a terminal),
as JSON lines, or raw (the lines alone). A metric query prints a table: one
row per series at --to (an instant query), or one row per point with --step.

With --data the query reads a data directory directly (not one a running
server holds: query that server with --url). With --url it asks a sluice or
Loki server through the Loki HTTP API (default http://localhost:3100, or
$SLUICE_URL).

Times (--from, --to) are RFC 3339, Unix seconds/ms/µs/ns, or a duration
before now (1h, 30m). Without --from, the query starts --since (default 1h)
before --to.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o queryOpts
		o.storage.register(fs)
		fs.StringVar(&o.url, "url", "", "query this server's Loki API (default $SLUICE_URL or http://localhost:3100 without --data)")
		fs.StringVar(&o.tenant, "tenant", "", "the tenant (X-Scope-OrgID)")
		fs.StringVar(&o.since, "since", "1h", "look back this `duration` from --to")
		fs.StringVar(&o.from, "from", "", "start `time` (overrides --since)")
		fs.StringVar(&o.to, "to", "", "end `time` (default now)")
		fs.IntVar(&o.limit, "limit", 100, "at most this many lines")
		fs.Int64Var(&o.maxMemory, "max-query-memory", 0, "with --data, stop a query that would hold more than this many bytes of series and lines (0: an eighth of the memory, 512 MiB to 4 GiB; -1: no limit)")
		fs.DurationVar(&o.step, "step", 0, "evaluate a metric query at every `step` from --from to --to")
		fs.BoolVar(&o.forward, "forward", false, "oldest lines first")
		fs.StringVar(&o.output, "output", "text", "text, jsonl or raw")
		fs.StringVar(&o.output, "o", "text", "shorthand for --output")
		return o.run
	},
}

type queryOpts struct {
	storage                      storageFlags
	url, tenant, since, from, to string
	output                       string
	limit                        int
	maxMemory                    int64
	step                         time.Duration
	forward                      bool
}

func (o *queryOpts) run(args []string, e *env) error {
	if len(args) != 1 {
		return usageError("give one LogQL query")
	}
	expr, err := parseQuery(o.output, args[0])
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	to, err := parseTimeFlag("to", o.to, now)
	if err != nil {
		return err
	}
	since, err := logql.ParseDuration(o.since)
	if err != nil {
		return usageError("--since %q: %v", o.since, err)
	}
	from, err := parseTimeFlag("from", o.from, to-int64(since))
	if err != nil {
		return err
	}
	p := query.Params{Tenant: cmp.Or(o.tenant, store.DefaultTenant), Query: args[0], Start: from, End: to, Limit: o.limit, Step: o.step}
	if o.forward {
		p.Direction = query.Forward
	}
	_, isLog := expr.(*logql.LogExpr)
	if !isLog && o.step == 0 {
		p.Instant, p.Start = true, to
	}
	ctx, stop := e.context()
	defer stop()
	var res *query.Result
	if o.storage.data != "" && o.url == "" {
		res, err = o.local(ctx, e, expr, p)
	} else {
		res, err = o.remote(ctx, p)
	}
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "sluice query: warning: %s\n", w)
	}
	return printResult(e.stdout, res, o.output, p.Direction, isTerminal(e.stdout))
}

func (o *queryOpts) local(ctx context.Context, e *env, expr logql.Expr, p query.Params) (*query.Result, error) {
	if _, err := os.Stat(o.storage.data); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	st, err := o.storage.openReadOnly(e.stderr)
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%v: a server holds it; query the server with --url instead", err)
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	sn := st.Snapshot()
	defer sn.Release()
	return query.NewEngine(query.Limits{MaxMemory: queryMemory(o.maxMemory)}).Eval(ctx, sn, expr, p)
}

// remote asks a server's Loki API.
func (o *queryOpts) remote(ctx context.Context, p query.Params) (*query.Result, error) {
	base := cmp.Or(o.url, os.Getenv("SLUICE_URL"), "http://localhost:3100")
	v := url.Values{"query": {p.Query}, "limit": {strconv.Itoa(p.Limit)}}
	path := "/loki/api/v1/query_range"
	if p.Instant {
		path = "/loki/api/v1/query"
		v.Set("time", strconv.FormatInt(p.End, 10))
	} else {
		v.Set("start", strconv.FormatInt(p.Start, 10))
		v.Set("end", strconv.FormatInt(p.End, 10))
		if p.Step > 0 {
			v.Set("step", strconv.FormatFloat(p.Step.Seconds(), 'f', -1, 64))
		}
		if p.Direction == query.Forward {
			v.Set("direction", "forward")
		}
	}
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(base, "/")+path+"?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if o.tenant != "" {
		req.Header.Set("X-Scope-OrgID", o.tenant)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return decodeLokiResult(body)
}

// decodeLokiResult reads a Loki query API answer.
func decodeLokiResult(body []byte) (*query.Result, error) {
	var doc struct {
		Data struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode the answer: %w", err)
	}
	res := &query.Result{Type: doc.Data.ResultType, Warnings: doc.Warnings}
	var err error
	switch res.Type {
	case "streams":
		var ss []struct {
			Stream map[string]string `json:"stream"`
			Values [][2]string       `json:"values"`
		}
		err = json.Unmarshal(doc.Data.Result, &ss)
		for _, s := range ss {
			st := query.Stream{Labels: labelsOf(s.Stream)}
			for _, v := range s.Values {
				ns, perr := strconv.ParseInt(v[0], 10, 64)
				if perr != nil {
					return nil, fmt.Errorf("decode the answer: entry time %q: %w", v[0], perr)
				}
				st.Entries = append(st.Entries, query.Entry{Time: ns, Line: v[1]})
			}
			res.Streams = append(res.Streams, st)
		}
	case "matrix":
		var ms []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		}
		err = json.Unmarshal(doc.Data.Result, &ms)
		for _, m := range ms {
			s := query.Series{Labels: labelsOf(m.Metric)}
			for _, v := range m.Values {
				s.Points = append(s.Points, pointOf(v))
			}
			res.Matrix = append(res.Matrix, s)
		}
	case "vector":
		var vs []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		err = json.Unmarshal(doc.Data.Result, &vs)
		for _, v := range vs {
			res.Vector = append(res.Vector, query.Sample{Labels: labelsOf(v.Metric), Point: pointOf(v.Value)})
		}
	case "scalar":
		var v [2]any
		err = json.Unmarshal(doc.Data.Result, &v)
		res.Scalar = pointOf(v)
	default:
		return nil, fmt.Errorf("decode the answer: unknown result type %q", res.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("decode the answer: %w", err)
	}
	return res, nil
}

func labelsOf(m map[string]string) record.Labels {
	ls := make(record.Labels, 0, len(m))
	for k, v := range m {
		ls = append(ls, record.Label{Name: k, Value: v})
	}
	slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

func pointOf(v [2]any) query.Point {
	sec, _ := v[0].(float64)
	s, _ := v[1].(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		f = math.NaN()
	}
	return query.Point{Time: int64(math.Round(sec * 1e9)), Value: f}
}

// parseQuery checks an --output and parses the query.
func parseQuery(output, src string) (logql.Expr, error) {
	switch output {
	case "text", "jsonl", "raw":
	default:
		return nil, usageError("--output %q: text, jsonl or raw", output)
	}
	return logql.Parse(src)
}

// ANSI colours of text output on a terminal.
const (
	colourDim   = "\x1b[2m"
	colourLabel = "\x1b[36m"
	colourReset = "\x1b[0m"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printResult prints a result in the chosen output.
func printResult(w io.Writer, res *query.Result, output string, dir query.Direction, colour bool) error {
	bw := &errWriter{w: w}
	switch res.Type {
	case "streams":
		type line struct {
			ls record.Labels
			e  query.Entry
		}
		var all []line
		for _, s := range res.Streams {
			for _, e := range s.Entries {
				all = append(all, line{s.Labels, e})
			}
		}
		slices.SortStableFunc(all, func(a, b line) int {
			if dir == query.Forward {
				return cmp.Compare(a.e.Time, b.e.Time)
			}
			return cmp.Compare(b.e.Time, a.e.Time)
		})
		for _, l := range all {
			ts := time.Unix(0, l.e.Time).UTC().Format(time.RFC3339Nano)
			switch output {
			case "raw":
				bw.printf("%s\n", l.e.Line)
			case "jsonl":
				b := fmt.Appendf(nil, `{"time":%q,"labels":`, ts)
				b = l.ls.AppendJSON(b)
				b = append(b, `,"line":"`...)
				b = record.AppendJSONEscaped(b, l.e.Line)
				bw.printf("%s\"}\n", b)
			default:
				if colour {
					bw.printf("%s%s%s %s%s%s %s\n", colourDim, ts, colourReset, colourLabel, l.ls, colourReset, l.e.Line)
				} else {
					bw.printf("%s %s %s\n", ts, l.ls, l.e.Line)
				}
			}
		}
	case "scalar":
		bw.printf("%s\n", formatValue(res.Scalar.Value))
	default:
		var rows [][3]string // time, labels, value
		for _, s := range res.Vector {
			rows = append(rows, [3]string{formatTime(s.Time), s.Labels.String(), formatValue(s.Value)})
		}
		for _, s := range res.Matrix {
			for _, p := range s.Points {
				rows = append(rows, [3]string{formatTime(p.Time), s.Labels.String(), formatValue(p.Value)})
			}
		}
		if output == "jsonl" {
			for _, r := range rows {
				bw.printf("{\"time\":%q,\"metric\":%q,\"value\":%q}\n", r[0], r[1], r[2])
			}
			break
		}
		tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tSERIES\tVALUE")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r[0], r[1], r[2])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.err
}

func formatTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
