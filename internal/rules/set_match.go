package rules

import (
	"bytes"
	"slices"

	"github.com/sluicelog/sluice/internal/literal"
	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/stage"
)

// compiledMatch is a rule's match compiled: parsed, checked, split at
// its parser, its required literals found.
//
// Concurrency: immutable once compiled. One is shared by every rule of
// a set whose match is the same text, and by the sets loaded after it
// while their files keep that text (see matchCache): a reload of a file
// that changed a few rules compiles only theirs.
type compiledMatch struct {
	selector logql.Selector
	stages   []logql.Stage
	// pre, if set, holds literals one of which every line the pipeline
	// keeps contains: taken from its first positive line filters before
	// anything rewrites the line. preLits, when set instead, are those
	// literals, few and exact: searched with bytes.Index, faster than
	// the automaton for so few, and cheaper to build.
	pre     *literal.Set
	preLits [][]byte
	// must, when set with pre, is a substring every one of pre's
	// literals holds (" shard-7" of "timeout on shard-7" and "refused
	// from shard-7"): a line without it holds none of them, found with
	// one vectorised search instead of the automaton's pass.
	must []byte
	// lits and fold are the required literals as the set's gate takes
	// them (nil: none known).
	lits [][]byte
	fold bool
	// When the pipeline is line filters, then a parser (json, logfmt,
	// regexp, pattern), then the rest, head, parser and tail are those
	// parts and parseKey names the parser: rules with the same parseKey
	// take what the first of them parsed of a line.
	head, parser, tail []logql.Stage
	parseKey           string
}

// matchAll is the compiled match of a rule without match: every line.
var matchAll = &compiledMatch{}

// gated reports whether m has required literals (rule.candidate).
func (m *compiledMatch) gated() bool { return m.pre != nil || m.preLits != nil }

// preFewMax is the most exact literals a rule searches one by one
// (preLits) instead of through a literal.Set.
const preFewMax = 3

// compileMatch parses and checks a rule's match, a LogQL log expression.
func compileMatch(src string) (*compiledMatch, error) {
	expr, err := logql.ParseLogExpr(src)
	if err != nil {
		return nil, err
	}
	if err := checkStages(expr.Pipeline); err != nil {
		return nil, err
	}
	m := &compiledMatch{selector: expr.Selector, stages: expr.Pipeline}
	m.splitParser()
	if lits, fold := requiredLiterals(expr.Pipeline); lits != nil {
		m.lits, m.fold = lits, fold
		if !fold && len(lits) <= preFewMax {
			m.preLits = lits
		} else {
			m.pre = literal.NewSet(lits, fold)
			if !fold {
				m.must = commonSubstring(lits)
			}
		}
	}
	return m, nil
}

// checkStages returns the error stage.Compile returns for stages, if
// any, without compiling the line filters that cannot fail: a literal
// (|= "x", != "x") or a regexp the parser compiled (|~ "x"). Compiling
// them builds their matchers (a regexp's literal analysis and automata)
// only to throw them away: each evaluator compiles its own on first use.
// At 10,000 rules that was a fifth of a compile's allocations (15 of 78
// MB), garbage whose collection ran while ingest did.
func checkStages(stages []logql.Stage) error {
	for k, st := range stages {
		if f, ok := st.(*logql.LineFilter); ok && safeFilter(f) {
			continue
		}
		if _, err := stage.Compile(stages[k : k+1]); err != nil {
			return err
		}
	}
	return nil
}

// safeFilter reports whether stage.Compile cannot fail on f: each value
// a literal (not ip()) searched with |= or !=, or a regexp already
// compiled searched with |~ or !~.
func safeFilter(f *logql.LineFilter) bool {
	if len(f.Values) == 0 {
		return false
	}
	for _, v := range f.Values {
		switch {
		case v.IP:
			return false
		case f.Op == logql.FilterContains || f.Op == logql.FilterNotContains:
		case (f.Op == logql.FilterRegexp || f.Op == logql.FilterNotRegexp) && v.Re != nil:
		default:
			return false
		}
	}
	return true
}

// splitParser sets m's head, parser, tail and parseKey when its pipeline
// parses before anything but line filters: line filters do not change
// the labels, so what the parser finds depends on the line and the labels
// the record had before the rule, the same for every such rule.
func (m *compiledMatch) splitParser() {
	for k, st := range m.stages {
		switch st.(type) {
		case *logql.LineFilter:
			continue
		case *logql.JSONParser, *logql.LogfmtParser, *logql.RegexpParser, *logql.PatternParser:
			m.head, m.parser, m.tail = m.stages[:k], m.stages[k:k+1], m.stages[k+1:]
			m.parseKey = st.String()
		}
		return
	}
}

// matchCache compiles the matches of one rules file: each text once,
// and not at all when the previous set compiled it.
type matchCache struct {
	cur  map[string]*compiledMatch
	prev map[string]*compiledMatch // of the set running; may be nil
}

func newMatchCache(prev *Set, n int) *matchCache {
	c := &matchCache{cur: make(map[string]*compiledMatch, n)}
	if prev != nil {
		c.prev = prev.matches
	}
	return c
}

// get returns src compiled. A match that fails is not kept: the file
// fails to load, and each rule that has it says so.
func (c *matchCache) get(src string) (*compiledMatch, error) {
	if m, ok := c.cur[src]; ok {
		return m, nil
	}
	m, ok := c.prev[src]
	if !ok {
		var err error
		if m, err = compileMatch(src); err != nil {
			return nil, err
		}
	}
	c.cur[src] = m
	return m, nil
}

// gate is a set's literal pre-check: a line that none of its sets
// matches holds none of the gated rules' literals. It may hold more
// literals than the rules have (those of rules a reload removed): a line
// that holds one of those is only checked by each rule's own literals.
//
// Concurrency: immutable; shared by the sets loaded after it.
type gate struct {
	sets  []*literal.Set
	has   []map[string]struct{} // the literals of each set
	folds []bool                // whether each set folds case
	n     int                   // the literals the sets were built of
}

func (g *gate) Match(line []byte) bool {
	for _, s := range g.sets {
		if s.Match(line) {
			return true
		}
	}
	return false
}

func (g *gate) holds(lit []byte) bool {
	for _, h := range g.has {
		if _, ok := h[string(lit)]; ok {
			return true
		}
	}
	return false
}

// gateMaxSets and gateMaxExtra bound what a reload adds to the running
// set's gate instead of building it again: a few sets (each is a pass
// over the line), of a few literals each.
const (
	gateMaxSets  = 4
	gateMaxExtra = 256
)

// newGate builds the gate of lits, calling yield between its steps (see
// yielder): 10,000 rules' literals take a few ms to build, which the
// compile does not hold a core for.
func newGate(lits [][]byte, fold bool, yield func()) *gate {
	set := literal.NewSetYielding(lits, fold, yield)
	return &gate{sets: []*literal.Set{set}, has: []map[string]struct{}{litMap(lits, yield)}, folds: []bool{fold}, n: len(lits)}
}

func litMap(lits [][]byte, yield func()) map[string]struct{} {
	m := make(map[string]struct{}, len(lits))
	for i, l := range lits {
		if i%1024 == 1023 {
			yield()
		}
		m[string(l)] = struct{}{}
	}
	return m
}

// gateOf returns the gate of lits: prev's when prev's was built of the
// same literals or holds them all; prev's with a small set of the
// literals it lacks after it; else a new one. 10,000 literals took 10 ms
// and MBs to build (3 ms since literal builds from sorted literals), a
// third of a reload that changed one rule; a new automaton also starts
// cold in the caches of the goroutines that run it.
//
// yield is called between the steps of a build (see newGate).
func gateOf(prev *Set, lits [][]byte, fold bool, yield func()) *gate {
	if prev == nil || prev.gate == nil {
		return newGate(lits, fold, yield)
	}
	if prev.gateFold == fold && len(prev.gateLits) == len(lits) {
		same := true
		for i, l := range lits {
			if !bytes.Equal(l, prev.gateLits[i]) {
				same = false
				break
			}
		}
		if same {
			return prev.gate
		}
	}
	g := prev.gate
	if fold && slices.Contains(g.folds, false) {
		// Which of its literals must now fold is not known: a set
		// that matches them exactly would miss lines.
		return newGate(lits, fold, yield)
	}
	var extra [][]byte
	for _, l := range lits {
		if !g.holds(l) {
			if extra = append(extra, l); len(extra) > gateMaxExtra {
				return newGate(lits, fold, yield)
			}
		}
	}
	// Literals the rules no longer have: each costs only the lines that
	// hold it a look at the rules' own literals, but not without bound.
	if stale := g.n + len(extra) - len(lits); stale*8 > len(lits) {
		return newGate(lits, fold, yield)
	}
	if len(extra) == 0 {
		return g
	}
	if len(g.sets) >= gateMaxSets {
		return newGate(lits, fold, yield)
	}
	return &gate{
		sets:  append(slices.Clip(g.sets), literal.NewSet(extra, fold)),
		has:   append(slices.Clip(g.has), litMap(extra, yield)),
		folds: append(slices.Clip(g.folds), fold),
		n:     g.n + len(extra),
	}
}

// mustMin is the shortest common substring worth a search before the
// automaton: a shorter one is in most lines.
const mustMin = 4

// commonSubstring returns the longest substring (of at least mustMin
// bytes) that every one of lits holds, or nil. It looks only at sets of
// up to 16 literals of up to 64 bytes: what a rule's regexp makes.
func commonSubstring(lits [][]byte) []byte {
	if len(lits) == 0 || len(lits) > 16 {
		return nil
	}
	short := lits[0]
	for _, l := range lits[1:] {
		if len(l) < len(short) {
			short = l
		}
	}
	if len(short) > 64 {
		return nil
	}
	for n := len(short); n >= mustMin; n-- {
	next:
		for i := 0; i+n <= len(short); i++ {
			c := short[i : i+n]
			for _, l := range lits {
				if !bytes.Contains(l, c) {
					continue next
				}
			}
			return bytes.Clone(c)
		}
	}
	return nil
}
