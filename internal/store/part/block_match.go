package part

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	"github.com/sluicelog/sluice/internal/bin"
	"github.com/sluicelog/sluice/internal/rows"
)

// Reading only the rows whose line contains literals (Block.Contains),
// without rebuilding the others' lines.
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

// Literal is a text a line must contain: exactly, or with Fold, ignoring
// the case of ASCII letters (Text is then lowercase). Unicode also folds
// two other runes to ASCII letters, the Kelvin sign to k and the long s
// to s: a folding search for a literal with a k or an s keeps any text
// with a non-ASCII byte, for the caller (which checks every row it is
// given) to decide.
type Literal struct {
	Text []byte
	Fold bool
}

// in reports whether text contains the literal (or, folding, may).
func (l *Literal) in(text []byte, scratch *[]byte) bool {
	if !l.Fold {
		return bytes.Contains(text, l.Text)
	}
	low := appendLower((*scratch)[:0], text)
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
// non-ASCII rune folds to.
func (l *Literal) unicodeFolds() bool {
	return l.Fold && bytes.ContainsAny(l.Text, "ks")
}

// litPlan says how a template's rows are tested for one literal.
type litPlan uint8

const (
	planUnknown litPlan = iota
	planValues          // the literal is in the line if and only if it is in one of its values
	planGap             // a gap holds it: every row of the template has it
	planLine            // it may cross a boundary: rebuild the line and search it
)

// plan returns (computing it once per block) how template ti is tested
// for literal li. A plan depends on the template's gaps alone: plans are
// also kept by shape, for the templates of the next blocks read with the
// same literals.
func (b *Block) plan(ti, li int) litPlan {
	p := &b.plans[ti*len(b.Contains)+li]
	if *p == planUnknown {
		tm := &b.tmpls[ti]
		key := shapeLit{tm.shape, li}
		if sp, ok := b.shapePlans[key]; ok {
			*p = sp
		} else {
			*p = b.templatePlan(tm, li)
			b.shapePlans[key] = *p
		}
	}
	return *p
}

type shapeLit struct {
	shape Shape
	lit   int
}

// keepShapePlans empties the plans kept by shape unless they are for
// the literals of this read.
func (b *Block) keepShapePlans() {
	same := b.shapePlans != nil && len(b.planLits) == len(b.Contains)
	for i := 0; same && i < len(b.Contains); i++ {
		same = b.planLits[i].Fold == b.Contains[i].Fold && bytes.Equal(b.planLits[i].Text, b.Contains[i].Text)
	}
	if same {
		return
	}
	if b.shapePlans == nil || len(b.shapePlans) > 1<<16 {
		b.shapePlans = map[shapeLit]litPlan{}
	}
	clear(b.shapePlans)
	b.planLits = b.planLits[:0]
	for _, l := range b.Contains {
		b.planLits = append(b.planLits, Literal{Text: bytes.Clone(l.Text), Fold: l.Fold})
	}
}

func (b *Block) templatePlan(tm *template, li int) litPlan {
	l := &b.Contains[li]
	lit := l.Text
	if l.Fold {
		// Gaps lowercased; one with a non-ASCII byte is searched in the
		// line rebuilt, where the caller decides.
		if l.unicodeFolds() && !ascii(tm.gaps.line) {
			return planLine
		}
		b.gapBuf = appendLower(b.gapBuf[:0], tm.gaps.line)
		return gapPlan(Gaps{line: b.gapBuf, ends: tm.gaps.ends}, len(tm.holes), lit, &b.litBytes[li])
	}
	return gapPlan(tm.gaps, len(tm.holes), lit, &b.litBytes[li])
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
		if j < n && endsWithPrefix(g, lit) {
			return planLine
		}
		if j > 0 && startsWithSuffix(g, lit) {
			return planLine
		}
		if j > 0 && j < n && bytes.Contains(lit[1:len(lit)-1], g) {
			return planLine
		}
	}
	return planValues
}

// endsWithPrefix reports whether g ends with a non-empty proper prefix of
// lit: such a prefix starts at a byte of g equal to lit[0].
func endsWithPrefix(g, lit []byte) bool {
	for p := max(len(g)-len(lit)+1, 0); p < len(g); {
		i := bytes.IndexByte(g[p:], lit[0])
		if i < 0 {
			return false
		}
		p += i
		if bytes.Equal(g[p:], lit[:len(g)-p]) {
			return true
		}
		p++
	}
	return false
}

// startsWithSuffix reports whether g starts with a non-empty proper
// suffix of lit: such a suffix starts at a byte of lit equal to g[0].
func startsWithSuffix(g, lit []byte) bool {
	if len(g) == 0 {
		return false
	}
	for q := max(len(lit)-len(g), 1); q < len(lit); {
		i := bytes.IndexByte(lit[q:], g[0])
		if i < 0 {
			return false
		}
		q += i
		if bytes.Equal(g[:len(lit)-q], lit[q:]) {
			return true
		}
		q++
	}
	return false
}

// candidates returns (computing them once per block) the slots of
// template ti whose column may hold literal li.
func (b *Block) candidates(ti, li int) ([]int, error) {
	k := ti*len(b.Contains) + li
	if b.candDone[k] {
		return b.cands[k], nil
	}
	tm := &b.tmpls[ti]
	c := b.cands[k][:0]
	for _, si := range tm.holes {
		m, err := b.colMatchOf(int(tm.cols[si]), li)
		if err != nil {
			return nil, err
		}
		if m.state != matchNever && m.state != matchNone {
			c = append(c, si)
		}
	}
	b.cands[k], b.candDone[k] = c, true
	return c, nil
}

// alphabets of the columns whose text is computed, by encoding: a
// literal with a byte outside a column's alphabet is in none of its values.
var alphabets = [...]*[256]bool{
	encInt:     ptr(asciiSet("-0123456789")),
	encDecimal: ptr(asciiSet("-.0123456789")),
	encHex:     ptr(asciiSet("0123456789abcdef")),
	encTime:    ptr(asciiSet("0123456789-:T .,Z+")), // what timestamp.Shape writes
}

func ptr[T any](v T) *T { return &v }

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
	state uint8
	bits  []uint64 // matchBits: bit v says value v holds the literal
}

const (
	matchUnknown  = iota
	matchNever    // no value can hold it (the column's alphabet lacks a byte of it)
	matchAlways   // the constant holds it
	matchNone     // the constant does not
	matchBits     // bits, found in one search of the whole column
	matchDict     // per dictionary entry, c.dictHas
	matchPerValue // each value searched when asked (rendered values)
)

// colMatchOf returns (computing it once per block) what is known of
// literal li in column ci.
func (b *Block) colMatchOf(ci, li int) (*colMatch, error) {
	m := &b.matches[li*len(b.cols)+ci]
	if m.state != matchUnknown {
		return m, nil
	}
	c := &b.cols[ci]
	lit := &b.Contains[li]
	// Known from the header: a column ruled out is never loaded.
	if set := alphabets[c.enc]; set != nil {
		m.state = rejectOr(lit, set)
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
		// One search over the values laid end to end; a find across two
		// values is no find.
		hay := c.data
		if lit.Fold {
			hay = appendLower(b.scratch[:0], hay)
			b.scratch = hay
		}
		m.bits = append(m.bits[:0], make([]uint64, (c.n+63)/64)...)
		m.state = matchBits
		for off := 0; off < len(hay); {
			i := bytes.Index(hay[off:], lit.Text)
			if i < 0 {
				break
			}
			o := off + i
			v := sort.Search(len(c.ends), func(v int) bool { return int(c.ends[v]) > o })
			if v >= len(c.ends) {
				break
			}
			if o+len(lit.Text) <= int(c.ends[v]) {
				m.bits[v/64] |= 1 << (v % 64)
				off = int(c.ends[v])
			} else {
				off = o + 1
			}
		}
	}
	return m, nil
}

func rejectOr(lit *Literal, set *[256]bool) uint8 {
	if within(lit, set) {
		return matchPerValue
	}
	return matchNever
}

// appendLower appends b with ASCII letters lowercased.
func appendLower(dst, b []byte) []byte {
	n := len(dst)
	dst = append(dst, b...)
	for i, c := range dst[n:] {
		if c-'A' < 26 {
			dst[n+i] = c | 0x20
		}
	}
	return dst
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
		if *d == 0 {
			*d = 1
			if b.Contains[li].in(c.dict[c.idx[vi]], &b.scratch) {
				*d = 2
			}
		}
		return *d == 2, nil
	}
	v, vals, err := b.Value(ci, vi, t, b.vals)
	b.vals = vals
	if err != nil {
		return false, err
	}
	return b.Contains[li].in(v, &b.scratch), nil
}

// assembleMatching is assemble for LinesOnly reads with Contains: it
// keeps only the rows whose line holds every literal.
func (b *Block) assembleMatching(nrows int, stream uint32, times, subms, tids, rowFlags, msgSpans []byte) error {
	rs, mr := newRowStreams(times, subms, tids, len(b.tmpls)), bin.NewReader(msgSpans)
	b.Rows = b.Rows[:0]
	lci := -1
	for i := range b.cols {
		if b.cols[i].flags&colLine != 0 {
			lci = i
		}
		c := &b.cols[i]
		if c.enc == encDict {
			c.dictHas = grown(c.dictHas, 256*len(b.Contains))
			clear(c.dictHas)
		}
	}
	b.plans = grown(b.plans, len(b.tmpls)*len(b.Contains))
	clear(b.plans)
	b.keepShapePlans()
	b.litBytes = grown(b.litBytes, len(b.Contains))
	for i := range b.Contains {
		b.litBytes[i] = asciiSet(b.Contains[i].Text)
	}
	b.matches = grown(b.matches, len(b.Contains)*len(b.cols))
	b.cands = grown(b.cands, len(b.tmpls)*len(b.Contains))
	b.candDone = grown(b.candDone, len(b.tmpls)*len(b.Contains))
	clear(b.candDone)
	for i := range b.matches {
		b.matches[i].state = matchUnknown
	}
	if b.Newest > 0 {
		return b.matchNewest(nrows, stream, lci)
	}
	if b.NoLines {
		return b.matchCounting(nrows, stream, lci)
	}
	cur := grown(b.cursors, len(b.cols))
	clear(cur)
	b.cursors = cur
	for k := range nrows {
		t, tid, err := rs.next(k)
		if err != nil {
			return err
		}
		tm := &b.tmpls[tid]
		for si, col := range tm.cols {
			if int(col) >= len(b.cols) || b.cols[col].flags&colLine != 0 || cur[col]+tm.nth(si) >= b.cols[col].n {
				return fmt.Errorf("row %d: slot %d: column %d of %d, or past its values", k, si, col, len(b.cols))
			}
		}
		r := rowOf(t, stream, rowFlags[k])
		keep, err := b.matchRow(k, tm, tid, lci, t, rowFlags[k], &mr, &r)
		if err != nil {
			return err
		}
		if keep {
			b.Rows = append(b.Rows, r)
		}
		for _, col := range tm.cols {
			cur[col]++
		}
		if tm.raw {
			cur[lci]++
		}
	}
	mr.Done("message spans")
	if err := firstErr(rs.done(), mr.Err()); err != nil {
		return err
	}
	return b.checkUsed(func(i int) int { return cur[i] })
}

// matchNewest keeps the newest b.Newest matching rows with a time in
// [b.From, b.To], walking the rows from the last: with the times and
// templates of all rows read first, each column's cursor starts at its
// end and steps back over the values of each row passed. (Message spans
// are not read: lines-only rows have no message.)
func (b *Block) matchNewest(nrows int, stream uint32, lci int) error {
	if err := b.decodeRows(); err != nil {
		return err
	}
	rowFlags := b.rowFlags
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	cur := b.cursors // decodeRows left each column's count of values: its end
	for k := nrows - 1; k >= 0 && len(b.Rows) < b.Newest; k-- {
		tid := int(b.tids[k])
		tm := &b.tmpls[tid]
		for _, col := range tm.cols {
			cur[col]--
		}
		if tm.raw {
			cur[lci]--
		}
		t := b.times[k]
		if t < b.From || t > b.To {
			continue
		}
		r := rowOf(t, stream, rowFlags[k])
		keep, err := b.matchRow(k, tm, tid, lci, t, rowFlags[k], nil, &r)
		if err != nil {
			return err
		}
		if keep {
			b.Rows = append(b.Rows, r)
		}
	}
	slices.Reverse(b.Rows) // in time order, as every read gives them
	return nil
}

// matchCounting is the read of NoLines: the rows' times and templates
// first (which checks the columns' value counts), then each row tested
// with the cursors of only the columns the tests read: a literal's
// candidate values, the values of the lines to rebuild.
func (b *Block) matchCounting(nrows int, stream uint32, lci int) error {
	if err := b.decodeRows(); err != nil {
		return err
	}
	rowFlags := b.rowFlags
	b.Matches = 0
	need := grown(b.need, len(b.cols))
	clear(need)
	b.need = need
	for t := range b.tmpls {
		tm := &b.tmpls[t]
		if tm.raw {
			if lci >= 0 {
				need[lci] = true
			}
			continue
		}
		for li := range b.Contains {
			switch b.plan(t, li) {
			case planLine:
				for _, si := range tm.holes {
					need[tm.cols[si]] = true
				}
			case planValues:
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
	b.adv, b.advStart = b.adv[:0], append(b.advStart[:0], 0)
	for t := range b.tmpls {
		for _, c := range b.tmpls[t].cols {
			if need[c] {
				b.adv = append(b.adv, int(c))
			}
		}
		if b.tmpls[t].raw && lci >= 0 && need[lci] {
			b.adv = append(b.adv, lci)
		}
		b.advStart = append(b.advStart, len(b.adv))
	}
	cur := b.cursors
	clear(cur)
	if len(b.Contains) == 1 {
		return b.countOne(nrows, stream, rowFlags, lci)
	}
	if err := b.DecodeTimes(); err != nil {
		return err
	}
	for k := range nrows {
		tid := int(b.tids[k])
		r := rowOf(b.times[k], stream, rowFlags[k])
		keep, err := b.matchRow(k, &b.tmpls[tid], tid, lci, r.Time, rowFlags[k], nil, &r)
		if err != nil {
			return err
		}
		b.keep(keep, r)
		for _, c := range b.adv[b.advStart[tid]:b.advStart[tid+1]] {
			cur[c]++
		}
	}
	return nil
}

// keep keeps a matching row of a NoLines read, or counts it.
func (b *Block) keep(match bool, r rows.Row) {
	switch {
	case !match:
	case b.CountOnly:
		b.Matches++
	default:
		b.Rows = append(b.Rows, r)
	}
}

// Verdicts of countOne on a template's rows.
const (
	rowsNone  uint8 = iota // none holds the literal
	rowsAll                // every one does (a gap holds it)
	rowsTest               // one of the candidate values must (tests)
	rowsMatch              // matchRow decides (raw lines, lines to rebuild, values searched one by one)
)

// oneTest is a candidate value of a template's row for countOne: value
// cur[col]+nth of column col, whose bit in bits says whether it holds the
// literal.
type oneTest struct {
	col, nth int
	bits     []uint64
}

// countOne is matchCounting's loop for one literal: each template's
// verdict and its candidate values are worked out before the rows, a
// dictionary's entries searched once, so that a row costs a few lookups.
func (b *Block) countOne(nrows int, stream uint32, rowFlags []byte, lci int) error {
	nt := len(b.tmpls)
	verdict := grown(b.verdict, nt)
	b.verdict = verdict
	b.tests, b.testStart = b.tests[:0], append(b.testStart[:0], 0)
	b.dictBits = grown(b.dictBits, len(b.cols))
	dictDone := grown(b.dictDone, len(b.cols))
	clear(dictDone)
	b.dictDone = dictDone
	lit := &b.Contains[0]
	for t := range nt {
		tm := &b.tmpls[t]
		verdict[t] = rowsMatch
		plan := planLine // a raw line: matchRow searches it
		if !tm.raw {
			plan = b.plan(t, 0)
		}
		switch plan {
		case planGap:
			verdict[t] = rowsAll
		case planValues:
			cands, err := b.candidates(t, 0)
			if err != nil {
				return err
			}
			start := len(b.tests)
			ok := true
			for _, si := range cands {
				col := int(tm.cols[si])
				m, err := b.colMatchOf(col, 0)
				if err != nil {
					return err
				}
				test := oneTest{col: col, nth: tm.nth(si)}
				switch m.state {
				case matchBits:
					test.bits = m.bits
				case matchDict:
					// Each entry searched once; then a bit per value, as
					// a string column has.
					if !dictDone[col] {
						c := &b.cols[col]
						var has [256]bool
						for e, v := range c.dict {
							has[e] = lit.in(v, &b.scratch)
						}
						bits := append(b.dictBits[col][:0], make([]uint64, (c.n+63)/64)...)
						for vi, e := range c.idx[:c.n] {
							if has[e] {
								bits[vi/64] |= 1 << (vi % 64)
							}
						}
						b.dictBits[col], dictDone[col] = bits, true
					}
					test.bits = b.dictBits[col]
				default:
					ok = false
				}
				b.tests = append(b.tests, test)
			}
			switch {
			case !ok:
				b.tests = b.tests[:start]
			case len(cands) == 0:
				verdict[t] = rowsNone
			default:
				verdict[t] = rowsTest
			}
		}
		b.testStart = append(b.testStart, len(b.tests))
	}
	// Times are needed for the rows kept, and for the templated rows
	// matchRow tests (a time column's values are written with them).
	needTimes := !b.CountOnly
	for t, n := range b.perTmpl {
		needTimes = needTimes || n > 0 && verdict[t] == rowsMatch && !b.tmpls[t].raw
	}
	if needTimes {
		if err := b.DecodeTimes(); err != nil {
			return err
		}
	}
	cur := b.cursors
	if b.CountOnly && !slices.Contains(verdict, rowsMatch) {
		b.Matches = b.countTests(verdict)
		return nil
	}
	for k := range nrows {
		tid := int(b.tids[k])
		v := verdict[tid]
		keep := v == rowsAll
		var r rows.Row
		switch v {
		case rowsTest:
			keep = b.anyTest(tid)
		case rowsMatch:
			var t int64 // a raw row's line needs no time
			if b.timesRead {
				t = b.times[k]
			}
			r = rowOf(t, stream, rowFlags[k])
			var err error
			if keep, err = b.matchRow(k, &b.tmpls[tid], tid, lci, r.Time, rowFlags[k], nil, &r); err != nil {
				return err
			}
		}
		if keep && v != rowsMatch && !b.CountOnly {
			r = rowOf(b.times[k], stream, rowFlags[k])
		}
		b.keep(keep, r)
		for _, c := range b.adv[b.advStart[tid]:b.advStart[tid+1]] {
			cur[c]++
		}
	}
	return nil
}

// anyTest reports whether a candidate value of the row at hand (template
// tid) holds the literal.
func (b *Block) anyTest(tid int) bool {
	for _, x := range b.tests[b.testStart[tid]:b.testStart[tid+1]] {
		vi := b.cursors[x.col] + x.nth
		if x.bits[vi/64]&(1<<(vi%64)) != 0 {
			return true
		}
	}
	return false
}

// countTests is countOne's loop when it only counts and no row needs
// matchRow: a row costs its template's verdict, its tests and the
// cursors it advances.
func (b *Block) countTests(verdict []uint8) int {
	n := 0
	cur, adv, advStart := b.cursors, b.adv, b.advStart
	for _, tid := range b.tids {
		switch verdict[tid] {
		case rowsAll:
			n++
		case rowsTest:
			if b.anyTest(int(tid)) {
				n++
			}
		}
		for _, c := range adv[advStart[tid]:advStart[tid+1]] {
			cur[c]++
		}
	}
	return n
}

// matchRow decides whether row k (template tm) holds every literal and,
// if so, sets r.Line. mr, the message spans, is nil when they are not
// read.
func (b *Block) matchRow(k int, tm *template, tid, lci int, t int64, fl byte, mr *bin.Reader, r *rows.Row) (bool, error) {
	cur := b.cursors
	if tm.raw {
		if lci < 0 {
			return false, fmt.Errorf("row %d: raw template without a line column", k)
		}
		if cur[lci] >= b.cols[lci].n {
			return false, fmt.Errorf("row %d: line column has only %d values", k, b.cols[lci].n)
		}
		v, _, err := b.Value(lci, cur[lci], t, nil)
		if err != nil {
			return false, fmt.Errorf("row %d: line: %w", k, err)
		}
		if fl&rowMsgSpan != 0 && mr != nil {
			off, n := mr.Uvarint("message offset"), mr.Uvarint("message length")
			if err := mr.Err(); err != nil || off > uint64(len(v)) || n > uint64(len(v))-off {
				return false, fmt.Errorf("row %d: message span", k)
			}
		}
		r.Line = v
		return b.containsAll(v), nil
	}
	rebuild := false
	for li := range b.Contains {
		switch b.plan(tid, li) {
		case planGap:
		case planLine:
			rebuild = true
		default:
			found := false
			cands, err := b.candidates(tid, li)
			if err != nil {
				return false, fmt.Errorf("row %d: %w", k, err)
			}
			for _, si := range cands {
				ci := int(tm.cols[si])
				has, err := b.valueHas(ci, cur[ci]+tm.nth(si), li, t)
				if err != nil {
					return false, fmt.Errorf("row %d: column %q: %w", k, b.Names[ci], err)
				}
				if has {
					found = true
					break
				}
			}
			if !found {
				return false, nil
			}
		}
	}
	if b.NoLines && !rebuild {
		r.Line = nil // a certain match, and the caller wants no line
		return true, nil
	}
	start := len(b.lines)
	for hi, si := range tm.holes {
		b.lines = append(b.lines, tm.gaps.At(hi)...)
		ci := int(tm.cols[si])
		v, vals, err := b.Value(ci, cur[ci]+tm.nth(si), t, b.vals)
		b.vals = vals
		if err != nil {
			return false, fmt.Errorf("row %d: column %q: %w", k, b.Names[ci], err)
		}
		b.lines = append(b.lines, v...)
	}
	b.lines = append(b.lines, tm.gaps.Last()...)
	r.Line = b.lines[start:len(b.lines):len(b.lines)]
	if rebuild && !b.containsAll(r.Line) {
		b.lines = b.lines[:start]
		return false, nil
	}
	return true, nil
}

func (b *Block) containsAll(line []byte) bool {
	for i := range b.Contains {
		if !b.Contains[i].in(line, &b.scratch) {
			return false
		}
	}
	return true
}
