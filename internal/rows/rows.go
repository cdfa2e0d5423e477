package rows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sluicelog/sluice/internal/bin"
	"github.com/sluicelog/sluice/internal/record"
)

// The versions of the encoding: the first byte of every encoded block.
const (
	// Version1 is the first encoding.
	// FROZEN: blocks written with it must stay readable.
	Version1 = 1
	// Version2 adds the sinks the rules routed rows to: a table of sink
	// name lists in the header, and a row flag with an index into it.
	// The encoder writes it only for a block with a routed row; every
	// other block is still written as Version1, byte for byte.
	// FROZEN: blocks written with it must stay readable.
	Version2 = 2
	// Version is the latest version.
	Version = Version2
)

// ErrCorrupt is matched by every error Decode returns for bad bytes.
var ErrCorrupt = errors.New("rows: corrupt block")

// Row flags, one byte per row.
const (
	rowFromReceive = 1 << 0 // the time is the receive time
	rowMsgSpan     = 1 << 1 // the message is a span of the line
	rowMsgInline   = 1 << 2 // the message follows inline
	rowRouted      = 1 << 3 // Version2: a route index follows the stream
)

// Field flags, added to record.Flags in the field's flag byte. Const is
// never written: a constant's text is written inline instead.
const fieldInline = record.Const

// Field is one typed value of a decoded row.
type Field struct {
	Name  uint32 // index in the block's Names
	Kind  record.Kind
	Flags record.Flags // record.Escaped, BadUTF8, SDEscaped
	Role  record.Role
	// InLine reports that Value is a span of the row's line, at Off.
	InLine bool
	// FromLine reports a value parsed from the line but held apart from
	// it (a stored row's whose line is kept whole): no metadata.
	FromLine bool
	Off      uint32
	Value    []byte // the raw value: a view into the block
	Num      uint64 // as record.Field.Num
}

// Row is one decoded record. Its byte slices view the block.
type Row struct {
	Time       int64
	TimeSource record.TimeSource
	Stream     uint32 // index in the block's Streams
	Line       []byte
	// Msg is the message; MsgOff is its offset in Line when MsgInLine.
	Msg       []byte
	MsgFlags  record.Flags
	MsgInLine bool
	MsgOff    uint32
	Fields    []Field
	// Route is the sinks the rules routed the row to: 0 none, k the
	// names Block.Routes[k-1].
	Route uint16
}

// MsgIsLine reports whether r's message is its whole line (a Loki
// push's or an OTLP record's), or r has no line: see
// record.Record.MsgIsLine.
func (r *Row) MsgIsLine() bool {
	return len(r.Line) == 0 || r.MsgInLine && r.MsgOff == 0 && len(r.Msg) == len(r.Line)
}

// IsMetadata reports whether field f of r is structured metadata, by
// the rule of record.Record.IsMetadata: r's message is its whole line,
// and f a string held apart from it (not parsed from it: FromLine), with
// no role.
func (r *Row) IsMetadata(f *Field) bool {
	return f.Kind == record.String && f.Role == record.RoleNone && !f.InLine && !f.FromLine && r.MsgIsLine()
}

// maxKeptBody is the largest body buffer an Encoder keeps for the next
// batch.
const maxKeptBody = 16 << 20

// Encoder turns batches into encoded blocks.
//
// Concurrency: one goroutine.
type Encoder struct {
	nameIdx   []int32 // batch name id -> block name index, valid when nameGen matches
	nameGen   []uint32
	streamIdx map[uint32]uint32
	gen       uint32
	names     []uint32 // batch name ids in block order
	streams   []uint32
	body      []byte
	refs      []RowRef // offsets in body
	hdr       []byte
	// routeIdx maps a batch route k (Record.Route) to its block route
	// plus one, 0 when not yet used; routes are the batch routes in
	// block order, rowRoutes each row's block route (plus one).
	routeIdx  []uint16
	routes    []uint16
	rowRoutes []uint16
	// chunk is what is left of the chunk small blocks' Data are carved
	// from (see Block); tiny and small what is left of the slabs one-row
	// blocks are carved from (see newBlock).
	chunk []byte
	tiny  []tinyBlock
	small []smallBlock
}

// A block whose encoding is at most maxCarved bytes (one or a few
// records) has its Data carved from a chunk of dataChunk bytes that the
// Encoder shares with the blocks it made before, rather than allocated
// alone: one allocation per chunk instead of one per block, for the
// one-line pushes that make a block each. A chunk lives as long as any
// block carved from it does: at most dataChunk bytes held beyond them,
// per Encoder.
const (
	maxCarved = 1 << 10
	dataChunk = 16 << 10
)

// Append appends to dst the block holding the kept records of b (see
// record.Batch.Drop; its errors are not part of it) for tenant, and
// returns the extended slice. Only each kept record's line and the values
// its fields and message refer to are written: bytes of Data that no kept
// record refers to (a dropped record's, a line replaced by SetLine) never
// reach the block.
func (e *Encoder) Append(dst []byte, tenant string, b *record.Batch) []byte {
	e.encodeBody(b)
	dst = e.header(dst, tenant, b)
	return append(dst, e.body...)
}

// bodySize estimates the body's size from the batch: its lines plus a
// typical encoding of each row (time, flags, stream, length) and field
// (name, kind, flags, role, span). A low guess only costs a regrowth.
func bodySize(b *record.Batch) int {
	return len(b.Data) + 12*len(b.Records) + 10*len(b.Fields)
}

// encodeBody encodes the rows of b into e.body and collects the names and
// streams they use.
func (e *Encoder) encodeBody(b *record.Batch) {
	e.gen++
	if e.gen == 0 {
		clear(e.nameGen)
		e.gen = 1
	}
	if e.streamIdx == nil {
		e.streamIdx = make(map[uint32]uint32)
	}
	clear(e.streamIdx)
	e.names, e.streams = e.names[:0], e.streams[:0]
	e.routes, e.rowRoutes = e.routes[:0], e.rowRoutes[:0]
	e.routeIdx = append(e.routeIdx[:0], make([]uint16, len(b.Routes)+1)...)

	// Grown once: a body grown by doubling copied every line several
	// times (a sixth of a bulk load's CPU).
	body := slices.Grow(e.body[:0], bodySize(b))
	e.refs = slices.Grow(e.refs[:0], len(b.Records))
	var prev int64
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		r := &b.Records[i]
		line := b.Bytes(r.Line)
		body = binary.AppendVarint(body, r.Time-prev)
		prev = r.Time
		e.refs = append(e.refs, RowRef{Time: r.Time, Off: uint32(len(body))})
		var flags byte
		if r.TimeSource == record.FromReceive {
			flags |= rowFromReceive
		}
		route := e.route(r.Route)
		if route > 0 {
			flags |= rowRouted
		}
		msgInLine := r.Msg.Len > 0 && r.MsgFlags&record.Const == 0 && r.Msg.Off >= r.Line.Off && r.Msg.End() <= r.Line.End()
		switch {
		case msgInLine:
			flags |= rowMsgSpan
		case r.Msg.Len > 0:
			flags |= rowMsgInline
		}
		body = append(body, flags, byte(r.MsgFlags&^record.Const))
		stream := e.stream(r.Stream)
		e.refs[len(e.refs)-1].Stream = stream
		body = binary.AppendUvarint(body, uint64(stream))
		if route > 0 {
			body = binary.AppendUvarint(body, uint64(route-1))
		}
		if len(b.Routes) > 0 {
			e.rowRoutes = append(e.rowRoutes, route)
		}
		body = binary.AppendUvarint(body, uint64(len(line)))
		body = append(body, line...)
		switch {
		case msgInLine:
			body = binary.AppendUvarint(body, uint64(r.Msg.Off-r.Line.Off))
			body = binary.AppendUvarint(body, uint64(r.Msg.Len))
		case r.Msg.Len > 0:
			f := record.Field{Raw: r.Msg, Flags: r.MsgFlags}
			msg := b.Raw(&f)
			body = binary.AppendUvarint(body, uint64(len(msg)))
			body = append(body, msg...)
		}
		fields := b.RecordFields(i)
		body = binary.AppendUvarint(body, uint64(len(fields)))
		for j := range fields {
			f := &fields[j]
			body = binary.AppendUvarint(body, uint64(e.name(f.Name)))
			inLine := f.Flags&record.Const == 0 && f.Raw.Off >= r.Line.Off && f.Raw.End() <= r.Line.End()
			fl := f.Flags &^ record.Const
			if !inLine {
				fl |= fieldInline
			}
			body = append(body, byte(f.Kind), byte(fl), byte(f.Role))
			if inLine {
				body = binary.AppendUvarint(body, uint64(f.Raw.Off-r.Line.Off))
				body = binary.AppendUvarint(body, uint64(f.Raw.Len))
			} else {
				v := b.Raw(f)
				body = binary.AppendUvarint(body, uint64(len(v)))
				body = append(body, v...)
			}
			switch f.Kind {
			case record.Int, record.Bool:
				body = binary.AppendVarint(body, int64(f.Num))
			case record.Float:
				body = binary.LittleEndian.AppendUint64(body, f.Num)
			}
		}
	}
	e.body = body
}

// header appends the block's header: everything before the body.
func (e *Encoder) header(dst []byte, tenant string, b *record.Batch) []byte {
	if len(e.routes) == 0 {
		dst = append(dst, Version1)
	} else {
		dst = append(dst, Version2)
	}
	dst = bin.AppendString(dst, tenant)
	dst = binary.AppendVarint(dst, b.ReceiveTime)
	dst = binary.AppendUvarint(dst, uint64(len(e.names)))
	for _, id := range e.names {
		dst = bin.AppendString(dst, b.Names.Get(id))
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.streams)))
	for _, id := range e.streams {
		ls := b.Streams.Get(id)
		dst = binary.AppendUvarint(dst, uint64(len(ls)))
		for _, l := range ls {
			dst = bin.AppendString(dst, l.Name)
			dst = bin.AppendString(dst, l.Value)
		}
	}
	if len(e.routes) > 0 {
		dst = binary.AppendUvarint(dst, uint64(len(e.routes)))
		for _, k := range e.routes {
			names := b.Routes[k-1]
			dst = binary.AppendUvarint(dst, uint64(len(names)))
			for _, n := range names {
				dst = bin.AppendString(dst, n)
			}
		}
	}
	return binary.AppendUvarint(dst, uint64(len(e.refs)))
}

// route returns the block route (plus one) of batch route k (plus one),
// adding it to the block's table on first use.
func (e *Encoder) route(k uint16) uint16 {
	if k == 0 || int(k) >= len(e.routeIdx) {
		return 0 // no route, or none the batch's table holds
	}
	if e.routeIdx[k] == 0 {
		e.routes = append(e.routes, k)
		e.routeIdx[k] = uint16(len(e.routes))
	}
	return e.routeIdx[k]
}

// Block encodes b as Append does and returns it already indexed, without
// the cost of Decode: its Data is the encoding, exactly sized, which the
// caller may hand to the WAL. Data is the block's alone (its capacity is
// its length, so an append to it copies) and is never written again by
// the Encoder; a small one shares its backing array with other blocks'
// (see maxCarved).
func (e *Encoder) Block(tenant string, b *record.Batch) *Block {
	e.encodeBody(b)
	e.hdr = e.header(e.hdr[:0], tenant, b)
	data := e.data(len(e.hdr) + len(e.body))
	copy(data, e.hdr)
	copy(data[len(e.hdr):], e.body)
	hdrLen := uint32(len(e.hdr))
	if cap(e.body) > maxKeptBody {
		e.body = nil // an outsized batch's buffer is not kept in the pool
	}
	blk := e.newBlock(len(e.names), len(e.streams), len(e.refs))
	blk.Tenant, blk.ReceiveTime, blk.Data = tenant, b.ReceiveTime, data
	for i, id := range e.names {
		blk.Names[i] = b.Names.Get(id)
	}
	for i, id := range e.streams {
		blk.Streams[i] = b.Streams.Get(id)
	}
	if len(e.routes) > 0 {
		blk.Version = Version2
		blk.Routes = make([][]string, len(e.routes))
		for i, k := range e.routes {
			blk.Routes[i] = b.Routes[k-1]
		}
		blk.RowRoutes = slices.Clone(e.rowRoutes)
	} else {
		blk.Version = Version1
	}
	for i, r := range e.refs {
		r.Off += hdrLen
		blk.Rows[i] = r
	}
	return blk
}

func (e *Encoder) name(id uint32) uint32 {
	if int(id) >= len(e.nameIdx) {
		n := max(int(id)+1, 2*len(e.nameIdx), 64)
		e.nameIdx = append(e.nameIdx, make([]int32, n-len(e.nameIdx))...)
		e.nameGen = append(e.nameGen, make([]uint32, n-len(e.nameGen))...)
	}
	if e.nameGen[id] != e.gen {
		e.nameGen[id] = e.gen
		e.nameIdx[id] = int32(len(e.names))
		e.names = append(e.names, id)
	}
	return uint32(e.nameIdx[id])
}

func (e *Encoder) stream(id uint32) uint32 {
	if i, ok := e.streamIdx[id]; ok {
		return i
	}
	i := uint32(len(e.streams))
	e.streamIdx[id] = i
	e.streams = append(e.streams, id)
	return i
}

// Block is a decoded block's header and row index; rows are decoded on
// demand. It views the encoded bytes, which must not change while it is
// used.
//
// Concurrency: read-only after Decode; Row may be called from several
// goroutines with their own destination slices.
type Block struct {
	Version     byte
	Tenant      string
	ReceiveTime int64
	Names       []string
	Streams     []record.Labels
	// Routes are the sink name lists the rules routed rows to (Version2;
	// nil in Version1), and RowRoutes each row's: 0 none, k the names
	// Routes[k-1]. RowRoutes is nil when Routes is.
	Routes    [][]string
	RowRoutes []uint16
	// Rows are the offsets of each row's encoding in Data, with its time
	// and stream, so that sorting and filtering need no decoding.
	Rows []RowRef
	Data []byte
}

// smallBlock and tinyBlock are a Block with room for the tables of a
// one-row batch (a one-line push, say): one allocation for the four, of
// 416 and 288 bytes (a Block and its three tables apart take about as
// much, in four).
type smallBlock struct {
	Block
	names   [12]string
	streams [1]record.Labels
	rows    [1]RowRef
}

type tinyBlock struct {
	Block
	names   [4]string
	streams [1]record.Labels
	rows    [1]RowRef
}

// data returns n bytes for a block's Data: carved from the chunk when n
// is at most maxCarved, else allocated alone.
func (e *Encoder) data(n int) []byte {
	if n > maxCarved {
		return make([]byte, n)
	}
	if len(e.chunk) < n {
		e.chunk = make([]byte, dataChunk)
	}
	d := e.chunk[:n:n]
	e.chunk = e.chunk[n:]
	return d
}

// blockSlab is how many one-row blocks (tinyBlock, smallBlock) an
// Encoder carves from one allocation.
const blockSlab = 16

// newBlock returns a Block whose Names, Streams and Rows have the
// lengths given. A one-row block (a one-line push's) is carved from a
// slab of blockSlab the Encoder shares with the blocks it made before,
// as their small Data are from a chunk (see maxCarved): one allocation
// per slab instead of one per block. Nothing carved is handed out twice,
// so no owner has to say when it is done with a block (the head keeps
// its blocks until a flush, and a reader's snapshot may view them after
// it): the garbage collector frees a slab once no block carved from it
// is reachable. At most blockSlab-1 blocks' structs (4-7 KiB) are held
// beyond the blocks in use, per slab.
func (e *Encoder) newBlock(names, streams, rows int) *Block {
	if streams <= 1 && rows <= 1 {
		switch {
		case names <= len(tinyBlock{}.names):
			if len(e.tiny) == 0 {
				e.tiny = make([]tinyBlock, blockSlab)
			}
			tb := &e.tiny[0]
			e.tiny = e.tiny[1:]
			tb.Names, tb.Streams, tb.Rows = tb.names[:names:names], tb.streams[:streams:streams], tb.rows[:rows:rows]
			return &tb.Block
		case names <= len(smallBlock{}.names):
			if len(e.small) == 0 {
				e.small = make([]smallBlock, blockSlab)
			}
			sb := &e.small[0]
			e.small = e.small[1:]
			sb.Names, sb.Streams, sb.Rows = sb.names[:names:names], sb.streams[:streams:streams], sb.rows[:rows:rows]
			return &sb.Block
		}
	}
	return &Block{Names: make([]string, names), Streams: make([]record.Labels, streams), Rows: make([]RowRef, rows)}
}

// RowRef locates one row of a block.
type RowRef struct {
	Time   int64
	Stream uint32
	Off    uint32 // offset of the row's flags byte in Data
}

// Peek reads the version and the tenant of an encoded block without
// decoding the rest: for readers that skip another tenant's blocks, or
// Version1 blocks (which route no row), before they pay for Decode. The
// tenant views data. It checks no more than it reads.
func Peek(data []byte) (version byte, tenant []byte, err error) {
	d := bin.NewReader(data)
	version = d.Byte("version")
	tenant = d.BytesN("tenant")
	if d.Err() != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrCorrupt, d.Err())
	}
	if version != Version1 && version != Version2 {
		return 0, nil, fmt.Errorf("%w: version %d, want %d or %d", ErrCorrupt, version, Version1, Version2)
	}
	return version, tenant, nil
}

// CountRows returns how many rows an encoded block holds, from its header
// and row count alone, decoding no row: for a reader that counts the rows
// it skips (a sink's drop_oldest). It checks no more than it reads: a
// block whose rows are damaged past the count still answers.
func CountRows(data []byte) (int, error) {
	_, d, err := decodeHeader(data)
	if err != nil {
		return 0, err
	}
	n := d.Count("row count", 5)
	if d.Err() != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, d.Err())
	}
	return n, nil
}

// Decode reads the header of an encoded block and indexes its rows,
// checking every row's encoding, so that Row never fails afterwards. The
// block views data.
func Decode(data []byte) (*Block, error) {
	blk, d, err := decodeHeader(data)
	if err != nil {
		return nil, err
	}
	blk.Rows = make([]RowRef, d.Count("row count", 5))
	if blk.Routes != nil {
		blk.RowRoutes = make([]uint16, len(blk.Rows))
	}
	var t int64
	var scratch []Field
	for i := range blk.Rows {
		t += d.Varint("row time")
		off := d.Off()
		var r Row
		scratch = decodeRow(&d, &r, scratch[:0], len(blk.Names), len(blk.Streams), blk.Version, len(blk.Routes))
		if d.Err() != nil {
			return nil, fmt.Errorf("%w: row %d: %w", ErrCorrupt, i, d.Err())
		}
		blk.Rows[i] = RowRef{Time: t, Stream: r.Stream, Off: uint32(off)}
		if blk.RowRoutes != nil {
			blk.RowRoutes[i] = r.Route
		}
	}
	d.Done("block")
	if d.Err() != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, d.Err())
	}
	return blk, nil
}

// Each decodes an encoded block as Decode does, checking every row, but
// hands each row to fn as it decodes it, in order, rather than indexing
// the rows: for a reader that visits every row once (a sink's fill),
// which so decodes each row once, not twice (Decode, then Row). head is
// called with the block's header first (Rows and RowRoutes nil; the
// Block views data); if it returns false, Each stops there and returns
// the header alone, unchecked past it. r and its fields view data and
// are valid until fn returns.
//
// On an error (ErrCorrupt), fn has seen the rows before the bad one: a
// caller that wants all of a block or nothing undoes what it did with
// them.
func Each(data []byte, head func(*Block) bool, fn func(i int, r *Row)) (*Block, error) {
	blk, d, err := decodeHeader(data)
	if err != nil {
		return nil, err
	}
	if !head(blk) {
		return blk, nil
	}
	n := d.Count("row count", 5)
	var t int64
	var r Row
	var fields []Field
	for i := range n {
		t += d.Varint("row time")
		fields = decodeRow(&d, &r, fields[:0], len(blk.Names), len(blk.Streams), blk.Version, len(blk.Routes))
		if d.Err() != nil {
			return nil, fmt.Errorf("%w: row %d: %w", ErrCorrupt, i, d.Err())
		}
		r.Time = t
		fn(i, &r)
	}
	d.Done("block")
	if d.Err() != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, d.Err())
	}
	return blk, nil
}

// decodeHeader reads an encoded block up to its row count: the version,
// tenant, receive time, names, streams and routes. The block views data;
// the reader is left at the row count.
func decodeHeader(data []byte) (*Block, bin.Reader, error) {
	d := bin.NewReader(data)
	v := d.Byte("version")
	if v != Version1 && v != Version2 {
		return nil, d, fmt.Errorf("%w: version %d, want %d or %d", ErrCorrupt, v, Version1, Version2)
	}
	blk := &Block{Data: data, Version: v}
	blk.Tenant = d.String("tenant")
	blk.ReceiveTime = d.Varint("receive time")
	blk.Names = make([]string, d.Count("name count", 1))
	for i := range blk.Names {
		blk.Names[i] = d.String("name")
	}
	blk.Streams = make([]record.Labels, d.Count("stream count", 1))
	for i := range blk.Streams {
		ls := make(record.Labels, d.Count("label count", 2))
		for j := range ls {
			ls[j].Name = d.String("label name")
			ls[j].Value = d.String("label value")
		}
		blk.Streams[i] = ls
	}
	if v >= Version2 {
		// A Version2 block has a route, or it would be Version1; the
		// decoder does not insist.
		n := d.Count("route count", 1)
		if d.Err() == nil && n > record.MaxRoutes {
			d.Fail("route count")
		}
		if d.Err() == nil {
			blk.Routes = make([][]string, n)
		}
		for i := range blk.Routes {
			names := make([]string, d.Count("route name count", 1))
			for j := range names {
				names[j] = d.String("route name")
			}
			blk.Routes[i] = names
		}
	}
	if d.Err() != nil {
		return nil, d, fmt.Errorf("%w: %w", ErrCorrupt, d.Err())
	}
	return blk, d, nil
}

// decodeRow decodes one row of a block of version v, from its flags byte
// on, checking it.
func decodeRow(d *bin.Reader, r *Row, fields []Field, names, streams int, v byte, routes int) []Field {
	flags := d.Byte("row flags")
	r.MsgFlags = record.Flags(d.Byte("message flags"))
	r.TimeSource = record.FromData
	if flags&rowFromReceive != 0 {
		r.TimeSource = record.FromReceive
	}
	stream := d.Uvarint("stream")
	if d.Err() == nil && stream >= uint64(streams) {
		d.Fail("stream index")
	}
	r.Stream = uint32(stream)
	r.Route = 0
	if v >= Version2 && flags&rowRouted != 0 {
		route := d.Uvarint("route")
		if d.Err() == nil && route >= uint64(routes) {
			d.Fail("route index")
		}
		r.Route = uint16(route + 1)
	}
	r.Line = d.Bytes(d.Uvarint("line length"), "line")
	r.Msg, r.MsgInLine, r.MsgOff = nil, false, 0
	switch {
	case flags&rowMsgSpan != 0:
		off, n := d.Uvarint("message offset"), d.Uvarint("message length")
		if d.Err() == nil && (off > uint64(len(r.Line)) || n > uint64(len(r.Line))-off) {
			d.Fail("message span")
		}
		if d.Err() == nil {
			r.Msg, r.MsgInLine, r.MsgOff = r.Line[off:off+n:off+n], true, uint32(off)
		}
	case flags&rowMsgInline != 0:
		r.Msg = d.Bytes(d.Uvarint("message length"), "message")
	}
	n := d.Count("field count", 5)
	for range n {
		var f Field
		name := d.Uvarint("field name")
		if d.Err() == nil && name >= uint64(names) {
			d.Fail("field name index")
		}
		f.Name = uint32(name)
		f.Kind = record.Kind(d.Byte("field kind"))
		fl := record.Flags(d.Byte("field flags"))
		f.Role = record.Role(d.Byte("field role"))
		if d.Err() == nil && f.Kind > record.JSON {
			d.Fail("field kind")
		}
		f.Flags = fl &^ fieldInline
		if fl&fieldInline != 0 {
			f.Value = d.Bytes(d.Uvarint("field length"), "field value")
		} else {
			off, n := d.Uvarint("field offset"), d.Uvarint("field length")
			if d.Err() == nil && (off > uint64(len(r.Line)) || n > uint64(len(r.Line))-off) {
				d.Fail("field span")
			}
			if d.Err() == nil {
				f.InLine, f.Off, f.Value = true, uint32(off), r.Line[off:off+n:off+n]
			}
		}
		switch f.Kind {
		case record.Int, record.Bool:
			f.Num = uint64(d.Varint("field number"))
		case record.Float:
			f.Num = d.Uint64("field float")
		}
		if d.Err() != nil {
			return fields
		}
		fields = append(fields, f)
	}
	r.Fields = fields
	return fields
}

// Row decodes row i into r, appending its fields to fields[:0], which it
// returns for reuse. r's slices view the block.
//
// Decode checked every row, so Row decodes without checks: it is on the
// path of every flush.
func (b *Block) Row(i int, r *Row, fields []Field) []Field {
	d := b.Data
	p := int(b.Rows[i].Off)
	flags := d[p]
	r.MsgFlags = record.Flags(d[p+1])
	p += 2
	r.Time = b.Rows[i].Time
	r.TimeSource = record.FromData
	if flags&rowFromReceive != 0 {
		r.TimeSource = record.FromReceive
	}
	var v uint64
	v, p = uvarint(d, p)
	r.Stream = uint32(v)
	r.Route = 0
	if flags&rowRouted != 0 && b.Version >= Version2 {
		v, p = uvarint(d, p)
		r.Route = uint16(v + 1)
	}
	v, p = uvarint(d, p)
	line := d[p : p+int(v) : p+int(v)]
	r.Line = line
	p += int(v)
	r.Msg, r.MsgInLine, r.MsgOff = nil, false, 0
	switch {
	case flags&rowMsgSpan != 0:
		var off, n uint64
		off, p = uvarint(d, p)
		n, p = uvarint(d, p)
		r.Msg, r.MsgInLine, r.MsgOff = line[off:off+n:off+n], true, uint32(off)
	case flags&rowMsgInline != 0:
		v, p = uvarint(d, p)
		r.Msg = d[p : p+int(v) : p+int(v)]
		p += int(v)
	}
	var nf uint64
	nf, p = uvarint(d, p)
	fields = fields[:0]
	for range nf {
		var f Field
		v, p = uvarint(d, p)
		f.Name = uint32(v)
		f.Kind, f.Role = record.Kind(d[p]), record.Role(d[p+2])
		fl := record.Flags(d[p+1])
		p += 3
		f.Flags = fl &^ fieldInline
		if fl&fieldInline != 0 {
			v, p = uvarint(d, p)
			f.Value = d[p : p+int(v) : p+int(v)]
			p += int(v)
		} else {
			var off uint64
			off, p = uvarint(d, p)
			v, p = uvarint(d, p)
			f.InLine, f.Off, f.Value = true, uint32(off), line[off:off+v:off+v]
		}
		switch f.Kind {
		case record.Int, record.Bool:
			v, p = uvarint(d, p)
			f.Num = uint64(int64(v>>1) ^ -int64(v&1)) // zigzag
		case record.Float:
			f.Num = binary.LittleEndian.Uint64(d[p:])
			p += 8
		}
		fields = append(fields, f)
	}
	r.Fields = fields
	return fields
}

// Line returns row i's line, a view of the block, without decoding the
// rest of the row: for readers that need nothing else (the row's time and
// stream are in Rows[i]).
func (b *Block) Line(i int) []byte {
	d := b.Data
	p := int(b.Rows[i].Off)
	flags := d[p]
	p += 2
	_, p = uvarint(d, p) // the stream
	if flags&rowRouted != 0 && b.Version >= Version2 {
		_, p = uvarint(d, p)
	}
	n, p := uvarint(d, p)
	return d[p : p+int(n) : p+int(n)]
}

// uvarint decodes the varint at p of a checked block.
func uvarint(d []byte, p int) (uint64, int) {
	if c := d[p]; c < 0x80 {
		return uint64(c), p + 1
	}
	v, n := binary.Uvarint(d[p:])
	return v, p + n
}

// Float returns a Float field's value.
func (f *Field) Float() float64 { return math.Float64frombits(f.Num) }

// Prefetch starts loading row i's encoding into the CPU's caches, so that
// a Row call a little later does not wait for memory: a flush visits rows
// stream by stream, which is all over the head.
func (b *Block) Prefetch(i int) {
	off := int(b.Rows[i].Off)
	n := min(len(b.Data)-off, 384) // a typical row and its fields
	if n > 0 {
		prefetch(&b.Data[off], n)
	}
}
