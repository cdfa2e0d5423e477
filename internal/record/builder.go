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

	names       *Names
	strs        *Streams
	roles       []nameRole
	nameStr     []string // the names by id: a flat copy of the table for the writer
	follow      []guess  // follow[id+1]: the names seen after id lately; [0] for a record's first
	prevID      uint32   // id+1 of the previous name in this record, 0 at its start
	b           *Batch
	fields      []Field // b.Fields to its capacity (see Begin)
	nf          int     // how many of fields are in use
	rec         Record
	timeIdx     int   // field index of the best time candidate, or -1
	timeRnk     uint8 // its rank
	msgIdx      int
	msgRnk      uint8
	hasTime     bool // SetTime was called
	hasMsg      bool // SetMsg was called
	hasDef      bool // DefaultMsg was called
	defMsg      Span // and what it set
	defFlag     Flags
	slots       []slotVal        // per sorted stream field: its value in this record
	key         []byte           // scratch: the canonical stream key
	scratch     []byte           // scratch: unescaped values
	times       timestamp.Reader // parses time fields, remembering the last date
	tmemo       timeMemo         // and the last value, to read only the fraction of the next
	lastTimeLen int              // the length of the last time text parsed
	slotSet     uint64           // bitmap of filled slots
	scache      [streamCacheSets][2]streamCacheEntry
	scHash      uint64   // the current record's stream hash, 0 if not cacheable
	scKeys      []uint64 // the cached streams' values, as cacheKey lays them out
	scLong      []byte   // and those longer than 16 bytes
	scKeyOff    []uint32 // by stream id: where its values are in scKeys, or noKey
	scSeedMap   maphash.Seed
	scMix       uint64 // seeds mix16

	gen  uint64 // counts the tables this builder has had
	line int64  // the current line's number, for errors
	base int64  // the input offset of Data[0], for errors
}

type slotVal struct {
	raw    Span
	kind   Kind
	flags  Flags
	hashed bool // hash and words are set
	num    uint64
	// For the stream cache, of a plain string value of up to 16 bytes:
	words [2]uint64 // its bytes, zero-padded
	hash  uint64    // mix16 of them
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
	bl.follow = append(bl.follow[:0], noGuess)
	bl.scache = [streamCacheSets][2]streamCacheEntry{}
	bl.scKeys = bl.scKeys[:0]
	bl.scLong = bl.scLong[:0]
	bl.scKeyOff = bl.scKeyOff[:0]
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
//
// From Begin to End (or Fail) the builder holds the batch's fields as
// fields[:nf], and b.Fields is stale: that spares Add a store of the
// whole slice header, with its write barrier check, for every field.
func (bl *Builder) Begin(line Span) {
	fs := bl.b.Fields
	bl.fields, bl.nf = fs[:cap(fs)], len(fs)
	bl.rec = Record{Line: line, FieldStart: uint32(len(fs))}
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
// lookup costs a hash. A name of up to 8 bytes whose slice has room for
// 8 (a key in its line nearly always has) is compared as one word, any
// other as a string.
func (bl *Builder) Name(name []byte) (uint32, bool) {
	// The fast path is small enough to be inlined into the parsers.
	g := &bl.follow[bl.prevID]
	id := g.id[0]
	if uint32(len(name)) == g.n && cap(name) >= 8 && binary.LittleEndian.Uint64(name[:8])&g.mask == g.word ||
		id < uint32(len(bl.nameStr)) && bl.nameStr[id] == string(name) {
		bl.prevID = id + 1
		return id, true
	}
	return bl.nameSlow(name)
}

// guess holds the two names that followed a name lately, the first also
// as a word for Name's fast compare.
type guess struct {
	word uint64 // id[0]'s bytes, little-endian, zero-padded
	mask uint64 // covers its bytes
	n    uint32 // its length, or noLen if it is longer than 8 bytes or absent
	id   [2]uint32
}

const noLen = ^uint32(0)

var noGuess = guess{n: noLen, id: [2]uint32{noName, noName}}

// setFirst makes id the first guess, and the one before it the second.
func (bl *Builder) setFirst(g *guess, id uint32) {
	g.id[0], g.id[1] = id, g.id[0]
	g.word, g.mask, g.n = 0, 0, noLen
	if s := bl.nameStr[id]; len(s) <= 8 {
		var pad [8]byte
		copy(pad[:], s)
		g.word = binary.LittleEndian.Uint64(pad[:])
		g.mask = ^uint64(0) >> (64 - 8*len(s))
		g.n = uint32(len(s))
	}
}

func (bl *Builder) nameSlow(name []byte) (uint32, bool) {
	g := &bl.follow[bl.prevID]
	if id := g.id[1]; id != noName && bl.nameStr[id] == string(name) {
		bl.setFirst(g, id)
		bl.prevID = id + 1
		return id, true
	}
	id, ok := bl.names.Lookup(name)
	if !ok {
		return 0, false
	}
	for int(id) >= len(bl.roles) {
		s := bl.names.Get(uint32(len(bl.roles)))
		bl.roles = append(bl.roles, bl.roleOf(s))
		bl.nameStr = append(bl.nameStr, s)
		bl.follow = append(bl.follow, noGuess)
	}
	bl.setFirst(&bl.follow[bl.prevID], id) // append may have moved it
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
	n, fs := bl.nf, bl.fields
	if n >= len(fs) {
		fs = bl.growFields()
	}
	e := &fs[n]
	bl.nf = n + 1
	e.Name, e.Kind, e.Flags, e.Role = f.Name, f.Kind, f.Flags, f.Role
	e.Raw.Off, e.Raw.Len, e.Num = f.Raw.Off, f.Raw.Len, f.Num
	if bl.roles[f.Name].any {
		bl.noteRole(e)
	}
}

// growFields makes room for more fields.
func (bl *Builder) growFields() []Field {
	fs := slices.Grow(bl.fields[:bl.nf], 1)
	bl.fields = fs[:cap(fs)]
	return bl.fields
}

// noteRole remembers f, the field just appended, as a candidate for the
// record's time, message or stream.
func (bl *Builder) noteRole(f *Field) {
	if f.Kind == Null {
		return
	}
	r := bl.roles[f.Name]
	idx := bl.nf - 1 - int(bl.rec.FieldStart)
	if r.time < bl.timeRnk {
		bl.timeIdx, bl.timeRnk = idx, r.time
	}
	if r.msg < bl.msgRnk {
		bl.msgIdx, bl.msgRnk = idx, r.msg
	}
	if r.stream != noRole {
		// Raw by halves, as Add wrote it a moment ago (see Add).
		s := &bl.slots[r.stream]
		s.raw, s.kind, s.flags, s.num = Span{f.Raw.Off, f.Raw.Len}, f.Kind, f.Flags, f.Num
		s.hashed = false
		bl.slotSet |= 1 << r.stream
		// Hash a short value for the stream cache now: End needs only the
		// result, and here its latency hides behind the rest of the line.
		// The masks take no branch on the length, which varies from line
		// to line and would be mispredicted; shifts by 64 or more give 0.
		data := bl.b.Data
		if n := uint(f.Raw.Len); f.Kind == String && f.Flags == 0 && n <= 16 && int(f.Raw.Off)+16 <= len(data) {
			lo := binary.LittleEndian.Uint64(data[f.Raw.Off:]) &^ (^uint64(0) << (8 * n))
			hi := binary.LittleEndian.Uint64(data[f.Raw.Off+8:]) & (^uint64(0) >> (128 - 8*n))
			s.words, s.hash, s.hashed = [2]uint64{lo, hi}, bl.mix16(lo, hi, n), true
		}
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
	b.Fields = bl.fields[:bl.nf]
	bl.rec.NumFields = uint32(bl.nf) - bl.rec.FieldStart
	if bl.cfg.MaxFields > 0 && int(bl.rec.NumFields) > bl.cfg.MaxFields {
		bl.Fail(ErrTooManyFields, 0, fmt.Sprintf("%d fields, more than the limit of %d", bl.rec.NumFields, bl.cfg.MaxFields))
		return
	}
	fields := b.Fields[bl.rec.FieldStart:]
	if !bl.hasTime {
		bl.rec.Time, bl.rec.TimeSource = b.ReceiveTime, FromReceive
		if bl.timeIdx >= 0 {
			if bl.resolveTime(fields) {
				bl.rec.TimeSource = FromData
			} else {
				bl.rec.Time = b.ReceiveTime
				b.BadTime++
			}
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
	// Member by member, for the reason given in Add (TestBuilderCopiesEveryMember
	// fails when Record gains a member this misses).
	rs := append(b.Records, Record{})
	r, c := &rs[len(rs)-1], &bl.rec
	r.Time, r.TimeSource, r.MsgFlags, r.Stream = c.Time, c.TimeSource, c.MsgFlags, c.Stream
	r.Line, r.Msg, r.FieldStart, r.NumFields, r.Route = c.Line, c.Msg, c.FieldStart, c.NumFields, c.Route
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
		} else if len(raw) != bl.tmemo.n {
			ns, ok = bl.parseTime(raw)
		} else if ns, ok = bl.tmemo.read(raw); !ok {
			ns, ok = bl.parseTime(raw)
		}
	}
	// Before 1970 is taken for a mistake (a zero, a negative epoch, a
	// year 0), as is past 2262, which int64 nanoseconds cannot hold.
	if ok && ns >= 0 {
		bl.rec.Time = ns
		f.Role = RoleTime
		return true
	}
	return false
}

// parseTime reads a time field's text with the Reader, and remembers it
// in the memo when its length is the last one's: a source that writes
// one shape of timestamp, the memo's case, repeats its length, and
// sources that mix shapes are spared the cost of remembering each.
func (bl *Builder) parseTime(raw []byte) (int64, bool) {
	ns, ok := bl.times.Parse(raw, bl.b.ReceiveTime)
	if ok && len(raw) == bl.lastTimeLen {
		bl.tmemo.remember(raw, ns)
	}
	bl.lastTimeLen = len(raw)
	return ns, ok
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
		set[1], set[0] = set[0], streamCacheEntry{bl.scHash, id, bl.cacheKey(id)}
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
	key  uint32 // where the stream's values are in scKeys
}

const noKey = ^uint32(0)

// cachedStream finds the current record's stream in a small cache indexed
// by a hash of its label values, verified against a copy of the values
// that the cache keeps as words: cheaper than building the canonical key
// and looking it up in the map, and than comparing the stream's Labels.
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
		v := s.hash
		if !s.hashed {
			v = bl.hashSlot(s)
		}
		h = v ^ (h+uint64(i))*0x9E3779B97F4A7C15
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
	// Verify: the hash only found the entry.
	k := bl.scKeys[e.key:]
	if len(k) == 0 || k[0] != bl.slotSet {
		return 0, false
	}
	k = k[1:]
	diff := uint64(0)
	for m := bl.slotSet; m != 0; m &= m - 1 {
		s := &bl.slots[bits.TrailingZeros64(m)]
		if len(k) < 3 {
			return 0, false
		}
		if s.raw.Len <= 16 {
			diff |= (k[0] ^ uint64(s.raw.Len)) | (k[1] ^ s.words[0]) | (k[2] ^ s.words[1])
		} else if k[0] != uint64(s.raw.Len) || !bl.sameLong(s.raw, k[1]) {
			return 0, false
		}
		k = k[3:]
	}
	return e.id, diff == 0
}

// mix16 hashes a value of n <= 16 bytes given as two words.
func (bl *Builder) mix16(lo, hi uint64, n uint) uint64 {
	h := (lo ^ bl.scMix) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>31 ^ hi) * 0x94d049bb133111eb
	return h ^ h>>29 ^ uint64(n)<<32 // not in bit 0, which cachedStream sets
}

// hashSlot is cachedStream's hash of a plain string value that noteRole
// did not hash: one longer than 16 bytes, or too close to the end of the
// data to be read as two words, whose words it sets.
func (bl *Builder) hashSlot(s *slotVal) uint64 {
	v := bl.b.Data[s.raw.Off:s.raw.End()]
	if len(v) > 16 {
		return maphash.Bytes(bl.scSeedMap, v)
	}
	var pad [16]byte
	copy(pad[:], v)
	lo, hi := binary.LittleEndian.Uint64(pad[:]), binary.LittleEndian.Uint64(pad[8:])
	s.words, s.hash, s.hashed = [2]uint64{lo, hi}, bl.mix16(lo, hi, uint(len(v))), true
	return s.hash
}

// sameLong reports whether the value at raw is the one at off in scLong.
func (bl *Builder) sameLong(raw Span, off uint64) bool {
	return off+uint64(raw.Len) <= uint64(len(bl.scLong)) &&
		string(bl.b.Data[raw.Off:raw.End()]) == string(bl.scLong[off:off+uint64(raw.Len)])
}

// cacheKey returns where the values of stream id, the current record's,
// are in scKeys, copying them there the first time: the slot bitmap, then
// three words for each slot: a short value's length and its words, or
// a long value's length, its offset in scLong and 0.
// REQUIRES: cachedStream found the record's values cacheable (scHash != 0).
func (bl *Builder) cacheKey(id uint32) uint32 {
	if int(id) < len(bl.scKeyOff) && bl.scKeyOff[id] != noKey {
		return bl.scKeyOff[id]
	}
	for int(id) >= len(bl.scKeyOff) {
		bl.scKeyOff = append(bl.scKeyOff, noKey)
	}
	off := uint32(len(bl.scKeys))
	k := append(bl.scKeys, bl.slotSet)
	for m := bl.slotSet; m != 0; m &= m - 1 {
		s := &bl.slots[bits.TrailingZeros64(m)]
		raw := s.raw
		if raw.Len <= 16 {
			k = append(k, uint64(raw.Len), s.words[0], s.words[1])
			continue
		}
		k = append(k, uint64(raw.Len), uint64(len(bl.scLong)), 0)
		bl.scLong = append(bl.scLong, bl.b.Data[raw.Off:raw.End()]...)
	}
	bl.scKeys = k
	bl.scKeyOff[id] = off
	return off
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
	b.Fields = bl.fields[:bl.rec.FieldStart]
	col = max(col, 1)
	b.Errors = append(b.Errors, LineError{
		Line:   bl.line,
		Col:    col,
		Offset: bl.base + int64(bl.rec.Line.Off) + int64(col-1),
		Kind:   kind,
		Msg:    msg,
	})
}
