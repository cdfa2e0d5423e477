package query

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	miner "github.com/sluicelog/sluice/internal/pattern"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/stage"
	"github.com/sluicelog/sluice/internal/store"
)

// What Grafana Logs Drilldown asks of a log query's lines beyond the lines
// themselves: the fields they hold (Loki's detected_fields), a field's
// values, and the patterns of the lines. Each reads a sample, the newest
// lines of the query, as Loki's queriers do.

// SampleParams select the lines a detection reads: the newest Lines lines
// of a log query in [Start, End).
type SampleParams struct {
	Tenant     string
	Query      string
	Start, End int64
	Lines      int
}

// sampled is one line of a sample with its labels.
type sampled struct {
	time   int64
	line   string
	stream record.Labels
	// extra are the labels the query's pipeline set that are not the
	// stream's, without error labels; meta the row's structured metadata
	// (as the labels builder carries it: not in extra).
	extra, meta record.Labels
}

// sample returns the newest p.Lines lines of a log query, newest first,
// and the names of the parsers its pipeline runs.
func (e *Engine) sample(ctx context.Context, src Source, p SampleParams) ([]sampled, []string, error) {
	expr, err := logql.Parse(p.Query)
	if err != nil {
		return nil, nil, err
	}
	x, ok := expr.(*logql.LogExpr)
	if !ok {
		return nil, nil, fmt.Errorf("%w: a log query is expected, not a metric query", ErrBadRequest)
	}
	if p.End < p.Start {
		return nil, nil, fmt.Errorf("%w: the end time is before the start time", ErrBadRequest)
	}
	limit := p.Lines
	if limit <= 0 {
		limit = 100
	}
	ev := &evaluator{e: e, src: src, p: Params{Tenant: p.Tenant, Start: p.Start, End: p.End, Limit: limit}}
	from, to := p.Start, p.End-1
	opts := pruning(x.Pipeline)
	opts.LinesOnly = true
	opts.Meta = true // a line's structured metadata are among its labels
	opts.Backward = true
	if literalsOnly(x.Pipeline) {
		opts.Newest = limit
	}
	type worker struct {
		pipe  *stage.Pipeline
		lb    *stage.Labels
		tally tally
		lines []sampled
	}
	setup := func() (*worker, error) {
		pipe, err := stage.Compile(x.Pipeline)
		if err != nil {
			return nil, err
		}
		return &worker{pipe: pipe, lb: &stage.Labels{}}, nil
	}
	workers, err := forStreams(ctx, ev, ev.streams(x.Selector, from, to), setup, func(ctx context.Context, w *worker, st store.Stream) error {
		ls := st.Labels
		n := 0
		err := ev.src.Scan(ctx, ev.p.Tenant, st, from, to, opts, func(r *rows.Row, names []string) error {
			if err := ev.scanned(&w.tally, r.Line); err != nil {
				return err
			}
			rowLabels(w.lb, ls, r, names)
			line, ok := w.pipe.Process(r.Time, r.Line, w.lb)
			if !ok {
				return nil
			}
			s := sampled{time: r.Time, line: string(line), stream: ls}
			for _, l := range w.lb.Current() {
				if l.Name == stage.ErrorLabel || l.Name == stage.ErrorDetailsLabel {
					continue
				}
				if v, ok := ls.Get(l.Name); ok && v == l.Value {
					continue
				}
				l = record.Label{Name: strings.Clone(l.Name), Value: strings.Clone(l.Value)}
				if w.lb.IsMeta(l.Name) {
					s.meta = append(s.meta, l)
				} else {
					s.extra = append(s.extra, l)
				}
			}
			w.lines = append(w.lines, s)
			if n++; n >= limit {
				return errEnough
			}
			return nil
		})
		if errors.Is(err, errEnough) {
			err = nil
		}
		if ferr := ev.flush(&w.tally); err == nil {
			err = ferr
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var all []sampled
	for _, w := range workers {
		all = append(all, w.lines...)
	}
	slices.SortStableFunc(all, func(a, b sampled) int {
		return cmp.Or(cmp.Compare(b.time, a.time), compareLabels(a.stream, b.stream))
	})
	return all[:min(len(all), limit)], pipelineParsers(x.Pipeline), nil
}

// rowLabels starts a row's labels as a log query starts them: its
// stream's labels and its structured metadata (the scan asks for the
// rows' fields with ScanOptions.Meta), so that detection sees what
// queries see.
func rowLabels(lb *stage.Labels, stream record.Labels, r *rows.Row, names []string) {
	lb.Reset(stream)
	rowMeta(lb, r, names)
}

// pipelineParsers names the parsers of a pipeline, as Loki names them.
func pipelineParsers(stages []logql.Stage) []string {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, s := range stages {
		switch s.(type) {
		case *logql.JSONParser:
			add("json")
		case *logql.LogfmtParser:
			add("logfmt")
		case *logql.RegexpParser:
			add("regexp")
		case *logql.PatternParser:
			add("pattern")
		case *logql.Unpack:
			add("unpack")
		}
	}
	return out
}

// DetectedField is a field found in the lines of a sample.
type DetectedField struct {
	Label string
	// Type is Loki's: string, int, float, boolean, duration or bytes.
	Type        string
	Cardinality int
	// Parsers found it ("json", "logfmt"); nil for structured metadata.
	Parsers []string
	// JSONPath is the path of a field the json parser found.
	JSONPath []string
	values   map[string]struct{}
}

// maxFieldValues bounds the distinct values a field keeps for its
// cardinality: a sample is bounded already, this bounds its memory.
const maxFieldValues = 100000

// detector collects fields from lines.
type detector struct {
	fields map[string]*DetectedField
	order  []string
	limit  int
	// scratch for the logfmt parse
	logfmt *stage.Pipeline
	lb     *stage.Labels
}

func newDetector(limit int) *detector {
	lf, err := stage.Compile([]logql.Stage{&logql.LogfmtParser{}})
	if err != nil {
		panic(fmt.Sprintf("compile logfmt: %v", err)) // a programmer bug: the stage has no parameters to fail on
	}
	return &detector{fields: map[string]*DetectedField{}, limit: limit, logfmt: lf, lb: &stage.Labels{}}
}

// add counts one value of a field; parser "" is structured metadata.
func (d *detector) add(name, value, parser string, path []string) {
	f := d.fields[name]
	if f == nil {
		if len(d.fields) >= d.limit {
			return
		}
		f = &DetectedField{Label: name, values: map[string]struct{}{}, Type: detectType(value)}
		d.fields[name] = f
		d.order = append(d.order, name)
	} else {
		f.Type = mergeType(f.Type, detectType(value))
	}
	if parser != "" && !slices.Contains(f.Parsers, parser) {
		f.Parsers = append(f.Parsers, parser)
	}
	if f.JSONPath == nil && path != nil {
		f.JSONPath = slices.Clone(path)
	}
	if len(f.values) < maxFieldValues {
		f.values[value] = struct{}{}
	}
}

// line adds the fields of one sampled line: those its own parse finds
// (json, else logfmt) and those the query's pipeline set.
func (d *detector) line(s *sampled, pipeParsers []string) {
	own := map[string]bool{}
	if fields, ok := jsonFields(s.line, s.stream); ok {
		for _, f := range fields {
			own[f.name] = true
			d.add(f.name, f.value, "json", f.path)
		}
	} else {
		d.lb.Reset(s.stream)
		d.logfmt.Process(0, []byte(s.line), d.lb)
		for _, l := range d.lb.Current() {
			if l.Name == stage.ErrorLabel || l.Name == stage.ErrorDetailsLabel || l.Value == "" || d.lb.IsStream(l.Name) {
				continue
			}
			own[l.Name] = true
			d.add(l.Name, l.Value, "logfmt", nil)
		}
	}
	// Structured metadata: no parser (Loki's parsers null).
	for _, l := range s.meta {
		if !own[l.Name] {
			d.add(l.Name, l.Value, "", nil)
		}
	}
	for _, l := range s.extra {
		if own[l.Name] {
			continue
		}
		// A label the pipeline's parser set that our parse missed
		// (a regexp or pattern parser's) is its parser's; one no parser
		// set is structured metadata.
		parser := ""
		if len(pipeParsers) > 0 {
			parser = pipeParsers[0]
		}
		d.add(l.Name, l.Value, parser, nil)
	}
}

// result returns the fields, by name.
func (d *detector) result() []DetectedField {
	out := make([]DetectedField, 0, len(d.fields))
	for _, name := range d.order {
		f := d.fields[name]
		f.Cardinality = len(f.values)
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b DetectedField) int { return strings.Compare(a.Label, b.Label) })
	return out
}

// DetectedFields returns the fields of a sample's lines, at most limit
// of them (the first found), sorted by name.
func (e *Engine) DetectedFields(ctx context.Context, src Source, p SampleParams, limit int) ([]DetectedField, error) {
	ctx, cancel := e.timeout(ctx)
	defer cancel()
	lines, parsers, err := e.sample(ctx, src, p)
	if err != nil {
		return nil, e.timeoutErr(err)
	}
	d := newDetector(limit)
	for i := range lines {
		d.line(&lines[i], parsers)
	}
	return d.result(), nil
}

// DetectedFieldValues returns the distinct values of one field in a
// sample's lines, at most limit of them, sorted.
func (e *Engine) DetectedFieldValues(ctx context.Context, src Source, p SampleParams, name string, limit int) ([]string, error) {
	ctx, cancel := e.timeout(ctx)
	defer cancel()
	lines, parsers, err := e.sample(ctx, src, p)
	if err != nil {
		return nil, e.timeoutErr(err)
	}
	d := newDetector(1 << 30)
	for i := range lines {
		d.line(&lines[i], parsers)
	}
	f := d.fields[name]
	if f == nil {
		return []string{}, nil
	}
	out := make([]string, 0, len(f.values))
	for v := range f.values {
		out = append(out, v)
	}
	slices.Sort(out)
	return out[:min(len(out), limit)], nil
}

func (e *Engine) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.limits.Timeout > 0 {
		return context.WithTimeout(ctx, e.limits.Timeout)
	}
	return context.WithCancel(ctx)
}

func (e *Engine) timeoutErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) && e.limits.Timeout > 0 {
		return fmt.Errorf("%w: the query ran longer than %s", ErrLimit, e.limits.Timeout)
	}
	return err
}

// jsonField is one field of a JSON line, named as `| json` names it.
type jsonField struct {
	name, value string
	path        []string
}

// jsonFields returns the fields of a line that is a JSON object, as
// `| json` extracts them: nested objects flattened with "_", names
// sanitized (a stream label's name gets "_extracted"), arrays and nulls
// left out, numbers and booleans as their JSON text.
func jsonFields(line string, stream record.Labels) ([]jsonField, bool) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "{") {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, false
	}
	var out []jsonField
	var walk func(prefix []byte, path []string, m map[string]any)
	walk = func(prefix []byte, path []string, m map[string]any) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			name := stage.AppendLabelName(slices.Clone(prefix), []byte(k), len(prefix) == 0)
			p := append(slices.Clip(path), k)
			switch v := m[k].(type) {
			case map[string]any:
				walk(append(name, '_'), p, v)
			case string:
				out = append(out, jsonField{name: string(name), value: v, path: p})
			case json.Number:
				out = append(out, jsonField{name: string(name), value: v.String(), path: p})
			case bool:
				out = append(out, jsonField{name: string(name), value: strconv.FormatBool(v), path: p})
			}
		}
	}
	walk(nil, nil, obj)
	for i := range out {
		if _, ok := stream.Get(out[i].name); ok {
			out[i].name += stage.ExtractedSuffix
		}
	}
	return out, true
}

// detectType returns the type Loki gives a value, trying int, float,
// boolean (Go's strconv.ParseBool), duration (Go's time.ParseDuration)
// and bytes (a number with a size unit, as go-humanize parses it), in
// that order.
func detectType(v string) string {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return "int"
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return "float"
	}
	if _, err := strconv.ParseBool(v); err == nil {
		return "boolean"
	}
	if _, err := time.ParseDuration(v); err == nil {
		return "duration"
	}
	if isBytes(v) {
		return "bytes"
	}
	return "string"
}

// mergeType is the type of a field whose values have types a and b: the
// same, float for int and float, string otherwise. (Loki keeps the type
// of the last value it looked at; one odd value then decides.)
func mergeType(a, b string) string {
	switch {
	case a == b:
		return a
	case a == "int" && b == "float", a == "float" && b == "int":
		return "float"
	}
	return "string"
}

// byteUnits are the units go-humanize's ParseBytes accepts, lower case.
var byteUnits = []string{"", "b", "k", "kb", "ki", "kib", "m", "mb", "mi", "mib", "g", "gb", "gi", "gib",
	"t", "tb", "ti", "tib", "p", "pb", "pi", "pib", "e", "eb", "ei", "eib"}

// isBytes reports whether v is a size: a number (digits, '.' and ',')
// then optional blanks and a unit.
func isBytes(v string) bool {
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.' || v[i] == ',') {
		i++
	}
	num := strings.ReplaceAll(v[:i], ",", "")
	if _, err := strconv.ParseFloat(num, 64); err != nil {
		return false
	}
	unit := strings.ToLower(strings.TrimSpace(v[i:]))
	return slices.Contains(byteUnits, unit)
}

// PatternParams select the lines patterns are mined from: the newest
// Lines lines of a log query in [Start, End), counted in buckets of Step.
type PatternParams struct {
	SampleParams
	Step time.Duration
}

// Pattern is a mined pattern with its level and its counts per step.
type Pattern struct {
	Text    string
	Level   string
	Samples []miner.Sample // Time: bucket start, Unix nanoseconds
}

// Patterns mines the patterns of a sample's lines, one miner per level
// (the line's detected_level or level label, else "unknown", as Loki's
// pattern ingester groups them).
func (e *Engine) Patterns(ctx context.Context, src Source, p PatternParams) ([]Pattern, error) {
	ctx, cancel := e.timeout(ctx)
	defer cancel()
	lines, _, err := e.sample(ctx, src, p.SampleParams)
	if err != nil {
		return nil, e.timeoutErr(err)
	}
	step := max(int64(p.Step), int64(time.Second))
	miners := map[string]*miner.Miner{}
	for i := range lines {
		s := &lines[i]
		level := lineLevel(s)
		m := miners[level]
		if m == nil {
			m = miner.NewMiner(miner.Options{Step: step})
			miners[level] = m
		}
		m.Add(s.time, []byte(s.line))
	}
	type counted struct {
		Pattern
		n int64
	}
	var all []counted
	for level, m := range miners {
		for _, mp := range m.Patterns() {
			all = append(all, counted{Pattern{Text: mp.Text, Level: level, Samples: mp.Samples}, mp.Count})
		}
	}
	slices.SortFunc(all, func(a, b counted) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.Text, b.Text), strings.Compare(a.Level, b.Level))
	})
	out := make([]Pattern, len(all))
	for i, c := range all {
		out[i] = c.Pattern
	}
	return out, nil
}

// lineLevel returns a sampled line's level: its detected_level (from
// structured metadata or a label), else its level label or parsed field
// named as Loki's detected_level names levels, else "unknown".
func lineLevel(s *sampled) string {
	for _, ls := range []record.Labels{s.meta, s.extra, s.stream} {
		if v, ok := ls.Get("detected_level"); ok && v != "" {
			return v
		}
	}
	for _, ls := range []record.Labels{s.meta, s.extra, s.stream} {
		if v, ok := ls.Get("level"); ok && v != "" {
			return levelName(v)
		}
	}
	return "unknown"
}

// levelName names a level value as Loki's detected_level does: lower
// case, with the usual spellings of each level folded into one.
func levelName(v string) string {
	switch l := strings.ToLower(v); l {
	case "trace", "trc":
		return "trace"
	case "debug", "dbg":
		return "debug"
	case "info", "inf", "information", "informational", "notice":
		return "info"
	case "warn", "wrn", "warning":
		return "warn"
	case "error", "err", "eror":
		return "error"
	case "critical", "crit":
		return "critical"
	case "fatal", "panic", "emerg", "emergency", "alert":
		return "fatal"
	default:
		return l
	}
}
