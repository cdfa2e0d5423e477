package part

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	bits64 "math/bits"
	"slices"
	"sort"
	"strconv"

	"github.com/sluicelog/sluice/internal/literal"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Reading only the rows whose line holds clauses of literals
// (LineRead.Contains: every clause, a clause holding when the line contains
// any one of its literals), without rebuilding the others' lines.
//
// A templated line is gap₀ value₀ gap₁ … gapₙ. A literal is found in it
// either inside one gap (then in every row of the template), inside one
// value, or across a boundary. Whether it can cross a boundary depends on
// the gaps alone: it starts in a gap and runs into the next value when a
// non-empty proper prefix of it ends that gap; it runs out of a value into
// the next gap when a non-empty proper suffix of it starts that gap; and
// it spans a whole gap between two values when that gap lies strictly
// inside it. A template where none of this can happen matches exactly the
// rows with a value that contains the literal, and values are tested
// where they are stored: a dictionary entry once per block, a string
// column in one search over its values laid end to end, a number column
// not at all when the literal is not made of a number's bytes.
// Rows of other templates (the literal could cross a boundary) have their
// line rebuilt and searched, as raw rows are.
//
// A clause of several literals (an alternation, error|fatal) holds in
// every row of a template whose gaps hold one of them; otherwise, when
// none of them can cross a boundary, in exactly the rows with a value
// holding one of them (each value tested once for all of them: the union
// of their candidate values); otherwise the line is rebuilt, unless a
// value already holds one. A literal alone is a clause of one literal.

// Literal is a text a line must contain: exactly, or with Fold, ignoring
// the case of ASCII letters (Text is then lowercase). Unicode also folds
// two other runes to ASCII letters, the Kelvin sign to k and the long s
// to s: a folding search for a literal with a k or an s keeps any text
// with a non-ASCII byte, for the caller (which checks every row it is
// given) to decide, unless ASCII says the caller has those runes' texts
// as literals of their own (as regexlit writes a case-insensitive k:
// a folding k, or the Kelvin sign) and the search ignores no other case.
//
// With Inner the literal must be found neither at the start nor at the
// end of the line, with a byte of the line before and after it (as a
// pattern filter <_>text<_> wants it): in a template whose first and
// last gaps keep it off the line's edges that is any place (innerPlan);
// in others the line is searched without its first and last bytes.
type Literal struct {
	Text  []byte
	Fold  bool
	ASCII bool
	Inner bool
}

// String writes the literal as tests and messages show it: quoted,
// after (?i) when it folds case, (?I) when it folds ASCII case alone,
// between <_> when it is Inner.
func (l Literal) String() string {
	prefix := ""
	switch {
	case l.Fold && l.ASCII:
		prefix = "(?I)"
	case l.Fold:
		prefix = "(?i)"
	}
	if l.Inner {
		return prefix + "<_>" + strconv.Quote(string(l.Text)) + "<_>"
	}
	return prefix + strconv.Quote(string(l.Text))
}

// Clause is a set of literals a line must contain one of. An empty
// clause holds in no line.
type Clause []Literal

// same reports whether l and o are the same literal.
func (l *Literal) same(o *Literal) bool {
	return l.Fold == o.Fold && l.ASCII == o.ASCII && l.Inner == o.Inner && bytes.Equal(l.Text, o.Text)
}

// inLine reports whether a line holds the literal (in), off its edges
// when it is Inner.
func (l *Literal) inLine(line []byte, scratch *[]byte) bool {
	if l.Inner {
		if len(line) < 2 {
			return false
		}
		line = line[1 : len(line)-1]
	}
	return l.in(line, scratch)
}

// in reports whether text contains the literal (or, folding, may).
func (l *Literal) in(text []byte, scratch *[]byte) bool {
	if !l.Fold {
		return bytes.Contains(text, l.Text)
	}
	low := literal.AppendLower((*scratch)[:0], text)
	*scratch = low
	return bytes.Contains(low, l.Text) || l.unicodeFolds() && !ascii(text)
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// unicodeFolds reports whether a folding literal has a letter that a
// non-ASCII rune folds to, and the search must allow for it.
func (l *Literal) unicodeFolds() bool {
	return l.Fold && !l.ASCII && bytes.ContainsAny(l.Text, "ks")
}

// litPlan says how a template's rows are tested for one literal.
type litPlan uint8

const (
	planUnknown litPlan = iota
	planValues          // the literal is in the line if and only if it is in one of its values
	planGap             // a gap holds it: every row of the template has it
	planLine            // it may cross a gap from one value to another: rebuild the line and search it
	// planWindows: it may cross a boundary, but within one value and the
	// edges of the gaps around it (its window): the windows of the values
	// are searched (windowBits), or, where a row is tested whole
	// (matchRow), the line rebuilt.
	planWindows
	// planEdges: an Inner literal in a template whose line may start or
	// end with it (innerPlan): where its values hold it (as planValues
	// finds it), the line is rebuilt to see whether it holds it off its
	// edges.
	planEdges
)

// plan returns how template ti is tested for literal li: its clause's
// plan (clausePlan) notes its literals'.
func (b *Block) plan(ti, li int) litPlan {
	p := &b.lm.plans[ti*len(b.lm.lits)+li]
	if *p == planUnknown {
		b.clausePlan(ti, b.clauseOf(li))
	}
	return *p
}

// shapeKey names what is kept by a template's shape: the shape, and the
// number of what it was worked out for (a clause: clauseIDs).
type shapeKey struct {
	shape Shape
	id    int
}

// shapeTable holds what is worked out for a template shape and a clause
// (shapeClause), an open addressing table indexed by the shape's first
// word (a hash already): a Go map's hashing of the 24-byte key was most
// of a lookup, one per template of every block a literal filter reads. A slot's key, mark and value are side by
// side: a lookup that misses the cache misses it once.
type shapeTable[V any] struct {
	slots []shapeSlot[V]
	n     int
}

type shapeSlot[V any] struct {
	key  shapeKey
	used bool
	val  V
}

// slot returns where k is, or the empty slot where it would go.
func (t *shapeTable[V]) slot(k shapeKey) *shapeSlot[V] {
	mask := uint64(len(t.slots) - 1)
	i := (k.shape[0] ^ uint64(k.id)*0x9e3779b97f4a7c15) & mask
	for t.slots[i].used && t.slots[i].key != k {
		i = (i + 1) & mask
	}
	return &t.slots[i]
}

// get returns k's value, and whether it has one.
func (t *shapeTable[V]) get(k shapeKey) (v V, ok bool) {
	if t.n == 0 {
		return v, false
	}
	s := t.slot(k)
	return s.val, s.used
}

// put sets k's value.
func (t *shapeTable[V]) put(k shapeKey, v V) {
	if 2*(t.n+1) > len(t.slots) { // probes stay short: a lookup is one slot mostly
		old := t.slots
		t.slots, t.n = make([]shapeSlot[V], max(256, 2*len(old))), 0
		for i := range old {
			if old[i].used {
				t.put(old[i].key, old[i].val)
			}
		}
	}
	s := t.slot(k)
	if !s.used {
		t.n++
	}
	*s = shapeSlot[V]{key: k, used: true, val: v}
}

// reset empties the table, keeping its slots unless they are many.
func (t *shapeTable[V]) reset() {
	if len(t.slots) > 1<<17 {
		*t = shapeTable[V]{}
		return
	}
	clear(t.slots) // nothing their values point to is held
	t.n = 0
}

// numberLits numbers the literals and clauses of this read for what is
// kept by shape (holeIDs, clauseIDs): a literal keeps its number from
// read to read (a block's selection by two filters reads it with each in
// turn), with how far its clause reaches (windowEdge). Too many numbers
// empty the table.
func (b *Block) numberLits() {
	if len(b.lm.ids) > 1<<12 || b.lm.shapeClauses.n >= 1<<16 {
		// Between blocks: a block's templates keep their clauses'
		// edge numbers (tclauses) while it is read.
		b.lm.shapeClauses.reset()
		clear(b.lm.edgeIDs)
		clear(b.lm.ids)
	}
	if b.lm.ids == nil {
		b.lm.ids = map[string]int{}
	}
	id := func(k []byte) int {
		n, ok := b.lm.ids[string(k)]
		if !ok {
			n = len(b.lm.ids)
			b.lm.ids[string(k)] = n
		}
		return n
	}
	b.lm.holeIDs = b.lm.holeIDs[:0]
	for li := range b.lm.lits {
		l := &b.lm.lits[li]
		// The edge before the text: no two keys read alike.
		k := append(b.lm.idKey[:0], 'h', boolByte(l.Fold), boolByte(l.ASCII), boolByte(l.Inner))
		k = binary.AppendUvarint(k, uint64(b.windowEdge(li)))
		k = append(k, l.Text...)
		b.lm.holeIDs = append(b.lm.holeIDs, id(k))
		b.lm.idKey = k
	}
	// A clause by its literals' holeIDs (which name each literal and the
	// clause's edge).
	b.lm.clauseIDs = b.lm.clauseIDs[:0]
	for c := range b.lm.clauseEnd {
		k := append(b.lm.idKey[:0], 'c')
		lo, hi := b.clause(c)
		for li := lo; li < hi; li++ {
			k = binary.AppendUvarint(k, uint64(b.lm.holeIDs[li]))
		}
		b.lm.clauseIDs = append(b.lm.clauseIDs, id(k))
		b.lm.idKey = k
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (b *Block) templatePlan(tm *template, li int) litPlan {
	l := &b.lm.lits[li]
	if l.Fold {
		// Gaps lowercased; one with a non-ASCII byte is searched in the
		// line rebuilt, where the caller decides.
		if l.unicodeFolds() && !ascii(tm.gaps.line) {
			return planLine
		}
		b.gapBuf = literal.AppendLower(b.gapBuf[:0], tm.gaps.line)
		return innerPlan(l, Gaps{line: b.gapBuf, ends: tm.gaps.ends}, len(tm.holes), &b.lm.litBytes[li])
	}
	return innerPlan(l, tm.gaps, len(tm.holes), &b.lm.litBytes[li])
}

// innerPlan is gapPlan's, for an Inner literal only where the first and
// last gaps keep it off the line's edges: each is not empty, and neither
// it nor the literal starts (ends) with the other. Elsewhere the line is
// searched: where the values hold it (planEdges), or every line
// (planLine).
func innerPlan(l *Literal, gaps Gaps, n int, in *[256]bool) litPlan {
	p := gapPlan(gaps, n, l.Text, in)
	if l.Inner {
		first, last := gaps.At(0), gaps.Last()
		if len(first) == 0 || bytes.HasPrefix(first, l.Text) || bytes.HasPrefix(l.Text, first) ||
			len(last) == 0 || bytes.HasSuffix(last, l.Text) || bytes.HasSuffix(l.Text, last) {
			if p == planValues {
				return planEdges
			}
			return planLine
		}
	}
	return p
}

// gapPlan plans a literal for a template of n values between gaps; in
// says which bytes the literal has.
func gapPlan(gaps Gaps, n int, lit []byte, in *[256]bool) litPlan {
	for j := range gaps.Len() {
		if bytes.Contains(gaps.At(j), lit) {
			return planGap
		}
	}
	if len(lit) < 2 {
		return planValues // one byte cannot cross a boundary
	}
	p := planValues
	for j := range gaps.Len() {
		g := gaps.At(j)
		// A literal crossing into the next value ends g with a byte of
		// it; one crossing from the previous value, or spanning g,
		// starts g with a byte of it. Most gaps (JSON's `","key":"`)
		// fail both at once.
		if len(g) > 0 && !in[g[len(g)-1]] && !in[g[0]] {
			continue
		}
		// g ends before value j (j < n) and starts after value j-1 (j > 0).
		if j > 0 && j < n && bytes.Contains(lit[1:len(lit)-1], g) {
			return planLine // from value j-1 across g into value j
		}
		if crossesAt(g, j, n, lit) {
			p = planWindows
		}
	}
	return p
}

// crossesAt reports whether literal lit may cross a boundary of gap j
// (of a template of n values): into value j, or from value j-1.
func crossesAt(g []byte, j, n int, lit []byte) bool {
	return j < n && endsWithPrefix(g, lit) || j > 0 && startsWithSuffix(g, lit)
}

// endsWithPrefix reports whether g ends with a non-empty proper prefix of
// lit.
func endsWithPrefix(g, lit []byte) bool {
	var one [1]int
	return len(intoPlaces(g, &Literal{Text: lit}, nil, 1, one[:0], true)) > 0
}

// startsWithSuffix reports whether g starts with a non-empty proper
// suffix of lit.
func startsWithSuffix(g, lit []byte) bool {
	var one [1]int
	return len(outOfPlaces(g, &Literal{Text: lit}, nil, 1, one[:0], true)) > 0
}

// candidates returns (computing them once per block) the slots of
// template ti whose column may hold literal li.
func (b *Block) candidates(ti, li int) ([]int, error) {
	li = b.lm.same[li]
	k := ti*len(b.lm.lits) + li
	if b.lm.candDone[k] {
		return b.lm.cands[k], nil
	}
	tm := &b.tmpls[ti]
	c := b.lm.cands[k][:0]
	matches := b.lm.matches[li*len(b.cols) : (li+1)*len(b.cols)]
	holes := tm.holes
	var strs uint64 // holes not to look at: their values are JSON string content, which cannot hold the literal
	if b.lm.quoted[li] && len(holes) <= 64 {
		strs = tm.holeStr
	}
	for j := 0; j < len(holes); j++ {
		if strs != 0 {
			// Skip to the next hole that is not a string's.
			if j += bits64.TrailingZeros64(^strs >> j); j >= len(holes) {
				break
			}
		}
		si := holes[j]
		m := &matches[tm.cols[si]] // colMatchOf's memo, looked at first: most columns are known
		if m.state == matchUnknown {
			var err error
			if m, err = b.colMatchOf(int(tm.cols[si]), li); err != nil {
				return nil, err
			}
		}
		if m.state != matchNever && m.state != matchNone {
			c = append(c, si)
		}
	}
	b.lm.cands[k], b.lm.candDone[k] = c, true
	return c, nil
}

// alphabets of the columns whose text is computed, by encoding: a
// literal with a byte outside a column's alphabet is in none of its values.
var alphabets = [...]*[256]bool{encInt: &intAlphabet, encDecimal: &decimalAlphabet, encHex: &hexAlphabet, encTime: &timeAlphabet, encDictRest: nil}

func asciiSet[T string | []byte](s T) (set [256]bool) {
	for i := range len(s) {
		set[s[i]] = true
	}
	return set
}

// within reports whether every byte of a literal is in set (folding: or
// the letter's upper case is).
func within(l *Literal, set *[256]bool) bool {
	for _, c := range l.Text {
		if !set[c] && !(l.Fold && c-'a' < 26 && set[c-32]) {
			return false
		}
	}
	return true
}

// colMatch is what is known of one literal in one column's values.
type colMatch struct {
	state matchState
	bits  []uint64 // matchBits: bit v says value v holds the literal
}

// matchState is what is known of a literal in a column.
type matchState uint8

const (
	matchUnknown  matchState = iota
	matchNever               // no value can hold it (the column's alphabet lacks a byte of it)
	matchAlways              // the constant holds it
	matchNone                // the constant does not
	matchBits                // bits, found in one search of the whole column
	matchDict                // per dictionary entry, c.dictHas
	matchPerValue            // each value searched when asked (rendered values)
)

// colMatchOf returns (computing it once per block) what is known of
// literal li in column ci.
func (b *Block) colMatchOf(ci, li int) (*colMatch, error) {
	li = b.lm.same[li]
	m := &b.lm.matches[li*len(b.cols)+ci]
	if m.state != matchUnknown {
		return m, nil
	}
	c := &b.cols[ci]
	lit := &b.lm.lits[li]
	// Known from the header: a column ruled out is never loaded.
	set := alphabets[c.enc]
	if c.enc == encTime && !slices.ContainsFunc(c.shapes, func(s timestamp.Shape) bool { return s.Kind == timestamp.Civil }) {
		set = alphabets[encInt] // epoch times: integers
	}
	if set != nil {
		m.state = rejectOr(lit, set)
		if m.state == matchNever || c.enc == encTime {
			return m, nil // a time is written with its row's time: searched per row
		}
		// Numbers and hex: each value written once and searched, for a
		// bit per value as a string column has.
		if _, err := b.loadedCol(ci); err != nil {
			return nil, err
		}
		m.bits = append(m.bits[:0], make([]uint64, (c.n+63)/64)...)
		if c.enc == encHex && len(lit.Text) == c.hexLen {
			// A whole value (a trace id): its bytes compared, no value
			// written. The literal is lowercase hex, as the alphabet
			// check found (a folding one is lowercase).
			want := make([]byte, c.hexLen/2)
			if _, err := hex.Decode(want, lit.Text); err == nil {
				c.hexEqualBits(want, m.bits)
				m.state = matchBits
				return m, nil
			}
		}
		start := len(b.vals) // what is before may be viewed: written after it
		for vi := range c.n {
			v, vals, _, _, err := c.valueAt(vi, b.vals[:start], 0, true)
			b.vals = vals
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", b.Names[ci], err)
			}
			if lit.in(v, &b.scratch) {
				m.bits[vi/64] |= 1 << (vi % 64)
			}
		}
		b.vals = b.vals[:start]
		m.state = matchBits
		return m, nil
	}
	if c.grams != nil && !(lit.Fold && lit.unicodeFolds()) && !gramsMayHold(c.grams, lit.Text) {
		m.state = matchNever // ruled out without loading the column
		return m, nil
	}
	if _, err := b.loadedCol(ci); err != nil {
		return nil, err
	}
	switch c.enc {
	case encConst:
		m.state = matchNone
		if lit.in(c.data, &b.scratch) {
			m.state = matchAlways
		}
	case encDict:
		m.state = matchDict
	case encString:
		if lit.unicodeFolds() {
			m.state = matchPerValue
			break
		}
		m.bits = b.searchValues(m.bits, c, lit)
		m.state = matchBits
	case encDictRest:
		if lit.unicodeFolds() {
			m.state = matchPerValue
			break
		}
		// The entries decided once each, the rest searched as strings
		// are, then a bit per value from its entry's or its place's.
		var has [256]bool
		anyEntry := false
		for e, v := range c.dict {
			has[e] = lit.in(v, &b.scratch)
			anyEntry = anyEntry || has[e]
		}
		b.lm.restBits = b.searchValues(b.lm.restBits, c, lit)
		if !anyEntry && !slices.ContainsFunc(b.lm.restBits, func(w uint64) bool { return w != 0 }) {
			m.state = matchNone
			break
		}
		m.bits = grown(m.bits, (c.n+63)/64)
		m.state = matchBits
		idx, rest := c.idx[:c.n], 0
		for w := range m.bits {
			var word uint64
			for j, id := range idx[w*64 : min(w*64+64, len(idx))] {
				in := has[id]
				if id == restID {
					in = b.lm.restBits[rest/64]&(1<<(rest%64)) != 0
					rest++
				}
				if in {
					word |= 1 << j
				}
			}
			m.bits[w] = word
		}
	}
	return m, nil
}

// searchValues returns bits (reused) with a bit set for each value of c's
// strings (c.ends, c.data) holding lit: one search over the values laid
// end to end, where a find across two values is no find.
func (b *Block) searchValues(bits []uint64, c *colData, lit *Literal) []uint64 {
	hay := c.data
	if lit.Fold {
		hay = literal.AppendLower(b.scratch[:0], hay)
		b.scratch = hay
	}
	bits = append(bits[:0], make([]uint64, (len(c.ends)+63)/64)...)
	f := literal.NewFinder(lit.Text)
	for off := 0; off < len(hay); {
		i := f.Index(hay[off:])
		if i < 0 {
			break
		}
		o := off + i
		v := sort.Search(len(c.ends), func(v int) bool { return int(c.ends[v]) > o })
		if v >= len(c.ends) {
			break
		}
		if o+len(lit.Text) <= int(c.ends[v]) {
			bits[v/64] |= 1 << (v % 64)
			off = int(c.ends[v])
		} else {
			off = o + 1
		}
	}
	return bits
}

func rejectOr(lit *Literal, set *[256]bool) matchState {
	if within(lit, set) {
		return matchPerValue
	}
	return matchNever
}

// valueHas reports whether value vi of column ci contains literal li;
// t is the row's time (time columns render it).
func (b *Block) valueHas(ci, vi, li int, t int64) (bool, error) {
	c := &b.cols[ci]
	if vi < 0 || vi >= c.n {
		return false, fmt.Errorf("column has only %d values", c.n)
	}
	m, err := b.colMatchOf(ci, li)
	if err != nil {
		return false, err
	}
	switch m.state {
	case matchNever, matchNone:
		return false, nil
	case matchAlways:
		return true, nil
	case matchBits:
		return m.bits[vi/64]&(1<<(vi%64)) != 0, nil
	case matchDict:
		k := li*256 + int(c.idx[vi])
		d := &c.dictHas[k]
		if *d == unknown {
			*d = knownOf(b.lm.lits[li].in(c.dict[c.idx[vi]], &b.scratch))
		}
		return *d == knownYes, nil
	}
	v, vals, err := b.Value(ci, vi, t, b.vals)
	b.vals = vals
	if err != nil {
		return false, err
	}
	return b.lm.lits[li].in(v, &b.scratch), nil
}

// assembleMatching is assemble for lines reads with clauses: it
// keeps only the rows whose line holds every clause, decided per
// template first (matchCounting's verdicts), and makes only their
// lines.
func (b *Block) assembleMatching(nrows int, stream uint32) error {
	b.Rows = b.Rows[:0]
	lci := b.startMatching()
	if b.q.Newest > 0 {
		return b.matchNewest(nrows, stream, lci)
	}
	return b.matchCounting(nrows, stream, lci)
}

// MatchingRows sets a bit per row of a block read by ReadColumns in sel
// (grown to the rows' words; its other bits cleared), set when the row's
// line holds every clause of contains (at least one): the rows a lines
// read with those clauses keeps, found as it finds them, with no line
// rebuilt but those whose values cannot decide.
func (b *Block) MatchingRows(contains []Clause, sel []uint64) ([]uint64, error) {
	if b.mode != readColumns || len(contains) == 0 {
		return sel, errors.New("part: MatchingRows of a block not read by ReadColumns, or without clauses")
	}
	sel = grown(sel, (b.nrows+63)/64)
	clear(sel)
	q := b.q
	b.q, b.lm.sel, b.lm.selecting = LineRead{Contains: contains, NoLines: true}, sel, true
	defer func() { b.q, b.lm.sel, b.lm.selecting = q, nil, false }()
	err := b.matchCounting(b.nrows, 0, b.startMatching())
	return sel, err
}

// startMatching readies the block's search for the literals of the
// clauses of b.q.Contains, and returns the index of its line column (-1:
// none).
func (b *Block) startMatching() int {
	clear(b.lm.windows) // windowBits' memos are of a block's columns
	clear(b.lm.crosses)
	clear(b.lm.entryBits)
	clear(b.lm.rowWindows)
	// The clauses' literals end to end: what is planned, searched and
	// kept per literal is indexed by a literal's place among them.
	b.lm.lits, b.lm.clauseEnd = b.lm.lits[:0], b.lm.clauseEnd[:0]
	for _, c := range b.q.Contains {
		b.lm.lits = append(b.lm.lits, c...)
		b.lm.clauseEnd = append(b.lm.clauseEnd, len(b.lm.lits))
	}
	// A literal in several clauses (a backslash, which the label
	// filters after json or logfmt give each of their clauses) is
	// searched for once: its columns' matches and candidates are the
	// first's.
	b.lm.same = grown(b.lm.same, len(b.lm.lits))
	for i := range b.lm.lits {
		b.lm.same[i] = i
		for j := range i {
			if b.lm.lits[j].same(&b.lm.lits[i]) {
				b.lm.same[i] = j
				break
			}
		}
	}
	lci := -1
	b.lm.alphabets = grown(b.lm.alphabets, len(b.cols))
	for i := range b.cols {
		if b.cols[i].flags&colLine != 0 {
			lci = i
		}
		b.lm.alphabets[i] = b.valueAlphabet(i)
		c := &b.cols[i]
		if c.enc == encDict {
			c.dictHas = grown(c.dictHas, 256*len(b.lm.lits))
			clear(c.dictHas)
		}
	}
	b.lm.plans = grown(b.lm.plans, len(b.tmpls)*len(b.lm.lits))
	clear(b.lm.plans)
	b.lm.cplans = grown(b.lm.cplans, len(b.tmpls)*len(b.lm.clauseEnd))
	clear(b.lm.cplans)
	b.lm.tclauses = grown(b.lm.tclauses, len(b.tmpls)*len(b.lm.clauseEnd))
	b.numberLits()
	b.lm.litBytes = grown(b.lm.litBytes, len(b.lm.lits))
	b.lm.quoted = grown(b.lm.quoted, len(b.lm.lits))
	for i := range b.lm.lits {
		b.lm.litBytes[i] = asciiSet(b.lm.lits[i].Text)
		b.lm.quoted[i] = quoted(b.lm.lits[i].Text)
	}
	b.lm.matches = grown(b.lm.matches, len(b.lm.lits)*len(b.cols))
	b.lm.cands = grown(b.lm.cands, len(b.tmpls)*len(b.lm.lits))
	b.lm.candDone = grown(b.lm.candDone, len(b.tmpls)*len(b.lm.lits))
	clear(b.lm.candDone)
	for i := range b.lm.matches {
		b.lm.matches[i].state = matchUnknown
	}
	nb := len(b.lm.clauseEnd) * len(b.cols) // clauseBits' memo
	b.lm.cbits, b.lm.cbitsBuf = grown(b.lm.cbits, nb), grown(b.lm.cbitsBuf, nb)
	b.lm.cbitsState = grown(b.lm.cbitsState, nb)
	clear(b.lm.cbitsState)
	return lci
}

// matchNewest keeps the newest b.q.Newest matching rows with a time in
// [b.q.From, b.q.To], walking the rows from the last: with the times and
// templates of all rows read first, the cursor starts at the end. (Message spans
// are not read: lines-only rows have no message.)
func (b *Block) matchNewest(nrows int, stream uint32, lci int) error {
	// A needle: most blocks its token filter lets through have no value
	// holding it, and need no walk of their rows.
	if may, err := b.rowsMayMatch(); err != nil || !may {
		return err
	}
	verdict := b.lm.verdict
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	// Unless some row needs matchRow to decide, the rows are told apart
	// by the tests' columns alone (a walk that moves one or two columns,
	// not all), and a row that matches has the cursor of every column
	// placed at it from the template counts of the rows passed since the
	// last (Cursor.BackBy): a needle's block is walked at a few
	// nanoseconds a row, and the columns its line needs are moved once.
	walk, fullAt := &b.cur, nrows
	narrow := !slices.Contains(verdict, rowsMatch)
	if narrow {
		need := grown(b.lm.need, len(b.cols))
		clear(need)
		b.lm.need = need
		for _, x := range b.lm.tests {
			need[x.col] = true
		}
		walk = &b.lm.walk
		walk.StartAtEnd(b, need)
		if col, bits, ok := b.decidingColumn(verdict, walk); ok {
			return b.newestByColumn(nrows, stream, lci, col, bits)
		}
		b.lm.passed = grown(b.lm.passed, len(b.tmpls))
		clear(b.lm.passed)
	}
	b.cur.StartAtEnd(b, nil)
	for k := nrows - 1; k >= 0 && len(b.Rows) < b.q.Newest; k-- {
		tid := int(b.tids[k])
		walk.Back(tid)
		t := b.times[k]
		if t < b.q.From || t > b.q.To {
			continue
		}
		// The verdicts decide most rows with a lookup or two: matchRow
		// is for the rows that may match (it makes their lines).
		switch verdict[tid] {
		case rowsNone:
			continue
		case rowsTest:
			if !b.allTests(walk, tid) {
				continue
			}
		}
		if narrow {
			b.placeAt(k, fullAt)
			fullAt = k
		}
		if err := b.keepMatching(k, tid, lci, t, stream); err != nil {
			return err
		}
	}
	slices.Reverse(b.Rows) // in time order, as every read gives them
	return nil
}

// keepMatching makes row k (template tid, time t) and keeps it when
// matchRow finds it holds the clauses.
func (b *Block) keepMatching(k, tid, lci int, t int64, stream uint32) error {
	r := rowOf(t, stream, b.rowFlags[k])
	keep, err := b.matchRow(k, &b.tmpls[tid], tid, lci, t, &r)
	if keep && err == nil {
		b.Rows = append(b.Rows, r)
	}
	return err
}

// newestByColumn is matchNewest's walk when one column decides every row
// it has a value in (decidingColumn: a needle's trace id): the rows
// whose template reads it take its values from the last back, a row
// matches when its value's bit is set (or its template's every row
// does), and only the cursor of the rows kept is moved, by placeAt.
func (b *Block) newestByColumn(nrows int, stream uint32, lci, col int, bits []uint64) error {
	verdict := b.lm.verdict
	vi := b.cols[col].n
	// With no template whose every row matches, the walk ends at the
	// row of the first value whose bit is set (most of a needle's block
	// is never walked).
	first := -1
	if !slices.ContainsFunc(verdict, func(v rowsVerdict) bool { return v == rowsAll }) {
		for w, x := range bits[:(vi+63)/64] {
			if x != 0 {
				first = 64*w + bits64.TrailingZeros64(x)
				break
			}
		}
	}
	b.lm.passed = grown(b.lm.passed, len(b.tmpls))
	clear(b.lm.passed)
	b.cur.StartAtEnd(b, nil)
	fullAt := nrows
	for k := nrows - 1; k >= 0 && len(b.Rows) < b.q.Newest && vi > first; k-- {
		tid := int(b.tids[k])
		switch verdict[tid] {
		case rowsNone:
			continue
		case rowsTest:
			if vi--; vi < 0 {
				return fmt.Errorf("%w: row %d: column %q has only %d values", ErrCorrupt, k, b.Names[col], b.cols[col].n)
			}
			if bits[vi/64]&(1<<(vi%64)) == 0 {
				continue
			}
		}
		t := b.times[k]
		if t < b.q.From || t > b.q.To {
			continue
		}
		b.placeAt(k, fullAt)
		fullAt = k
		if err := b.keepMatching(k, tid, lci, t, stream); err != nil {
			return err
		}
	}
	slices.Reverse(b.Rows) // in time order, as every read gives them
	return nil
}

// placeAt moves b.cur, which stands before row at (walking back), to
// stand before row k < at: each template's columns by its count of the
// rows passed, not row by row.
func (b *Block) placeAt(k, at int) {
	passed := b.lm.passed
	for _, tid := range b.tids[k:at] {
		passed[tid]++
	}
	for _, tid := range b.tids[k:at] {
		if n := passed[tid]; n > 0 {
			b.cur.BackBy(int(tid), int(n))
			passed[tid] = 0
		}
	}
}

// clauseOf returns the clause of literal li.
func (b *Block) clauseOf(li int) int {
	c, _ := slices.BinarySearch(b.lm.clauseEnd, li+1)
	return c
}

// clause returns the range of b.lm.lits of clause c.
func (b *Block) clause(c int) (lo, hi int) {
	if c > 0 {
		lo = b.lm.clauseEnd[c-1]
	}
	return lo, b.lm.clauseEnd[c]
}

// clausePlan returns (working it out once per block) how template ti is
// tested for clause c: planGap when a gap holds one of its literals,
// planLine when none does and one may cross a boundary, planValues when
// the clause holds exactly in the rows with a value holding one of them.
// It notes the template's clause (shapeClause) for windowTests, and its
// literals' plans.
func (b *Block) clausePlan(ti, c int) litPlan {
	k := ti*len(b.lm.clauseEnd) + c
	p := &b.lm.cplans[k]
	if *p != planUnknown {
		return *p
	}
	tm := &b.tmpls[ti]
	key := shapeKey{tm.shape, b.lm.clauseIDs[c]}
	sc, ok := b.lm.shapeClauses.get(key)
	if !ok {
		sc = b.shapeClauseOf(tm, c)
		b.lm.shapeClauses.put(key, sc)
	}
	lo, hi := b.clause(c)
	copy(b.lm.plans[ti*len(b.lm.lits)+lo:], sc.litPlans(hi-lo))
	if sc.plan == planWindows {
		b.lm.tclauses[k] = sc // for windowTests, which only a clause planned so reads
	}
	*p = sc.plan
	return *p
}

// shapeClause is what a template's gaps say of a clause, kept by shape
// (Block.shapeClauses) for the templates of the blocks read after: its
// plan (clausePlan), each literal's (plan), and the holes a literal
// planned by windows may cross (shapeHoles; none for other literals).
type shapeClause struct {
	plan litPlan
	// The literals' plans: in few when they are at most as many (a
	// lookup then reads no other memory), else in more.
	few  [8]litPlan
	more *clauseMore
}

// clauseMore is what a shapeClause holds of a clause of many literals,
// or planned by windows: slots stay small for the others.
type clauseMore struct {
	lits  []litPlan    // when there are more than few
	holes []shapeHoles // planWindows: per literal
}

// litPlans returns the plans of the clause's n literals.
func (sc *shapeClause) litPlans(n int) []litPlan {
	if n <= len(sc.few) {
		return sc.few[:n]
	}
	return sc.more.lits
}

// shapeClauseOf works out template tm's shapeClause for clause c.
func (b *Block) shapeClauseOf(tm *template, c int) shapeClause {
	lo, hi := b.clause(c)
	sc := shapeClause{plan: planValues}
	if hi-lo > len(sc.few) {
		sc.more = &clauseMore{lits: make([]litPlan, hi-lo)}
	}
	lits := sc.litPlans(hi - lo)
	for li := lo; li < hi; li++ {
		lp := b.templatePlan(tm, li)
		lits[li-lo] = lp
		switch lp {
		case planGap:
			sc.plan = planGap
		case planLine, planEdges: // matchRow decides the rows
			if sc.plan != planGap {
				sc.plan = planLine
			}
		case planWindows:
			if sc.plan == planValues {
				sc.plan = planWindows
			}
		}
	}
	if sc.plan == planWindows {
		if sc.more == nil {
			sc.more = &clauseMore{}
		}
		sc.more.holes = make([]shapeHoles, hi-lo)
		for li := lo; li < hi; li++ {
			if lits[li-lo] == planWindows {
				sc.more.holes[li-lo] = b.shapeHolesOf(tm, li)
			}
		}
	}
	return sc
}

// matchCounting is the read of LineRead.NoLines: the rows' times and templates
// first (which checks the columns' value counts), then each row tested
// with the cursors of only the columns the tests read: a literal's
// candidate values, the values of the lines to rebuild.
func (b *Block) matchCounting(nrows int, stream uint32, lci int) error {
	if !b.lm.selecting { // ReadColumns decoded them
		if err := b.decodeRows(); err != nil {
			return err
		}
	}
	rowFlags := b.rowFlags
	b.counted = 0
	if err := b.verdicts(); err != nil {
		return err
	}
	if b.linesWanted() {
		// A block none of whose rows may hold every clause (a regexp's
		// literal that no value holds) is not walked. Every line kept
		// is made: the cursor keeps every column, and ends where the
		// columns do.
		if !b.mayMatch() {
			return nil
		}
		b.cur.Start(b, nil)
		if err := b.countMatches(nrows, stream, rowFlags, lci); err != nil {
			return err
		}
		return b.checkUsed(b.cur.At)
	}
	// The cursor keeps the columns read: a tested template's tests', a
	// matched one's values that matchRow reads.
	need := grown(b.lm.need, len(b.cols))
	clear(need)
	b.lm.need = need
	for t := range b.tmpls {
		tm := &b.tmpls[t]
		switch b.lm.verdict[t] {
		case rowsNone, rowsAll:
			continue // nothing read (a template without rows in the block is rowsNone)
		case rowsTest:
			for _, x := range b.lm.tests[b.lm.testStart[t]:b.lm.testStart[t+1]] {
				need[x.col] = true
			}
			continue
		}
		if tm.raw {
			if lci >= 0 {
				need[lci] = true
			}
			continue
		}
		for c := range b.lm.clauseEnd {
			switch b.clausePlan(t, c) {
			case planLine, planWindows: // windows: the tests' columns, or every one for matchRow
				for _, si := range tm.holes {
					need[tm.cols[si]] = true
				}
			case planValues:
				lo, hi := b.clause(c)
				for li := lo; li < hi; li++ {
					cands, err := b.candidates(t, li)
					if err != nil {
						return err
					}
					for _, si := range cands {
						need[tm.cols[si]] = true
					}
				}
			}
		}
	}
	b.cur.Start(b, need)
	return b.countMatches(nrows, stream, rowFlags, lci)
}

// linesWanted reports whether a matching read keeps its rows with their
// lines: a lines read (not NoLines, not a count, not MatchingRows).
func (b *Block) linesWanted() bool {
	return b.mode == readLines && !b.q.NoLines && !b.lm.selecting
}

// keep keeps a matching row of a NoLines read, or counts it (CountLines).
func (b *Block) keep(match bool, r rows.Row) {
	switch {
	case !match:
	case b.mode == readCount:
		b.counted++
	default:
		b.Rows = append(b.Rows, r)
	}
}

// rowsVerdict is countMatches' verdict on a template's rows.
type rowsVerdict uint8

const (
	rowsNone  rowsVerdict = iota // none holds every clause
	rowsAll                      // every one does (gaps hold them)
	rowsTest                     // the candidate values decide (tests)
	rowsMatch                    // matchRow decides (raw lines, lines to rebuild, values searched one by one)
)

// oneTest is a candidate value of a template's row for countMatches:
// value At(col)+nth of column col, whose bit in bits says whether it
// holds a literal of the clause. The tests of a clause follow each
// other, the last one marked.
type oneTest struct {
	col, nth int
	bits     []uint64
	last     bool
}

// countMatches is matchCounting's loop over the rows, after the
// verdicts: each template's verdict and, per clause, its candidate values
// worked out before the rows (a dictionary's entries searched once, a
// column's values once for all the literals of a clause), so that a row
// costs a few lookups.
func (b *Block) countMatches(nrows int, stream uint32, rowFlags []byte, lci int) error {
	verdict := b.lm.verdict
	// Times are needed for the rows kept, and for the templated rows
	// matchRow tests (a time column's values are written with them).
	needTimes := b.mode != readCount && !b.lm.selecting
	for t, n := range b.perTmpl {
		needTimes = needTimes || n > 0 && verdict[t] == rowsMatch && !b.tmpls[t].raw
	}
	if needTimes {
		if err := b.DecodeTimes(); err != nil {
			return err
		}
	}
	if b.lm.selecting && !b.lm.plain && !slices.Contains(verdict, rowsMatch) {
		if _, ok := b.countTestsTwo(b.tmplCounts(verdict), b.lm.sel); ok {
			return nil
		}
	}
	if b.mode == readCount && !slices.Contains(verdict, rowsMatch) {
		if n, ok := b.countByColumn(verdict); ok && !b.lm.plain { // it moves no cursor
			b.counted = n
			return nil
		}
		b.counted = b.countTests(verdict)
		return nil
	}
	for k := range nrows {
		tid := int(b.tids[k])
		v := verdict[tid]
		keep := v == rowsAll
		var r rows.Row
		switch v {
		case rowsTest:
			keep = b.allTests(&b.cur, tid)
		case rowsMatch:
			var t int64 // a raw row's line needs no time
			if b.timesRead {
				t = b.times[k]
			}
			r = rowOf(t, stream, rowFlags[k])
			var err error
			if keep, err = b.matchRow(k, &b.tmpls[tid], tid, lci, r.Time, &r); err != nil {
				return err
			}
		}
		switch {
		case b.lm.selecting:
			if keep {
				b.lm.sel[k>>6] |= 1 << (k & 63)
			}
		case keep && v != rowsMatch && b.mode != readCount:
			r = rowOf(b.times[k], stream, rowFlags[k])
			if b.linesWanted() {
				var err error
				if r.Line, err = b.rowLine(k, &b.tmpls[tid], r.Time); err != nil {
					return err
				}
			}
			fallthrough
		default:
			b.keep(keep, r)
		}
		b.cur.Next(tid)
	}
	return nil
}

// verdicts works out each template's verdict (b.lm.verdict) and tests
// (tmplTests), after decodeRows.
func (b *Block) verdicts() error {
	nt := len(b.tmpls)
	verdict := grown(b.lm.verdict, nt)
	b.lm.verdict = verdict
	b.lm.tests, b.lm.testStart = b.lm.tests[:0], append(b.lm.testStart[:0], 0)
	for t := range nt {
		verdict[t] = rowsNone // a template without rows in the block reads nothing
		if b.perTmpl[t] > 0 {
			v, err := b.tmplTests(t)
			if err != nil {
				return err
			}
			verdict[t] = v
		}
		b.lm.testStart = append(b.lm.testStart, len(b.lm.tests))
	}
	return nil
}

// rowsMayMatch decodes the block's row templates, works out each
// template's verdict (verdicts) and reports whether a row may hold every
// clause (mayMatch).
func (b *Block) rowsMayMatch() (bool, error) {
	if err := b.decodeRows(); err != nil {
		return false, err
	}
	if err := b.verdicts(); err != nil {
		return false, err
	}
	return b.mayMatch(), nil
}

// mayMatch reports whether a row of the block may hold every clause, by
// the verdicts: false when every template's rows hold none (the gaps say
// so, or no value of a clause's candidate columns holds a literal of it).
func (b *Block) mayMatch() bool {
	// A template's tests are of values some of which hold a literal
	// (tmplTests leaves out a column none of whose values does), and each
	// clause has one at least: a template with tests may match.
	for _, v := range b.lm.verdict {
		switch v {
		case rowsAll, rowsMatch, rowsTest:
			return true
		}
	}
	return false
}

// tmplTests returns the verdict of template t and, for rowsTest, appends
// its tests to b.lm.tests: per clause the gaps decide, or its candidate
// values (a slot once, whichever literals it may hold), or matchRow.
func (b *Block) tmplTests(t int) (rowsVerdict, error) {
	tm := &b.tmpls[t]
	if tm.raw {
		return rowsMatch, nil // matchRow searches the line
	}
	start := len(b.lm.tests)
	v := rowsAll
	for c := range b.lm.clauseEnd {
		plan := b.clausePlan(t, c)
		switch plan {
		case planGap:
			continue
		case planLine:
			v = rowsMatch
			continue
		}
		c0 := len(b.lm.tests)
		ok := true
		if plan == planWindows {
			// A value's window holds what the value does and what
			// crosses its edges: its test comes first, and takes the
			// place of the value's.
			wok, err := b.windowTests(t, c)
			if err != nil {
				return 0, err
			}
			if !wok {
				b.lm.tests = b.lm.tests[:c0]
				v = rowsMatch // matchRow rebuilds the lines
				continue
			}
		}
		lo, hi := b.clause(c)
		for li := lo; li < hi; li++ {
			cands, err := b.candidates(t, li)
			if err != nil {
				return 0, err
			}
		slots:
			for _, si := range cands {
				col, nth := int(tm.cols[si]), tm.nth(si)
				for _, x := range b.lm.tests[c0:] {
					if x.col == col && x.nth == nth {
						continue slots
					}
				}
				bits, empty, err := b.clauseBits(c, col)
				if err != nil {
					return 0, err
				}
				if empty {
					// No value of the column holds a literal of the
					// clause: the slot is no candidate.
					continue slots
				}
				ok = ok && bits != nil
				b.lm.tests = append(b.lm.tests, oneTest{col: col, nth: nth, bits: bits})
			}
		}
		switch {
		case len(b.lm.tests) == c0:
			// No value may hold a literal of the clause: no row does.
			b.lm.tests = b.lm.tests[:start]
			return rowsNone, nil
		case !ok:
			v = rowsMatch
		default:
			b.lm.tests[len(b.lm.tests)-1].last = true
			if v == rowsAll {
				v = rowsTest
			}
		}
	}
	if v != rowsTest {
		b.lm.tests = b.lm.tests[:start]
	}
	return v, nil
}

// windowTests appends to b.lm.tests the tests of the values of template
// t whose windows a literal of clause c may cross into (windowBits),
// and reports false when one cannot be tested by bits (matchRow
// decides the rows): also for a clause not planned by windows, whose
// holes the template's shapeClause does not hold.
func (b *Block) windowTests(t, c int) (bool, error) {
	tm := &b.tmpls[t]
	c0 := len(b.lm.tests)
	if b.clausePlan(t, c) != planWindows {
		return false, nil
	}
	sc := &b.lm.tclauses[t*len(b.lm.clauseEnd)+c]
	lo, hi := b.clause(c)
	for i, lp := range sc.litPlans(hi - lo) {
		if lp != planWindows {
			continue
		}
	holes:
		for _, h := range b.windowHoles(tm, lo+i, &sc.more.holes[i]) {
			si := tm.holes[h.j]
			col, nth := int(tm.cols[si]), tm.nth(si)
			for _, x := range b.lm.tests[c0:] {
				if x.col == col && x.nth == nth {
					continue holes
				}
			}
			bits, empty, err := b.windowBits(tm, h, c)
			switch {
			case err != nil:
				return false, err
			case bits == nil:
				return false, nil
			case empty:
				continue holes // no value's window holds a literal
			}
			b.lm.tests = append(b.lm.tests, oneTest{col: col, nth: nth, bits: bits})
		}
	}
	return true, nil
}

// windowRow reports whether a window of the row at hand of b.cur
// (template tid) holds a literal of clause c (windowTests, once per
// block and template); ok is false when one cannot be told by bits (the
// line decides).
func (b *Block) windowRow(tid, c int) (hit, ok bool, err error) {
	k := tid*len(b.lm.clauseEnd) + c
	w, done := b.lm.rowWindows[k]
	if !done {
		c0 := len(b.lm.tests)
		if w.ok, err = b.windowTests(tid, c); err != nil {
			return false, false, err
		}
		w.tests = slices.Clone(b.lm.tests[c0:])
		b.lm.tests = b.lm.tests[:c0]
		if b.lm.rowWindows == nil {
			b.lm.rowWindows = map[int]rowWindows{}
		}
		b.lm.rowWindows[k] = w
	}
	if !w.ok {
		return false, false, nil
	}
	for _, x := range w.tests {
		if vi := b.cur.At(x.col) + x.nth; x.bits[vi/64]&(1<<(vi%64)) != 0 {
			return true, true, nil
		}
	}
	return false, true, nil
}

// rowWindows are a template's window tests for a clause (windowRow).
type rowWindows struct {
	tests []oneTest
	ok    bool
}

// windowHoles returns the holes of template tm that literal li may cross
// into or out of (b.lm.holes, reused): where the gaps let it (sh, of the
// template's shape), with a byte in the value that the column's values
// may have.
func (b *Block) windowHoles(tm *template, li int, sh *shapeHoles) []crossHole {
	l := &b.lm.lits[li]
	b.lm.holes = b.lm.holes[:0]
	n := len(sh.holes)
	if sh.notString&^tm.holeStr == 0 {
		n = sh.others // every hole of the rest holds JSON string content (most of a JSON line's)
	}
	for k := range n {
		h := &sh.holes[k]
		if k >= sh.others && tm.holeStr>>h.j&1 != 0 {
			continue // the block's values there are JSON string content
		}
		set := b.lm.alphabets[tm.cols[tm.holes[h.j]]]
		if slices.ContainsFunc(h.bytes, func(c byte) bool { return inAlphabet(c, l.Fold, set) }) {
			b.lm.holes = append(b.lm.holes, *h)
		}
	}
	return b.lm.holes
}

// shapeHolesOf works out the holes of template tm that literal li may
// cross into or out of by its gaps (windowHoles looks at the values).
func (b *Block) shapeHolesOf(tm *template, li int) shapeHoles {
	l := &b.lm.lits[li]
	var sh shapeHoles
	edge := b.windowEdge(li)
	gaps := tm.gaps
	if l.Fold {
		b.gapBuf = literal.AppendLower(b.gapBuf[:0], tm.gaps.line)
		gaps = Gaps{line: b.gapBuf, ends: tm.gaps.ends}
	}
	for j := range len(tm.holes) {
		// Into value j from the gap before it, or out of it into
		// the gap after it: the literal's bytes in the value there.
		before, after := gaps.At(j), gaps.At(j+1)
		into := intoPlaces(before, l, nil, 1, nil, false)
		outOf := outOfPlaces(after, l, nil, 1, nil, false)
		if len(into)+len(outOf) == 0 {
			continue
		}
		h := crossHole{j: j, edges: b.edgesID(tm.gaps.At(j), tm.gaps.At(j+1), edge)}
		for _, p := range into {
			h.bytes = append(h.bytes, l.Text[p])
			h.inString = h.inString || intoString(l.Text, p, after)
		}
		for _, q := range outOf {
			h.bytes = append(h.bytes, l.Text[q-1])
			h.inString = h.inString || outOfString(l.Text, q, before)
		}
		if !h.inString && j < 64 {
			sh.notString |= 1 << j
			sh.holes = append(sh.holes, h)
		} else {
			sh.holes = slices.Insert(sh.holes, sh.others, h)
			sh.others++
		}
	}
	return sh
}

// shapeHoles are the holes of a template shape a literal may cross into
// or out of: the first others of them whatever their values, the rest
// (notString has a bit for each) only when their values are not JSON
// string content.
type shapeHoles struct {
	holes     []crossHole
	notString uint64
	others    int
}

// windowEdge returns how far a literal of li's clause may reach into
// the gaps around a value: the clause's longest literal but one byte.
func (b *Block) windowEdge(li int) int {
	return b.clauseEdge(b.clauseOf(li))
}

// clauseEdge is windowEdge of clause c's literals.
func (b *Block) clauseEdge(c int) int {
	lo, hi := b.clause(c)
	edge := 0
	for k := lo; k < hi; k++ {
		edge = max(edge, len(b.lm.lits[k].Text)-1)
	}
	return edge
}

// edgesID returns the number (edgeIDs, kept with shapeHoles) of a
// window's edges: the last edge bytes of before, the first of after.
func (b *Block) edgesID(before, after []byte, edge int) uint32 {
	before, after = before[max(len(before)-edge, 0):], after[:min(len(after), edge)]
	k := append(binary.AppendUvarint(b.lm.edgeKey[:0], uint64(len(before))), before...)
	k = append(k, after...)
	b.lm.edgeKey = k
	id, ok := b.lm.edgeIDs[string(k)]
	if !ok {
		if b.lm.edgeIDs == nil {
			b.lm.edgeIDs = map[string]uint32{}
		}
		id = uint32(len(b.lm.edgeIDs))
		b.lm.edgeIDs[string(k)] = id
	}
	return id
}

// crossHole is hole j, which a literal may cross into or out of by the
// gaps around it: the bytes of the literal in the value where it does,
// whether it still may when the values there are JSON string content
// (inString: intoString, outOfString), and the number of its window's
// edges for the literal's clause (edgesID).
type crossHole struct {
	j        int
	bytes    []byte
	inString bool
	edges    uint32
}

// A value that is JSON string content (the slot flag slotJSONString:
// Block.HoleJSON) holds a quote only escaped, after a backslash: a
// literal crossing into or out of it has no other quote in the part the
// value holds, and where it has one the value must end (or start)
// before it, the literal going on into the gap after (before) the
// value. Most literals that cross a JSON text's quotes ("level":"error",
// "status":503) are so ruled out of every string value beside a quote.

// bareQuote reports whether lit[i] is a quote that string content
// starting at lit[s] cannot hold: one at the start, or after a byte
// other than a backslash. (A quote after a backslash that is itself
// escaped is let through: that keeps more crossings, never fewer.)
func bareQuote(lit []byte, i, s int) bool {
	return lit[i] == '"' && (i == s || lit[i-1] != '\\')
}

// quoted reports whether lit has a quote after a byte other than a
// backslash, which JSON string content cannot hold.
func quoted(lit []byte) bool {
	for i := 1; i < len(lit); i++ {
		if bareQuote(lit, i, -1) {
			return true
		}
	}
	return false
}

// intoString reports whether literal lit, which gap before ends with
// lit[:p], may still cross into a value of JSON string content followed
// by gap after: the value holds lit[p:n] up to lit's first bare quote
// after p (intoFits).
func intoString(lit []byte, p int, after []byte) bool {
	stop := p
	for stop < len(lit) && !bareQuote(lit, stop, p) {
		stop++
	}
	return intoFits(lit, p, stop, after)
}

// outOfString reports whether literal lit, which gap after starts with
// lit[q:], may still cross out of a value of JSON string content after
// gap before: the value holds lit[s:q] from after lit's last bare quote
// before q, and does not start with a quote (outOfFits).
func outOfString(lit []byte, q int, before []byte) bool {
	start := q
	for start > 1 && !bareQuote(lit, start-1, 0) {
		start--
	}
	if start == 1 {
		start = 0 // a quote at lit[0] may be escaped in the value
	}
	return outOfFits(lit, q, start, before, true)
}

// intoFits reports whether literal lit, which gap before ends with
// lit[:p], may cross into a value that cannot hold lit[stop] there
// (len(lit): it may hold all of lit[p:]): the value holds lit[p:n] for
// an n up to stop, and gap after holds the rest.
func intoFits(lit []byte, p, stop int, after []byte) bool {
	if stop == len(lit) {
		return true
	}
	for n := p; n <= stop; n++ {
		if bytes.HasPrefix(after, lit[n:]) {
			return true
		}
	}
	return false
}

// outOfFits reports whether literal lit, which gap after starts with
// lit[q:], may cross out of a value that can hold lit[start:q] but not
// the byte before it (start 0: it may hold all of lit[:q]): the value
// holds lit[s:q] for an s from start, and gap before holds lit[:s]. With
// quote, the value cannot start with a quote (JSON string content).
func outOfFits(lit []byte, q, start int, before []byte, quote bool) bool {
	if start == 0 {
		return true
	}
	for s := start; s <= q; s++ {
		if (!quote || s == q || lit[s] != '"') && bytes.HasSuffix(before, lit[:s]) {
			return true
		}
	}
	return false
}

// fitsAlphabet reports whether literal l may cross into (into) or out
// of a value of bytes in set at place p (an intoPlaces or outOfPlaces
// place), between gaps that end with before and start with after.
func fitsAlphabet(l *Literal, p int, into bool, before, after []byte, set *[256]bool) bool {
	lit := l.Text
	if into {
		stop := p
		for stop < len(lit) && inAlphabet(lit[stop], l.Fold, set) {
			stop++
		}
		return intoFits(lit, p, stop, after)
	}
	start := p
	for start > 0 && inAlphabet(lit[start-1], l.Fold, set) {
		start--
	}
	return outOfFits(lit, p, start, before, false)
}

// valueAlphabet returns the bytes the values of column ci may have, as
// its header says (nil: any).
func (b *Block) valueAlphabet(ci int) *[256]bool {
	c := &b.cols[ci]
	if c.enc == encTime && !slices.ContainsFunc(c.shapes, func(s timestamp.Shape) bool { return s.Kind == timestamp.Civil }) {
		return alphabets[encInt] // epoch times: integers
	}
	if int(c.enc) < len(alphabets) {
		return alphabets[c.enc]
	}
	return nil
}

// intoPlaces appends to dst each length p of a non-empty proper prefix
// of literal l that gap g ends with (g as l's case is: lowered when it
// folds) and whose next bytes of l, as many as the shortest value after
// g has (short, at least 1), are in set (nil: any byte), the bytes of
// that value: the first only, with one.
func intoPlaces(g []byte, l *Literal, set *[256]bool, short int, dst []int, one bool) []int {
	lit := l.Text
	for p := max(len(g)-len(lit)+1, 0); p < len(g); p++ {
		i := bytes.IndexByte(g[p:], lit[0])
		if i < 0 {
			break
		}
		p += i
		if n := len(g) - p; bytes.Equal(g[p:], lit[:n]) && allInAlphabet(lit[n:min(len(lit), n+short)], l.Fold, set) {
			if dst = append(dst, n); one {
				break
			}
		}
	}
	return dst
}

// outOfPlaces appends to dst each start q of a non-empty proper suffix
// of literal l that gap g starts with and whose bytes before it in l,
// as many as the shortest value before g has (short), are in set: the
// first only, with one.
func outOfPlaces(g []byte, l *Literal, set *[256]bool, short int, dst []int, one bool) []int {
	lit := l.Text
	if len(g) == 0 {
		return dst
	}
	for q := max(len(lit)-len(g), 1); q < len(lit); q++ {
		i := bytes.IndexByte(lit[q:], g[0])
		if i < 0 {
			break
		}
		q += i
		if bytes.Equal(g[:len(lit)-q], lit[q:]) && allInAlphabet(lit[max(q-short, 0):q], l.Fold, set) {
			if dst = append(dst, q); one {
				break
			}
		}
	}
	return dst
}

// setCase sets c in set, and its upper case if it is a lowercase
// letter of a folding literal.
func setCase(set *[256]bool, c byte, fold bool) {
	set[c] = true
	if fold && c-'a' < 26 {
		set[c-32] = true
	}
}

// allInAlphabet reports whether every byte of text is in set
// (inAlphabet).
func allInAlphabet(text []byte, fold bool, set *[256]bool) bool {
	if set == nil {
		return true
	}
	for _, c := range text {
		if !inAlphabet(c, fold, set) {
			return false
		}
	}
	return true
}

// inAlphabet reports whether byte c of a literal (folding: or its upper
// case) is in set; nil holds every byte.
func inAlphabet(c byte, fold bool, set *[256]bool) bool {
	return set == nil || set[c] || fold && c-'a' < 26 && set[c-32]
}

// windowKey names a column's windows for a clause: the edges of the
// gaps around a value, as long as the clause's longest literal but one
// (by their number, edgesID).
type windowKey struct {
	col, clause int
	edges       uint32
}

// crossKey names what windowBits works out of a column's values for a
// clause once, whatever the gaps after them: where each literal may
// cross into or out of a value (each literal's places, a byte each,
// after its index).
type crossKey struct {
	col, clause int
	places      uint64 // a hash of the places, which the set holds (crossSet)
}

// crossSet is what a column's values give for a crossKey: a bit per
// value that holds a literal or crosses an edge whatever the gap after
// it, and the values too short to tell without that gap (shortValue).
type crossSet struct {
	places string
	bits   []uint64
	short  []shortValue
}

// shortValue is a value shorter than what a literal needs after the
// gap before it (text[p:]), and equal to its start: the gap after it
// must start with the rest.
type shortValue struct {
	vi   int
	lit  int32 // the index of the literal in the clause's crossings
	rest int32 // the offset in the literal where the gap after takes over
}

// crossing is how a literal may cross the edges of a value: the gap
// before it ends with text[:p] for each p of into, the gap after it
// starts with text[q:] for each q of outOf.
type crossing struct {
	lit   *Literal
	into  []int
	outOf []int
}

// windowBits returns (once per block for the same edges) a bit per
// value of the column of hole h.j of template tm saying whether the
// value's window (the end of the gap before it, the value, the start of
// the gap after it) holds a literal of clause c: the value does
// (clauseBits), or a literal crosses one of its edges, which each value
// is compared with at the places the gaps allow (a time written with
// its row's time: timeValues). nil when the values cannot be so decided
// (a folding search that needs its rows, Literal.unicodeFolds). empty
// reports that none is set.
func (b *Block) windowBits(tm *template, h crossHole, c int) (bits []uint64, empty bool, err error) {
	col := int(tm.cols[tm.holes[h.j]])
	key := windowKey{col: col, clause: c, edges: h.edges}
	if w, ok := b.lm.windows[key]; ok {
		return w.bits, w.empty, nil
	}
	lo, hi := b.clause(c)
	for li := lo; li < hi; li++ {
		if b.lm.lits[li].unicodeFolds() {
			return nil, false, nil
		}
	}
	edge := b.clauseEdge(c)
	before, after := tm.gaps.At(h.j), tm.gaps.At(h.j+1)
	before, after = before[max(len(before)-edge, 0):], after[:min(len(after), edge)]
	// Where each literal may cross the value's edges.
	cross, places := b.lm.crossing[:0], b.lm.places[:0]
	set := b.valueAlphabet(col)
	short := 1 // the length of the column's shortest value, or less
	if b.cols[col].enc == encHex {
		short = b.cols[col].hexLen // every value's
	}
	// The edges lowered, for the folding literals.
	low := literal.AppendLower(literal.AppendLower(b.lm.lowEdges[:0], before), after)
	b.lm.lowEdges = low
	lowBefore, lowAfter := low[:len(before)], low[len(before):]
	for li := lo; li < hi; li++ {
		l := &b.lm.lits[li]
		g0, g1 := before, after
		if l.Fold {
			g0, g1 = lowBefore, lowAfter
		}
		x := crossing{lit: l, into: intoPlaces(g0, l, set, short, nil, false), outOf: outOfPlaces(g1, l, set, short, nil, false)}
		if set != nil {
			// Where the value cannot hold the literal's bytes up to its
			// edge, it ends early and the gap goes on with the rest.
			x.into = slices.DeleteFunc(x.into, func(p int) bool { return !fitsAlphabet(l, p, true, g0, g1, set) })
			x.outOf = slices.DeleteFunc(x.outOf, func(q int) bool { return !fitsAlphabet(l, q, false, g0, g1, set) })
		}
		places = append(places, byte(li-lo), byte(len(x.into)), byte(len(x.outOf)))
		for _, p := range x.into {
			places = binary.AppendUvarint(places, uint64(p))
		}
		for _, q := range x.outOf {
			places = binary.AppendUvarint(places, uint64(q))
		}
		cross = append(cross, x)
	}
	b.lm.crossing, b.lm.places = cross, places
	cs, err := b.crossBits(crossKey{col: col, clause: c, places: maphash.Bytes(edgeSeed, places)}, places, cross)
	if err != nil || cs.bits == nil {
		return nil, false, err
	}
	bits = cs.bits
	if len(cs.short) > 0 {
		// A short value whose literal goes on into the gap after it.
		var extra []uint64
		for _, sv := range cs.short {
			l := cross[sv.lit].lit
			g1 := after
			if l.Fold {
				g1 = lowAfter
			}
			if bytes.HasPrefix(g1, l.Text[sv.rest:]) {
				if extra == nil {
					extra = slices.Clone(bits)
				}
				extra[sv.vi/64] |= 1 << (sv.vi % 64)
			}
		}
		if extra != nil {
			bits = extra
		}
	}
	empty = !slices.ContainsFunc(bits, func(w uint64) bool { return w != 0 })
	if b.lm.windows == nil {
		b.lm.windows = map[windowKey]windowSet{}
	}
	b.lm.windows[key] = windowSet{bits: bits, empty: empty}
	return bits, empty, nil
}

// crossBits returns (once per block for the same key) the bits of the
// values of a column that hold a literal of the clause (clauseBits) or
// cross an edge as cross says, and the values too short to tell
// without the gap after them; nil bits when the values are searched one
// by one.
func (b *Block) crossBits(key crossKey, places []byte, cross []crossing) (crossSet, error) {
	if cs, ok := b.lm.crosses[key]; ok && cs.places == string(places) {
		return cs, nil
	}
	vbits, _, err := b.clauseBits(key.clause, key.col)
	if err != nil || vbits == nil {
		return crossSet{}, err
	}
	cs := crossSet{places: string(places), bits: vbits}
	crosses := false
	for _, x := range cross {
		crosses = crosses || len(x.into)+len(x.outOf) > 0
	}
	if crosses {
		cs.bits = slices.Clone(vbits)
		cd, err := b.loadedCol(key.col)
		if err != nil {
			return crossSet{}, err
		}
		// check reports whether v crosses; it notes a short value vi
		// that may, with the gap after it (vi < 0: a dictionary's
		// entry, whose values are noted after).
		var entryShort []shortValue
		// The bytes a value crossed into starts with, and those one
		// crossed out of ends with (either case, folding).
		var first, last [256]bool
		for _, x := range cross {
			for _, p := range x.into {
				setCase(&first, x.lit.Text[p], x.lit.Fold)
			}
			for _, q := range x.outOf {
				setCase(&last, x.lit.Text[q-1], x.lit.Fold)
			}
		}
		check := func(v []byte, vi int) bool {
			low := false
			for k := range cross {
				x := &cross[k]
				t := v
				if x.lit.Fold {
					if !low {
						b.lm.lowered, low = literal.AppendLower(b.lm.lowered[:0], v), true
					}
					t = b.lm.lowered
				}
				lit := x.lit.Text
				for _, p := range x.into {
					rest := lit[p:]
					if len(t) >= len(rest) {
						if bytes.HasPrefix(t, rest) {
							return true
						}
					} else if bytes.Equal(t, rest[:len(t)]) {
						sv := shortValue{vi: vi, lit: int32(k), rest: int32(p + len(t))}
						if vi < 0 {
							entryShort = append(entryShort, sv)
						} else {
							cs.short = append(cs.short, sv)
						}
					}
				}
				for _, q := range x.outOf {
					if q <= len(t) && bytes.HasSuffix(t, lit[:q]) {
						return true
					}
				}
			}
			return false
		}
		// quick reports whether v neither starts nor ends with a byte
		// a crossing needs.
		quick := func(v []byte) bool { return len(v) > 0 && !first[v[0]] && !last[v[len(v)-1]] }
		if cd.enc == encDict || cd.enc == encDictRest {
			// The entries once, then each value (a rest value, one by
			// one, as a string column's).
			var has [256]bool
			var short [][]shortValue // an entry's, made at the first
			entries := false
			for e, v := range cd.dict {
				entryShort = entryShort[:0]
				has[e] = !quick(v) && check(v, -1)
				if !has[e] && len(entryShort) > 0 {
					if short == nil {
						short = make([][]shortValue, 256)
					}
					short[e] = slices.Clone(entryShort)
				}
				entries = entries || has[e] || len(entryShort) > 0
			}
			idx := cd.idx[:cd.n]
			if entries && cd.enc == encDict && short == nil {
				// The same entries as another window's of the column
				// (the compact and the spaced JSON spellings of a key's
				// edge) make the same bits.
				ek := entriesKey{col: key.col, clause: key.clause}
				for e, h := range has {
					if h {
						ek.has[e/64] |= 1 << (e % 64)
					}
				}
				if bits, ok := b.lm.entryBits[ek]; ok {
					cs.bits = bits
				} else {
					orEntries(cs.bits, idx, &has)
					if b.lm.entryBits == nil {
						b.lm.entryBits = map[entriesKey][]uint64{}
					}
					b.lm.entryBits[ek] = cs.bits
				}
			} else if entries {
				orEntries(cs.bits, idx, &has) // has[restID] is false: a rest value is checked below
			}
			if short != nil {
				for vi, e := range idx {
					for _, sv := range short[e] {
						sv.vi = vi
						cs.short = append(cs.short, sv)
					}
				}
			}
			if cd.enc == encDictRest {
				start, r := uint32(0), 0
				for vi := bytes.IndexByte(idx, restID); vi >= 0; {
					v := cd.data[start:cd.ends[r]]
					start, r = cd.ends[r], r+1
					if cs.bits[vi/64]&(1<<(vi%64)) == 0 && !quick(v) && check(v, vi) {
						cs.bits[vi/64] |= 1 << (vi % 64)
					}
					next := bytes.IndexByte(idx[vi+1:], restID)
					if next < 0 {
						break
					}
					vi += 1 + next
				}
			}
		} else if cd.enc == encConst {
			// One value, checked once.
			entryShort = entryShort[:0]
			if !quick(cd.data) && check(cd.data, -1) {
				setBits(cs.bits, cd.n)
			}
			if len(entryShort) > 0 {
				for vi := range cd.n {
					for _, sv := range entryShort {
						sv.vi = vi
						cs.short = append(cs.short, sv)
					}
				}
			}
		} else if cd.enc == encTime && !timesOutside(cd.shapes, &first, &last) {
			err := b.timeValues(key.col, func(vi int, v []byte) {
				if cs.bits[vi/64]&(1<<(vi%64)) == 0 && !quick(v) && check(v, vi) {
					cs.bits[vi/64] |= 1 << (vi % 64)
				}
			})
			if err != nil {
				return crossSet{}, err
			}
		} else if cd.enc == encString {
			// The values end to end: most are told by their first and
			// last bytes, without a call.
			start := uint32(0)
			for vi, end := range cd.ends[:cd.n] {
				v := cd.data[start:end]
				start = end
				if cs.bits[vi/64]&(1<<(vi%64)) == 0 && !quick(v) && check(v, vi) {
					cs.bits[vi/64] |= 1 << (vi % 64)
				}
			}
		} else if cd.enc != encTime { // (no time of the column's shapes crosses: none to add)
			start := len(b.vals) // what is before may be viewed: written after it
			for vi := range cd.n {
				if cs.bits[vi/64]&(1<<(vi%64)) != 0 {
					continue // the value holds one
				}
				v, vals, _, _, err := cd.valueAt(vi, b.vals[:start], 0, true)
				b.vals = vals
				if err != nil {
					return crossSet{}, fmt.Errorf("column %q: %w", b.Names[key.col], err)
				}
				if !quick(v) && check(v, vi) {
					cs.bits[vi/64] |= 1 << (vi % 64)
				}
			}
			b.vals = b.vals[:start]
		}
	}
	if b.lm.crosses == nil {
		b.lm.crosses = map[crossKey]crossSet{}
	}
	b.lm.crosses[key] = cs
	return cs, nil
}

// orEntries sets in bits the bit of each value of a dictionary column
// whose entry (idx, the values' entries) has says: a word of 64 values
// at a time, eight lookups an expression, without a branch (a plain loop
// mispredicts where a literal's entries are a few percent of the values).
func orEntries(bits []uint64, idx []byte, has *[256]bool) {
	var one [256]uint64
	for e, h := range has {
		if h {
			one[e] = 1
		}
	}
	w := 0
	for ; (w+1)*64 <= len(idx); w++ {
		vs := idx[w*64 : w*64+64]
		var word uint64
		for j := 0; j < 64; j += 8 {
			c := vs[j : j+8 : j+8]
			word |= one[c[0]]<<uint(j) | one[c[1]]<<uint(j+1) | one[c[2]]<<uint(j+2) | one[c[3]]<<uint(j+3) |
				one[c[4]]<<uint(j+4) | one[c[5]]<<uint(j+5) | one[c[6]]<<uint(j+6) | one[c[7]]<<uint(j+7)
		}
		bits[w] |= word
	}
	if rest := idx[w*64:]; len(rest) > 0 {
		var word uint64
		for j, e := range rest {
			word |= one[e] << (uint(j) & 63)
		}
		bits[w] |= word
	}
}

// entriesKey names the bits crossBits made from a dictionary column's
// entries: the column, the clause whose values' bits they add to, and
// the entries.
type entriesKey struct {
	col, clause int
	has         [4]uint64
}

// windowSet is windowBits' memo of one column's windows.
type windowSet struct {
	bits  []uint64
	empty bool
}

// edgeSeed seeds the hashes of windowKey and crossKey.
var edgeSeed = maphash.MakeSeed()

// known is a memo of a yes-or-no answer: not worked out yet, no, or yes.
type known uint8

const (
	unknown known = iota
	knownNo
	knownYes
)

func knownOf(b bool) known {
	if b {
		return knownYes
	}
	return knownNo
}

// bitsState is what clauseBits knows of a clause in a column.
type bitsState uint8

const (
	bitsUnknown bitsState = iota
	bitsKnown             // cbits holds a bit per value
	bitsEmpty             // cbits holds a bit per value, none set
	bitsNone              // the values are searched one by one (nil bits)
)

// clauseBits returns (computing it once per block) a bit per value of
// column ci saying whether the value holds a literal of clause c, or nil
// when a literal's values are searched one by one (matchPerValue): a
// string column's bits of each literal, and a dictionary's entries each
// searched once for all the literals.
//
// empty reports that the bits are known and none is set.
func (b *Block) clauseBits(c, ci int) (bits []uint64, empty bool, err error) {
	k := c*len(b.cols) + ci
	switch b.lm.cbitsState[k] {
	case bitsKnown:
		return b.lm.cbits[k], false, nil
	case bitsEmpty:
		return b.lm.cbits[k], true, nil
	case bitsNone:
		return nil, false, nil
	}
	b.lm.cbitsState[k] = bitsNone
	lo, hi := b.clause(c)
	col := &b.cols[ci]
	var only []uint64 // the bits of the one literal with some, if one has
	bits = b.lm.cbitsBuf[k][:0]
	owned := false
	own := func() {
		if !owned {
			bits = append(bits, make([]uint64, (col.n+63)/64)...)
			owned = true
		}
	}
	var has [256]bool
	dict := false
	times := b.lm.timeLits[:0] // the literals a time column's values are searched for
	for li := lo; li < hi; li++ {
		m, err := b.colMatchOf(ci, li)
		if err != nil {
			return nil, false, err
		}
		switch m.state {
		case matchNever, matchNone:
		case matchAlways:
			own()
			for i := range bits {
				bits[i] = ^uint64(0)
			}
		case matchBits:
			if only == nil && !owned {
				only = m.bits
				continue
			}
			own()
			for i, w := range m.bits {
				bits[i] |= w
			}
		case matchDict:
			dict = true
			for e, v := range col.dict {
				has[e] = has[e] || b.lm.lits[li].in(v, &b.scratch)
			}
		default:
			if col.enc != encTime {
				return nil, false, nil // searched value by value (unicodeFolds)
			}
			times = append(times, li)
		}
	}
	b.lm.timeLits = times
	if len(times) > 0 {
		own()
		if err := b.timeBits(ci, times, bits); err != nil {
			return nil, false, err
		}
	}
	if dict {
		own()
		orEntries(bits, col.idx[:col.n], &has)
	}
	switch {
	case owned && only != nil:
		for i, w := range only {
			bits[i] |= w
		}
	case !owned && only != nil:
		bits = only // a view of the literal's bits, not copied
	default:
		own()
	}
	if owned {
		b.lm.cbitsBuf[k] = bits
	}
	b.lm.cbits[k], b.lm.cbitsState[k] = bits, bitsKnown
	if !slices.ContainsFunc(bits, func(w uint64) bool { return w != 0 }) {
		b.lm.cbitsState[k] = bitsEmpty
		return bits, true, nil
	}
	return bits, false, nil
}

// setBits sets the first n bits of bits.
func setBits(bits []uint64, n int) {
	for i := range n / 64 {
		bits[i] = ^uint64(0)
	}
	if n%64 != 0 {
		bits[n/64] |= 1<<(n%64) - 1
	}
}

// timesOutside reports whether no time written in one of shapes starts
// with a byte of first or ends with a byte of last: each starts with a
// digit (a year's, an epoch's) or a minus sign, and ends with a digit
// unless its zone ends it (Z, an offset's).
func timesOutside(shapes []timestamp.Shape, first, last *[256]bool) bool {
	digit := func(set *[256]bool) bool { return slices.Contains(set['0':'9'+1], true) }
	if digit(first) || first['-'] {
		return false
	}
	var buf [40]byte
	for _, s := range shapes {
		if s.Kind == timestamp.Civil && s.Zone != timestamp.ZoneNone {
			if v := s.Append(buf[:0], 0); last[v[len(v)-1]] {
				return false
			}
		} else if digit(last) {
			return false
		}
	}
	return true
}

// timeBits sets the bit of each value of time column ci that holds one
// of the literals lits.
func (b *Block) timeBits(ci int, lits []int, bits []uint64) error {
	return b.timeValues(ci, func(vi int, v []byte) {
		for _, li := range lits {
			if b.lm.lits[li].in(v, &b.scratch) {
				bits[vi/64] |= 1 << (vi % 64)
				break
			}
		}
	})
}

// timeValues calls f with each value of time column ci and its index.
// A time is written with its row's time: the rows are walked, as
// countMatches walks them, to find each value's row, and each value is
// written once (v is valid during the call).
func (b *Block) timeValues(ci int, f func(vi int, v []byte)) error {
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	col, err := b.loadedCol(ci)
	if err != nil {
		return err
	}
	start := len(b.vals) // what is before may be viewed: written after it
	defer func() { b.vals = b.vals[:start] }()
	cur := 0
	for k, tid := range b.tids {
		tm := &b.tmpls[tid]
		n := 0
		for si, c := range tm.cols {
			if int(c) != ci {
				continue
			}
			n++
			vi := cur + tm.nth(si)
			if vi >= col.n {
				return fmt.Errorf("%w: row %d: column %q has only %d values", ErrCorrupt, k, b.Names[ci], col.n)
			}
			v, vals, _, _, err := col.valueAt(vi, b.vals[:start], b.times[k], true)
			b.vals = vals
			if err != nil {
				return fmt.Errorf("%w: column %q: %v", ErrCorrupt, b.Names[ci], err)
			}
			f(vi, v)
		}
		cur += n
	}
	return nil
}

// allTests reports whether the row at hand of cur (template tid) has,
// for each clause tested, a candidate value holding one of its literals.
func (b *Block) allTests(cur *Cursor, tid int) bool {
	hit := false
	for _, x := range b.lm.tests[b.lm.testStart[tid]:b.lm.testStart[tid+1]] {
		if !hit {
			vi := cur.At(x.col) + x.nth
			hit = x.bits[vi/64]&(1<<(vi%64)) != 0
		}
		if x.last {
			if !hit {
				return false
			}
			hit = false
		}
	}
	return true
}

// countByColumn counts the matching rows without walking them when one
// column decides every row it has a value in (decidingColumn): each
// value is one row, and the rows that match are the values' set bits,
// plus the rows every one of which matches. It reports false when the
// block is not so.
func (b *Block) countByColumn(verdict []rowsVerdict) (int, bool) {
	col, bits, ok := b.decidingColumn(verdict, &b.cur)
	if !ok {
		return 0, false
	}
	n := 0
	for t, v := range verdict {
		if v == rowsAll {
			n += b.perTmpl[t]
		}
	}
	nv := b.cols[col].n
	for _, w := range bits[:nv/64] {
		n += bits64.OnesCount64(w)
	}
	if r := nv % 64; r > 0 {
		n += bits64.OnesCount64(bits[nv/64] & (1<<r - 1))
	}
	return n, true
}

// decidingColumn returns the column that decides every row it has a
// value in, and the bits of its values that match: each template with
// rows that reads it has one value in it and the one test of its rows on
// it (all tests alike: the same clause's bits), and no template with
// another verdict reads it. Bits past the column's values may be set (a
// clause's bits made all ones): only the first values' count. cur is
// planned for the block, keeping the tests' columns at least.
func (b *Block) decidingColumn(verdict []rowsVerdict, cur *Cursor) (col int, bits []uint64, ok bool) {
	col = -1
	alike := b.lm.alike[:0] // the bits found to be bits' over the column's values
	// How many values of column c a row of template t has: cur's moves
	// (it keeps the tests' columns at least) name c as often.
	uses := func(t, c int) int {
		k := 0
		for _, col := range cur.moves[cur.start[t]:cur.start[t+1]] {
			if col == c {
				k++
			}
		}
		return k
	}
	for t, v := range verdict {
		if v != rowsTest || b.perTmpl[t] == 0 {
			continue
		}
		tests := b.lm.tests[b.lm.testStart[t]:b.lm.testStart[t+1]]
		if len(tests) != 1 {
			return 0, nil, false
		}
		x := &tests[0]
		if col < 0 {
			if x.col < 0 || len(x.bits) == 0 || len(x.bits) < (b.cols[x.col].n+63)/64 {
				return 0, nil, false
			}
			col, bits = x.col, x.bits
			alike = append(alike[:0], &bits[0])
		}
		if x.col != col || x.nth != 0 || uses(t, col) != 1 || !b.sameBits(col, bits, x.bits, &alike) {
			return 0, nil, false
		}
	}
	b.lm.alike = alike
	if col < 0 {
		return 0, nil, false // no row is tested
	}
	for t, v := range verdict {
		if b.perTmpl[t] > 0 && v != rowsTest && uses(t, col) > 0 {
			return 0, nil, false
		}
	}
	return col, bits, true
}

// sameBits reports whether other has bits' bit for each value of column
// col (its bits past the values are not looked at): the same slice, one
// in alike (those found so before, to which it adds other), or another
// that is set alike (two literals' windows in the two spellings of a
// field's name and value).
func (b *Block) sameBits(col int, bits, other []uint64, alike *[]*uint64) bool {
	nv := b.cols[col].n
	full := nv / 64
	if len(other) < (nv+63)/64 {
		return false
	}
	if nv == 0 || slices.Contains(*alike, &other[0]) {
		return true
	}
	if !slices.Equal(bits[:full], other[:full]) {
		return false
	}
	if r := nv % 64; r > 0 && (bits[full]^other[full])&(1<<r-1) != 0 {
		return false
	}
	*alike = append(*alike, &other[0])
	return true
}

// countTests is countMatches' loop when it only counts and no row needs
// matchRow: a row costs its template's verdict, its tests and the
// cursors it advances. The templates whose rows one or two tests of one
// clause decide (most: a literal in one column or in either of two) are
// tested inline; the others through allTests.
func (b *Block) countTests(verdict []rowsVerdict) int {
	tc := b.tmplCounts(verdict)
	if !b.lm.plain {
		if n, ok := b.countTestsTwo(tc, nil); ok {
			return n
		}
	}
	n := 0
	cur := &b.cur
	pos, moves, start := cur.pos, cur.moves, cur.start
	for _, tid := range b.tids {
		c := &tc[tid]
		switch c.kind {
		case countAll:
			n++
		case countOne:
			vi := pos[c.x1.col] + c.x1.nth
			n += int(c.x1.bits[vi/64] >> (vi % 64) & 1)
		case countTwo:
			v1, v2 := pos[c.x1.col]+c.x1.nth, pos[c.x2.col]+c.x2.nth
			n += int((c.x1.bits[v1/64]>>(v1%64) | c.x2.bits[v2/64]>>(v2%64)) & 1)
		case countTests:
			if b.allTests(cur, int(tid)) {
				n++
			}
		}
		for _, col := range moves[start[tid]:start[tid+1]] {
			pos[col]++
		}
	}
	return n
}

// tmplCounts returns how each template's rows are counted, by the
// verdicts (b.lm.tcount).
func (b *Block) tmplCounts(verdict []rowsVerdict) []tmplCount {
	tc := grown(b.lm.tcount, len(verdict))
	b.lm.tcount = tc
	for t, v := range verdict {
		c := tmplCount{kind: countNone}
		switch v {
		case rowsAll:
			c.kind = countAll
		case rowsTest:
			c.kind = countTests
			tests := b.lm.tests[b.lm.testStart[t]:b.lm.testStart[t+1]]
			if len(tests) <= 2 && tests[len(tests)-1].last && (len(tests) == 1 || !tests[0].last) {
				c.kind = countOne + countKind(len(tests)-1)
				c.x1 = tests[0]
				c.x2 = tests[len(tests)-1]
			}
		}
		tc[t] = c
	}
	return tc
}

// countTestsTwo is countTests without a branch per row, when the rows
// move at most two columns and every template's rows count all, none, or
// by one or two tests in different columns: a row then costs a lookup
// of its template's countFast, a byte of each column's lanes and two
// adds. Rows come in any order of a few hundred templates, whose
// branches a processor cannot guess. With sel, each row counted also
// sets its bit there (MatchingRows).
func (b *Block) countTestsTwo(tc []tmplCount, sel []uint64) (int, bool) {
	cur := &b.cur
	cols := [2]int{-1, -1}
	for _, col := range cur.moves {
		switch {
		case col == cols[0] || col == cols[1]:
		case cols[0] < 0:
			cols[0] = col
		case cols[1] < 0:
			cols[1] = col
		default:
			return 0, false
		}
	}
	slotOf := func(col int) int {
		switch col {
		case cols[0]:
			return 0
		case cols[1]:
			return 1
		}
		return -1
	}
	// Each column's tests' bits, told apart by their lane (laneBits).
	sets := [2][][]uint64{b.lm.laneSets[0][:0], b.lm.laneSets[1][:0]}
	fast := grown(b.lm.fast, len(tc))
	b.lm.fast = fast
	for t := range tc {
		c := &tc[t]
		f := countFast{lane: [2]uint8{noLane, noLane}}
		switch c.kind {
		case countAll:
			f.all = 1
		case countTests:
			return 0, false
		case countOne, countTwo:
			xs := [2]*oneTest{&c.x1, &c.x2}
			for _, x := range xs[:int(c.kind-countOne)+1] {
				s := slotOf(x.col)
				if s < 0 || f.lane[s] != noLane || x.nth > 255 || len(x.bits)*64 < b.cols[x.col].n {
					return 0, false
				}
				k := slices.IndexFunc(sets[s], func(w []uint64) bool { return &w[0] == &x.bits[0] })
				if k < 0 {
					if k = len(sets[s]); k >= noLane {
						return 0, false
					}
					sets[s] = append(sets[s], x.bits)
				}
				f.lane[s], f.nth[s] = uint8(k), uint8(x.nth)
			}
		}
		for _, col := range cur.moves[cur.start[t]:cur.start[t+1]] {
			s := slotOf(col)
			if f.moves[s] == 255 {
				return 0, false
			}
			f.moves[s]++
		}
		fast[t] = f
	}
	b.lm.laneSets = sets // kept for the next block's
	var p [2]int
	var lanes [2][]uint16
	for s, col := range cols {
		if col >= 0 {
			p[s] = cur.pos[col]
			b.lm.lanes[s] = laneBits(b.lm.lanes[s], sets[s], b.cols[col].n)
		} else {
			b.lm.lanes[s] = laneBits(b.lm.lanes[s], nil, 0)
		}
		lanes[s] = b.lm.lanes[s]
	}
	p0, p1 := p[0], p[1]
	lane0, lane1 := lanes[0], lanes[1]
	n := 0
	for k, tid := range b.tids {
		f := &fast[tid]
		b0 := lane0[p0+int(f.nth[0])] >> f.lane[0]
		b1 := lane1[p1+int(f.nth[1])] >> f.lane[1]
		bit := (uint16(f.all) | b0 | b1) & 1
		n += int(bit)
		if sel != nil {
			sel[k>>6] |= uint64(bit) << (k & 63)
		}
		p0 += int(f.moves[0])
		p1 += int(f.moves[1])
	}
	if cols[0] >= 0 {
		cur.pos[cols[0]] = p0
	}
	if cols[1] >= 0 {
		cur.pos[cols[1]] = p1
	}
	return n, true
}

// laneBits returns lanes (reused) with a lane per set of bits, over the
// n values of a column and 256 past them (a row's value is at most 255
// values on from its column's place, and a row of a template that does
// not test the column looks at its place, its end at the last): bit k of
// value v's entry is set when v's bit in sets[k] is. Lane noLane is
// never set.
func laneBits(lanes []uint16, sets [][]uint64, n int) []uint16 {
	lanes = grown(lanes, n+256)
	clear(lanes)
	for k, bits := range sets {
		for w, word := range bits[:(n+63)/64] {
			if w == n/64 {
				word &= 1<<(n%64) - 1 // bits past the values may be set (a clause's bits made all ones)
			}
			for word != 0 {
				lanes[w*64+bits64.TrailingZeros64(word)] |= 1 << k
				word &= word - 1
			}
		}
	}
	return lanes
}

// noLane is the lane of laneBits that is never set: a column's, for a
// template that does not test it.
const noLane = 15

// countFast is how countTestsTwo counts a row of a template: all its
// rows, or the bit of its value (at rank nth past the column's place) in
// each column's lane, and how many values of each column the row moves
// past.
type countFast struct {
	all   uint8
	lane  [2]uint8
	nth   [2]uint8
	moves [2]uint8
}

// tmplCount is how countTests counts a template's rows.
type tmplCount struct {
	kind   countKind
	x1, x2 oneTest
}

type countKind uint8

const (
	countNone  countKind = iota // no row holds every clause
	countAll                    // every row does
	countOne                    // x1 decides
	countTwo                    // x1 or x2 decides (one clause)
	countTests                  // allTests decides
)

// matchRow decides whether row k (template tm) holds every clause and,
// if so, sets r.Line.
func (b *Block) matchRow(k int, tm *template, tid, lci int, t int64, r *rows.Row) (bool, error) {
	cur := &b.cur
	if tm.raw {
		if lci < 0 {
			return false, fmt.Errorf("row %d: raw template without a line column", k)
		}
		if cur.At(lci) >= b.cols[lci].n {
			return false, fmt.Errorf("row %d: line column has only %d values", k, b.cols[lci].n)
		}
		v, _, err := b.Value(lci, cur.At(lci), t, nil)
		if err != nil {
			return false, fmt.Errorf("row %d: line: %w", k, err)
		}
		r.Line = v
		return b.holdsAll(v), nil
	}
	rebuild := false
	for c := range b.lm.clauseEnd {
		cplan := b.clausePlan(tid, c)
		if cplan == planGap {
			continue
		}
		// A value holding a literal decides the clause, even where
		// another literal of it would need the line.
		found, line := false, false
		if cplan == planWindows {
			hit, ok, err := b.windowRow(tid, c)
			if err != nil {
				return false, fmt.Errorf("row %d: %w", k, err)
			}
			found, line = hit, !ok
		}
		lo, hi := b.clause(c)
		for li := lo; li < hi && !found; li++ {
			plan := b.plan(tid, li)
			if plan == planLine || plan == planWindows && cplan != planWindows {
				line = true // its crossings are the line's to find (windowRow not asked)
				if plan == planLine {
					continue
				}
			}
			cands, err := b.candidates(tid, li)
			if err != nil {
				return false, fmt.Errorf("row %d: %w", k, err)
			}
			for _, si := range cands {
				ci := int(tm.cols[si])
				has, err := b.valueHas(ci, cur.At(ci)+tm.nth(si), li, t)
				if err != nil {
					return false, fmt.Errorf("row %d: column %q: %w", k, b.Names[ci], err)
				}
				if has {
					// Off the line's edges, perhaps: the line decides.
					found, line = plan != planEdges, line || plan == planEdges
					break
				}
			}
		}
		switch {
		case found:
		case line:
			rebuild = true
		default:
			return false, nil
		}
	}
	if b.q.NoLines && !rebuild {
		r.Line = nil // a certain match, and the caller wants no line
		return true, nil
	}
	start := len(b.lines)
	var err error
	if r.Line, err = b.rowLine(k, tm, t); err != nil {
		return false, err
	}
	if rebuild && !b.holdsAll(r.Line) {
		b.lines = b.lines[:start]
		return false, nil
	}
	return true, nil
}

// rowLine appends the line of templated row k (template tm, its values
// at the cursor, time t) to b.lines, and returns it.
func (b *Block) rowLine(k int, tm *template, t int64) ([]byte, error) {
	start := len(b.lines)
	for hi, si := range tm.holes {
		b.lines = append(b.lines, tm.gaps.At(hi)...)
		ci := int(tm.cols[si])
		v, vals, err := b.Value(ci, b.cur.At(ci)+tm.nth(si), t, b.vals)
		b.vals = vals
		if err != nil {
			return nil, fmt.Errorf("row %d: column %q: %w", k, b.Names[ci], err)
		}
		b.lines = append(b.lines, v...)
	}
	b.lines = append(b.lines, tm.gaps.Last()...)
	return b.lines[start:len(b.lines):len(b.lines)], nil
}

// holdsAll reports whether line holds every clause.
func (b *Block) holdsAll(line []byte) bool {
	for c := range b.lm.clauseEnd {
		lo, hi := b.clause(c)
		found := false
		for li := lo; li < hi && !found; li++ {
			found = b.lm.lits[li].inLine(line, &b.scratch)
		}
		if !found {
			return false
		}
	}
	return true
}

// literalMatch is a block's state in a read of the lines holding some
// literals (ReadLines and CountLines with a LineRead's literals), kept
// with the block for the next read: the literals of Contains end to
// end, and where each clause ends among them; what is known per literal
// is indexed by its place there.
type literalMatch struct {
	lits      []Literal
	clauseEnd []int
	same      []int      // per literal, the first of the same text and folding
	plans     []litPlan  // per template and literal
	cplans    []litPlan  // per template and clause
	matches   []colMatch // per literal and column
	cands     [][]int    // per template and literal
	candDone  []bool
	need      []bool // matchCounting: the columns whose cursors are kept
	// matchNewest's walk of the tests' columns, and its count of the rows
	// of each template passed since the last match (placeAt).
	walk   Cursor
	passed []int32
	// countMatches: a verdict per template, the candidate tests of each
	// (from testStart), and per clause and column a bit per value
	// holding one of the clause's literals (a view of cbitsBuf, or of a
	// literal's colMatch bits) with what is known of them.
	verdict    []rowsVerdict
	tests      []oneTest
	testStart  []int
	cbits      [][]uint64
	cbitsBuf   [][]uint64
	cbitsState []bitsState
	timeLits   []int       // clauseBits' scratch
	restBits   []uint64    // colMatchOf's scratch: a bit per value of an encDictRest column's rest
	tcount     []tmplCount // countTests': per template, how its rows are counted
	fast       []countFast // countTestsTwo's, per template
	lanes      [2][]uint16 // and its columns' lanes (laneBits)
	laneSets   [2][][]uint64
	litBytes   [][256]bool // the bytes of each literal
	quoted     []bool      // and whether it has a quote JSON string content cannot hold (quoted)
	// what a template's shape says of a clause (clauseIDs), kept for the
	// templates of the next blocks; the block's templates' (clausePlan)
	shapeClauses shapeTable[shapeClause]
	tclauses     []shapeClause
	edgeIDs      map[string]uint32 // edgesID's numbers, kept with shapeClauses
	edgeKey      []byte
	// the memos of windowBits, crossBits and windowRow for the block
	// (startMatching empties them), and their scratch
	windows    map[windowKey]windowSet
	alphabets  []*[256]bool // each column's valueAlphabet
	crosses    map[crossKey]crossSet
	entryBits  map[entriesKey][]uint64
	rowWindows map[int]rowWindows
	holes      []crossHole
	crossing   []crossing
	places     []byte
	lowEdges   []byte // windowBits' gap edges, lowered
	lowered    []byte
	// MatchingRows': it is asked (no row kept or counted), and its bits.
	selecting bool
	sel       []uint64
	alike     []*uint64 // decidingColumn's
	// plain: the rows are counted and selected by the plain loops, none
	// of the fast paths (countByColumn, countTestsTwo), to test them.
	plain bool
	// the literals' and clauses' numbers (numberLits)
	ids       map[string]int
	idKey     []byte
	holeIDs   []int
	clauseIDs []int
}
