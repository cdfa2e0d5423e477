package record

import (
	"fmt"
	"math/bits"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// Batch is many records parsed from one input buffer.
//
// INVARIANT: every Span in Records and Fields lies within Data, every
// name and stream id is below the Len of Names and Streams, and every
// Record.Route is at most len(Routes).
//
// A stage after parsing changes a batch without copying it: Drop removes a
// record from the selection (every consumer skips records that are not
// Kept), and SetLine replaces a record's line, leaving every other record
// byte-exact.
//
// Concurrency: a batch is owned by one goroutine at a time; it is handed
// from stage to stage, never shared.
type Batch struct {
	Data    []byte
	Records []Record
	Fields  []Field
	Names   *Names
	Streams *Streams

	// Routes are the sink name lists the rule stage routed records to
	// (the rules' route action): record.Route k names Routes[k-1]. Each
	// list is sorted and holds a name once; lists are distinct. At most
	// MaxRoutes of them.
	Routes [][]string

	// Tenant is the tenant the records belong to, set by whoever makes
	// the batch (the server's ingest paths, file ingest, syslog).
	Tenant string

	// dropped has bit i set when record i was dropped; nil when every
	// record is kept. ndropped counts the set bits.
	dropped  []uint64
	ndropped int

	// Errors lists the lines that were rejected, in input order. A
	// rejected line produces no record and never affects its neighbours.
	Errors []LineError

	// ReceiveTime (Unix ns) is the timestamp of records that carry none.
	ReceiveTime int64

	// BadUTF8 counts values holding invalid UTF-8 (see the BadUTF8 flag).
	BadUTF8 int

	// Unmatched counts lines that a pattern format did not match and kept
	// as a plain message (see Builder.Unmatched).
	Unmatched int

	// BadTime counts records whose time field was present but unusable
	// (unreadable, or outside the accepted range: see Builder): they
	// carry the receive time, as records without a time field do.
	BadTime int
}

// Reset empties the batch for reuse, keeping its buffers.
func (b *Batch) Reset() {
	b.Data = b.Data[:0]
	b.Records = b.Records[:0]
	b.Fields = b.Fields[:0]
	b.Errors = b.Errors[:0]
	b.Tenant = ""
	clear(b.Routes)
	b.Routes = b.Routes[:0]
	b.dropped = b.dropped[:0]
	b.ndropped = 0
	b.ReceiveTime = 0
	b.BadUTF8 = 0
	b.Unmatched = 0
	b.BadTime = 0
}

// Drop removes record i from the selection: consumers of the batch (the
// rows encoder, the protocol encoders, counts of stored lines) skip it.
// Dropping a dropped record does nothing.
func (b *Batch) Drop(i int) {
	_ = b.Records[i] // bounds check: i must name a record
	w := i / 64
	if w >= len(b.dropped) {
		b.dropped = append(b.dropped, make([]uint64, len(b.Records)/64+1-len(b.dropped))...)
	}
	m := uint64(1) << (i % 64)
	if b.dropped[w]&m == 0 {
		b.dropped[w] |= m
		b.ndropped++
	}
}

// MaxRoutes bounds a batch's Routes: Record.Route is a uint16.
const MaxRoutes = 1<<16 - 1

// RouteOf returns the sink names record i was routed to (nil: none).
func (b *Batch) RouteOf(i int) []string {
	if k := b.Records[i].Route; k > 0 {
		return b.Routes[k-1]
	}
	return nil
}

// Kept reports whether record i is in the selection.
func (b *Batch) Kept(i int) bool {
	w := i / 64
	return w >= len(b.dropped) || b.dropped[w]&(uint64(1)<<(i%64)) == 0
}

// NumKept returns the number of records in the selection.
func (b *Batch) NumKept() int { return len(b.Records) - b.ndropped }

// AllKept reports whether no record was dropped, so that a consumer may
// skip calling Kept.
func (b *Batch) AllKept() bool { return b.ndropped == 0 }

// NextKept returns the index of the first kept record at or after i, or
// len(b.Records) when there is none: for i := b.NextKept(0); i <
// len(b.Records); i = b.NextKept(i + 1).
func (b *Batch) NextKept(i int) int {
	n := len(b.Records)
	for i < n {
		w := i / 64
		if w >= len(b.dropped) {
			return i
		}
		kept := ^b.dropped[w] >> (i % 64)
		if kept != 0 {
			return min(i+bits.TrailingZeros64(kept), n)
		}
		i = (w + 1) * 64
	}
	return n
}

// ClearSelection keeps every record again. A stage that compacts
// Records itself calls it once the dropped records are gone.
func (b *Batch) ClearSelection() {
	clear(b.dropped)
	b.dropped = b.dropped[:0]
	b.ndropped = 0
}

// SetLine replaces the line of record i with a copy of line, appended to
// Data; the bytes of every other record are untouched. The old line's
// bytes stay in Data but nothing refers to them, so no encoder writes
// them.
//
// The record's fields are dropped: they were views of (or values parsed
// from) the old line, and a redacted value must never reach the WAL
// through a field. A message that was part of the record (a span of Data)
// becomes the whole new line; a constant message is kept. Time, time
// source and stream are kept. A stage that needs fields of the new line
// parses it again.
func (b *Batch) SetLine(i int, line []byte) {
	r := &b.Records[i]
	if uint64(len(b.Data))+uint64(len(line)) > 1<<32-1 {
		panic(fmt.Sprintf("record: SetLine would grow the batch's data past 4 GiB (%d + %d bytes)", len(b.Data), len(line)))
	}
	off := uint32(len(b.Data))
	b.Data = append(b.Data, line...)
	r.Line = Span{Off: off, Len: uint32(len(line))}
	if r.MsgFlags&Const == 0 && r.Msg.Len > 0 {
		r.Msg = r.Line
		r.MsgFlags = 0
		if !utf8.Valid(line) {
			r.MsgFlags = BadUTF8
		}
	}
	r.NumFields = 0
}

// Bytes returns the bytes a span views.
func (b *Batch) Bytes(s Span) []byte { return b.Data[s.Off:s.End():s.End()] }

// Raw returns the bytes of a field's value: a view of Data, or the
// constant a Const field refers to.
func (b *Batch) Raw(f *Field) []byte {
	if f.Flags&Const != 0 {
		c := constants[f.Raw.Off]
		return unsafe.Slice(unsafe.StringData(c), len(c))
	}
	return b.Bytes(f.Raw)
}

// RecordFields returns the fields of record i.
func (b *Batch) RecordFields(i int) []Field {
	r := &b.Records[i]
	return b.Fields[r.FieldStart : r.FieldStart+r.NumFields]
}

// Name returns the name of a field.
func (b *Batch) Name(f *Field) string { return b.Names.Get(f.Name) }

// Labels returns the stream labels of record i.
func (b *Batch) Labels(i int) Labels { return b.Streams.Get(b.Records[i].Stream) }

// AppendString appends the text of a string field, unescaped, to dst. For
// other kinds it appends the value's text as it would print in JSON.
func (b *Batch) AppendString(dst []byte, f *Field) []byte {
	if f.Kind == String {
		return AppendUnescaped(dst, b.Raw(f), f.Flags)
	}
	return b.appendValueJSON(dst, f)
}

// AppendMsg appends record i's message, unescaped, to dst.
func (b *Batch) AppendMsg(dst []byte, i int) []byte {
	r := &b.Records[i]
	return AppendUnescaped(dst, b.msgRaw(r), r.MsgFlags)
}

func (b *Batch) msgRaw(r *Record) []byte {
	f := Field{Raw: r.Msg, Flags: r.MsgFlags}
	return b.Raw(&f)
}

var batchPool = sync.Pool{New: func() any { return new(Batch) }}

const maxPooledData = 64 << 20

// GetBatch returns an empty batch from a pool.
func GetBatch() *Batch { return batchPool.Get().(*Batch) }

// PutBatch resets b and returns it to the pool. Oversized buffers are
// dropped so that one huge request doesn't pin its memory forever.
// REQUIRES: nothing references b or views into it any more.
func PutBatch(b *Batch) {
	b.Reset()
	b.Names, b.Streams = nil, nil
	if cap(b.Data) > maxPooledData {
		b.Data = nil
	}
	batchPool.Put(b)
}

// ErrKind classifies a rejected line, for counting.
type ErrKind uint8

const (
	ErrSyntax      ErrKind = iota // malformed input for the format
	ErrLineTooLong                // longer than the configured maximum
	ErrTooDeep                    // nesting beyond the configured depth
	ErrTooManyFields
	ErrTooManyNames // the field name table is full
	numErrKinds
)

var errKindNames = [...]string{"syntax", "line_too_long", "too_deep", "too_many_fields", "too_many_names"}

func (k ErrKind) String() string {
	if k < numErrKinds {
		return errKindNames[k]
	}
	return fmt.Sprintf("errkind(%d)", k)
}

// ErrKinds lists every ErrKind, for reports.
func ErrKinds() []ErrKind {
	ks := make([]ErrKind, numErrKinds)
	for i := range ks {
		ks[i] = ErrKind(i)
	}
	return ks
}

// LineError describes a rejected line.
type LineError struct {
	Line   int64 // 1-based line number in the input
	Col    int   // 1-based byte column in the line
	Offset int64 // 0-based byte offset in the input
	Kind   ErrKind
	Msg    string
}

// Error formats the error as LINE:COL: message.
func (e *LineError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}
