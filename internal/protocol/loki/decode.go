package loki

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicelog/sluice/internal/record"
)

// ErrBadRequest is matched by the error for a body that cannot be read at
// all (as opposed to single entries, which Result reports).
var ErrBadRequest = errors.New("bad push request")

// Result tells what a push held besides its stored entries.
type Result struct {
	Entries  int      // entries in the request
	Rejected int      // entries left out
	Reasons  []string // why, the first few
}

const maxReasons = 10

func (r *Result) reject(n int, format string, args ...any) {
	r.Rejected += n
	if len(r.Reasons) < maxReasons {
		r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...))
	}
}

// Decoder turns push bodies into batches.
//
// Concurrency: one goroutine; reuse it for many requests.
type Decoder struct {
	Limits Limits
	// Discover is what the decoder adds as Loki's distributor does
	// (zero: nothing).
	Discover Discovery
	// Fields says which lines keep the fields they hold (zero: none).
	Fields LineFields
	// Reuse gives each batch the tables of the batch before, reset,
	// rather than new ones (a table's first page is tens of KB, more
	// than a one-line push), while they stay small.
	// REQUIRES: the caller is done with a batch, and with everything
	// holding its stream or name ids, before it decodes the next.
	Reuse   bool
	names   *record.Names
	streams *record.Streams
	meta    [][2][]byte
	buf     []byte
	lower   []byte    // DetectLevel's scratch
	json    jsonState // DecodeJSON's
	fields  jsonFields
}

// Clear drops what the decoder holds of the last body it decoded (views
// of its structured metadata), keeping its buffers and tables: for a
// decoder kept between requests, which must not pin the last body.
func (d *Decoder) Clear() {
	clear(d.meta[:cap(d.meta)])
	d.meta = d.meta[:0]
}

// levelLabel is LevelLabel as bytes, for Names.Lookup.
var levelLabel = []byte(LevelLabel)

// Begin prepares b for the entries of a request that another decoder
// (OTLP's) hands over through Stream and Add.
func (d *Decoder) Begin(b *record.Batch) { d.batch(b) }

// Stream checks and interns a stream's labels, sorting them (and adding
// service_name as Discover says).
func (d *Decoder) Stream(b *record.Batch, ls record.Labels) (uint32, error) { return d.stream(b, ls) }

// Add appends one entry of a stream that Stream returned, with its
// structured metadata; an entry left out is counted in res.
func (d *Decoder) Add(b *record.Batch, stream uint32, ts int64, line []byte, meta [][2][]byte, res *Result) {
	d.add(b, stream, ts, line, meta, res)
}

// batch prepares b for a request's entries.
func (d *Decoder) batch(b *record.Batch) {
	b.Reset()
	// A request's batch has tables of its own: a table shared across
	// requests would grow for ever. Reused, they are reset, and
	// dropped once they grow past a page.
	if !d.Reuse || d.names == nil || d.names.Len() > maxReusedTable || d.streams.Len() > maxReusedTable {
		d.names, d.streams = record.NewNames(), record.NewStreams()
	} else {
		d.names.Reset()
		d.streams.Reset()
	}
	b.Names, b.Streams = d.names, d.streams
	d.fields.ids = d.fields.ids[:0] // for the names of the batch before
	if !d.Reuse {
		d.names, d.streams = nil, nil
	}
}

// maxReusedTable is the most names or streams a table may hold and be
// reused (Decoder.Reuse).
const maxReusedTable = 1024

// add appends one entry.
func (d *Decoder) add(b *record.Batch, stream uint32, ts int64, line []byte, meta [][2][]byte, res *Result) {
	if len(line) > d.Limits.MaxLineSize {
		res.reject(1, "line of %d bytes is longer than the limit of %d", len(line), d.Limits.MaxLineSize)
		return
	}
	start := uint32(len(b.Data))
	b.Data = append(b.Data, line...)
	var flags record.Flags
	if !utf8.Valid(line) {
		flags = record.BadUTF8
		b.BadUTF8++
	}
	rec := record.Record{Time: ts, TimeSource: record.FromData, Stream: stream, MsgFlags: flags,
		Line: record.Span{Off: start, Len: uint32(len(line))}, FieldStart: uint32(len(b.Fields))}
	rec.Msg = rec.Line
	if d.Fields.JSON {
		d.fields.add(b, rec.Line, d.Fields.MaxFields)
	}
	level := ""
	if d.Discover.LogLevels {
		// As Loki: a detected_level sent is kept (its known spellings
		// normalized), else one is detected.
		level = "-"
		for _, kv := range meta {
			if string(kv[0]) == LevelLabel {
				level = ""
			}
		}
		if level != "" {
			level, d.lower = DetectLevel(b.Streams.Get(stream), meta, line, d.lower)
		}
	}
	addField := func(name, value []byte) bool {
		if len(value) == 0 {
			return true // as a label, an empty value is no value
		}
		id, ok := b.Names.Lookup(name)
		if !ok {
			res.reject(1, "too many distinct structured metadata names")
			b.Data = b.Data[:start]
			b.Fields = b.Fields[:rec.FieldStart]
			return false
		}
		off := uint32(len(b.Data))
		b.Data = append(b.Data, value...)
		f := record.Field{Name: id, Kind: record.String, Raw: record.Span{Off: off, Len: uint32(len(value))}}
		if !utf8.Valid(value) {
			f.Flags = record.BadUTF8
		}
		b.Fields = append(b.Fields, f)
		return true
	}
	for _, kv := range meta {
		v := kv[1]
		if d.Discover.LogLevels && string(kv[0]) == LevelLabel {
			if l, ok := knownLevel(v); ok {
				v = []byte(l)
			}
		}
		if !addField(kv[0], v) {
			return
		}
	}
	if level != "" {
		d.lower = append(d.lower[:0], level...)
		if !addField(levelLabel, d.lower) {
			return
		}
	}
	rec.NumFields = uint32(len(b.Fields)) - rec.FieldStart
	b.Records = append(b.Records, rec)
}

// stream interns a request's label set.
func (d *Decoder) stream(b *record.Batch, ls record.Labels) (uint32, error) {
	if err := d.Limits.checkLabels(ls); err != nil {
		return 0, err
	}
	ls = addServiceName(ls, d.Discover.ServiceName)
	id, ok := b.Streams.Intern(ls)
	if !ok {
		return 0, errors.New("too many streams in one request")
	}
	return id, nil
}

// DecodeProto decodes a protobuf push body (a snappy block holding a
// logproto.PushRequest) into b (replacing its content).
func (d *Decoder) DecodeProto(body []byte, b *record.Batch, maxDecoded int) (Result, error) {
	var res Result
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return res, fmt.Errorf("%w: snappy: %v", ErrBadRequest, err)
	}
	if n > maxDecoded {
		return res, fmt.Errorf("%w: decompresses to %d bytes, more than the limit of %d", ErrTooLarge, n, maxDecoded)
	}
	d.buf, err = snappy.Decode(d.buf[:cap(d.buf)], body)
	if err != nil {
		return res, fmt.Errorf("%w: snappy: %v", ErrBadRequest, err)
	}
	d.batch(b)
	msg := d.buf
	si := 0
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return res, fmt.Errorf("%w: protobuf: %v", ErrBadRequest, protowire.ParseError(n))
		}
		msg = msg[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return res, fmt.Errorf("%w: protobuf stream %d: %v", ErrBadRequest, si, protowire.ParseError(n))
			}
			msg = msg[n:]
			if err := d.protoStream(v, b, si, &res); err != nil {
				return res, err
			}
			si++
			continue
		}
		if n := protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
			return res, fmt.Errorf("%w: protobuf: %v", ErrBadRequest, protowire.ParseError(n))
		} else {
			msg = msg[n:]
		}
	}
	return res, nil
}

// ErrTooLarge is matched by the error for a body over a size limit.
var ErrTooLarge = errors.New("request too large")

type protoEntry struct {
	ts   int64
	line []byte
	meta [][2][]byte
	err  error
}

// protoStream decodes one StreamAdapter: labels (1), entries (2).
func (d *Decoder) protoStream(msg []byte, b *record.Batch, si int, res *Result) error {
	var labels string
	var entries [][]byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("%w: protobuf stream %d: %v", ErrBadRequest, si, protowire.ParseError(n))
		}
		msg = msg[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return fmt.Errorf("%w: protobuf stream %d labels: %v", ErrBadRequest, si, protowire.ParseError(n))
			}
			labels, msg = string(v), msg[n:]
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return fmt.Errorf("%w: protobuf stream %d entry: %v", ErrBadRequest, si, protowire.ParseError(n))
			}
			entries, msg = append(entries, v), msg[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return fmt.Errorf("%w: protobuf stream %d: %v", ErrBadRequest, si, protowire.ParseError(n))
			}
			msg = msg[n:]
		}
	}
	res.Entries += len(entries)
	ls, err := parseLabels(labels)
	var id uint32
	if err == nil {
		id, err = d.stream(b, ls)
	}
	if err != nil {
		res.reject(len(entries), "stream %d: %v", si, err)
		return nil
	}
	for ei, e := range entries {
		pe := decodeEntry(e, d.meta[:0])
		d.meta = pe.meta
		if pe.err != nil {
			res.reject(1, "stream %d, entry %d: %v", si, ei, pe.err)
			continue
		}
		d.add(b, id, pe.ts, pe.line, pe.meta, res)
	}
	return nil
}

// decodeEntry decodes an EntryAdapter: timestamp (1: seconds 1, nanos 2),
// line (2), structured metadata (3: name 1, value 2).
func decodeEntry(msg []byte, meta [][2][]byte) protoEntry {
	e := protoEntry{meta: meta}
	hasTS := false
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			e.err = protowire.ParseError(n)
			return e
		}
		msg = msg[n:]
		if typ != protowire.BytesType || num < 1 || num > 3 {
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				e.err = protowire.ParseError(n)
				return e
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			e.err = protowire.ParseError(n)
			return e
		}
		msg = msg[n:]
		switch num {
		case 1:
			sec, nanos, err := decodeTimestamp(v)
			if err != nil {
				e.err = err
				return e
			}
			e.ts, hasTS = sec*1e9+nanos, true
		case 2:
			e.line = v
		case 3:
			kv, err := decodePair(v)
			if err != nil {
				e.err = err
				return e
			}
			e.meta = append(e.meta, kv)
		}
	}
	if !hasTS {
		e.err = errors.New("entry without a timestamp")
	}
	return e
}

func decodeTimestamp(msg []byte) (sec, nanos int64, err error) {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.VarintType {
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return 0, 0, protowire.ParseError(n)
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(msg)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		msg = msg[n:]
		switch num {
		case 1:
			sec = int64(v)
		case 2:
			nanos = int64(int32(v))
		}
	}
	if nanos < 0 || nanos >= 1e9 || sec < -9223372036 || sec > 9223372035 {
		return 0, 0, fmt.Errorf("timestamp %d s %d ns out of range", sec, nanos)
	}
	return sec, nanos, nil
}

func decodePair(msg []byte) ([2][]byte, error) {
	var kv [2][]byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return kv, protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return kv, protowire.ParseError(n)
			}
			kv[num-1], msg = v, msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			return kv, protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	if len(kv[0]) == 0 {
		return kv, errors.New("structured metadata without a name")
	}
	return kv, nil
}
