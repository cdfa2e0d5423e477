package regexlit

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on the analysis. A set larger than maxSet (the alternatives of
// a group, or the strings a part of the regexp matches) is given up for
// what it requires less precisely; past maxGroups the groups with the
// shortest literals go (each group only narrows).
const (
	maxSet    = 64
	maxGroups = 8
	// maxClass is the most runes of a character class taken as its
	// alternatives ([Ee], [0-9]); a larger one requires nothing.
	maxClass = 10
	// maxExpand is the most exact variants a literal that folds some of
	// its letters and not others becomes ((?i:e)rror: Error, error);
	// past it the literal folds all its letters, which only loses
	// exactness.
	maxExpand = 8
)

// Lit is a literal that a text contains (or, in Prefilter.Equal, is):
// exactly, or with Fold ignoring the case of ASCII letters (Text is then
// lowercase, and other bytes match exactly). Unicode also folds the
// Kelvin sign to k and the long s to s, which an ASCII search misses: a
// k the regexp matches in any case becomes two alternatives, a folding k
// and the Kelvin sign.
type Lit struct {
	Text string
	Fold bool
}

func (l Lit) String() string {
	if l.Fold {
		return fmt.Sprintf("(?i)%q", l.Text)
	}
	return fmt.Sprintf("%q", l.Text)
}

// Prefilter is what a regexp requires of the texts it matches.
//
// Concurrency: a value; safe to share once made.
type Prefilter struct {
	// Groups: every text the regexp matches contains, for each group,
	// one of its literals. No groups: nothing is required.
	Groups [][]Lit
	// Exact says the regexp, unanchored, matches a text if and only if
	// Groups hold: there is then at most one group, and no group means
	// every text matches. (For an anchored analysis: the regexp anchored
	// at both ends, .*x.* with x exact.)
	Exact bool
	// NoNewline, with Exact, says Exact holds only for texts without a
	// newline: an anchored .*x.* whose dots do not match one.
	NoNewline bool
	// Whole, for an anchored analysis, says the regexp anchored at both
	// ends matches a text if and only if the text is one of Equal.
	Whole bool
	Equal []Lit
}

// Parse returns the prefilter of src, parsed with the Perl flags as Go's
// regexp.Compile (and so LogQL) parses it. With anchored, it is the
// prefilter of ^(?:src)$, as label matchers and stream selectors match
// (src must then parse alone: one that only parses wrapped, a)|(b, is an
// error here and gets no prefilter).
func Parse(src string, anchored bool) (Prefilter, error) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return Prefilter{}, fmt.Errorf("parse regexp %q: %w", src, err)
	}
	return Analyze(re, anchored), nil
}

// Analyze returns the prefilter of a parsed regexp: unanchored, as a line
// filter matches, or anchored at both ends.
func Analyze(re *syntax.Regexp, anchored bool) Prefilter {
	var p Prefilter
	subs := topSubs(re)
	in := concat(subs)
	p.Groups, _ = in.cnf()
	if anchored {
		if in.exact && !in.cond {
			if eq, lossy := outLits(in.set, false); !lossy {
				p.Whole, p.Equal = true, eq
			}
		}
		// .*x.* is "contains x" (for a text without a newline, when a
		// dot does not match one).
		if len(subs) >= 2 && isDotStar(subs[0]) && isDotStar(subs[len(subs)-1]) {
			if g, ok := exactGroups(trimNullable(subs[1 : len(subs)-1])); ok {
				p.Exact, p.Groups = true, g
				p.NoNewline = subs[0].Sub[0].Op == syntax.OpAnyCharNotNL || subs[len(subs)-1].Sub[0].Op == syntax.OpAnyCharNotNL
			}
		}
		return p
	}
	// Unanchored, a regexp matches where it can match ignoring any part
	// at either end that matches the empty text unconditionally.
	if g, ok := exactGroups(trimNullable(subs)); ok {
		p.Exact, p.Groups = true, g
	}
	return p
}

// exactGroups returns, when a concatenation matches exactly the texts
// that are one of a set of literals, that set as one group (or none when
// it has the empty text).
func exactGroups(subs []*syntax.Regexp) ([][]Lit, bool) {
	m := concat(subs)
	if !m.exact || m.cond {
		return nil, false
	}
	g, lossy := m.cnf()
	return g, !lossy
}

// topSubs returns the parts of a regexp's top-level concatenation (inside
// any capturing group), or the regexp alone.
func topSubs(re *syntax.Regexp) []*syntax.Regexp {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op == syntax.OpConcat {
		return re.Sub
	}
	return []*syntax.Regexp{re}
}

// trimNullable drops the parts at either end that can match the empty
// text anywhere (x*, x?, x{0,n}).
func trimNullable(subs []*syntax.Regexp) []*syntax.Regexp {
	for len(subs) > 0 && freelyEmpty(subs[0]) {
		subs = subs[1:]
	}
	for len(subs) > 0 && freelyEmpty(subs[len(subs)-1]) {
		subs = subs[:len(subs)-1]
	}
	return subs
}

func freelyEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCapture:
		return freelyEmpty(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest, syntax.OpEmptyMatch:
		return true
	case syntax.OpRepeat:
		return re.Min == 0
	}
	return false
}

// isDotStar reports whether re is .* (with or without (?s)).
func isDotStar(re *syntax.Regexp) bool {
	return re.Op == syntax.OpStar && (re.Sub[0].Op == syntax.OpAnyChar || re.Sub[0].Op == syntax.OpAnyCharNotNL)
}

// lit is a literal during the analysis: its bytes, and for each byte
// whether it is an ASCII letter matched in either case (fold[i] == 1).
type lit struct {
	s    string
	fold string
}

// info is what the analysis knows of a part of a regexp.
type info struct {
	// exact: set is every text the part matches (cond aside).
	exact bool
	set   []lit
	// cond: an empty-width assertion (^, $, \b) inside constrains where
	// the part matches, so that its set describes it only as required.
	cond bool
	// groups, when !exact: what every text it matches contains (AND of
	// ORs).
	groups [][]lit
}

var (
	emptySet = []lit{{}}
	anything = info{}                           // requires nothing
	empty    = info{exact: true, set: emptySet} // matches only ""
)

func exactInfo(set []lit) info { return info{exact: true, set: set} }

// analyze returns what re requires.
func analyze(re *syntax.Regexp) info {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return empty
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return info{exact: true, set: emptySet, cond: true}
	case syntax.OpLiteral:
		return concatInfos(literalInfos(re))
	case syntax.OpCharClass:
		return classInfo(re.Rune)
	case syntax.OpCapture:
		return analyze(re.Sub[0])
	case syntax.OpConcat:
		return concat(re.Sub)
	case syntax.OpAlternate:
		return alternate(re.Sub)
	case syntax.OpQuest:
		return quest(analyze(re.Sub[0]))
	case syntax.OpStar:
		return anything
	case syntax.OpPlus:
		return concatInfos(plusInfos(analyze(re.Sub[0])))
	case syntax.OpRepeat:
		return concatInfos(repeatInfos(re))
	}
	// Any character, no match: nothing required.
	return anything
}

// brk is a part that is not exact and requires nothing: it ends a run of
// exact parts in a concatenation.
var brk = anything

// plusInfos returns x+ as parts of a concatenation: x x* is x* x, so
// what precedes x+ is followed by x, and what follows it preceded by x.
func plusInfos(x info) []info {
	if !x.exact {
		return []info{x}
	}
	return []info{x, brk, x}
}

func repeatInfos(re *syntax.Regexp) []info {
	x := analyze(re.Sub[0])
	switch {
	case re.Min == 0 && re.Max == 1:
		return []info{quest(x)}
	case re.Min == 0:
		return []info{anything}
	case re.Min == re.Max && re.Min <= 4 && x.exact:
		out := make([]info, re.Min)
		for i := range out {
			out[i] = x
		}
		return out
	}
	return plusInfos(x)
}

func quest(x info) info {
	if !x.exact || len(x.set) >= maxSet {
		return anything
	}
	return info{exact: true, set: union(x.set, emptySet), cond: x.cond}
}

// literalInfos returns a literal's runes as parts of a concatenation.
func literalInfos(re *syntax.Regexp) []info {
	fold := re.Flags&syntax.FoldCase != 0
	var out []info
	// The literal under way, its bytes and their fold flags: appended,
	// not concatenated rune by rune (a string each time: 10,000 rules'
	// regexps made a million of them).
	var cur, curFold []byte
	flush := func() {
		if len(cur) > 0 {
			out = append(out, exactInfo([]lit{{s: string(cur), fold: string(curFold)}}))
			cur, curFold = cur[:0], curFold[:0]
		}
	}
	for _, r := range re.Rune {
		switch {
		case !matchableRune(r):
			flush()
			out = append(out, brk)
		case fold && unicode.SimpleFold(r) != r:
			l := r | 0x20
			ascii := r < utf8.RuneSelf && l >= 'a' && l <= 'z'
			if ascii && l != 'k' && l != 's' {
				cur = append(cur, byte(l))
				curFold = append(curFold, 1)
				continue
			}
			// A fold orbit beyond ASCII case (k, K and the Kelvin sign):
			// its runes as alternatives, an ASCII letter's two cases as
			// one folding literal.
			flush()
			out = append(out, exactInfo(orbit(r)))
		default:
			n := len(cur)
			cur = append(cur, string(r)...)
			for range len(cur) - n {
				curFold = append(curFold, 0)
			}
		}
	}
	flush()
	return out
}

// orbit returns the runes that r matches folding case: the ASCII
// letters among them as one folding literal, the others exactly.
func orbit(r rune) []lit {
	var alts []lit
	for f := r; ; {
		if l := f | 0x20; f < utf8.RuneSelf && l >= 'a' && l <= 'z' {
			if f == l {
				alts = append(alts, lit{s: string(l), fold: "\x01"})
			}
		} else {
			alts = append(alts, lit{s: string(f), fold: strings.Repeat("\x00", utf8.RuneLen(f))})
		}
		if f = unicode.SimpleFold(f); f == r {
			return alts
		}
	}
}

// matchableRune reports whether a rune of a regexp matches only its own
// UTF-8 encoding: Go's regexp matches U+FFFD at any byte that is not
// UTF-8.
func matchableRune(r rune) bool {
	return utf8.ValidRune(r) && r != utf8.RuneError
}

// classInfo returns a small character class as its alternatives, a
// letter in both ASCII cases as one folding literal.
func classInfo(ranges []rune) info {
	n := 0
	for i := 0; i < len(ranges); i += 2 {
		n += int(ranges[i+1]-ranges[i]) + 1
		if n > maxClass {
			return anything
		}
	}
	var rs []rune
	for i := 0; i < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			if !matchableRune(r) {
				return anything
			}
			rs = append(rs, r)
		}
	}
	if n == 0 {
		return anything // matches nothing
	}
	var set []lit
	for _, r := range rs {
		if l := r | 0x20; r < utf8.RuneSelf && l >= 'a' && l <= 'z' {
			if slices.Contains(rs, l) && slices.Contains(rs, l&^0x20) {
				if r == l {
					set = append(set, lit{s: string(l), fold: "\x01"})
				}
				continue
			}
		}
		set = append(set, lit{s: string(r), fold: strings.Repeat("\x00", utf8.RuneLen(r))})
	}
	return exactInfo(set)
}

// concat returns what a concatenation requires.
func concat(subs []*syntax.Regexp) info {
	var parts []info
	for _, s := range subs {
		switch s.Op {
		case syntax.OpLiteral:
			parts = append(parts, literalInfos(s)...)
		case syntax.OpPlus:
			parts = append(parts, plusInfos(analyze(s.Sub[0]))...)
		case syntax.OpRepeat:
			parts = append(parts, repeatInfos(s)...)
		default:
			parts = append(parts, analyze(s))
		}
	}
	return concatInfos(parts)
}

// concatInfos joins the parts of a concatenation: each run of exact parts
// into the set of their concatenations (a group it requires, when it is
// not exact as a whole), and the requirements of the others.
func concatInfos(parts []info) info {
	if len(parts) == 1 {
		return parts[0]
	}
	run := emptySet
	all := true
	var cond bool
	var groups [][]lit
	flush := func() {
		if !slices.Contains(run, lit{}) {
			groups = append(groups, run)
		}
		run = emptySet
	}
	for _, p := range parts {
		if !p.exact {
			all = false
			flush()
			groups = append(groups, p.groups...)
			continue
		}
		cond = cond || p.cond
		if len(run)*len(p.set) > maxSet {
			all = false
			flush()
			run = p.set
			continue
		}
		run = cross(run, p.set)
	}
	if all {
		return info{exact: true, set: run, cond: cond}
	}
	flush()
	return info{groups: simplify(groups)}
}

// cross returns every concatenation of a string of a with one of b.
func cross(a, b []lit) []lit {
	out := make([]lit, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, lit{s: x.s + y.s, fold: x.fold + y.fold})
		}
	}
	return dedupe(out)
}

func union(a, b []lit) []lit {
	return dedupe(append(slices.Clone(a), b...))
}

func dedupe(ls []lit) []lit {
	seen := make(map[lit]bool, len(ls))
	out := ls[:0]
	for _, l := range ls {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// alternate returns what an alternation requires: the union of its
// branches' sets when all are exact, else what every branch requires,
// (A1 and A2) or (B1 and B2) being (A1 or B1) and (A1 or B2) and ...
func alternate(subs []*syntax.Regexp) info {
	branches := make([]info, len(subs))
	all := true
	for i, s := range subs {
		branches[i] = analyze(s)
		all = all && branches[i].exact
	}
	if all {
		var set []lit
		var cond bool
		for _, b := range branches {
			set = union(set, b.set)
			cond = cond || b.cond
		}
		if len(set) <= maxSet {
			return info{exact: true, set: set, cond: cond}
		}
	}
	acc := branches[0].cnfRaw()
	for _, b := range branches[1:] {
		acc = orCNF(acc, b.cnfRaw())
		if len(acc) == 0 {
			return anything
		}
	}
	return info{groups: acc}
}

// cnfRaw returns what a part requires as groups of lits.
func (in info) cnfRaw() [][]lit {
	if !in.exact {
		return in.groups
	}
	if slices.Contains(in.set, lit{}) {
		return nil
	}
	return [][]lit{in.set}
}

// orCNF returns the groups that either a's or b's all hold implies.
func orCNF(a, b [][]lit) [][]lit {
	var out [][]lit
	for _, x := range a {
		for _, y := range b {
			u := union(x, y)
			if len(u) <= maxSet {
				out = append(out, u)
			}
		}
	}
	return simplify(out)
}

// simplify drops the literals of a group that imply another of it (one
// containing another: error or err is err), groups that another implies,
// and, past maxGroups, the groups whose shortest literal is shortest.
func simplify(groups [][]lit) [][]lit {
	var out [][]lit
	for _, g := range groups {
		g = minimal(g)
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	// A group is implied by another whose every literal implies one of
	// its own ([0-9] by [0-9]ms).
	var kept [][]lit
	for i, g := range out {
		implied := false
		for j, h := range out {
			if i != j && groupImplies(h, g) && (!groupImplies(g, h) || j < i) {
				implied = true
				break
			}
		}
		if !implied {
			kept = append(kept, g)
		}
	}
	if len(kept) > maxGroups {
		slices.SortStableFunc(kept, func(a, b []lit) int { return shortest(b) - shortest(a) })
		kept = kept[:maxGroups]
	}
	return kept
}

func shortest(g []lit) int {
	n := -1
	for _, l := range g {
		if n < 0 || len(l.s) < n {
			n = len(l.s)
		}
	}
	return n
}

// groupImplies reports whether a text holding one literal of h holds one
// of g.
func groupImplies(h, g []lit) bool {
	for _, x := range h {
		if !slices.ContainsFunc(g, func(y lit) bool { return implies(x, y) }) {
			return false
		}
	}
	return true
}

// minimal drops each literal that implies another literal of the group.
func minimal(g []lit) []lit {
	g = dedupe(slices.Clone(g))
	var out []lit
	for i, x := range g {
		redundant := false
		for j, y := range g {
			if i != j && implies(x, y) && (!implies(y, x) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, x)
		}
	}
	return out
}

// implies reports whether every text containing x contains y: y's text
// is within x's, where y folds any letter that x folds.
func implies(x, y lit) bool {
	for i := 0; i+len(y.s) <= len(x.s); i++ {
		ok := true
		for j := 0; j < len(y.s) && ok; j++ {
			a, b := x.s[i+j], y.s[j]
			if y.fold[j] == 1 {
				// Either case of b: x's byte, or either case of it.
				ok = a|0x20 == b
			} else {
				ok = a == b && x.fold[i+j] == 0
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// cnf returns the groups of a part as Lits, and whether writing them so
// lost precision (a literal folding some of its letters, too many to
// expand, now folds them all).
func (in info) cnf() ([][]Lit, bool) {
	var out [][]Lit
	lossy := false
	for _, g := range in.cnfRaw() {
		ls, l := outLits(g, true)
		lossy = lossy || l
		out = append(out, ls)
	}
	return out, lossy
}

// outLits writes lits as Lits: one that folds no letter is exact, one
// that folds every letter folds, and the others are expanded into their
// exact variants (folding all their letters past maxExpand or when the
// set would exceed maxSet: lossy). With group, literals that imply
// another of the set are dropped.
func outLits(ls []lit, group bool) ([]Lit, bool) {
	var out []Lit
	lossy := false
	for _, l := range ls {
		folded, letters := 0, 0
		for i := range len(l.s) {
			if c := l.s[i] | 0x20; c >= 'a' && c <= 'z' && l.s[i] < utf8.RuneSelf {
				letters++
				if l.fold[i] == 1 {
					folded++
				}
			}
		}
		switch {
		case folded == 0:
			out = append(out, Lit{Text: l.s})
		case folded == letters:
			out = append(out, Lit{Text: asciiLower(l.s), Fold: true})
		case 1<<folded <= maxExpand && len(out)+1<<folded <= maxSet:
			out = append(out, variants(l)...)
		default:
			out = append(out, Lit{Text: asciiLower(l.s), Fold: true})
			lossy = true
		}
	}
	if group {
		out = minimalLits(out)
	}
	return out, lossy
}

// variants returns the exact literals that l, folding some of its
// letters, stands for.
func variants(l lit) []Lit {
	out := [][]byte{nil}
	for i := range len(l.s) {
		c := l.s[i]
		if l.fold[i] == 1 {
			var next [][]byte
			for _, s := range out {
				next = append(next, append(slices.Clip(s), c|0x20), append(slices.Clip(s), c&^0x20))
			}
			out = next
			continue
		}
		for j := range out {
			out[j] = append(out[j], c)
		}
	}
	lits := make([]Lit, len(out))
	for i, s := range out {
		lits[i] = Lit{Text: string(s)}
	}
	return lits
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c | 0x20
		}
	}
	return string(b)
}

// minimalLits drops each Lit that implies another of the group.
func minimalLits(g []Lit) []Lit {
	var out []Lit
	for i, x := range g {
		redundant := false
		for j, y := range g {
			if i != j && litImplies(x, y) && (!litImplies(y, x) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, x)
		}
	}
	return out
}

func litImplies(x, y Lit) bool {
	switch {
	case y.Fold:
		return strings.Contains(asciiLower(x.Text), y.Text)
	case x.Fold:
		return false
	}
	return strings.Contains(x.Text, y.Text)
}
