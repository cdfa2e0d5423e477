package rules

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// spec is one rule as the file states it, checked but not compiled.
type spec struct {
	index int // 0-based position in the file
	name  string
	line  int // where the rule starts in the file, less base
	// base is added to line and pos's lines: a spec decoded from its
	// rule's text alone (parseChunks) has lines of that text, and one
	// kept for the next version of the file is where the rule is now.
	base int
	// pos holds where each key's value is, for the errors of compiling
	// it (a slice: a rule has a few keys, and a map per rule of 10,000
	// cost a reload megabytes).
	pos    []keyPos
	match  string
	tenant string

	drop, keep  bool
	sample      *sampleSpec
	redact      *redactSpec
	setLabels   []labelTemplate
	dropLabels  []string
	metric      *metricSpec
	extract     *extractSpec
	setFields   []labelTemplate
	dropFields  []string
	rewrite     string // a line_format template
	rateLimit   *rateSpec
	onErrorDrop bool // on_error: drop
	// route names the sinks the rule sends the lines it matches to,
	// sorted, each once; cont (continue: true) lets later rules see a
	// routed line, which otherwise stops at the rule, as keep does.
	route []string
	cont  bool
}

// keyPos is where a key's value is in the file: line and column.
type keyPos struct {
	key string
	at  [2]int
}

// posOf returns where the value of key is.
func (s *spec) posOf(key string) ([2]int, bool) {
	for _, p := range s.pos {
		if p.key == key {
			return [2]int{p.at[0] + s.base, p.at[1]}, true
		}
	}
	return [2]int{}, false
}

// extractSpec is a rule's extract: one parser run over the line, the
// values it finds (all, or those of keys) stored as fields of the record
// or set as its stream labels.
type extractSpec struct {
	parser string // json, logfmt, regexp, pattern
	expr   string // the regexp or pattern
	into   string // "fields" or "labels"
	keys   []string
}

// extractParsers are the parsers extract runs, as LogQL's.
var extractParsers = []string{"json", "logfmt", "regexp", "pattern"}

type sampleSpec struct {
	rate float64
	by   string // a label (stream, parsed or metadata) to hash; "" hashes the line
}

type redactSpec struct {
	detectors   []string
	replacement string
	patterns    []patternSpec
}

type patternSpec struct {
	regex   string
	replace string
}

type labelTemplate struct {
	name, template string
}

type metricSpec struct {
	name      string
	help      string
	typ       string // counter (default), gauge, histogram
	unwrap    string // the label whose number is the value
	buckets   []float64
	labels    []string
	maxSeries int
}

// DefaultMaxSeries bounds a rule metric's series when the rule says
// nothing: beyond it, new label sets are counted as overflow.
const DefaultMaxSeries = 1000

// DefaultBuckets are a histogram's when the rule names none
// (Prometheus's defaults).
var DefaultBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// DefaultReplacement replaces what a built-in detector finds.
const DefaultReplacement = "<redacted>"

// Error is a rules file that cannot be loaded: each problem with its
// place, FILE:LINE:COL: message.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one thing wrong in a rules file.
type Problem struct {
	Line, Col int // 1-based; 0 when unknown
	Msg       string
}

func (e *Error) Error() string {
	var sb strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(e.File)
		if p.Line > 0 {
			fmt.Fprintf(&sb, ":%d:%d", p.Line, p.Col)
		}
		sb.WriteString(": ")
		sb.WriteString(p.Msg)
	}
	return sb.String()
}

// loader collects the problems of one file.
type loader struct {
	problems []Problem
}

func (l *loader) errorf(n *yaml.Node, format string, args ...any) {
	p := Problem{Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = n.Line, n.Column
	}
	if len(l.problems) < 100 {
		l.problems = append(l.problems, p)
	}
}

var (
	// unsafeTemplate finds what a rule's template may not use: a loop,
	// or repeat, which could make one line cost a loop of a billion or
	// a gigabyte.
	unsafeTemplate = regexp.MustCompile(`\{\{-?[^}]*\b(range|repeat|while)\b`)
	labelNameRe    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	metricNameRe   = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	// sinkNameRe is a sink's name, as the config's sinks: take it.
	sinkNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// parseFile reads a rules file's bytes into checked specs.
func parseFile(name string, data []byte) ([]spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: name, Problems: []Problem{yamlProblem(err)}}
	}
	l := &loader{}
	var specs []spec
	if len(doc.Content) == 0 {
		// Most likely a file caught between its truncation and its
		// write: running no rules would let through what the file
		// drops and redacts. No rules is said so: rules: [].
		return nil, &Error{File: name, Problems: []Problem{{Msg: "the file is empty (for no rules, write rules: [])"}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		l.errorf(root, "the rules file must be a mapping with the key rules")
		return nil, &Error{File: name, Problems: l.problems}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "rules":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue
			}
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "rules: want a list of rules")
				continue
			}
			names := make(map[string]int, len(v.Content))
			specs = make([]spec, 0, len(v.Content))
			for j, rn := range v.Content {
				s, ok := l.rule(j, rn)
				if !ok {
					continue
				}
				if prev, dup := names[s.name]; dup {
					l.errorf(rn, "rule %d (%s): name: %q is also the name of rule %d", j+1, s.name, s.name, prev+1)
					continue
				}
				names[s.name] = j
				specs = append(specs, s)
			}
		default:
			l.errorf(k, "unknown key %q (want rules)", k.Value)
		}
	}
	if len(l.problems) > 0 {
		return nil, &Error{File: name, Problems: l.problems}
	}
	return specs, nil
}

// yamlProblem turns a YAML syntax error ("yaml: line 3: ...") into a
// Problem with its line.
func yamlProblem(err error) Problem {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ":"); ok {
			if ln, err := strconv.Atoi(n); err == nil {
				return Problem{Line: ln, Col: 1, Msg: "yaml: " + strings.TrimSpace(tail)}
			}
		}
	}
	return Problem{Msg: "yaml: " + msg}
}

// rule checks one rule's mapping.
func (l *loader) rule(i int, n *yaml.Node) (spec, bool) {
	s := spec{index: i, line: n.Line, pos: make([]keyPos, 0, len(n.Content)/2)}
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "rule %d: want a mapping with name, match and actions", i+1)
		return s, false
	}
	before := len(l.problems)
	// The name first, so that every other problem can name the rule.
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == "name" {
			s.name, _ = l.str(fmt.Sprintf("rule %d", i+1), "name", n.Content[j+1])
		}
	}
	where := fmt.Sprintf("rule %d (%s)", i+1, s.name)
	if s.name == "" {
		where = fmt.Sprintf("rule %d", i+1)
		l.errorf(n, "%s: name: missing (every rule needs a name, for its metrics)", where)
	}
	actions := 0
	var contNode *yaml.Node
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		if _, seen := s.posOf(k.Value); seen {
			l.errorf(k, "%s: %s: given twice", where, k.Value)
			continue
		}
		s.pos = append(s.pos, keyPos{k.Value, [2]int{v.Line, v.Column}})
		switch k.Value {
		case "name":
		case "match":
			s.match, _ = l.str(where, "match", v)
		case "tenant":
			s.tenant, _ = l.str(where, "tenant", v)
		case "drop":
			s.drop = l.flag(where, "drop", v)
			actions += b2i(s.drop)
		case "keep", "stop":
			if l.flag(where, k.Value, v) {
				if s.keep {
					l.errorf(k, "%s: keep and stop are the same action: give one", where)
				}
				s.keep = true
				actions++
			}
		case "sample":
			s.sample = l.sample(where, v)
			actions++
		case "redact":
			s.redact = l.redact(where, v)
			actions++
		case "set_labels":
			s.setLabels = l.templates(where, "set_labels", "label", v)
			actions++
		case "drop_labels":
			s.dropLabels = l.labelNames(where, "drop_labels", v)
			actions++
		case "metric":
			s.metric = l.metric(where, v)
			actions++
		case "extract":
			s.extract = l.extract(where, v)
			actions++
		case "set_fields":
			s.setFields = l.templates(where, "set_fields", "field", v)
			actions++
		case "drop_fields":
			s.dropFields = l.fieldNames(where, "drop_fields", v)
			actions++
		case "on_error":
			switch t, _ := l.str(where, "on_error", v); t {
			case "drop":
				s.onErrorDrop = true
			case "keep":
			default:
				l.errorf(v, "%s: on_error: %q (want keep, the default: the line as it was, or drop)", where, t)
			}
		case "rate_limit":
			s.rateLimit = l.rateLimit(where, v)
			actions++
		case "rewrite":
			if t, ok := l.str(where, "rewrite", v); ok {
				if m := unsafeTemplate.FindStringSubmatch(t); m != nil {
					l.errorf(v, "%s: rewrite: %s is not allowed in a rule's template: it could run long or grow large on every line", where, m[1])
				} else if t == "" {
					l.errorf(v, "%s: rewrite: empty (to drop the line, drop: true)", where)
				}
				s.rewrite = t
			}
			actions++
		case "route":
			s.route = l.sinkNames(where, v)
			actions++
		case "continue":
			contNode = k
			s.cont = l.flag(where, "continue", v)
		default:
			l.errorf(k, "%s: unknown key %q (want name, match, tenant, on_error, drop, keep, stop, sample, redact, set_labels, drop_labels, set_fields, drop_fields, rewrite, extract, rate_limit, metric, route, continue)", where, k.Value)
		}
	}
	_, hasRoute := s.posOf("route")
	if contNode != nil && !hasRoute {
		l.errorf(contNode, "%s: continue: belongs to route (it says whether later rules see a line the rule routed)", where)
	}
	if s.cont && s.keep {
		l.errorf(contNode, "%s: continue: true and keep/stop: the rule both stops and continues", where)
	}
	switch {
	case s.drop && s.keep:
		l.errorf(n, "%s: drop and keep/stop: a rule either drops a line or keeps it", where)
	case s.drop && s.sample != nil:
		l.errorf(n, "%s: drop and sample: a rule either drops a line or samples it", where)
	case s.drop && s.rateLimit != nil:
		l.errorf(n, "%s: drop and rate_limit: a rule either drops a line or limits it", where)
	case s.drop && hasRoute:
		l.errorf(n, "%s: drop and route: a dropped line is neither stored nor routed (sinks read what is stored)", where)
	}
	if actions == 0 && len(l.problems) == before {
		l.errorf(n, "%s: no action (want one of drop, keep, stop, sample, redact, set_labels, drop_labels, set_fields, drop_fields, rewrite, extract, rate_limit, metric, route)", where)
	}
	return s, len(l.problems) == before
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (l *loader) str(where, key string, v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		l.errorf(v, "%s: %s: want a string", where, key)
		return "", false
	}
	return v.Value, true
}

func (l *loader) flag(where, key string, v *yaml.Node) bool {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		l.errorf(v, "%s: %s: want true or false", where, key)
		return false
	}
	return v.Value == "true" || v.Value == "True" || v.Value == "TRUE"
}

// mapping walks a mapping's keys, refusing those not in keys.
func (l *loader) mapping(where, key string, v *yaml.Node, keys []string, each func(k string, kn, v *yaml.Node)) bool {
	if v.Kind != yaml.MappingNode {
		l.errorf(v, "%s: %s: want a mapping with %s", where, key, strings.Join(keys, ", "))
		return false
	}
	seen := map[string]bool{}
	for j := 0; j+1 < len(v.Content); j += 2 {
		kn := v.Content[j]
		if !containsString(keys, kn.Value) {
			l.errorf(kn, "%s: %s: unknown key %q (want %s)", where, key, kn.Value, strings.Join(keys, ", "))
			continue
		}
		if seen[kn.Value] {
			l.errorf(kn, "%s: %s.%s: given twice", where, key, kn.Value)
			continue
		}
		seen[kn.Value] = true
		each(kn.Value, kn, v.Content[j+1])
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (l *loader) sample(where string, v *yaml.Node) *sampleSpec {
	s := &sampleSpec{rate: -1}
	l.mapping(where, "sample", v, []string{"rate", "by"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "rate":
			f, err := strconv.ParseFloat(v.Value, 64)
			if v.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				l.errorf(v, "%s: sample.rate: want a number from 0 to 1 (the share of lines kept), not %q", where, v.Value)
				s.rate = 0
				return
			}
			s.rate = f
		case "by":
			if by, ok := l.str(where, "sample.by", v); ok {
				if !labelNameRe.MatchString(by) {
					l.errorf(v, "%s: sample.by: %q is not a label name", where, by)
				}
				s.by = by
			}
		}
	})
	if s.rate < 0 && v.Kind == yaml.MappingNode {
		l.errorf(v, "%s: sample.rate: missing", where)
	}
	return s
}

func (l *loader) redact(where string, v *yaml.Node) *redactSpec {
	r := &redactSpec{replacement: DefaultReplacement}
	l.mapping(where, "redact", v, []string{"detectors", "replacement", "patterns"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "detectors":
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "%s: redact.detectors: want a list of detector names (%s)", where, strings.Join(detectorNames(), ", "))
				return
			}
			for _, d := range v.Content {
				name, ok := l.str(where, "redact.detectors", d)
				if !ok {
					continue
				}
				if _, ok := detectors[name]; !ok {
					l.errorf(d, "%s: redact.detectors: unknown detector %q (want %s)", where, name, strings.Join(detectorNames(), ", "))
					continue
				}
				r.detectors = append(r.detectors, name)
			}
		case "replacement":
			r.replacement, _ = l.str(where, "redact.replacement", v)
		case "patterns":
			if v.Kind != yaml.SequenceNode {
				l.errorf(v, "%s: redact.patterns: want a list of {regex, replace}", where)
				return
			}
			for pi, pn := range v.Content {
				p := patternSpec{replace: DefaultReplacement}
				key := fmt.Sprintf("redact.patterns[%d]", pi)
				hasRe := false
				l.mapping(where, key, pn, []string{"regex", "replace"}, func(k string, kn, v *yaml.Node) {
					s, ok := l.str(where, key+"."+k, v)
					if !ok {
						return
					}
					if k == "replace" {
						p.replace = s
						return
					}
					hasRe = true
					if s == "" {
						l.errorf(v, "%s: %s.regex: empty", where, key)
						return
					}
					if _, err := regexp.Compile(s); err != nil {
						l.errorf(v, "%s: %s.regex: %v", where, key, err)
						return
					}
					p.regex = s
				})
				if !hasRe && pn.Kind == yaml.MappingNode {
					l.errorf(pn, "%s: %s.regex: missing", where, key)
				}
				r.patterns = append(r.patterns, p)
			}
		}
	})
	if v.Kind == yaml.MappingNode && len(r.detectors) == 0 && len(r.patterns) == 0 {
		l.errorf(v, "%s: redact: names no detectors and no patterns", where)
	}
	return r
}

// templates checks a mapping of label (or field) name to template.
func (l *loader) templates(where, key, what string, v *yaml.Node) []labelTemplate {
	if v.Kind != yaml.MappingNode {
		l.errorf(v, "%s: %s: want a mapping of %s name to template", where, key, what)
		return nil
	}
	var out []labelTemplate
	for j := 0; j+1 < len(v.Content); j += 2 {
		kn, vn := v.Content[j], v.Content[j+1]
		if !labelNameRe.MatchString(kn.Value) || strings.HasPrefix(kn.Value, "__") {
			l.errorf(kn, "%s: %s: %q is not a %s name a rule may set", where, key, kn.Value, what)
			continue
		}
		t, ok := l.str(where, key+"."+kn.Value, vn)
		if !ok {
			continue
		}
		if m := unsafeTemplate.FindStringSubmatch(t); m != nil {
			l.errorf(vn, "%s: %s.%s: %s is not allowed in a rule's template: it could run long or grow large on every line", where, key, kn.Value, m[1])
			continue
		}
		out = append(out, labelTemplate{name: kn.Value, template: t})
	}
	return out
}

// fieldNames checks a list of field names: any text but empty (fields
// parsed from JSON are named by their path, a.b).
func (l *loader) fieldNames(where, key string, v *yaml.Node) []string {
	if v.Kind != yaml.SequenceNode {
		l.errorf(v, "%s: %s: want a list of field names", where, key)
		return nil
	}
	var out []string
	for _, n := range v.Content {
		if s, ok := l.str(where, key, n); ok {
			if s == "" {
				l.errorf(n, "%s: %s: an empty field name", where, key)
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// sinkNames checks route's list of sink names (or one name) and returns
// them sorted, each once.
func (l *loader) sinkNames(where string, v *yaml.Node) []string {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	if v.Kind == yaml.SequenceNode && len(items) == 0 {
		l.errorf(v, "%s: route: an empty list (want the names of sinks)", where)
		return nil
	}
	var out []string
	for _, n := range items {
		s, ok := l.str(where, "route", n)
		if !ok {
			continue
		}
		if !sinkNameRe.MatchString(s) {
			l.errorf(n, "%s: route: %q is not a sink name (1 to 64 letters, digits, '_', '.', '-')", where, s)
			continue
		}
		if slices.Contains(out, s) {
			l.errorf(n, "%s: route: sink %q is named twice", where, s)
			continue
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func (l *loader) labelNames(where, key string, v *yaml.Node) []string {
	if v.Kind != yaml.SequenceNode {
		l.errorf(v, "%s: %s: want a list of label names", where, key)
		return nil
	}
	var out []string
	for _, n := range v.Content {
		s, ok := l.str(where, key, n)
		if !ok {
			continue
		}
		if !labelNameRe.MatchString(s) {
			l.errorf(n, "%s: %s: %q is not a label name", where, key, s)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (l *loader) metric(where string, v *yaml.Node) *metricSpec {
	m := &metricSpec{maxSeries: DefaultMaxSeries, typ: "counter"}
	hasName := false
	var bucketsNode *yaml.Node
	l.mapping(where, "metric", v, []string{"name", "help", "type", "unwrap", "buckets", "labels", "max_series"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "name":
			hasName = true
			if s, ok := l.str(where, "metric.name", v); ok {
				if !metricNameRe.MatchString(s) {
					l.errorf(v, "%s: metric.name: %q is not a Prometheus metric name", where, s)
				}
				m.name = s
			}
		case "help":
			m.help, _ = l.str(where, "metric.help", v)
		case "labels":
			m.labels = l.labelNames(where, "metric.labels", v)
		case "max_series":
			n, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 || n > 1_000_000 {
				l.errorf(v, "%s: metric.max_series: want a whole number from 1 to 1000000, not %q", where, v.Value)
				return
			}
			m.maxSeries = n
		case "type":
			s, _ := l.str(where, "metric.type", v)
			if s != "counter" && s != "gauge" && s != "histogram" {
				l.errorf(v, "%s: metric.type: %q (want counter, gauge or histogram)", where, s)
				return
			}
			m.typ = s
		case "unwrap":
			if s, ok := l.str(where, "metric.unwrap", v); ok {
				if !labelNameRe.MatchString(s) {
					l.errorf(v, "%s: metric.unwrap: %q is not a label name", where, s)
				}
				m.unwrap = s
			}
		case "buckets":
			bucketsNode = v
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				l.errorf(v, "%s: metric.buckets: want a list of upper bounds, ascending", where)
				return
			}
			for _, n := range v.Content {
				f, err := strconv.ParseFloat(n.Value, 64)
				if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
					l.errorf(n, "%s: metric.buckets: %q is not a number", where, n.Value)
					return
				}
				if k := len(m.buckets); k > 0 && f <= m.buckets[k-1] {
					l.errorf(n, "%s: metric.buckets: %v after %v: want them ascending", where, f, m.buckets[k-1])
					return
				}
				m.buckets = append(m.buckets, f)
			}
		}
	})
	if v.Kind != yaml.MappingNode {
		return m
	}
	if !hasName {
		l.errorf(v, "%s: metric.name: missing", where)
	}
	if m.typ != "counter" && m.unwrap == "" {
		l.errorf(v, "%s: metric.unwrap: missing (a %s needs a number: unwrap names the label that holds it)", where, m.typ)
	}
	switch {
	case m.typ != "histogram" && bucketsNode != nil:
		l.errorf(bucketsNode, "%s: metric.buckets: only a histogram has buckets", where)
	case m.typ == "histogram" && m.buckets == nil:
		m.buckets = DefaultBuckets
	}
	return m
}

func (l *loader) extract(where string, v *yaml.Node) *extractSpec {
	x := &extractSpec{into: "fields"}
	var parserNode, exprNode, keysNode *yaml.Node
	l.mapping(where, "extract", v, []string{"parser", "expr", "into", "keys"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "parser":
			parserNode = v
			if s, ok := l.str(where, "extract.parser", v); ok {
				if !containsString(extractParsers, s) {
					l.errorf(v, "%s: extract.parser: unknown parser %q (want %s)", where, s, strings.Join(extractParsers, ", "))
					return
				}
				x.parser = s
			}
		case "expr":
			exprNode = v
			x.expr, _ = l.str(where, "extract.expr", v)
		case "into":
			if s, ok := l.str(where, "extract.into", v); ok {
				if s != "fields" && s != "labels" {
					l.errorf(v, "%s: extract.into: %q (want fields or labels)", where, s)
					return
				}
				x.into = s
			}
		case "keys":
			keysNode = v
			x.keys = l.labelNames(where, "extract.keys", v)
		}
	})
	if v.Kind != yaml.MappingNode {
		return x
	}
	switch x.parser {
	case "":
		if parserNode != nil {
			break // said above
		}
		l.errorf(v, "%s: extract.parser: missing (want %s)", where, strings.Join(extractParsers, ", "))
	case "regexp", "pattern":
		if x.expr == "" && exprNode == nil {
			l.errorf(v, "%s: extract.expr: missing (the %s to run)", where, x.parser)
		}
	default:
		if exprNode != nil {
			l.errorf(exprNode, "%s: extract.expr: %s takes no expr", where, x.parser)
		}
	}
	if x.into == "labels" {
		if keysNode == nil {
			// A label per key the line happens to hold would make a
			// stream per line: labels come from keys named up front.
			l.errorf(v, "%s: extract.keys: missing (into: labels sets only the labels it names)", where)
		}
		for _, k := range x.keys {
			if strings.HasPrefix(k, "__") {
				l.errorf(keysNode, "%s: extract.keys: %q is not a label name a rule may set", where, k)
			}
		}
	}
	return x
}

func (l *loader) rateLimit(where string, v *yaml.Node) *rateSpec {
	r := &rateSpec{maxSets: DefaultMaxSets, burstLines: -1, burstBytes: -1}
	bad := false
	num := func(key string, v *yaml.Node) float64 {
		f, err := strconv.ParseFloat(v.Value, 64)
		if v.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
			bad = true
			l.errorf(v, "%s: rate_limit.%s: want a number above 0, not %q", where, key, v.Value)
			return 0
		}
		return f
	}
	l.mapping(where, "rate_limit", v, []string{"by", "lines", "bytes", "burst_lines", "burst_bytes", "max_sets"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "by":
			r.by = l.labelNames(where, "rate_limit.by", v)
		case "lines":
			r.lines = num(k, v)
		case "bytes":
			r.bytes = num(k, v)
		case "burst_lines":
			r.burstLines = num(k, v)
		case "burst_bytes":
			r.burstBytes = num(k, v)
		case "max_sets":
			n, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 || n > 1_000_000 {
				l.errorf(v, "%s: rate_limit.max_sets: want a whole number from 1 to 1000000, not %q", where, v.Value)
				return
			}
			r.maxSets = n
		}
	})
	if v.Kind != yaml.MappingNode {
		return r
	}
	if r.lines == 0 && r.bytes == 0 && !bad {
		l.errorf(v, "%s: rate_limit: names neither lines nor bytes (per second)", where)
	}
	// A burst defaults to one second's worth, at least one line.
	if r.burstLines < 0 {
		r.burstLines = max(r.lines, 1)
	}
	if r.burstBytes < 0 {
		r.burstBytes = r.bytes
	}
	if r.lines > 0 && r.burstLines < 1 {
		l.errorf(v, "%s: rate_limit.burst_lines: below 1, no line would pass", where)
	}
	return r
}
