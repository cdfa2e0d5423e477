package part

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"unsafe"

	"github.com/sluicelog/sluice/internal/bin"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Limits of one block. A stream with more rows spans several blocks.
// The writer closes a block at blockRows rows; a reader accepts up to
// maxBlockRows (what parts written before may hold).
const (
	maxBlockRows      = 32 << 10
	blockRows         = maxBlockRows
	maxBlockBytes     = 8 << 20 // of original lines
	maxBlockTemplates = 4096
)

// Column flags.
const (
	colMsg    = 1 << 0 // holds messages that are no field's value
	colLine   = 1 << 1 // holds whole lines that no template fits
	colMinMax = 1 << 2 // the directory entry has the numeric min and max
	colGrams  = 1 << 3 // the directory entry has the values' gram filter (grams.go)
)

// Column encodings.
const (
	encString   = iota // lengths and bytes
	encConst           // one value
	encDict            // up to 256 distinct values and a byte per value
	encInt             // decimal int64 text: the numbers
	encDecimal         // decimal fractions: mantissa and scale
	encHex             // lowercase hex of one even length: the bytes
	encTime            // the row's time written in one of a few shapes
	encDictRest        // a dictionary of the frequent values, the rest as strings
)

// Slot flags in a template.
const (
	slotInLine  = 1 << 0 // the value is a hole of the line
	slotMsg     = 1 << 1 // the value is the message (a colMsg column)
	slotRoleSh  = 2      // bits 2–3: record.Role
	slotRoleMsk = 3 << slotRoleSh
	// Version 4 on, in-line slots only (jsontext.go): every value the
	// slot takes in the block's rows is JSONStringContent, or a JSONValue.
	slotJSONString = 1 << 4
	slotJSONValue  = 1 << 5
	// Version 7 on: the value was parsed from the line, but is no hole
	// of it (a raw template's, or one a message's hole overlapped), so
	// it is no structured metadata (rows.Field.FromLine).
	slotParsed = 1 << 6
)

// Template modes.
const (
	tmplHoles = 0 // the line is gaps and holes
	tmplRaw   = 1 // the line is the value of the line column
	// Version 7 on, with tmplHoles: the rows' message is their whole
	// line (a Loki push's), whose holes are fields parsed from it (a
	// JSON line's keys, a pattern's captures). Without it such a message
	// took a hole of its own, which left no room for the fields' holes:
	// they were stored again apart from the line, and a query could not
	// read them as columns of the line.
	tmplMsgLine = 2
)

// Row flags, one byte per row.
const (
	rowFromReceive = 1 << 0
	rowMsgSpan     = 1 << 1 // raw row: the message is a span of the line
	rowMsgFlagsSh  = 4      // bits 4–7: the message's record.Flags
)

// meta packs a value's kind and flags in a byte.
func meta(k record.Kind, f record.Flags) byte { return byte(k) | byte(f)<<3 }

func unmeta(m byte) (record.Kind, record.Flags) { return record.Kind(m & 7), record.Flags(m >> 3) }

// column accumulates one column's values while a block is built.
type column struct {
	name  string
	flags byte
	data  []byte   // raw values, concatenated
	ends  []uint32 // end of each value in data
	meta  []byte
	nums  []uint64
	rows  []uint32 // the row of each value
	time  bool     // every value is its row's time field
	// The value last put in the block's text alone (addLineText), and
	// the last whose JSON flags were worked out (add): the flags checked
	// and those that held.
	textVal, jsonVal   []byte
	textOK, jsonOK     bool
	jsonMask, jsonHeld byte
}

func (c *column) reset() {
	c.data, c.ends, c.meta, c.nums, c.rows = c.data[:0], c.ends[:0], c.meta[:0], c.nums[:0], c.rows[:0]
	c.time = true
	c.textOK, c.jsonOK = false, false
}

func (c *column) add(v []byte, m byte, num uint64, row int, isTime bool) {
	c.data = append(c.data, v...)
	c.ends = append(c.ends, uint32(len(c.data)))
	c.meta = append(c.meta, m)
	c.nums = append(c.nums, num)
	c.rows = append(c.rows, uint32(row))
	c.time = c.time && isTime
}

func (c *column) value(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.data[start:c.ends[i]]
}

// colKey identifies a column: a field name, or the message or line column.
type colKey struct {
	name  string
	flags byte
}

// blockWriter accumulates the rows of one block of one stream.
type blockWriter struct {
	times    []int64
	rowFlags []byte
	tmplIDs  []uint32
	msgSpans []byte // uvarint offset and length per raw row with rowMsgSpan

	tmplIndex map[string]uint32
	tmpls     []byte // encoded templates, one after another
	nTmpls    int
	// The JSON flags of the templates' slots, known once every row is
	// in: per template (from slotsAt), per slot, the flags that hold so
	// far and where its flags byte is in tmpls.
	slotJSON    []byte
	slotFlagOff []int
	slotsAt     []int

	cols     []*column
	colIndex map[colKey]int
	spare    []*column

	// names maps a source's name table (identified by its first
	// element's address) to column indexes, so that a field costs a slice
	// index, not a map lookup.
	namesKey  *string
	namesCol  []int32
	namesSeen map[*string][]int32 // the other tables met in this block
	msgCol    int                 // the message column, or -1
	lineCol   int                 // the line column, or -1

	lineBytes int
	// outOfLine: encode found a template whose rows may have a field out
	// of their line (blockHeader.outOfLine), parsing the header into hd.
	outOfLine bool
	hd        blockHeader
	// text holds, for the token filter, the block's lines, or pieces of
	// them with the same tokens (addLineText), each followed by '\n'.
	text []byte
	// textTmpl says, per template, whether its gaps are in text.
	textTmpl []bool
	// digitRun is the longest value left out of text for being all
	// digits: tokens the filter does not index, but that count in the
	// block's longest token.
	digitRun  int
	fieldCols []int    // scratch of add: the column of each field
	slotIn    []byte   // scratch of templateKey: slotInLine of each slot with a hole
	msgLine   bool     // the row being added has tmplMsgLine (see add)
	tokens    tokenSet // scratch of encode
	filter    []byte   // encode's output: the token filter
	key       []byte   // scratch: the template being built
	holes     []hole   // scratch
	body      []byte   // scratch: encoded column streams
	col       []byte   // scratch: one column's parts before compression
	scratch   []byte
	dict      map[string]uint8
	shapes    []timestamp.Shape
	hex       []byte // chooseEncoding's decoding of a hex column
	// chooseEncoding's dictionary of a column: entries, index of each value
	dictEntries, dictIdx []byte
	// and, for encDictRest, the rest's lengths and bytes, and the counts
	// of a sample of values, and of the rest's values by hash
	restLens, restData []byte
	sampled            map[string]uint8
	restCounts         map[uint64]restCount
	restSeed           maphash.Seed
	promote            []restCount
	fast               bool // compress for speed: the part will soon be merged
	noFilter           bool // leave the token and gram filters out
	plain              bool // no fast paths (WriterOptions.plain)
	grams              *gramSet
	gramBuf            []byte
	shapeIdx           []byte // timeShapes' shape of each value

	// The template of the block's last row, and its id: rows of a stream
	// mostly have the template of the row before, found without the map.
	lastKey []byte
	lastID  uint32
	lastOK  bool
}

type hole struct {
	off, end uint32
	slot     int
}

func newBlockWriter() *blockWriter {
	return &blockWriter{tmplIndex: make(map[string]uint32), colIndex: make(map[colKey]int), dict: make(map[string]uint8),
		namesSeen: make(map[*string][]int32), msgCol: -1, lineCol: -1}
}

// specialColumn returns the message or line column, creating it once.
func (w *blockWriter) specialColumn(flags byte) int {
	p := &w.msgCol
	if flags == colLine {
		p = &w.lineCol
	}
	if *p < 0 {
		*p = w.column(colKey{flags: flags})
	}
	return *p
}

func (w *blockWriter) reset() {
	w.times, w.rowFlags, w.tmplIDs, w.msgSpans = w.times[:0], w.rowFlags[:0], w.tmplIDs[:0], w.msgSpans[:0]
	clear(w.tmplIndex)
	w.tmpls, w.nTmpls = w.tmpls[:0], 0
	w.slotJSON, w.slotFlagOff, w.slotsAt = w.slotJSON[:0], w.slotFlagOff[:0], w.slotsAt[:0]
	for _, c := range w.cols {
		c.reset()
		w.spare = append(w.spare, c)
	}
	w.cols = w.cols[:0]
	clear(w.colIndex)
	w.namesKey, w.namesCol = nil, nil
	clear(w.namesSeen)
	w.msgCol, w.lineCol = -1, -1
	w.lineBytes = 0
	w.text = w.text[:0]
	w.textTmpl = w.textTmpl[:0]
	w.digitRun = 0
	w.lastOK = false
	// The Writer has read the block's longest token (its index entry):
	// a block without filters, which leaves tokens alone, must say 0,
	// not what a pooled writer's last block had.
	w.tokens.longest = 0
}

func (w *blockWriter) rows() int { return len(w.times) }

func (w *blockWriter) full() bool {
	return len(w.times) >= blockRows || w.lineBytes >= maxBlockBytes
}

func (w *blockWriter) column(k colKey) int {
	if i, ok := w.colIndex[k]; ok {
		return i
	}
	var c *column
	if n := len(w.spare); n > 0 {
		c, w.spare = w.spare[n-1], w.spare[:n-1]
	} else {
		c = new(column)
	}
	c.reset()
	c.name, c.flags = k.name, k.flags
	w.cols = append(w.cols, c)
	w.colIndex[k] = len(w.cols) - 1
	return len(w.cols) - 1
}

// fieldColumn returns the column of name index i of names.
func (w *blockWriter) fieldColumn(names []string, i uint32) int {
	if len(names) == 0 {
		return w.column(colKey{})
	}
	if w.namesKey != &names[0] {
		// Rows of one stream come from many source blocks, each with its
		// own table: keep the mapping of every table met.
		if w.namesKey != nil {
			w.namesSeen[w.namesKey] = w.namesCol
		}
		w.namesKey = &names[0]
		w.namesCol = w.namesSeen[w.namesKey]
	}
	for int(i) >= len(w.namesCol) {
		w.namesCol = append(w.namesCol, -1)
	}
	// The table's address may be reused by another table (a reused
	// decode buffer): check the name, which costs little when it is the
	// same string.
	if c := w.namesCol[i]; c >= 0 {
		if col := w.cols[c]; col.flags == 0 && col.name == names[i] {
			if unsafe.StringData(col.name) != unsafe.StringData(names[i]) {
				// The same text in this table: hold this table's string,
				// so that its next rows compare the pointers alone.
				col.name = names[i]
			}
			return int(c)
		}
	}
	c := w.column(colKey{name: names[i]})
	w.namesCol[i] = int32(c)
	return c
}

// add appends one row, whose field names index names.
func (w *blockWriter) add(r *rows.Row, names []string) {
	row := len(w.times)
	w.times = append(w.times, r.Time)
	w.lineBytes += len(r.Line)
	flags := byte(r.MsgFlags&^record.Const) << rowMsgFlagsSh
	if r.TimeSource == record.FromReceive {
		flags |= rowFromReceive
	}

	// Does a field carry the message? Then the message costs nothing.
	msgSlot := -1
	for j := range r.Fields {
		f := &r.Fields[j]
		if f.Role == record.RoleMsg && f.Flags == r.MsgFlags&^record.Const && len(f.Value) == len(r.Msg) &&
			(len(f.Value) == 0 || unsafe.SliceData(f.Value) == unsafe.SliceData(r.Msg) || bytes.Equal(f.Value, r.Msg)) {
			msgSlot = j
			break
		}
	}
	hasMsg := r.Msg != nil && msgSlot < 0
	// A message that is the whole line around fields parsed from it is
	// no value of its own: the template says so (tmplMsgLine), and the
	// fields are the holes.
	w.msgLine = hasMsg && r.MsgInLine && r.MsgOff == 0 && len(r.Msg) == len(r.Line) && len(r.Line) > 0 && inLineField(r)
	if w.msgLine {
		hasMsg = false
	}

	// Each field's column, looked up once for the template and the values.
	// Columns are made in field order, then the message's, then the line's.
	w.fieldCols = w.fieldCols[:0]
	for j := range r.Fields {
		w.fieldCols = append(w.fieldCols, w.fieldColumn(names, r.Fields[j].Name))
	}

	// Choose the holes: in-line values that don't overlap, in line order.
	w.holes = w.holes[:0]
	for j := range r.Fields {
		if f := &r.Fields[j]; f.InLine {
			w.holes = append(w.holes, hole{off: f.Off, end: f.Off + uint32(len(f.Value)), slot: j})
		}
	}
	if hasMsg && r.MsgInLine {
		w.holes = append(w.holes, hole{off: r.MsgOff, end: r.MsgOff + uint32(len(r.Msg)), slot: len(r.Fields)})
	}
	sortHoles(w.holes)
	var cursor uint32
	gapBytes := 0
	n := 0
	for _, h := range w.holes {
		if h.off < cursor || h.end > uint32(len(r.Line)) {
			continue
		}
		gapBytes += int(h.off - cursor)
		cursor = h.end
		w.holes[n] = h
		n++
	}
	w.holes = w.holes[:n]
	gapBytes += len(r.Line) - int(cursor)

	// A line stays whole when its values are under a quarter of it (the
	// rest is text a template would hold for this line alone), or when
	// the block has all the templates it may and this one is new. JSON
	// with short values and long keys is mostly gaps, and templated: its
	// keys are written once per block, and its values are columns that
	// queries read without the line (at a half, 2.7% of the canonical
	// corpus stayed whole, and took the queries' row path).
	mode := byte(tmplHoles)
	if gapBytes > len(r.Line)*3/4+16 || (w.nTmpls >= maxBlockTemplates && !w.known(r, hasMsg)) {
		mode = tmplRaw
		w.holes = w.holes[:0]
		if w.msgLine || hasMsg && r.MsgInLine {
			// A raw row keeps an in-line message as a span of the line.
			hasMsg, w.msgLine = false, false
			flags |= rowMsgSpan
			w.msgSpans = binary.AppendUvarint(w.msgSpans, uint64(r.MsgOff))
			w.msgSpans = binary.AppendUvarint(w.msgSpans, uint64(len(r.Msg)))
		}
	}
	key := w.templateKey(r, mode, hasMsg)

	var id uint32
	ok := false
	if w.lastOK && !w.plain && bytes.Equal(key, w.lastKey) {
		id, ok = w.lastID, true
	} else {
		id, ok = w.tmplIndex[string(key)]
		// The key is kept as the last one; templateKey builds the next
		// in the buffer that held the one before. (tmplIndex and tmpls
		// hold copies.)
		w.key, w.lastKey = w.lastKey, key
	}
	if !ok {
		id = uint32(w.nTmpls)
		w.nTmpls++
		w.tmplIndex[string(key)] = id
		w.tmpls = bin.AppendBytes(w.tmpls, key)
		w.addSlotFlags(len(w.tmpls) - len(key))
		w.textTmpl = append(w.textTmpl, false)
	}
	w.tmplIDs = append(w.tmplIDs, id)
	w.lastID, w.lastOK = id, true
	if !w.noFilter && (mode == tmplRaw || w.plain || !w.addLineText(r, id)) {
		w.text = append(append(w.text, r.Line...), '\n')
	}
	if mode == tmplHoles {
		fl := w.slotJSON[w.slotsAt[id]:]
		for _, h := range w.holes {
			f := &fl[h.slot]
			if *f == 0 {
				continue
			}
			v := r.Line[h.off:h.end]
			if w.plain {
				*f = jsonFlags(v, *f)
				continue
			}
			// The flags a value keeps depend on the value alone: a
			// column's repeated values (levels, routes, services) are
			// checked once.
			c := w.cols[w.holeColumn(h.slot)]
			if !c.jsonOK || c.jsonMask&*f != *f || !bytes.Equal(c.jsonVal, v) {
				c.jsonVal, c.jsonOK = append(c.jsonVal[:0], v...), true
				c.jsonMask, c.jsonHeld = *f, jsonFlags(v, *f)
			}
			*f &= c.jsonHeld
		}
	}

	// The values, in slot order.
	for j := range r.Fields {
		f := &r.Fields[j]
		c := w.cols[w.fieldCols[j]]
		c.add(f.Value, meta(f.Kind, f.Flags), f.Num, row, f.Role == record.RoleTime)
	}
	if hasMsg {
		c := w.cols[w.specialColumn(colMsg)]
		c.add(r.Msg, meta(record.String, r.MsgFlags&^record.Const), 0, row, false)
	}
	if mode == tmplRaw {
		c := w.cols[w.specialColumn(colLine)]
		c.add(r.Line, meta(record.String, 0), 0, row, false)
	}
	w.rowFlags = append(w.rowFlags, flags)
}

// inLineField reports whether a field of r is a span of its line.
func inLineField(r *rows.Row) bool {
	for j := range r.Fields {
		if r.Fields[j].InLine {
			return true
		}
	}
	return false
}

// holeColumn returns the column of a hole's slot: a field's, or the
// message's after them.
func (w *blockWriter) holeColumn(slot int) int {
	if slot < len(w.fieldCols) {
		return w.fieldCols[slot]
	}
	return w.msgCol
}

// addLineText puts in text what the token filter needs of a row of
// template id, whose holes are w.holes, when it can do with less than
// the line: when every edge of a hole is an edge of a token, the line's
// tokens are the gaps' and the values', so the template's gaps go in
// once a block, a value only when it differs from the last of its column
// put in, and a value of digits alone (a token the filter does not index)
// not at all. It reports false, putting in nothing, when an edge splits a
// token.
func (w *blockWriter) addLineText(r *rows.Row, id uint32) bool {
	line := r.Line
	for _, h := range w.holes {
		if !tokenEdge(line, int(h.off)) || !tokenEdge(line, int(h.end)) {
			return false
		}
	}
	if !w.textTmpl[id] {
		w.textTmpl[id] = true
		var cursor uint32
		for _, h := range w.holes {
			if h.off > cursor {
				w.text = append(append(w.text, line[cursor:h.off]...), '\n')
			}
			cursor = h.end
		}
		if int(cursor) < len(line) {
			w.text = append(append(w.text, line[cursor:]...), '\n')
		}
	}
	for _, h := range w.holes {
		v := line[h.off:h.end]
		if len(v) == 0 {
			continue
		}
		if digits(v) {
			w.digitRun = max(w.digitRun, len(v))
			continue
		}
		c := w.cols[w.holeColumn(h.slot)]
		if c.textOK && bytes.Equal(c.textVal, v) {
			continue
		}
		c.textVal, c.textOK = append(c.textVal[:0], v...), true
		w.text = append(append(w.text, v...), '\n')
	}
	return true
}

// tokenEdge reports whether offset i of text is an edge of every token:
// the text's start or end, or between two bytes that no token holds both
// of.
func tokenEdge(text []byte, i int) bool {
	if i <= 0 || i >= len(text) {
		return true
	}
	a, b := tokenClass[text[i-1]], tokenClass[text[i]]
	return a == 0 || a != b
}

// digits reports whether v is ASCII digits only.
func digits(v []byte) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// addSlotFlags notes the slots of the template just stored at tmpls[at:]:
// where each one's flags byte is, and, for an in-line slot, the JSON
// flags its values have not yet disproved (all).
func (w *blockWriter) addSlotFlags(at int) {
	w.slotsAt = append(w.slotsAt, len(w.slotJSON))
	r := bin.NewReader(w.tmpls[at+1:]) // after the mode
	n := int(r.Uvarint("slots"))
	for range n {
		r.Uvarint("slot column")
		off := len(w.tmpls) - r.Len()
		var f byte
		if r.Byte("slot flags")&slotInLine != 0 {
			f = slotJSONString | slotJSONValue
		}
		w.slotJSON = append(w.slotJSON, f)
		w.slotFlagOff = append(w.slotFlagOff, off)
	}
}

// jsonFlags returns which of the flags f still hold with value v.
func jsonFlags(v []byte, f byte) byte {
	if f&slotJSONString != 0 && !JSONStringContent(v) {
		f &^= slotJSONString
	}
	if f&slotJSONValue != 0 && !JSONValue(v) {
		f &^= slotJSONValue
	}
	return f
}

// known reports whether the row's template would be one the block has;
// used only once the block has too many templates to add one more.
func (w *blockWriter) known(r *rows.Row, hasMsg bool) bool {
	key := w.templateKey(r, tmplHoles, hasMsg)
	_, ok := w.tmplIndex[string(key)]
	return ok
}

// templateKey encodes the template of r with the holes chosen in w.holes:
// mode, slots (column and flags) in field order, then for tmplHoles the
// slot of each hole in line order and the gaps around them. The encoding
// is both the map key and what the block stores.
func (w *blockWriter) templateKey(r *rows.Row, mode byte, hasMsg bool) []byte {
	m := mode
	if w.msgLine {
		m |= tmplMsgLine
	}
	key := append(w.key[:0], m)
	nslots := len(r.Fields)
	if hasMsg {
		nslots++
	}
	key = binary.AppendUvarint(key, uint64(nslots))
	w.slotIn = append(w.slotIn[:0], make([]byte, nslots)...)
	for _, h := range w.holes {
		w.slotIn[h.slot] = slotInLine
	}
	for j := range r.Fields {
		f := &r.Fields[j]
		key = binary.AppendUvarint(key, uint64(w.fieldCols[j]))
		fl := byte(f.Role)<<slotRoleSh | w.slotIn[j]
		if fl&slotInLine == 0 && (f.InLine || f.FromLine) {
			fl |= slotParsed
		}
		key = append(key, fl)
	}
	if hasMsg {
		key = binary.AppendUvarint(key, uint64(w.specialColumn(colMsg)))
		key = append(key, slotMsg|w.slotIn[len(r.Fields)])
	}
	if mode == tmplHoles {
		key = binary.AppendUvarint(key, uint64(len(w.holes)))
		var cursor uint32
		for _, h := range w.holes {
			key = binary.AppendUvarint(key, uint64(h.slot))
			key = bin.AppendBytes(key, r.Line[cursor:h.off])
			cursor = h.end
		}
		key = bin.AppendBytes(key, r.Line[cursor:])
	}
	w.key = key
	return key
}

// sortHoles sorts by offset; an insertion sort, as holes nearly always
// come in order already.
func sortHoles(hs []hole) {
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && hs[j].off < hs[j-1].off; j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
}

// encode appends the block's bytes to dst, and leaves its token filter in
// w.filter.
func (w *blockWriter) encode(dst []byte) []byte {
	w.filter = w.filter[:0]
	if !w.noFilter {
		w.tokens.reset()
		w.tokens.addText(w.text)
		w.tokens.longest = max(w.tokens.longest, w.digitRun)
		w.filter = w.tokens.appendFilter(w.filter)
	}

	// Column streams first, into body, so the header can say where each
	// column starts.
	body := w.body[:0]
	s := w.scratch[:0]

	// The row streams, and then each column, are one compressed stream
	// of length-prefixed parts: one zstd frame each, not one per part.
	// Times as milliseconds (deltas) and the nanoseconds below them, in
	// two parts: most logs have millisecond times, whose second part is
	// all zeros and compresses to nothing.
	var prev int64
	for _, t := range w.times {
		ms := floorDiv(t, 1e6)
		s = binary.AppendVarint(s, ms-prev)
		prev = ms
	}
	col := bin.AppendBytes(w.col[:0], s)
	s = s[:0]
	for _, t := range w.times {
		s = binary.AppendUvarint(s, uint64(t-floorDiv(t, 1e6)*1e6))
	}
	col = bin.AppendBytes(col, s)
	s = s[:0]
	for _, id := range w.tmplIDs {
		s = binary.AppendUvarint(s, uint64(id))
	}
	col = bin.AppendBytes(col, s)
	col = bin.AppendBytes(col, w.rowFlags)
	col = bin.AppendBytes(col, w.msgSpans)
	body = appendStream(body, col, w.fast)
	w.col = col

	hdr := binary.AppendUvarint(nil, uint64(len(w.times)))
	hdr = binary.AppendUvarint(hdr, uint64(w.nTmpls))
	for i, off := range w.slotFlagOff {
		w.tmpls[off] |= w.slotJSON[i]
	}
	hdr = append(hdr, w.tmpls...)
	// Whether a row may have a field out of its line, for the index: as
	// a reader parses the header, so that the two never disagree.
	w.outOfLine = true // if the header did not parse, readers read it
	if err := parseHeader(hdr, &w.hd); err == nil {
		w.outOfLine = w.hd.outOfLine()
	}
	hdr = binary.AppendUvarint(hdr, uint64(len(w.cols)))
	hdr = binary.AppendUvarint(hdr, uint64(len(body)))
	for _, c := range w.cols {
		start := len(body)
		var desc []byte
		desc, body, s = w.encodeColumn(c, body, s)
		hdr = bin.AppendString(hdr, c.name)
		hdr = append(hdr, desc...)
		hdr = binary.AppendUvarint(hdr, uint64(len(body)-start))
	}
	w.body, w.scratch = body, s

	dst = appendStream(dst, hdr, w.fast)
	return append(dst, body...)
}

// floorDiv divides rounding toward minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// encodeColumn chooses c's encoding and appends its streams to body. It
// returns the column's directory entry (flags, encoding, count, meta,
// parameters, min and max) and the grown buffers.
func (w *blockWriter) encodeColumn(c *column, body, s []byte) (desc, _, _ []byte) {
	n := len(c.ends)
	enc, param := w.chooseEncoding(c)
	flags := c.flags
	lo, hi, minmax := c.bounds(enc)
	if minmax {
		flags |= colMinMax
	}
	grams, ok := w.gramFilter(c, enc)
	if ok {
		flags |= colGrams
	}
	desc = append(desc, flags, enc)
	desc = binary.AppendUvarint(desc, uint64(n))
	sameMeta := allSame(c.meta)
	if sameMeta {
		desc = append(desc, c.meta[0])
	} else {
		desc = append(desc, 0xff)
	}
	desc = append(desc, param...)
	if minmax {
		desc = binary.LittleEndian.AppendUint64(desc, lo)
		desc = binary.LittleEndian.AppendUint64(desc, hi)
	}
	if ok {
		desc = bin.AppendBytes(desc, grams)
	}
	col := w.col[:0]
	if !sameMeta {
		col = bin.AppendBytes(col, c.meta)
	}

	// Each encoding's streams (enc_*.go), from what chooseEncoding left.
	switch enc {
	case encConst:
		col = appendConst(col, c)
	case encDict:
		col = w.appendDict(col)
	case encDictRest:
		col = w.appendDictRest(col)
	case encInt:
		col, s = appendInts(col, c, s)
	case encDecimal:
		col, s = appendDecimals(col, c, s)
	case encHex:
		col = w.appendHex(col)
	case encTime:
		col = w.appendTimes(col)
	default:
		col, s = appendStrings(col, c, s)
	}
	if enc != encInt && enc != encDecimal && enc != encTime && hasNums(c) {
		s = s[:0]
		for i := range n {
			s = appendNum(s, c.meta[i], c.nums[i])
		}
		col = bin.AppendBytes(col, s)
	}
	w.col = col
	return desc, appendStream(body, col, w.fast), s
}

// gramFilter returns the gram filter of a text column's values (those of
// encodings string, dict and const), if it gets one.
func (w *blockWriter) gramFilter(c *column, enc byte) ([]byte, bool) {
	if w.noFilter {
		return nil, false
	}
	if w.grams == nil {
		w.grams = new(gramSet)
	}
	g := w.grams
	g.reset()
	switch enc {
	case encConst:
		g.add(c.value(0))
	case encDict:
		for r := bin.NewReader(w.dictEntries); r.Len() > 0 && r.Err() == nil; {
			g.add(r.BytesN("dictionary entry"))
		}
	case encDictRest:
		for r := bin.NewReader(w.dictEntries); r.Len() > 0 && r.Err() == nil; {
			g.add(r.BytesN("dictionary entry"))
		}
		for i, id := range w.dictIdx {
			if id == restID {
				g.add(c.value(i))
			}
		}
	case encString:
		for i := range c.ends {
			g.add(c.value(i))
		}
	default:
		return nil, false // a query knows these values' alphabet
	}
	var ok bool
	w.gramBuf, ok = g.appendFilter(w.gramBuf[:0])
	return w.gramBuf, ok
}

// hasNums reports whether any value of c carries a number to store.
func hasNums(c *column) bool {
	for _, m := range c.meta {
		switch k, _ := unmeta(m); k {
		case record.Int, record.Bool, record.Float:
			return true
		}
	}
	return false
}

func appendNum(dst []byte, m byte, num uint64) []byte {
	switch k, _ := unmeta(m); k {
	case record.Int, record.Bool:
		return binary.AppendVarint(dst, int64(num))
	case record.Float:
		return binary.LittleEndian.AppendUint64(dst, num)
	}
	return dst
}

func allSame(b []byte) bool {
	for _, c := range b {
		if c != b[0] {
			return false
		}
	}
	return true
}

// chooseEncoding picks the smallest encoding that rebuilds every value of
// c exactly, and returns it with its directory parameters.
func (w *blockWriter) chooseEncoding(c *column) (byte, []byte) {
	n := len(c.ends)
	if w.isConst(c) {
		return encConst, nil
	}
	if c.time && w.timeShapes(c) {
		p := []byte{byte(len(w.shapes))}
		for _, sh := range w.shapes {
			p = appendShape(p, sh)
		}
		return encTime, p
	}
	kind, _ := unmeta(c.meta[0])
	sameMeta := allSame(c.meta)
	// A dictionary pays when values repeat; numbers and hex have cheaper
	// encodings for the rest.
	if w.dictionary(c, n/2) {
		return encDict, nil
	}
	switch {
	case sameMeta && kind == record.Int && intsExact(c):
		return encInt, nil
	case sameMeta && kind == record.Float && decimalsExact(c):
		return encDecimal, nil
	case sameMeta && kind == record.String:
		if l, ok := w.hexColumn(c); ok {
			return encHex, binary.AppendUvarint(nil, uint64(l))
		}
	}
	if w.dictRest(c) {
		return encDictRest, nil
	}
	return encString, nil
}

// bounds returns the numeric min and max of an int or decimal column, as
// int64 or float64 bits.
func (c *column) bounds(enc byte) (lo, hi uint64, ok bool) {
	switch enc {
	case encInt:
		mn, mx := int64(c.nums[0]), int64(c.nums[0])
		for _, v := range c.nums {
			mn, mx = min(mn, int64(v)), max(mx, int64(v))
		}
		return uint64(mn), uint64(mx), true
	case encDecimal:
		mn, mx := math.Float64frombits(c.nums[0]), math.Float64frombits(c.nums[0])
		for _, v := range c.nums {
			f := math.Float64frombits(v)
			mn, mx = min(mn, f), max(mx, f)
		}
		return math.Float64bits(mn), math.Float64bits(mx), true
	}
	return 0, 0, false
}
