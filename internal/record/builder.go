package record

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/timestamp"
)

// Config says which fields give a record its timestamp, message and stream.
type Config struct {
	// TimeFields are tried in order; the first that holds a readable
	// timestamp wins.
	TimeFields []string
	// MsgFields are tried in order; the first present becomes _msg.
	MsgFields []string
	// StreamFields name the fields whose values form the stream labels.
	StreamFields []string
	// MaxFields rejects a line with more fields than this; 0 means no limit.
	MaxFields int
	// TimeLayout is the format of time fields' text when it is one that
	// cannot be detected (timestamp.HDFS, Spark, Logcat); the zero value,
	// timestamp.Auto, detects every format timestamp.Parse knows.
	TimeLayout timestamp.Layout
}

// Default field lists.
var (
	DefaultTimeFields   = []string{"_time", "time", "ts", "timestamp", "@timestamp", "date", "t"}
	DefaultMsgFields    = []string{"_msg", "msg", "message", "log"}
	DefaultStreamFields = []string{"service", "app", "host", "namespace", "container", "job"}
)

// MaxStreamFields is the most stream fields a Config may name.
const MaxStreamFields = 64

// Check reports a Config the Builder cannot honour.
func (c Config) Check() error {
	seen := map[string]bool{}
	for _, f := range c.StreamFields {
		seen[f] = true
	}
	if len(seen) > MaxStreamFields {
		return fmt.Errorf("%d stream fields: at most %d", len(seen), MaxStreamFields)
	}
	if c.MaxFields < 0 {
		return fmt.Errorf("negative field limit %d", c.MaxFields)
	}
	return nil
}

// DefaultConfig returns the default field lists and no field limit.
func DefaultConfig() Config {
	return Config{
		TimeFields:   DefaultTimeFields,
		MsgFields:    DefaultMsgFields,
		StreamFields: DefaultStreamFields,
	}
}

// noRole marks a name that is not in a list.
const noRole = 0xff

// nameRole is what a field name means to the Builder: its rank in each
// list, or noRole. Computed once per name, so a field costs one lookup.
type nameRole struct {
	time, msg, stream uint8
	any               bool // in at least one list
}

// Builder appends records to a batch. Format parsers drive it: Begin a
// record, Add its fields, then End it (or Fail it). It owns the name and
// stream tables that its batches point to.
//
// Concurrency: a Builder is used by one goroutine.
type Builder struct {
	cfg     Config
	streams []string // StreamFields, sorted: the order labels are keyed in

	names     *Names
	strs      *Streams
	roles     []nameRole
	nameStr   []string    // the names by id: a flat copy of the table for the writer
	follow    [][2]uint32 // follow[id+1]: the names seen after id lately; [0] for a record's first
	prevID    uint32      // id+1 of the previous name in this record, 0 at its start
	b         *Batch
	rec       Record
	timeIdx   int   // field index of the best time candidate, or -1
	timeRnk   uint8 // its rank
	msgIdx    int
	msgRnk    uint8
	hasTime   bool // SetTime was called
	hasMsg    bool // SetMsg was called
	hasDef    bool // DefaultMsg was called
	defMsg    Span // and what it set
	defFlag   Flags
	slots     []slotVal        // per sorted stream field: its value in this record
	key       []byte           // scratch: the canonical stream key
	scratch   []byte           // scratch: unescaped values
	times     timestamp.Reader // parses time fields, remembering the last date
	slotSet   uint64           // bitmap of filled slots
	scache    [streamCacheSets][2]streamCacheEntry
	scHash    uint64 // the current record's stream hash, 0 if not cacheable
	scSeedMap maphash.Seed
	scMix     uint64 // seeds hashValue's short path

	gen  uint64 // counts the tables this builder has had
	line int64  // the current line's number, for errors
	base int64  // the input offset of Data[0], for errors
}

type slotVal struct {
	raw   Span
	kind  Kind
	flags Flags
	num   uint64
}

// NewBuilder returns a builder for cfg.
// REQUIRES: cfg.Check() == nil (beyond MaxStreamFields, the last stream
// fields in sorted order are ignored).
func NewBuilder(cfg Config) *Builder {
	bl := &Builder{cfg: cfg}
	bl.streams = slices.Clone(cfg.StreamFields)
	slices.Sort(bl.streams)
	bl.streams = slices.Compact(bl.streams)
	if len(bl.streams) > MaxStreamFields {
		bl.streams = bl.streams[:MaxStreamFields]
	}
	bl.slots = make([]slotVal, len(bl.streams))
	bl.scSeedMap = maphash.MakeSeed()
	bl.scMix = maphash.Comparable(bl.scSeedMap, 0)
	bl.newTables()
	return bl
}

func (bl *Builder) newTables() {
	bl.gen++
	bl.names = NewNames()
	bl.strs = NewStreams()
	bl.roles = bl.roles[:0]
	bl.nameStr = bl.nameStr[:0]
	bl.follow = append(bl.follow[:0], [2]uint32{noName, noName})
	bl.scache = [streamCacheSets][2]streamCacheEntry{}
}

// Start makes b the batch that records are appended to. The caller fills
// b.Data (and b.ReceiveTime) before the first Begin.
func (bl *Builder) Start(b *Batch) {
	// A table close to full is replaced between batches, never within one,
	// so every id in a batch refers to that batch's tables.
	if bl.names.Len() > MaxTableSize*7/8 || bl.strs.Len() > MaxTableSize*7/8 {
		bl.newTables()
	}
	bl.b = b
	b.Names, b.Streams = bl.names, bl.strs
}

// TimeLayout returns the configured layout of timestamps, for formats that
// read a timestamp themselves (a text line's prefix).
func (bl *Builder) TimeLayout() timestamp.Layout { return bl.cfg.TimeLayout }

// Generation changes whenever the builder starts new name and stream
// tables, which invalidates any name id a parser has cached.
func (bl *Builder) Generation() uint64 { return bl.gen }

// Batch returns the batch being built.
func (bl *Builder) Batch() *Batch { return bl.b }

// Begin starts a record whose original line is line.
func (bl *Builder) Begin(line Span) {
	bl.rec = Record{Line: line, FieldStart: uint32(len(bl.b.Fields))}
	bl.timeIdx, bl.msgIdx = -1, -1
	bl.timeRnk, bl.msgRnk = noRole, noRole
	bl.hasTime, bl.hasMsg, bl.hasDef = false, false, false
	bl.slotSet = 0
	bl.prevID = 0
}

// Name returns the id of a field name, interning it if it is new. It
// returns false when the name table is full, which fails the line.
//
// Lines of one source repeat their keys in much the same order, so the
// builder first guesses that name is one of the two names that followed
// the previous name lately; a guess costs a short compare where a map
// lookup costs a hash.
func (bl *Builder) Name(name []byte) (uint32, bool) {
	// The fast path is small enough to be inlined into the parsers.
	if g := bl.follow[bl.prevID][0]; g < uint32(len(bl.nameStr)) && bl.nameStr[g] == string(name) {
		bl.prevID = g + 1
		return g, true
	}
	return bl.nameSlow(name)
}

func (bl *Builder) nameSlow(name []byte) (uint32, bool) {
	f := &bl.follow[bl.prevID]
	if g := f[1]; g != noName && bl.nameStr[g] == string(name) {
		f[0], f[1] = g, f[0]
		bl.prevID = g + 1
		return g, true
	}
	id, ok := bl.names.Lookup(name)
	if !ok {
		return 0, false
	}
	for int(id) >= len(bl.roles) {
		s := bl.names.Get(uint32(len(bl.roles)))
		bl.roles = append(bl.roles, bl.roleOf(s))
		bl.nameStr = append(bl.nameStr, s)
		bl.follow = append(bl.follow, [2]uint32{noName, noName})
	}
	f = &bl.follow[bl.prevID] // append may have moved it
	f[0], f[1] = id, f[0]
	bl.prevID = id + 1
	return id, true
}

const noName = ^uint32(0)

func (bl *Builder) roleOf(name string) nameRole {
	r := nameRole{noRole, noRole, noRole, false}
	if i := slices.Index(bl.cfg.TimeFields, name); i >= 0 && i < noRole {
		r.time = uint8(i)
	}
	if i := slices.Index(bl.cfg.MsgFields, name); i >= 0 && i < noRole {
		r.msg = uint8(i)
	}
	if i, ok := slices.BinarySearch(bl.streams, name); ok {
		r.stream = uint8(i)
	}
	r.any = r != nameRole{noRole, noRole, noRole, false}
	return r
}

// Add appends a field to the current record. f.Name must come from Name.
func (bl *Builder) Add(f Field) {
	// Written member by member: copying a struct just composed from
	// narrow stores with wide loads stalls on store forwarding, and f
	// itself must stay in registers (no &f), so noteRole reads the copy.
	// Even Raw is copied as its two halves: callers compose it from them,
	// and a spilled Span read back whole stalls the same way.
	fs := bl.b.Fields
	if len(fs) == cap(fs) {
		fs = slices.Grow(fs, 1)
	}
	fs = fs[:len(fs)+1]
	e := &fs[len(fs)-1]
	e.Name, e.Kind, e.Flags, e.Role = f.Name, f.Kind, f.Flags, f.Role
	e.Raw.Off, e.Raw.Len, e.Num = f.Raw.Off, f.Raw.Len, f.Num
	bl.b.Fields = fs
	if bl.roles[f.Name].any {
		bl.noteRole(e)
	}
}

// noteRole remembers f, the field just appended, as a candidate for the
// record's time, message or stream.
func (bl *Builder) noteRole(f *Field) {
	if f.Kind == Null {
		return
	}
	r := bl.roles[f.Name]
	idx := len(bl.b.Fields) - 1 - int(bl.rec.FieldStart)
	if r.time < bl.timeRnk {
		bl.timeIdx, bl.timeRnk = idx, r.time
	}
	if r.msg < bl.msgRnk {
		bl.msgIdx, bl.msgRnk = idx, r.msg
	}
	if r.stream != noRole {
		// Raw by halves, as Add wrote it a moment ago (see Add).
		bl.slots[r.stream] = slotVal{Span{f.Raw.Off, f.Raw.Len}, f.Kind, f.Flags, f.Num}
		bl.slotSet |= 1 << r.stream
	}
}

// SetTime sets the record's timestamp, read by the format itself (a syslog
// header, a text line's prefix). It takes precedence over time fields.
func (bl *Builder) SetTime(ns int64) {
	bl.rec.Time = ns
	bl.hasTime = true
}

// SetMsg sets the record's message, found by the format itself (the text
// after a syslog header). It takes precedence over message fields.
func (bl *Builder) SetMsg(raw Span, flags Flags) {
	bl.rec.Msg, bl.rec.MsgFlags = raw, flags
	bl.hasMsg = true
}

// DefaultMsg sets the message a record gets when none of its fields is a
// message field: formats that extract fields from text pass the whole line.
func (bl *Builder) DefaultMsg(raw Span, flags Flags) {
	bl.defMsg, bl.defFlag, bl.hasDef = raw, flags, true
}

// Unmatched adds line as a record holding only its message, for a format
// whose pattern the line did not match: the line is kept, not dropped, and
// counted in Batch.Unmatched.
func (bl *Builder) Unmatched(line Span) {
	var flags Flags
	if !utf8.Valid(bl.b.Bytes(line)) {
		flags = BadUTF8
		bl.b.BadUTF8++
	}
	bl.b.Unmatched++
	bl.Begin(line)
	bl.SetMsg(line, flags)
	bl.End()
}

// End completes the current record: it picks its timestamp, message and
// stream and appends it to the batch.
func (bl *Builder) End() {
	b := bl.b
	bl.rec.NumFields = uint32(len(b.Fields)) - bl.rec.FieldStart
	if bl.cfg.MaxFields > 0 && int(bl.rec.NumFields) > bl.cfg.MaxFields {
		bl.Fail(ErrTooManyFields, 0, fmt.Sprintf("%d fields, more than the limit of %d", bl.rec.NumFields, bl.cfg.MaxFields))
		return
	}
	fields := b.Fields[bl.rec.FieldStart:]
	if !bl.hasTime {
		bl.rec.Time, bl.rec.TimeSource = b.ReceiveTime, FromReceive
		if bl.timeIdx >= 0 && bl.resolveTime(fields) {
			bl.rec.TimeSource = FromData
		}
	}
	if !bl.hasMsg {
		if bl.msgIdx >= 0 {
			f := &fields[bl.msgIdx]
			f.Role = RoleMsg
			bl.rec.Msg, bl.rec.MsgFlags = f.Raw, f.Flags
		} else if bl.hasDef {
			bl.rec.Msg, bl.rec.MsgFlags = bl.defMsg, bl.defFlag
		}
	}
	if bl.slotSet != 0 {
		bl.rec.Stream = bl.streamID()
	}
	// Member by member, for the reason given in Add.
	rs := append(b.Records, Record{})
	r, c := &rs[len(rs)-1], &bl.rec
	r.Time, r.TimeSource, r.MsgFlags, r.Stream = c.Time, c.TimeSource, c.MsgFlags, c.Stream
	r.Line, r.Msg, r.FieldStart, r.NumFields = c.Line, c.Msg, c.FieldStart, c.NumFields
	b.Records = rs
}

// resolveTime tries the time candidates from the best rank down.
func (bl *Builder) resolveTime(fields []Field) bool {
	if bl.timeFrom(&fields[bl.timeIdx]) {
		return true
	}
	// The best candidate did not hold a timestamp: try the rest by rank.
	// Rare, so a plain scan is fine.
	for rank := bl.timeRnk + 1; int(rank) < len(bl.cfg.TimeFields); rank++ {
		for i := range fields {
			if bl.roles[fields[i].Name].time == rank && bl.timeFrom(&fields[i]) {
				return true
			}
		}
	}
	return false
}

func (bl *Builder) timeFrom(f *Field) bool {
	var ns int64
	ok := false
	switch f.Kind {
	case Int:
		ns, ok = timestamp.FromEpoch(f.Int()), true
	case Float:
		ns, ok = timestamp.FromEpochFloat(f.Float())
	case String:
		raw := bl.b.Raw(f)
		if f.Flags&(Escaped|SDEscaped) != 0 {
			bl.scratch = AppendUnescaped(bl.scratch[:0], raw, f.Flags)
			raw = bl.scratch
		}
		if bl.cfg.TimeLayout != timestamp.Auto {
			var n int
			ns, n, ok = timestamp.ParseLayout(raw, bl.cfg.TimeLayout, bl.b.ReceiveTime)
			ok = ok && n == len(raw)
		} else {
			ns, ok = bl.times.Parse(raw, bl.b.ReceiveTime)
		}
	}
	if ok {
		bl.rec.Time = ns
		f.Role = RoleTime
	}
	return ok
}

// streamID returns the id of the current record's label set.
func (bl *Builder) streamID() uint32 {
	if id, ok := bl.cachedStream(); ok {
		return id
	}
	key := bl.key[:0]
	for i := range bl.streams {
		if bl.slotSet&(1<<i) == 0 {
			continue
		}
		// The slot's index stands for its name (the key only has to be
		// unique within this builder's tables), and the value's length
		// follows it so that no value can pose as two.
		key = append(key, byte(i), 0, 0, 0, 0)
		n := len(key)
		key = bl.appendSlot(key, &bl.slots[i])
		binary.LittleEndian.PutUint32(key[n-4:], uint32(len(key)-n))
	}
	bl.key = key
	id, ok := bl.strs.lookup(key, bl.buildLabels)
	if !ok {
		// The stream table is full for this batch: such records go to the
		// empty stream rather than being dropped. Start replaces the table
		// before the next batch.
		return 0
	}
	if bl.scHash != 0 {
		set := bl.scache[bl.scHash&(streamCacheSets-1)][:]
		set[1], set[0] = set[0], streamCacheEntry{bl.scHash, id}
	}
	return id
}

// streamCacheSets is the number of sets of the builder's stream cache, of
// two entries each. A direct-mapped cache missed a quarter of the time on
// 328 streams in 1,024 entries; two ways and 4,096 entries miss rarely.
const streamCacheSets = 2048

type streamCacheEntry struct {
	hash uint64
	id   uint32
}

// hashValue hashes the bytes of a label value. Values of up to 16 bytes
// (most service and host names) are mixed from two 8-byte loads, masked
// to the value, where the batch has the room to load them; longer ones
// go through maphash.
func (bl *Builder) hashValue(raw Span) uint64 {
	data := bl.b.Data
	n := int(raw.Len)
	if n <= 16 && int(raw.Off)+16 <= len(data) {
		lo := binary.LittleEndian.Uint64(data[raw.Off:])
		hi := binary.LittleEndian.Uint64(data[raw.Off+8:])
		if n < 8 {
			lo &= uint64(1)<<(8*n) - 1
			hi = 0
		} else if n < 16 {
			hi &= uint64(1)<<(8*(n-8)) - 1
		}
		h := (lo ^ bl.scMix) * 0xbf58476d1ce4e5b9
		h = (h ^ h>>31 ^ hi) * 0x94d049bb133111eb
		return h ^ h>>29 ^ uint64(n)
	}
	return maphash.Bytes(bl.scSeedMap, data[raw.Off:raw.End()])
}

// cachedStream finds the current record's stream in a small cache indexed
// by a hash of its label values, verified against the labels themselves:
// cheaper than building the canonical key and looking it up in the map.
// It works on plain string values only; for the rest (escaped strings,
// numbers) it reports a miss with scHash 0, and the caller takes the map.
func (bl *Builder) cachedStream() (uint32, bool) {
	h := uint64(0)
	for m := bl.slotSet; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		s := &bl.slots[i]
		if s.kind != String || s.flags != 0 {
			bl.scHash = 0
			return 0, false
		}
		h = bl.hashValue(s.raw) ^ (h+uint64(i))*0x9E3779B97F4A7C15
	}
	h |= 1 // 0 means "not cacheable"
	bl.scHash = h
	set := &bl.scache[h&(streamCacheSets-1)]
	e := &set[0]
	if e.hash != h {
		if e = &set[1]; e.hash != h {
			return 0, false
		}
	}
	ls := bl.strs.Get(e.id)
	k := 0
	for m := bl.slotSet; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		s := &bl.slots[i]
		if k >= len(ls) || ls[k].Name != bl.streams[i] || ls[k].Value != string(bl.b.Data[s.raw.Off:s.raw.End()]) {
			return 0, false
		}
		k++
	}
	return e.id, k == len(ls)
}

func (bl *Builder) appendSlot(dst []byte, s *slotVal) []byte {
	if s.kind == String && s.flags == 0 {
		return append(dst, bl.b.Data[s.raw.Off:s.raw.End()]...)
	}
	f := Field{Kind: s.kind, Flags: s.flags, Raw: s.raw, Num: s.num}
	return bl.b.AppendString(dst, &f)
}

func (bl *Builder) buildLabels() Labels {
	ls := make(Labels, 0, len(bl.streams))
	for i := range bl.streams {
		if bl.slotSet&(1<<i) != 0 {
			ls = append(ls, Label{bl.streams[i], string(bl.appendSlot(nil, &bl.slots[i]))})
		}
	}
	return ls
}

// SetPos tells the builder where the next record starts in the input: its
// 1-based line number and the input offset of the batch's Data[0]. Errors
// are reported at these positions.
func (bl *Builder) SetPos(line, base int64) {
	bl.line, bl.base = line, base
}

// Fail discards the current record and reports its line as rejected. col
// is the 1-based byte column of the problem within the line.
// REQUIRES: Begin was called for the record.
func (bl *Builder) Fail(kind ErrKind, col int, msg string) {
	b := bl.b
	b.Fields = b.Fields[:bl.rec.FieldStart]
	col = max(col, 1)
	b.Errors = append(b.Errors, LineError{
		Line:   bl.line,
		Col:    col,
		Offset: bl.base + int64(bl.rec.Line.Off) + int64(col-1),
		Kind:   kind,
		Msg:    msg,
	})
}
