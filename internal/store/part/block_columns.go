package part

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Columnar reads: a block read by Reader.ReadColumns builds no row. Its
// reader walks the rows itself (RowTime, RowTemplate) with a Cursor
// (cursor.go), which says where each row's values are, and reads the
// values it needs where they are stored (Value): that spares the
// rebuilding of every line for a query that needs only a few fields.

// ColumnKind is how a column stores its values.
type ColumnKind uint8

const (
	ColumnString  ColumnKind = iota // any text
	ColumnConst                     // one value for every row
	ColumnDict                      // a few distinct values (ValueID names them)
	ColumnInt                       // decimal integers, as strconv.AppendInt writes them
	ColumnDecimal                   // decimal fractions: [-]digits.digits, at most 18 digits, a JSON number
	ColumnHex                       // lowercase hexadecimal digits
	ColumnTime                      // the row's time in a timestamp shape
)

var columnKinds = [...]ColumnKind{encString: ColumnString, encConst: ColumnConst, encDict: ColumnDict,
	encInt: ColumnInt, encDecimal: ColumnDecimal, encHex: ColumnHex, encTime: ColumnTime, encDictRest: ColumnString}

// decodeRows reads the row streams of a columnar read: each row's
// template now (checking that the rows use exactly the columns' values),
// and its time when a reader asks for the times (DecodeTimes).
//
// A header the cache holds keeps what this finds (rowSkeleton): its
// block's rows never change, so later reads take it from there.
func (b *Block) decodeRows() error {
	b.timesRead = false
	if sk := b.hd.skeleton.Load(); sk != nil {
		b.tids, b.perTmpl, b.rowFlags = sk.tids, sk.perTmpl, sk.flags
		return nil
	}
	if err := b.readRowStreams(); err != nil {
		return err
	}
	if err := b.walkTemplates(); err != nil {
		return err
	}
	b.rowFlags = b.rowParts.flags
	if c := b.hd.cache; c != nil && c.admits() {
		sk := c.newSkeleton(b.tids, b.perTmpl, b.rowFlags)
		c.keep(b.hd, unsafe.SliceData(sk.mem), int64(unsafe.Sizeof(*sk))+c.mem.size(sk.mem),
			func() bool { return b.hd.skeleton.CompareAndSwap(nil, sk) })
	}
	return nil
}

// walkTemplates reads each row's template from the row streams, counts
// the rows of each template and checks that the rows use exactly the
// columns' values.
func (b *Block) walkTemplates() error {
	nrows, tids := b.nrows, b.rowParts.tids
	b.ownTids = grown(b.ownTids, nrows)
	b.tids = b.ownTids
	perTmpl := grown(b.ownCounts, len(b.tmpls))
	clear(perTmpl)
	b.ownCounts, b.perTmpl = perTmpl, perTmpl
	ntmpl := uint64(len(b.tmpls))
	for k := range nrows {
		var tid uint64
		if len(tids) > 0 && tids[0] < 0x80 { // most blocks have under 128 templates
			tid = uint64(tids[0])
			tids = tids[1:]
		} else {
			var n int
			if tid, n = binary.Uvarint(tids); n <= 0 {
				return fmt.Errorf("row %d: template id: bad or missing varint", k)
			}
			tids = tids[n:]
		}
		if tid >= ntmpl {
			return fmt.Errorf("row %d: template id %d not one of %d", k, tid, ntmpl)
		}
		b.tids[k] = int32(tid)
		perTmpl[tid]++
	}
	if len(tids) > 0 {
		return fmt.Errorf("row streams: %d bytes of template ids left after the rows", len(tids))
	}
	// The values the rows use, template by template.
	used := grown(b.used, len(b.cols))
	clear(used)
	b.used = used
	lci := b.LineColumn()
	for ti, n := range perTmpl {
		if n == 0 {
			continue
		}
		tm := &b.tmpls[ti]
		for si, col := range tm.cols {
			if int(col) >= len(b.cols) || b.cols[col].flags&colLine != 0 {
				return fmt.Errorf("template %d: slot %d: column %d of %d", ti, si, col, len(b.cols))
			}
			used[col] += n
		}
		if tm.raw {
			if lci < 0 {
				return fmt.Errorf("template %d: raw without a line column", ti)
			}
			used[lci] += n
		}
	}
	return b.checkUsed(func(i int) int { return used[i] })
}

// DecodeTimes reads the rows' times of a columnar read, which RowTime
// then returns; a reader that needs no time (the block lies in its range
// and its windows) never pays for them.
func (b *Block) DecodeTimes() error {
	if b.timesRead {
		return nil
	}
	if ts := b.hd.times.Load(); ts != nil {
		b.times, b.timesRead = *ts, true
		return nil
	}
	if err := b.readRowStreams(); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	n := len(b.tids)
	rs := rowStreams{times: b.rowParts.times, subms: b.rowParts.subms}
	b.ownTimes = grown(b.ownTimes, n)
	b.times = b.ownTimes
	for k := range n {
		t, err := rs.nextTime(k)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if t < b.minTime || t > b.maxTime {
			return fmt.Errorf("%w: row %d: its time is outside the block's range in the index", ErrCorrupt, k)
		}
		b.times[k] = t
	}
	if len(rs.times)+len(rs.subms) != 0 {
		return fmt.Errorf("%w: row streams: %d and %d bytes of times left after the rows", ErrCorrupt, len(rs.times), len(rs.subms))
	}
	b.timesRead = true
	if c := b.hd.cache; c != nil && c.admits() {
		mem := c.mem.alloc(8 * len(b.times))
		var off int
		ts := view[int64](mem, &off, len(b.times))
		copy(ts, b.times)
		c.keep(b.hd, unsafe.SliceData(mem), c.mem.size(mem), func() bool { return b.hd.times.CompareAndSwap(nil, &ts) })
	}
	return nil
}

// NumRows returns the rows of a columnar read.
func (b *Block) NumRows() int { return len(b.tids) }

// TimeRange returns the earliest and latest time of a columnar read's
// rows, as the part's index has them (the read checked every row).
func (b *Block) TimeRange() (lo, hi int64) { return b.minTime, b.maxTime }

// TemplateRows returns how many rows of a columnar read are of template t.
func (b *Block) TemplateRows(t int) int { return b.perTmpl[t] }

// TimesAreNumbers reports whether every value of column col is a time
// written as a decimal integer (an epoch count): a JSON number.
func (b *Block) TimesAreNumbers(col int) bool {
	c := &b.cols[col]
	if c.enc != encTime {
		return false
	}
	for _, sh := range c.shapes {
		switch sh.Kind {
		case timestamp.EpochS, timestamp.EpochMs, timestamp.EpochUs, timestamp.EpochNs:
		default:
			return false
		}
	}
	return true
}

// ColumnValues returns how many values column col holds.
func (b *Block) ColumnValues(col int) int { return b.cols[col].n }

// CountIDs sets, for a constant or dictionary column, counts[id] to how
// many of its values have each id (see ValueID) and, for each id counted,
// first[id] to the index of its first value; it reports false for other
// columns.
func (b *Block) CountIDs(col int, counts, first *[256]int) (bool, error) {
	c, err := b.loadedCol(col)
	if err != nil {
		return false, err
	}
	clear(counts[:])
	switch c.enc {
	case encConst:
		counts[0], first[0] = c.n, 0
		return true, nil
	case encDict:
		// Four histograms, so that runs of one id do not wait on each
		// other's increments; then the first value of each id.
		var h [4][256]int32
		idx := c.idx[:c.n]
		i := 0
		for ; i+4 <= len(idx); i += 4 {
			h[0][idx[i]]++
			h[1][idx[i+1]]++
			h[2][idx[i+2]]++
			h[3][idx[i+3]]++
		}
		for ; i < len(idx); i++ {
			h[0][idx[i]]++
		}
		unseen := 0
		for id := range 256 {
			counts[id] = int(h[0][id] + h[1][id] + h[2][id] + h[3][id])
			if counts[id] > 0 {
				first[id] = -1
				unseen++
			}
		}
		for vi, id := range idx {
			if unseen == 0 {
				break
			}
			if first[id] == -1 {
				first[id] = vi
				unseen--
			}
		}
		return true, nil
	}
	return false, nil
}

// DistinctValues returns the values of a constant column (one) or of a
// dictionary column (its entries, by ValueID), or false for a column of
// another kind. Every entry is some value's: a writer adds an entry at
// its first use.
func (b *Block) DistinctValues(col int) ([][]byte, bool, error) {
	c, err := b.loadedCol(col)
	if err != nil {
		return nil, false, err
	}
	switch c.enc {
	case encConst:
		b.constVals = append(b.constVals[:0], c.data)
		return b.constVals, true, nil
	case encDict:
		return c.dict, true, nil
	}
	return nil, false, nil
}

// RowTime returns row k's time, once DecodeTimes has read them.
func (b *Block) RowTime(k int) int64 { return b.times[k] }

// RowTemplate returns row k's template.
func (b *Block) RowTemplate(k int) int { return int(b.tids[k]) }

// RowTemplates returns each row's template, to be read only.
func (b *Block) RowTemplates() []int32 { return b.tids[:b.nrows] }

// NumColumns returns the block's columns.
func (b *Block) NumColumns() int { return len(b.cols) }

// LineColumn returns the column of raw rows' lines, or -1.
func (b *Block) LineColumn() int {
	for i := range b.cols {
		if b.cols[i].flags&colLine != 0 {
			return i
		}
	}
	return -1
}

// ColumnKind returns how column i stores its values.
func (b *Block) ColumnKind(i int) ColumnKind { return columnKinds[b.cols[i].enc] }

// SlotJSON reports what the values of slot s of template t (an in-line
// slot) are in every row of the block as JSON text, as its writer found:
// str, each can stand between the quotes of a JSON string
// (JSONStringContent); value, each is one JSON value other than an
// object (JSONValue). Both false when not, or not known (a part older
// than version 4).
func (b *Block) SlotJSON(t, s int) (str, value bool) {
	f := b.tmpls[t].slots[s].flags
	return f&slotJSONString != 0, f&slotJSONValue != 0
}

// HoleJSON is SlotJSON for the slots of template t's first 64 holes at
// once: bit h of str (value) is SlotJSON's str (value) of the slot of
// hole h.
func (b *Block) HoleJSON(t int) (str, value uint64) {
	tm := &b.tmpls[t]
	return tm.holeStr, tm.holeVal
}

// TemplateRaw reports whether template t stores its rows' lines whole.
func (b *Block) TemplateRaw(t int) bool { return b.tmpls[t].raw }

// TemplateSlots returns how many slots template t has.
func (b *Block) TemplateSlots(t int) int { return len(b.tmpls[t].slots) }

// TemplateDup reports whether a column holds two or more of template t's
// slots (a field named twice in a line): without, a row of the template
// has one value in each column of its slots.
func (b *Block) TemplateDup(t int) bool { return b.tmpls[t].dup }

// SlotColumns returns the column of each slot of template t, to be read
// only.
func (b *Block) SlotColumns(t int) []int32 { return b.tmpls[t].cols }

// SlotColumn returns the column of slot s of template t.
func (b *Block) SlotColumn(t, s int) int { return int(b.tmpls[t].cols[s]) }

// SlotRank returns how many slots of template t before s share its
// column (a field named twice in a line).
func (b *Block) SlotRank(t, s int) int { return b.tmpls[t].nth(s) }

// TemplateLine returns template t's gaps and, for each hole between
// them, its slot: a row's line is gap 0, value(holes[0]), gap 1, … .
// A raw template has no gaps and no holes.
func (b *Block) TemplateLine(t int) (gaps Gaps, holes []int) {
	tm := &b.tmpls[t]
	return tm.gaps, tm.holes
}

// TemplateShape returns the shape of template t's gaps (the zero Shape
// for a raw one): a reader can keep what it works out from the gaps alone
// by shape, for templates of any block.
func (b *Block) TemplateShape(t int) Shape { return b.tmpls[t].shape }

// Value appends value vi of column col (t is the row's time, which time
// columns write) to dst, or returns a view of it; valid until the next
// read into b.
func (b *Block) Value(col, vi int, t int64, dst []byte) (v, out []byte, err error) {
	v, out, _, _, err = b.ValueMeta(col, vi, t, dst)
	return v, out, err
}

// ValueMeta is Value with the value's kind and flags (record.Escaped,
// BadUTF8, SDEscaped), which a reader of its text needs.
func (b *Block) ValueMeta(col, vi int, t int64, dst []byte) (v, out []byte, kind record.Kind, flags record.Flags, err error) {
	// A loaded string column's value is a view, read without the turns
	// below: every row of a block of lines stored whole (LineAt) comes
	// here.
	if c := &b.cols[col]; c.loaded && c.enc == encString && uint(vi) < uint(c.n) {
		if kind, flags = unmeta(c.metaAt(vi)); kind <= record.JSON {
			return c.stringValue(vi), dst, kind, flags, nil
		}
	}
	c, err := b.loadedCol(col)
	if err != nil {
		return nil, dst, 0, 0, err
	}
	if vi < 0 || vi >= c.n {
		return nil, dst, 0, 0, fmt.Errorf("column %q has %d values, not %d", b.Names[col], c.n, vi+1)
	}
	var m byte
	v, out, m, _, err = c.valueAt(vi, dst, t, true)
	kind, flags = unmeta(m)
	return v, out, kind, flags, err
}

// Number returns value vi of an integer or decimal column as the float
// that strconv.ParseFloat gives for its text, without writing the text;
// false for other columns and for values of more than 53 bits (whose
// conversion could round twice).
func (b *Block) Number(col, vi int) (float64, bool) {
	c, err := b.loadedCol(col)
	if err != nil || vi < 0 || vi >= c.n {
		return 0, false // Value reports it
	}
	switch c.enc {
	case encInt, encDecimal:
	default:
		return 0, false
	}
	m, err := c.intAt(vi)
	if err != nil || m <= -1<<53 || m >= 1<<53 {
		return 0, false
	}
	if c.enc == encInt {
		return float64(m), true
	}
	// Both exact: the division rounds once, as ParseFloat does.
	return float64(m) / pow10[c.scales[vi]], true
}

// Numbers appends to dst every value of an integer or decimal column as
// the float64 Number gives for it, and reports whether it could: false
// for another kind of column, or one with a value Number cannot give.
func (b *Block) Numbers(col int, dst []float64) ([]float64, bool) {
	c, err := b.loadedCol(col)
	if err != nil || c.enc != encInt && c.enc != encDecimal || c.decodeInts() != nil {
		return dst, false
	}
	for vi, m := range c.ints[:c.n] {
		if m <= -1<<53 || m >= 1<<53 {
			return dst, false
		}
		f := float64(m)
		if c.enc == encDecimal {
			f /= pow10[c.scales[vi]]
		}
		dst = append(dst, f)
	}
	return dst, true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// ValueID returns, for a constant or dictionary column, an id of value
// vi shared by the equal values of the column (0 to 255), so that a
// reader can work on each distinct value once; -1 for other columns.
func (b *Block) ValueID(col, vi int) int {
	ids, ok := b.ValueIDs(col)
	switch {
	case !ok:
		return -1
	case ids == nil:
		return 0 // a constant
	case vi >= 0 && vi < len(ids):
		return int(ids[vi])
	}
	return -1
}

// ValueIDs returns, for a constant or dictionary column, each value's
// ValueID (nil for a constant column: all are 0), or false.
func (b *Block) ValueIDs(col int) ([]byte, bool) {
	c, err := b.loadedCol(col)
	if err != nil {
		return nil, false // Value reports it
	}
	switch c.enc {
	case encConst:
		return nil, true
	case encDict:
		return c.idx[:c.n], true
	}
	return nil, false
}

// RestID is the entry id EntryIDs gives a value kept with the rest.
const RestID = restID

// EntryIDs returns, for a dictionary-and-rest column (a string column
// of a few frequent values and the rest), each value's entry id (0 to
// 254: the equal values of the column share it, so that a reader can
// work on each entry once) or RestID for a value of the rest; false for
// other columns.
func (b *Block) EntryIDs(col int) ([]byte, bool) {
	c, err := b.loadedCol(col)
	if err != nil || c.enc != encDictRest {
		return nil, false // Value reports the error
	}
	return c.idx[:c.n], true
}

// AppendLine appends the line of the row of template t at cur, whose
// columns the line's values are in must be kept.
func (b *Block) AppendLine(dst []byte, t int, cur *Cursor, time int64) ([]byte, error) {
	tm := &b.tmpls[t]
	if tm.raw {
		v, _, err := b.rawLine(cur, time, nil)
		return append(dst, v...), err
	}
	for hi, si := range tm.holes {
		dst = append(dst, tm.gaps.At(hi)...)
		col := int(tm.cols[si])
		v, scratch, err := b.Value(col, cur.At(col)+tm.nth(si), time, b.scratch[:0])
		b.scratch = scratch
		if err != nil {
			return dst, err
		}
		dst = append(dst, v...)
	}
	return append(dst, tm.gaps.Last()...), nil
}

// LineLengths returns the length of each row's line, AppendLine's, in
// a columnar read (ReadColumns): dst grown to the block's rows, holding
// the length of each row whose bit sel holds (of every row when sel is
// nil; 0 for the others). No line is written: each column's values are
// measured once (a dictionary's by its entries, a number's by its
// digits), a template's gaps and values of one length once, and a row
// adds the lengths of its other values (a time's by its shape).
func (b *Block) LineLengths(sel []uint64, dst []int32) ([]int32, error) {
	if b.mode != readColumns {
		return dst, fmt.Errorf("part: LineLengths of a block not read by ReadColumns")
	}
	n := b.nrows
	dst = grown(dst, n)
	if err := b.DecodeTimes(); err != nil { // a time column's text is its row's time
		return dst, err
	}
	lm := &b.lens
	if err := lm.plan(b); err != nil {
		return dst, err
	}
	lci := b.LineColumn()
	cur := &b.cur
	cur.Start(b, lm.keep)
	for k := range n {
		tid := int(b.tids[k])
		if sel != nil && sel[k>>6]>>(k&63)&1 == 0 {
			dst[k] = 0
			cur.Next(tid)
			continue
		}
		lt := &lm.tmpls[tid]
		size := int(lt.fixed)
		if b.tmpls[tid].raw && lm.keep[lci] {
			size += int(lm.values[lci][cur.At(lci)])
		}
		for _, h := range lm.holes[lt.lo:lt.hi] {
			vi := cur.At(int(h.col)) + int(h.nth)
			if !h.time {
				size += int(lm.values[h.col][vi])
				continue
			}
			c := &b.cols[h.col]
			sh := c.shapes[0]
			if c.idx != nil {
				sh = c.shapes[c.idx[vi]]
			}
			size += sh.Len(b.times[k])
		}
		dst[k] = int32(size)
		cur.Next(tid)
	}
	return dst, nil
}

// lineMeasure is how LineLengths measures a block's lines (scratch kept
// between reads).
type lineMeasure struct {
	values  [][]int32 // per column, its values' lengths (none for a time column)
	uniform []int32   // per column, the one length of its values; -1: they differ; -2: not measured yet
	keep    []bool    // per column, whether a row adds its values' lengths (the cursor keeps it)
	tmpls   []lengthTemplate
	holes   []lengthHole
}

// lengthTemplate: a template's line is fixed bytes long (its gaps, and
// its values in columns of one length) and for each of holes[lo:hi] the
// length of its value.
type lengthTemplate struct {
	fixed  int32
	lo, hi int32
}

type lengthHole struct {
	col, nth int32
	time     bool // a time column: its text is its row's time in a shape
}

// plan measures the columns the lines of block b read and plans each
// template with rows.
func (lm *lineMeasure) plan(b *Block) error {
	lm.values = grown(lm.values, len(b.cols))
	lm.uniform = grown(lm.uniform, len(b.cols))
	lm.keep = grown(lm.keep, len(b.cols))
	for i := range lm.uniform {
		lm.uniform[i], lm.keep[i] = -2, false
	}
	lm.tmpls = grown(lm.tmpls, len(b.tmpls))
	lm.holes = lm.holes[:0]
	lci := b.LineColumn()
	for t := range b.tmpls {
		tm, lt := &b.tmpls[t], &lm.tmpls[t]
		*lt = lengthTemplate{lo: int32(len(lm.holes)), hi: int32(len(lm.holes))}
		if b.perTmpl[t] == 0 {
			continue // unchecked: ReadColumns checks the templates rows have
		}
		if tm.raw {
			if lci < 0 {
				return fmt.Errorf("template %d: raw without a line column", t)
			}
			if err := lm.measure(b, lci); err != nil {
				return err
			}
			if u := lm.uniform[lci]; u >= 0 {
				lt.fixed = u // every line of the block one length (a constant line column)
				continue
			}
			lm.keep[lci] = true
			continue
		}
		lt.fixed = int32(tm.gaps.ends[len(tm.gaps.ends)-1])
		for _, si := range tm.holes {
			col := int(tm.cols[si])
			if err := lm.measure(b, col); err != nil {
				return err
			}
			if u := lm.uniform[col]; u >= 0 {
				lt.fixed += u
				continue
			}
			lm.keep[col] = true
			lm.holes = append(lm.holes, lengthHole{col: int32(col), nth: int32(tm.nth(si)), time: b.cols[col].enc == encTime})
		}
		lt.hi = int32(len(lm.holes))
	}
	return nil
}

// measure sets the lengths of the values of column col of block b as
// Value writes them (values, uniform), once per read.
func (lm *lineMeasure) measure(b *Block, col int) error {
	if lm.uniform[col] != -2 {
		return nil
	}
	c, err := b.loadedCol(col)
	if err != nil {
		return err
	}
	if c.metas != nil {
		for vi, m := range c.metas[:c.n] {
			if kind, _ := unmeta(m); kind > record.JSON {
				return fmt.Errorf("column %q: value %d: kind %d", b.Names[col], vi, kind)
			}
		}
	} else if kind, _ := unmeta(c.meta0); kind > record.JSON && c.n > 0 {
		return fmt.Errorf("column %q: value 0: kind %d", b.Names[col], kind)
	}
	lm.uniform[col] = -1
	switch c.enc {
	case encTime:
		return nil // its values' are their rows'
	case encConst:
		lm.uniform[col] = int32(len(c.data))
		return nil
	case encHex:
		lm.uniform[col] = int32(c.hexLen / 2 * 2)
		return nil
	case encInt, encDecimal:
		if err := c.decodeInts(); err != nil {
			return err
		}
	}
	lens := grown(lm.values[col][:0], c.n)
	switch c.enc {
	case encDict:
		var entry [256]int32
		for id, v := range c.dict {
			entry[id] = int32(len(v))
		}
		for vi, id := range c.idx[:c.n] {
			lens[vi] = entry[id]
		}
	case encDictRest:
		for vi := range lens {
			lens[vi] = int32(len(c.restValue(vi)))
		}
	case encInt:
		for vi, m := range c.ints[:c.n] {
			lens[vi] = int32(timestamp.IntLen(m))
		}
	case encDecimal:
		for vi, m := range c.ints[:c.n] {
			lens[vi] = int32(decimalLen(m, c.scales[vi]))
		}
	default:
		for vi := range lens {
			lens[vi] = int32(len(c.stringValue(vi)))
		}
	}
	lm.values[col] = lens
	return nil
}

// LineAt returns the line of the row of template t at cur, as
// AppendLine: a view of its value when the line is one value whole (a raw
// row, or a template of one hole without gaps), else rebuilt into dst.
// out is dst, perhaps grown; the line is valid until the next read into b
// or dst.
func (b *Block) LineAt(t int, cur *Cursor, time int64, dst []byte) (line, out []byte, err error) {
	tm := &b.tmpls[t]
	switch {
	case tm.raw:
		return b.rawLine(cur, time, dst[:0])
	case tm.whole:
		si := tm.holes[0]
		col := int(tm.cols[si])
		return b.Value(col, cur.At(col)+tm.nth(si), time, dst[:0])
	}
	out, err = b.AppendLine(dst[:0], t, cur, time)
	return out, out, err
}

// rawLine returns the line of the raw row at cur, as Value.
func (b *Block) rawLine(cur *Cursor, time int64, dst []byte) (line, out []byte, err error) {
	lci := b.LineColumn()
	if lci < 0 {
		return nil, dst, fmt.Errorf("raw template without a line column")
	}
	return b.Value(lci, cur.At(lci), time, dst)
}

// NumTemplates returns the block's templates.
func (b *Block) NumTemplates() int { return len(b.tmpls) }

// loadedCol returns column i, loaded.
func (b *Block) loadedCol(i int) (*colData, error) {
	c := &b.cols[i]
	if c.loaded {
		return c, nil
	}
	hd := b.hd
	var kept []byte
	if p := hd.keptColumn(i); p != nil {
		kept = *p
	}
	var ownUpTo int64
	var mem *offHeap
	if hd.cache != nil && hd.cache.admits() {
		ownUpTo, mem = max(maxKeptColumn, hd.cache.budget/keptShare), hd.cache.mem
	}
	var colRaw []byte
	var owned bool
	var err error
	if b.raw, colRaw, owned, err = c.load(b.raw, kept, ownUpTo, mem); err != nil {
		if owned {
			hd.cache.retire(unsafe.SliceData(colRaw))
		}
		return nil, fmt.Errorf("%w: column %q: %v", ErrCorrupt, b.Names[i], err)
	}
	if owned {
		hd.cache.keep(hd, unsafe.SliceData(colRaw), mem.size(colRaw), func() bool { return hd.colRaw[i].CompareAndSwap(nil, &colRaw) })
	}
	return c, nil
}

// The block cache keeps a decompressed column (blockHeader.colRaw) of up
// to maxKeptColumn bytes, or a keptShare of its budget if that is more: a
// dictionary's ids for a full block are 32 KiB, numbers about three bytes
// each; a block of lines stored whole (pushed as Loki lines, text no
// template fits) is a few MB, whose decompression was a third of a warm
// query over them.
const (
	maxKeptColumn = 128 << 10
	keptShare     = 64
)

// Strings returns a column stored as strings (encString): its values'
// bytes end to end and where each ends (value i is data[ends[i-1]:
// ends[i]], the first from 0), views of the block the caller must not
// change or keep; false for columns stored otherwise.
func (b *Block) Strings(col int) (data []byte, ends []uint32, ok bool, err error) {
	c, err := b.loadedCol(col)
	if err != nil || c.enc != encString {
		return nil, nil, false, err
	}
	return c.data, c.ends, true, nil
}

// Every reports whether ok holds for every value of a text column (one
// stored as strings, a dictionary, a dictionary and the rest, or a
// constant), each entry and each other value passed once, in one walk of
// the column's bytes; false for other columns. The value passed views
// the block: ok must not keep it.
func (b *Block) Every(col int, ok func(v []byte) bool) (bool, error) {
	c, err := b.loadedCol(col)
	if err != nil {
		return false, err
	}
	switch c.enc {
	case encConst:
		return ok(c.data), nil
	case encDict:
		for _, e := range c.dict {
			if !ok(e) {
				return false, nil
			}
		}
		return true, nil
	case encDictRest:
		for _, e := range c.dict {
			if !ok(e) {
				return false, nil
			}
		}
		fallthrough // and the rest, stored as strings
	case encString:
		start := uint32(0)
		for _, end := range c.ends {
			if !ok(c.data[start:end]) {
				return false, nil
			}
			start = end
		}
		return true, nil
	}
	return false, nil
}
