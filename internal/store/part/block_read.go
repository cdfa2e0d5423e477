package part

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"unsafe"

	"github.com/sluicelog/sluice/internal/bin"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Block is one decoded block: its rows with their lines rebuilt and their
// fields typed. A row's Stream is the part's stream index and a field's
// Name indexes Names (the message and line columns have the empty name).
//
// A Block is reused across reads: every view into it is valid until the
// next read into it. (Views stay correct while its buffers grow: a grown
// buffer is a new array and the old one keeps its bytes.)
type Block struct {
	Names []string
	Rows  []rows.Row

	// Scan marks a block used by a one-pass scan (a merge, an export,
	// a verification): its reads use what the block cache holds but add
	// no block to it. It is the one setting a caller makes; what a read
	// builds is the entry point's (Reader.ReadRows, ReadLines,
	// CountLines, ReadColumns).
	Scan bool

	mode readMode
	q    LineRead // a ReadLines or CountLines read's question
	// linesOnly: the read leaves each row's Fields and Msg out (a lines
	// read of a block without fields out of its lines).
	linesOnly bool
	counted   int // a CountLines read's answer

	header    blockHeader // a header parsed for this read alone, with its buffers
	times     []int64     // a columnar read's row times
	tids      []int32     // and templates
	perTmpl   []int       // rows per template (columnar reads)
	minTime   int64       // the rows' time range, from the index
	maxTime   int64
	timesRead bool

	hd        *blockHeader // the header of the block read
	rowStored []byte       // its row streams, stored
	rowsRead  bool         // and whether rowParts holds them
	rowParts  rowParts
	rowFlags  []byte // each row's flags, once decodeRows has run
	ownTids   []int32
	ownTimes  []int64
	ownCounts []int // rows per template, when not the skeleton's

	nrows int // rows in the block read, kept or not
	// lm is the state of a read of the lines holding some literals
	// (block_match.go).
	lm        literalMatch
	cur       Cursor // the reads that walk rows: where the row at hand's values are
	used      []int  // walkTemplates: per column, the values the rows use
	scratch   []byte
	constVals [][]byte    // scratch of DistinctValues
	lens      lineMeasure // scratch of LineLengths
	gapBuf    []byte

	fields []rows.Field
	lines  []byte
	vals   []byte
	raw    []byte
	tmpls  []template
	cols   []colData
	values [][]byte // scratch: one row's values by slot
}

// A slot's column is in its template's cols.
type slot struct {
	field int32 // index among the row's fields
	nth   int32 // how many slots before it share its column
	flags byte
}

// apart reports whether s's value is held apart from the line and was
// not parsed from it: structured metadata, in a template whose rows'
// message is their line (template.msgOnly), when it has no role.
func (s slot) apart() bool { return s.flags&(slotInLine|slotMsg|slotParsed) == 0 }

// A template's slices are views of its header's arrays (blockHeader).
type template struct {
	raw     bool
	msgLine bool // tmplMsgLine: the rows' message is their line
	dup     bool // some slot's column is an earlier slot's (its nth is not 0)
	whole   bool // one hole and no gap: the line is the hole's value (Block.LineAt)
	slots   []slot
	cols    []int32 // each slot's column, for the loops over many templates' (SlotColumn)
	holes   []int   // slot of each hole, in line order
	gaps    Gaps    // len(holes)+1 gaps
	shape   Shape   // of the gaps (Block.TemplateShape)
	// holeStr and holeVal: a bit per hole (the first 64) whose slot has
	// slotJSONString, slotJSONValue (Block.HoleJSON).
	holeStr, holeVal uint64
	// colMask has bit c for each column c under 64 of the slots. When it
	// has as many bits as there are slots (no column is a slot's twice,
	// every one is under 64), Cursor.plan finds a template's kept columns
	// by one AND.
	colMask uint64
}

// nth returns how many slots before slot s share its column.
func (t *template) nth(s int) int {
	if !t.dup {
		return 0 // without a look at slots, for the loops over many templates
	}
	return int(t.slots[s].nth)
}

// Gaps are a template's texts between its values, end to end.
type Gaps struct {
	line []byte
	ends []uint32 // where each gap ends in line
}

// Len returns the number of gaps: 0 for a raw template.
func (g Gaps) Len() int { return len(g.ends) }

// At returns gap i.
func (g Gaps) At(i int) []byte {
	var start uint32
	if i > 0 {
		start = g.ends[i-1]
	}
	return g.line[start:g.ends[i]]
}

// Last returns the gap after the last value.
func (g Gaps) Last() []byte { return g.At(len(g.ends) - 1) }

// colData is one column's decoded streams and a cursor over its values.
type colData struct {
	flags, enc byte
	n          int
	meta0      byte
	metas      []byte
	ends       []uint32 // encString; encDictRest's rest
	data       []byte   // encString, encDictRest's rest, encConst (the value), encHex
	hexLen     int
	dict       [][]byte
	idx        []byte   // encDict, encDictRest; encTime with several shapes
	restAt     []uint32 // encDictRest: each value's place among the rest
	ints       []int64  // encInt, encDecimal: the numbers, once decoded (decodeInts)
	scales     []byte
	// encInt, encDecimal: the numbers' varints, and where intAt read last
	// (the varint intsAt starts at intsOff) and how much it did.
	varints             []byte
	intsAt, intsOff     int
	intsReads, intsNext int // reads, and of them reads a little after the last
	intsSkipped         int
	intsDone, intsOK    bool // decoded; and without an error
	intsErr             error
	shapes              []timestamp.Shape
	nums                bin.Reader // stored numbers, for encodings without their own
	i                   int
	stored              []byte // the column's stored stream, until load
	loaded              bool
	dictHas             []known // block_match.go: per literal and entry, whether it holds the literal
	grams               []byte  // the values' gram filter, if the column has one
}

// reset empties c for the next block, keeping its buffers.
func (c *colData) reset() {
	*c = colData{dict: c.dict[:0], ints: c.ints[:0], ends: c.ends[:0], shapes: c.shapes[:0], dictHas: c.dictHas[:0],
		restAt: c.restAt[:0]}
}

// decodeBlock decodes a block of the given stream into b: body, its
// bytes after the header stream, and hd, its header.
func decodeBlock(body []byte, hd *blockHeader, stream uint32, b *Block) error {
	nrows := hd.nrows
	b.tmpls = hd.tmpls
	b.linesOnly = b.mode == readLines || b.mode == readCount
	if b.linesOnly && b.q.Meta && hd.outOfLine() {
		if b.mode == readCount {
			return ErrOutOfLine
		}
		b.linesOnly = false // its rows' fields may be metadata the caller wants
	}
	// A lines read with clauses, or for the newest rows, keeps only the
	// rows holding them (block_match.go); one that reads the rows in full
	// tests none.
	matching := b.linesOnly && (len(b.q.Contains) > 0 || b.q.Newest > 0)
	h := bin.NewReader(hd.rest)
	ncols := h.Count("column count", 4)
	rowLen := h.Uvarint("row streams length")
	if err := h.Err(); err != nil {
		return fmt.Errorf("block header: %w", err)
	}
	if rowLen > uint64(len(body)) {
		return fmt.Errorf("row streams length %d beyond the block", rowLen)
	}

	b.hd, b.nrows = hd, nrows
	b.rowStored, b.rowsRead = body[:rowLen], false
	// Reads that walk the rows' templates (decodeRows) take them from the
	// header's row skeleton when it has one, and decompress the row
	// streams only if they need times.
	walks := b.mode == readColumns || matching
	if !walks || hd.skeleton.Load() == nil {
		if err := b.readRowStreams(); err != nil {
			return err
		}
	}

	b.cols = grown(b.cols, ncols)
	b.Names = b.Names[:0]
	cr := bin.NewReader(body[rowLen:])
	for i := range ncols {
		name := h.String("column name")
		c := &b.cols[i]
		c.reset()
		b.raw = c.decode(&h, &cr, b.raw)
		if err := h.Err(); err != nil {
			return fmt.Errorf("column %d (%q) directory: %w", i, name, err)
		}
		if err := cr.Err(); err != nil {
			return fmt.Errorf("column %d (%q): %w", i, name, err)
		}
		b.Names = append(b.Names, name)
		switch {
		case b.mode == readColumns || matching: // those load a column at its first use
		case b.mode == readLines:
			// A query's read of lines: what it decompresses may be kept
			// for the next (loadedCol).
			if _, err := b.loadedCol(i); err != nil {
				return fmt.Errorf("column %d: %w", i, err)
			}
		default:
			var err error
			if b.raw, _, _, err = c.load(b.raw, nil, 0, nil); err != nil {
				return fmt.Errorf("column %d (%q): %w", i, name, err)
			}
		}
	}
	h.Done("block header")
	cr.Done("columns")
	if err := h.Err(); err != nil {
		return fmt.Errorf("block header: %w", err)
	}
	if err := cr.Err(); err != nil {
		return fmt.Errorf("columns: %w", err)
	}
	b.Rows = b.Rows[:0]
	b.times, b.tids = b.times[:0], b.tids[:0]
	if b.mode == readColumns {
		return b.decodeRows()
	}
	rs := &b.rowParts
	if matching {
		return b.assembleMatching(nrows, stream)
	}
	return b.assemble(nrows, stream, rs.times, rs.subms, rs.tids, rs.flags, rs.spans)
}

// ErrOutOfLine is returned by a CountLines read with Meta of a block that
// has fields stored out of its lines: its rows must be read instead.
var ErrOutOfLine = errors.New("part: the block's rows have fields out of their lines")

// OutOfLine reports whether a row of the block last read has a field
// stored out of its line (see LineRead.Meta).
func (b *Block) OutOfLine() bool { return b.hd != nil && b.hd.outOfLine() }

// outOfLine reports whether a row of the block may have structured
// metadata: a template whose rows' message is their line (its one hole,
// or tmplMsgLine), or that keeps its line raw, has a field stored out of
// the line. (Lines of sluice's own formats are more than their message,
// or their message is a field.)
func (hd *blockHeader) outOfLine() bool { return hd.ool }

// findOutOfLine appends to dst the columns of the fields that may be
// structured metadata (each once), as parseHeader ends: a field held
// apart from the line (not parsed from it) of a template whose rows'
// message is their line.
func (hd *blockHeader) findOutOfLine(dst []int32) []int32 {
	for i := range hd.tmpls {
		t := &hd.tmpls[i]
		if !t.msgOnly() {
			continue
		}
		for si, sl := range t.slots {
			if c := t.cols[si]; sl.apart() && !slices.Contains(dst, c) {
				dst = append(dst, c)
			}
		}
	}
	return dst
}

// msgOnly reports whether the rows of t may have their line as their
// message: its one hole is the message, with no text around it, or it
// says so (tmplMsgLine), or its line is empty; a raw template's rows may
// (their message spans tell).
func (t *template) msgOnly() bool {
	return t.raw || t.msgLine ||
		len(t.holes) == 0 && len(t.gaps.Last()) == 0 ||
		len(t.holes) == 1 && t.slots[t.holes[0]].flags&slotMsg != 0 && len(t.gaps.At(0)) == 0 && len(t.gaps.Last()) == 0
}

// MetaSlots appends to dst the slots of template t whose values are
// structured metadata of each of its rows, by the rule of
// rows.Row.IsMetadata but for the value's kind (ValueMeta tells it): a
// field with no role held apart from a line that is the row's message.
// It reports false when only the rows can tell: a raw template's rows
// with such fields, whose messages may be their lines or not.
func (b *Block) MetaSlots(t int, dst []int) ([]int, bool) {
	tm := &b.tmpls[t]
	if !tm.msgOnly() {
		return dst, true
	}
	for s, sl := range tm.slots {
		if !sl.apart() || sl.flags&slotRoleMsk != 0 {
			continue
		}
		if tm.raw {
			return dst, false
		}
		dst = append(dst, s)
	}
	return dst, true
}

// MetaColumns returns the columns (indexes of Names) of the block's
// fields that may be structured metadata (a field held apart from a line
// that is its row's message: see OutOfLine), each once. A reader that
// asks none of their names as labels may read the block's columns as
// if its rows had no metadata. The caller must not change it.
func (b *Block) MetaColumns() []int32 {
	if b.hd == nil {
		return nil
	}
	return b.hd.meta
}

// rowParts are a block's row streams, decompressed.
type rowParts struct {
	times, subms, tids, flags, spans []byte
}

// readRowStreams decompresses the block's row streams into b.rowParts,
// once per read.
func (b *Block) readRowStreams() error {
	if b.rowsRead {
		return nil
	}
	sd := bin.NewReader(b.rowStored)
	var raw []byte
	raw, b.raw = readStream(&sd, b.raw)
	sd.Done("row streams")
	rd := bin.NewReader(raw)
	b.rowParts = rowParts{times: rd.BytesN("times"), subms: rd.BytesN("sub-millisecond times"),
		tids: rd.BytesN("template ids"), flags: rd.BytesN("row flags"), spans: rd.BytesN("message spans")}
	rd.Done("row streams")
	if err := firstErr(sd.Err(), rd.Err()); err != nil {
		return fmt.Errorf("row streams: %w", err)
	}
	if len(b.rowParts.flags) != b.nrows {
		return fmt.Errorf("%d row flags for %d rows", len(b.rowParts.flags), b.nrows)
	}
	b.rowsRead = true
	return nil
}

// grown returns s with length n, keeping its elements' buffers.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		s = append(s[:cap(s)], make([]T, n-cap(s))...)
	}
	return s[:n]
}

// shapeSeeds seed the two hashes of a template shape, for as long as the
// process lives.
var shapeSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// Shape is a 128-bit hash of a template's gaps, each with its length:
// two templates of equal shape have equal gaps but for a chance of 2^-128
// (the seeds are random, so no input is made to collide).
type Shape [2]uint64

func gapsShape(gaps Gaps) Shape {
	var sh Shape
	var n [binary.MaxVarintLen64]byte
	for i, seed := range shapeSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		for _, e := range gaps.ends {
			h.Write(n[:binary.PutUvarint(n[:], uint64(e))])
		}
		h.Write(gaps.line)
		sh[i] = h.Sum64()
	}
	return sh
}

// parseTemplate decodes a template into t, its slots, holes and gaps
// appended to h's arrays (parseHeader points t at them when they stop
// growing).
func (h *blockHeader) parseTemplate(enc []byte, t *template) error {
	r := bin.NewReader(enc)
	mode := r.Byte("template mode")
	*t = template{raw: mode == tmplRaw, msgLine: mode&tmplMsgLine != 0}
	if mode&^tmplMsgLine > tmplRaw || mode == tmplRaw|tmplMsgLine {
		r.Fail("template mode")
	}
	s0, c0 := len(h.slots), len(h.cols)
	h.slots = grown(h.slots, s0+r.Count("template slots", 2))
	t.slots = h.slots[s0:]
	var field int32
	for i := range t.slots {
		col := int32(r.Bounded("slot column", 1<<20))
		sl := slot{field: field, flags: r.Byte("slot flags")}
		if sl.flags&slotMsg == 0 {
			field++
		}
		// A field named twice in a line (JSON's duplicate keys) is two
		// slots of one column, whose values follow each other.
		for _, prev := range h.cols[c0:] {
			if prev == col {
				sl.nth++
				t.dup = true
			}
		}
		t.slots[i] = sl
		h.cols = append(h.cols, col)
		if col < 64 {
			t.colMask |= 1 << col
		}
	}
	if !t.raw {
		h0, l0, e0 := len(h.holes), len(h.line), len(h.ends)
		h.holes = grown(h.holes, h0+r.Count("template holes", 2))
		t.holes = h.holes[h0:]
		gap := func() {
			h.line = append(h.line, r.BytesN("gap")...)
			h.ends = append(h.ends, uint32(len(h.line)-l0))
		}
		for i := range t.holes {
			t.holes[i] = int(r.Bounded("hole slot", uint64(len(t.slots))))
			gap()
			if r.Err() == nil && (t.holes[i] >= len(t.slots) || t.slots[t.holes[i]].flags&slotInLine == 0) {
				r.Fail("hole slot")
			}
		}
		gap()
		t.gaps = Gaps{line: h.line[l0:], ends: h.ends[e0:]}
		t.shape = gapsShape(t.gaps)
		t.whole = len(t.holes) == 1 && len(h.line) == l0
	}
	// Every in-line slot is exactly one hole, and a raw template has
	// none: the reader relies on it to place values in the line.
	seen := grown(h.seen, len(t.slots))
	h.seen = seen
	clear(seen)
	for _, hs := range t.holes {
		if hs < len(seen) && seen[hs] {
			r.Fail("hole slot repeated")
		}
		if hs < len(seen) {
			seen[hs] = true
		}
	}
	for i, hs := range t.holes[:min(len(t.holes), 64)] {
		if hs < len(t.slots) {
			f := t.slots[hs].flags
			t.holeStr |= uint64(f&slotJSONString) / slotJSONString << i
			t.holeVal |= uint64(f&slotJSONValue) / slotJSONValue << i
		}
	}
	for i, sl := range t.slots {
		if (sl.flags&slotInLine != 0) != seen[i] {
			r.Fail("in-line slot without a hole")
		}
		if sl.flags&^(slotInLine|slotMsg|slotRoleMsk|slotJSONString|slotJSONValue|slotParsed) != 0 || sl.flags&slotRoleMsk>>slotRoleSh > byte(record.RoleMsg) ||
			sl.flags&(slotJSONString|slotJSONValue) != 0 && sl.flags&slotInLine == 0 ||
			sl.flags&slotParsed != 0 && sl.flags&(slotInLine|slotMsg) != 0 ||
			t.msgLine && sl.flags&slotMsg != 0 { // two messages
			r.Fail("slot flags")
		}
	}
	r.Done("template")
	if err := r.Err(); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return nil
}

// decode reads the column's directory entry from h and its streams from
// cr, decompressing into raw, which it returns grown.
func (c *colData) decode(h, cr *bin.Reader, raw []byte) []byte {
	flags := h.Byte("column flags")
	c.flags = flags
	c.enc = h.Byte("column encoding")
	c.n = int(h.Bounded("value count", maxBlockRows*1024))
	c.meta0 = h.Byte("column meta")
	switch c.enc { // the encodings with directory parameters (enc_*.go)
	case encHex:
		c.hexParams(h)
	case encTime:
		c.timeParams(h)
	case encString, encConst, encDict, encInt, encDecimal, encDictRest:
	default:
		h.Fail("column encoding")
	}
	if flags&colMinMax != 0 {
		h.Bytes(16, "min and max")
	}
	if flags&colGrams != 0 {
		c.grams = h.BytesN("gram filter")
		if h.Err() == nil && !validGramFilter(c.grams) {
			h.Fail("gram filter size")
		}
	}
	colLen := h.Uvarint("column length")
	if h.Err() != nil {
		return raw
	}
	c.stored = cr.Bytes(colLen, "column")
	return raw
}

// load decompresses and decodes the column's values (which a columnar
// read leaves for the first use), appending what it decompresses to raw.
// kept, when not nil, is the column's stream decompressed by an earlier
// read (blockHeader.colRaw), decoded without decompressing it again.
// A stream compressed to at most ownUpTo bytes decompressed goes to a
// buffer of its own from mem instead, for the block cache to keep
// (owned): no copy of it is made. load returns the stream it
// decoded.
func (c *colData) load(raw, kept []byte, ownUpTo int64, mem *offHeap) (_, colRaw []byte, owned bool, _ error) {
	if c.loaded {
		return raw, nil, false, nil
	}
	c.loaded = true
	if kept != nil {
		colRaw = kept
	} else {
		cd := bin.NewReader(c.stored)
		var own []byte
		if n, ok := compressedLen(c.stored); ok && ownUpTo > 0 && n <= uint64(ownUpTo) {
			own = mem.alloc(int(n))[:0]
			colRaw, _ = readStream(&cd, own)
		} else {
			colRaw, raw = readStream(&cd, raw)
		}
		cd.Done("column")
		if err := cd.Err(); err != nil {
			if own != nil {
				mem.release(unsafe.SliceData(own)) // the stream is bad: nothing saw it
			}
			return raw, nil, false, err
		}
		owned = own != nil
	}
	r := bin.NewReader(colRaw)
	if c.meta0 == 0xff {
		c.metas = r.BytesN("column part")
		if r.Err() == nil && len(c.metas) != c.n {
			r.Fail("meta count")
		}
	}
	switch c.enc { // enc_*.go
	case encConst:
		c.data = r.BytesN("column part")
	case encDict:
		c.loadDict(&r)
	case encInt, encDecimal:
		c.loadNumbers(&r)
	case encHex:
		c.loadHex(&r)
	case encTime:
		c.loadTimes(&r)
	case encString:
		c.loadStrings(&r)
	case encDictRest:
		c.loadDictRest(&r)
	}
	if c.enc != encInt && c.enc != encDecimal && c.enc != encTime && r.Len() > 0 {
		c.nums = bin.NewReader(r.BytesN("column part"))
	}
	r.Done("column")
	return raw, colRaw, owned, r.Err()
}

// next appends value i of the column to dst when it must be rendered, and
// returns its bytes, meta and number. t is the row's time.
func (c *colData) next(dst []byte, t int64, linesOnly bool) (v, out []byte, m byte, num uint64, err error) {
	if c.i >= c.n {
		return nil, dst, 0, 0, fmt.Errorf("column has only %d values", c.n)
	}
	if c.i == 0 && (c.enc == encInt || c.enc == encDecimal) {
		c.decodeInts() // every value is read, in order (its error comes with the first)
	}
	c.i++
	return c.valueAt(c.i-1, dst, t, linesOnly)
}

// metaAt returns value i's meta byte (its kind and flags).
func (c *colData) metaAt(i int) byte {
	if c.metas != nil {
		return c.metas[i]
	}
	return c.meta0
}

// valueAt returns value i of the column, as next. With linesOnly it
// reads no stored number, so values can be read in any order; without,
// values must be read in order (next does).
func (c *colData) valueAt(i int, dst []byte, t int64, linesOnly bool) (v, out []byte, m byte, num uint64, err error) {
	m = c.metaAt(i)
	kind, _ := unmeta(m)
	if kind > record.JSON {
		return nil, dst, 0, 0, fmt.Errorf("value %d: kind %d", i, kind)
	}
	switch c.enc {
	case encConst:
		v = c.data
	case encDict:
		v = c.dict[c.idx[i]]
	case encDictRest:
		v = c.restValue(i)
	case encInt:
		n, err := c.intAt(i)
		if err != nil {
			return nil, dst, 0, 0, err
		}
		start := len(dst)
		dst = strconv.AppendInt(dst, n, 10)
		return dst[start:], dst, m, uint64(n), nil
	case encDecimal:
		v, dst, num, err = c.decimalValue(i, dst, linesOnly)
		return v, dst, m, num, err
	case encHex:
		start := len(dst)
		dst = c.appendHexValue(dst, i)
		return dst[start:], dst, m, 0, nil
	case encTime:
		v, dst, num, err = c.timeValue(i, dst, t, kind == record.Int && !linesOnly)
		return v, dst, m, num, err
	default:
		v = c.stringValue(i)
	}
	if linesOnly {
		return v, dst, m, 0, nil // the numbers part is never read
	}
	switch kind {
	case record.Int, record.Bool:
		num = uint64(c.nums.Varint("number"))
	case record.Float:
		num = c.nums.Uint64("number")
	}
	if err := c.nums.Err(); err != nil {
		return nil, dst, 0, 0, err
	}
	return v, dst, m, num, nil
}

func newRowStreams(times, subms, tids []byte, ntmpl int) rowStreams {
	return rowStreams{times: times, subms: subms, tids: tids, ntmpl: ntmpl}
}

// next returns row k's time and template.
func (rs *rowStreams) next(k int) (int64, int, error) {
	t, err := rs.nextTime(k)
	if err != nil {
		return 0, 0, err
	}
	tid, n := binary.Uvarint(rs.tids)
	if n <= 0 || tid >= uint64(rs.ntmpl) {
		return 0, 0, fmt.Errorf("row %d: template id: bad, missing or not one of %d", k, rs.ntmpl)
	}
	rs.tids = rs.tids[n:]
	return t, int(tid), nil
}

// nextTime returns row k's time.
func (rs *rowStreams) nextTime(k int) (int64, error) {
	d, n := binary.Varint(rs.times)
	if n <= 0 {
		return 0, fmt.Errorf("row %d: time: bad or missing varint", k)
	}
	rs.times = rs.times[n:]
	sub, n := binary.Uvarint(rs.subms)
	if n <= 0 || sub >= 1e6 {
		return 0, fmt.Errorf("row %d: sub-millisecond time: bad, missing or out of range", k)
	}
	rs.subms = rs.subms[n:]
	rs.ms += d
	return rs.ms*1e6 + int64(sub), nil
}

// done checks that the streams held exactly the rows read.
func (rs *rowStreams) done() error {
	if len(rs.times)+len(rs.subms)+len(rs.tids) != 0 {
		return fmt.Errorf("row streams: %d, %d and %d bytes left after the rows", len(rs.times), len(rs.subms), len(rs.tids))
	}
	return nil
}

// rowOf is a row's time, stream and flags, the rest of it to be filled.
func rowOf(t int64, stream uint32, flags byte) rows.Row {
	r := rows.Row{Time: t, Stream: stream, MsgFlags: record.Flags(flags >> rowMsgFlagsSh)}
	if flags&rowFromReceive != 0 {
		r.TimeSource = record.FromReceive
	}
	return r
}

// checkUsed checks that the rows used every value of every column:
// used(i) is how many of column i's values they used.
func (b *Block) checkUsed(used func(i int) int) error {
	for i := range b.cols {
		if c := &b.cols[i]; used(i) != c.n {
			return fmt.Errorf("column %q: %d values, %d used", b.Names[i], c.n, used(i))
		}
	}
	return nil
}

// assemble rebuilds each row from its template and the column values.
func (b *Block) assemble(nrows int, stream uint32, times, subms, tids, rowFlags, msgSpans []byte) error {
	rs, mr := newRowStreams(times, subms, tids, len(b.tmpls)), bin.NewReader(msgSpans)
	b.Rows = b.Rows[:0]
	var lc *colData
	for i := range b.cols {
		if b.cols[i].flags&colLine != 0 {
			lc = &b.cols[i]
		}
	}
	for k := range nrows {
		t, tid, err := rs.next(k)
		if err != nil {
			return err
		}
		tm := &b.tmpls[tid]
		fl := rowFlags[k]
		r := rowOf(t, stream, fl)

		// Values by slot; in-line ones are copied into the line below.
		b.values = b.values[:0]
		fieldStart := len(b.fields)
		for si, s := range tm.slots {
			col := int(tm.cols[si])
			if col >= len(b.cols) {
				return fmt.Errorf("row %d: slot %d column %d of %d", k, si, col, len(b.cols))
			}
			c := &b.cols[col]
			if (s.flags&slotMsg != 0) != (c.flags&colMsg != 0) || c.flags&colLine != 0 {
				return fmt.Errorf("row %d: slot %d names the wrong kind of column", k, si)
			}
			v, vals, m, num, err := c.next(b.vals, t, b.linesOnly)
			b.vals = vals
			if err != nil {
				return fmt.Errorf("row %d: column %q: %w", k, b.Names[col], err)
			}
			b.values = append(b.values, v)
			if b.linesOnly {
				continue
			}
			if s.flags&slotMsg != 0 {
				r.Msg = v
				continue
			}
			kind, flags := unmeta(m)
			b.fields = append(b.fields, rows.Field{Name: uint32(col), Kind: kind, Flags: flags,
				Role: record.Role(s.flags & slotRoleMsk >> slotRoleSh), Value: v, Num: num, FromLine: s.flags&slotParsed != 0})
		}

		lineStart := len(b.lines)
		if tm.raw {
			if lc == nil {
				return fmt.Errorf("row %d: raw template without a line column", k)
			}
			v, vals, _, _, err := lc.next(b.vals, t, b.linesOnly)
			b.vals = vals
			if err != nil {
				return fmt.Errorf("row %d: line: %w", k, err)
			}
			r.Line = v
			if fl&rowMsgSpan != 0 {
				off, n := mr.Uvarint("message offset"), mr.Uvarint("message length")
				if err := mr.Err(); err != nil || off > uint64(len(v)) || n > uint64(len(v))-off {
					return fmt.Errorf("row %d: message span", k)
				}
				if !b.linesOnly {
					r.Msg, r.MsgInLine, r.MsgOff = v[off:off+n:off+n], true, uint32(off)
				}
			}
		} else if len(tm.holes) == 1 && len(tm.gaps.line) == 0 {
			// One value and no text around it (a line stored whole as its
			// message): the line is the value, not a copy of it, as a raw
			// row's is the line column's.
			si := tm.holes[0]
			v := b.values[si]
			r.Line = v[:len(v):len(v)]
			if !b.linesOnly {
				if tm.slots[si].flags&slotMsg != 0 {
					r.MsgInLine, r.MsgOff = true, 0
				} else {
					b.fields[fieldStart+int(tm.slots[si].field)].Off = 0
				}
			}
		} else {
			for hi, si := range tm.holes {
				b.lines = append(b.lines, tm.gaps.At(hi)...)
				off := uint32(len(b.lines) - lineStart)
				b.lines = append(b.lines, b.values[si]...)
				if b.linesOnly {
					continue
				}
				if tm.slots[si].flags&slotMsg != 0 {
					r.MsgInLine, r.MsgOff = true, off
				} else {
					b.fields[fieldStart+int(tm.slots[si].field)].Off = off
				}
			}
			b.lines = append(b.lines, tm.gaps.Last()...)
			r.Line = b.lines[lineStart:len(b.lines):len(b.lines)]
		}
		if b.linesOnly {
			b.Rows = append(b.Rows, r)
			continue
		}
		if tm.msgLine {
			r.Msg, r.MsgInLine, r.MsgOff = r.Line, true, 0
		}
		// Point in-line values into the rebuilt line.
		for si, s := range tm.slots {
			if s.flags&slotInLine == 0 || tm.raw {
				continue
			}
			if s.flags&slotMsg != 0 {
				r.Msg = r.Line[r.MsgOff : int(r.MsgOff)+len(r.Msg)]
				continue
			}
			f := &b.fields[fieldStart+int(tm.slots[si].field)]
			f.InLine = true
			f.Value = r.Line[f.Off : int(f.Off)+len(f.Value)]
		}
		if r.Msg == nil {
			for j := fieldStart; j < len(b.fields); j++ {
				if f := &b.fields[j]; f.Role == record.RoleMsg {
					r.Msg, r.MsgFlags, r.MsgInLine, r.MsgOff = f.Value, f.Flags, f.InLine, f.Off
					break
				}
			}
		}
		r.Fields = b.fields[fieldStart:len(b.fields):len(b.fields)]
		b.Rows = append(b.Rows, r)
	}
	mr.Done("message spans")
	if err := firstErr(rs.done(), mr.Err()); err != nil {
		return err
	}
	return b.checkUsed(func(i int) int { return b.cols[i].i })
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
