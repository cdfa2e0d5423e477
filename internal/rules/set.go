package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/regexlit"
	"github.com/sluicelog/sluice/internal/stage"
)

// Set is a compiled rules file.
//
// Concurrency: immutable once compiled; Apply is safe for concurrent use
// (each call takes a per-goroutine evaluator from the set's free list).
type Set struct {
	rules []*rule
	// gate holds the required literals of every gated rule (one with a
	// pre): a line it finds nothing in skips them all with one scan.
	gate *gate
	// gateLits and gateFold are what gate was built of, so that the next
	// version can keep it when they stay the same.
	gateLits [][]byte
	gateFold bool
	// matches are the rules' compiled matches by text, for the next
	// version to keep those it has too.
	matches map[string]*compiledMatch
	// specs are the rules' specs by their text in the file (nil when
	// the file was decoded whole), for the next version to keep.
	specs map[string]specAt
	// byLabel indexes the rules whose selector has an equality matcher
	// with a value (label name, then value: the rules, in order);
	// unindexed are the others. A stream's candidate rules are those of
	// its labels and the unindexed, not all rules.
	byLabel   map[string]map[string][]int32
	unindexed []int32
	// sinks are the names of the sinks the rules route to, sorted: bit i
	// of a rule's routeMask is sinks[i].
	sinks []string
	// File, Hash (hex SHA-256 of the file's bytes) and Loaded say which
	// version this is.
	File   string
	Hash   string
	Loaded time.Time
	// Source is the file's bytes.
	Source []byte

	// warm holds the rules of the streams the set before this one had
	// decided, by streamKey (see warmStreams); read-only.
	warm map[string]warmRules

	mu   sync.Mutex
	free []*evaluator
}

// rule is one compiled rule.
type rule struct {
	*spec
	all bool // no match: every line
	// The match compiled (matchAll for a rule without one); shared by
	// the rules with the same match text.
	*compiledMatch
	redactor    *redactor
	setStages   []logql.Stage // one label_format per set_labels entry
	threshold   uint64        // sample: keep when the hash is below it
	keepAll     bool          // sample rate 1
	counters    *ruleCounters
	metric      *userMetric
	limiter     *limiter
	fieldStages []logql.Stage // one label_format per set_fields entry
	rwStages    []logql.Stage // rewrite's line_format
	// xstages is the parser extract runs, one stage.
	xstages []logql.Stage
	// routeMask has bit i set when the rule routes to Set.sinks[i].
	routeMask uint64
}

// Len returns the number of rules.
func (s *Set) Len() int { return len(s.rules) }

// Names returns the rules' names in order.
func (s *Set) Names() []string {
	out := make([]string, len(s.rules))
	for i, r := range s.rules {
		out[i] = r.name
	}
	return out
}

// NamesFor returns the names of the rules that apply to tenant's lines
// (those without tenant: and those of that tenant), in order.
func (s *Set) NamesFor(tenant string) []string {
	var out []string
	for _, r := range s.rules {
		if r.tenant == "" || r.tenant == tenant {
			out = append(out, r.name)
		}
	}
	return out
}

// Compile parses, checks and compiles a rules file's bytes; name is the
// file's name for errors. m, if not nil, holds the counters the set's
// rules count into (kept across reloads, by rule and metric name). A
// bad file returns an *Error listing each problem with its line.
func Compile(name string, data []byte, m *Metrics) (*Set, error) {
	return compileFrom(name, data, m, nil)
}

// compileFrom is Compile keeping what prev (the running set, or nil)
// compiled of the rules the file still has: their matches and, when no
// rule's literals changed, the gate.
func compileFrom(name string, data []byte, m *Metrics, prev *Set) (*Set, error) {
	var y yielder
	return compileWith(name, data, m, prev, &y)
}

// compileWith is compileFrom yielding with y, one yielder for the whole
// compile (see yielder), from its first step to its last.
func compileWith(name string, data []byte, m *Metrics, prev *Set, y *yielder) (*Set, error) {
	y.maybe()
	defer y.done()
	var prevSpecs map[string]specAt
	if prev != nil {
		prevSpecs = prev.specs
	}
	specs, byText, err := parseSpecs(name, data, prevSpecs, y)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	s := &Set{File: name, Hash: hex.EncodeToString(sum[:]), Loaded: time.Now(), Source: bytes.Clone(data)}
	l := &loader{}
	var gateLits [][]byte
	if prev != nil {
		// About as many as the running set's: a slice grown by
		// appends to 10,000 rules' literals allocates it four times over.
		gateLits = make([][]byte, 0, len(prev.gateLits)+len(prev.gateLits)/8)
	}
	gateFold := false
	metricNames := map[string]string{}
	matches := newMatchCache(prev, len(specs))
	rules := make([]rule, len(specs))
	s.rules = make([]*rule, 0, len(specs))
	for i := range specs {
		sp := &specs[i]
		if i%16 == 0 {
			y.maybe() // a clock read every 16 rules: see yielder
		}
		r := &rules[i]
		r.spec = sp
		if sp.match == "" {
			r.all, r.compiledMatch = true, matchAll
		} else {
			cm, err := matches.get(sp.match)
			if err != nil {
				l.add(problemAt{sp, "match"}, "%s: match: %v", sp.where(), err)
				continue
			}
			r.compiledMatch = cm
			if cm.lits != nil {
				gateLits = append(gateLits, cm.lits...)
				gateFold = gateFold || cm.fold
			}
		}
		if sp.redact != nil {
			r.redactor = newRedactor(sp.redact)
		}
		if x := sp.extract; x != nil {
			st, err := extractStage(x)
			if err == nil {
				_, err = stage.Compile([]logql.Stage{st})
			}
			if err != nil {
				l.add(problemAt{sp, "extract"}, "%s: extract: %v", sp.where(), err)
				continue
			}
			r.xstages = []logql.Stage{st}
		}
		for _, lt := range sp.setLabels {
			lf := &logql.LabelFormat{Items: []logql.LabelFormatItem{{Dst: lt.name, Template: lt.template}}}
			if _, err := stage.Compile([]logql.Stage{lf}); err != nil {
				l.add(problemAt{sp, "set_labels"}, "%s: set_labels.%s: %v", sp.where(), lt.name, err)
				continue
			}
			r.setStages = append(r.setStages, lf)
		}
		for _, ft := range sp.setFields {
			lf := &logql.LabelFormat{Items: []logql.LabelFormatItem{{Dst: ft.name, Template: ft.template}}}
			if _, err := stage.Compile([]logql.Stage{lf}); err != nil {
				l.add(problemAt{sp, "set_fields"}, "%s: set_fields.%s: %v", sp.where(), ft.name, err)
				continue
			}
			r.fieldStages = append(r.fieldStages, lf)
		}
		if sp.rewrite != "" {
			lf := &logql.LineFormat{Template: sp.rewrite}
			if _, err := stage.Compile([]logql.Stage{lf}); err != nil {
				l.add(problemAt{sp, "rewrite"}, "%s: rewrite: %v", sp.where(), err)
				continue
			}
			r.rwStages = []logql.Stage{lf}
		}
		if sp.sample != nil {
			switch {
			case sp.sample.rate >= 1:
				r.keepAll = true
			default:
				r.threshold = uint64(sp.sample.rate * math.Exp2(64))
			}
		}
		if mt := sp.metric; mt != nil {
			if reservedMetric(mt.name) {
				l.add(problemAt{sp, "metric"}, "%s: metric.name: %q: names starting with sluice_, go_, process_ or promhttp_ are the server's own", sp.where(), mt.name)
				continue
			}
			if other, dup := metricNames[mt.name]; dup {
				l.add(problemAt{sp, "metric"}, "%s: metric.name: %q is also the metric of rule %s", sp.where(), mt.name, other)
				continue
			}
			metricNames[mt.name] = sp.name
			r.metric = m.userMetric(mt)
		}
		if sp.rateLimit != nil {
			r.limiter = m.limiter(sp.name, sp.rateLimit)
		}
		r.counters = m.rule(sp.name)
		s.rules = append(s.rules, r)
	}
	y.maybe()
	s.indexRoutes(l)
	y.maybe()
	if len(l.problems) > 0 {
		return nil, &Error{File: name, Problems: l.problems}
	}
	s.matches = matches.cur
	s.specs = byText
	if len(gateLits) > 0 {
		s.gate = gateOf(prev, gateLits, gateFold, y.maybe)
		s.gateLits, s.gateFold = gateLits, gateFold
	}
	s.byLabel = map[string]map[string][]int32{}
	for ri, r := range s.rules {
		if ri%256 == 0 {
			y.maybe()
		}
		m := r.indexMatcher()
		if m == nil {
			s.unindexed = append(s.unindexed, int32(ri))
			continue
		}
		vals := s.byLabel[m.Name]
		if vals == nil {
			vals = map[string][]int32{}
			s.byLabel[m.Name] = vals
		}
		vals[m.Value] = append(vals[m.Value], int32(ri))
	}
	if prev != nil {
		s.warmStreams(prev, y)
	}
	return s, nil
}

// where names the rule in a problem: "rule 3 (name)".
func (sp *spec) where() string { return fmt.Sprintf("rule %d (%s)", sp.index+1, sp.name) }

// problemAt places the problems of compiling one rule: at the value of
// the key they are about.
type problemAt struct {
	sp  *spec
	key string
}

func (l *loader) add(at problemAt, format string, args ...any) {
	p := Problem{Line: at.sp.line + at.sp.base, Col: 1, Msg: fmt.Sprintf(format, args...)}
	if lc, ok := at.sp.posOf(at.key); ok {
		p.Line, p.Col = lc[0], lc[1]
	}
	l.problems = append(l.problems, p)
}

// indexMatcher returns a matcher of r's selector that only a stream
// with that label and value passes (name="value", value not empty), or
// nil.
func (r *rule) indexMatcher() *logql.Matcher {
	if r.all {
		return nil
	}
	for _, m := range r.selector {
		if m.Type == logql.MatchEqual && m.Value != "" {
			return m
		}
	}
	return nil
}

// requiredLiterals returns literals one of which every line that stages
// keep contains, or nil when it knows none: from the first line filter
// with a positive operator before any stage that rewrites the line
// (line_format, decolorize). fold says some literal matches either case
// of ASCII letters, so the set must fold.
func requiredLiterals(stages []logql.Stage) ([][]byte, bool) {
	for _, st := range stages {
		switch st := st.(type) {
		case *logql.LineFormat, *logql.Decolorize:
			return nil, false
		case *logql.LineFilter:
			if lits, fold, ok := filterLiterals(st); ok {
				return lits, fold
			}
		}
	}
	return nil, false
}

// filterLiterals returns the literals one of which a line f keeps holds.
func filterLiterals(f *logql.LineFilter) ([][]byte, bool, bool) {
	var lits [][]byte
	fold := false
	switch f.Op {
	case logql.FilterContains:
		for _, v := range f.Values {
			if v.IP || v.Value == "" {
				return nil, false, false
			}
			lits = append(lits, []byte(v.Value))
		}
	case logql.FilterRegexp:
		for _, v := range f.Values {
			if v.Re == nil {
				return nil, false, false
			}
			p, err := regexlit.Parse(v.Re.String(), false)
			if err != nil || len(p.Groups) == 0 {
				return nil, false, false
			}
			// One group's literals: any line the regexp matches holds one.
			g := p.Groups[0]
			for _, lit := range p.Groups[1:] {
				if shortest(lit) > shortest(g) {
					g = lit
				}
			}
			for _, lit := range g {
				if lit.Text == "" {
					return nil, false, false
				}
				lits = append(lits, []byte(lit.Text))
				fold = fold || lit.Fold
			}
		}
	default:
		return nil, false, false
	}
	return lits, fold, len(lits) > 0
}

func shortest(g []regexlit.Lit) int {
	n := math.MaxInt
	for _, l := range g {
		n = min(n, len(l.Text))
	}
	return n
}

// errNoFile is returned by a Live without a file to reload.
var errNoFile = errors.New("rules: no rules file")

func reservedMetric(name string) bool {
	for _, p := range []string{"sluice_", "go_", "process_", "promhttp_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// candidate reports whether line holds one of r's required literals.
// REQUIRES: r.gated().
func (r *rule) candidate(line []byte) bool {
	if r.preLits == nil {
		return (r.must == nil || bytes.Contains(line, r.must)) && r.pre.Match(line)
	}
	for _, l := range r.preLits {
		if bytes.Contains(line, l) {
			return true
		}
	}
	return false
}

// extractStage returns the LogQL parser stage an extract runs. A regexp
// or pattern goes through the LogQL parser, so that it means what it
// means in a query.
func extractStage(x *extractSpec) (logql.Stage, error) {
	switch x.parser {
	case "json":
		return &logql.JSONParser{}, nil
	case "logfmt":
		return &logql.LogfmtParser{}, nil
	}
	q := "`" + x.expr + "`"
	if strings.Contains(x.expr, "`") {
		q = strconv.Quote(x.expr)
	}
	expr, err := logql.ParseLogExpr(`{rule="extract"} | ` + x.parser + " " + q)
	if err != nil {
		var pe *logql.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("expr: %s", pe.Msg)
		}
		return nil, fmt.Errorf("expr: %w", err)
	}
	if len(expr.Pipeline) != 1 {
		return nil, fmt.Errorf("expr: want one %s expression", x.parser)
	}
	return expr.Pipeline[0], nil
}
