package loki

import (
	"bytes"
	"hash/maphash"
	"slices"
	"strconv"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicelog/sluice/internal/record"
)

// Encoder writes record batches as Loki push bodies, the inverse of
// Decoder, for a sink that pushes to Loki (or to another sluice):
//
//   - Entries are grouped by the label set they are sent under (below),
//     streams in the order of their first record, entries in record
//     order within a stream. Streams of the batch sent under the same
//     labels go as one stream.
//   - A record's line is sent as it is: byte for byte in protobuf; in
//     JSON, whose strings cannot hold invalid UTF-8, with each invalid
//     byte replaced by U+FFFD (as everywhere below).
//   - Stream labels are the record's stream labels. A label with an
//     empty value is left out (to Loki an empty value is no label), and
//     a name that is not a Prometheus label name has each byte outside
//     [a-zA-Z0-9_] replaced by '_' (and '_' put before a leading digit),
//     as Loki's OTLP endpoint does with attributes; two names that
//     sanitize alike ("a.b" and "a_b") make a set that Loki and the
//     decoder refuse ("duplicate label name"). Labels go sorted by the
//     names sent. A record whose stream has no labels is sent under
//     NoLabels, since Loki refuses a stream without labels.
//   - Structured metadata is sent for records that carry it: the
//     fields record.Record.IsMetadata names, strings held outside a line
//     that is the record's message, with no time or message role, which
//     is what a Loki or OTLP push decodes to (a pushed JSON line's own
//     keys are in its line, and are not sent). Fields with empty values
//     are left out, as the decoder leaves them out. The fields of
//     records parsed from their line by sluice's own formats are not
//     sent: they are in the line, and Loki extracts them at query time
//     with a parser stage. In JSON, metadata is an object: of two fields
//     of one name, the
//     decoder keeps the last.
//
// Concurrency: one goroutine; reuse it for many batches, and it
// allocates nothing in steady state.
type Encoder struct {
	// NoLabels is the label set of records whose stream has none; nil
	// means {service_name="unknown_service"}, the name Loki's
	// distributor gives a stream it finds no service name for.
	NoLabels record.Labels

	slot  []int32  // by stream id: its group, or -1
	used  []uint32 // the stream ids whose slot is set
	order []uint32 // by group: the stream id of its first record
	start []int32  // by group: where its records begin in recs
	recs  []int32  // record indexes, grouped
	keys  []byte   // by group: its label text, one after another
	kend  []int32  // by group: where its label text ends in keys
	table []int32  // open addressing of label texts: group+1, or 0
	seed  maphash.Seed
	pairs []pair         // a label set as sent
	nbuf  []byte         // the names of pairs
	raw   []byte         // protobuf before compression
	sbuf  []byte         // one stream's protobuf message
	vbuf  []byte         // an unescaped value
	meta  []record.Field // a record's structured metadata
}

// pair is a label as sent: its name, sanitized, in nbuf.
type pair struct {
	off, end int32
	value    string
}

var unknownService = record.Labels{{Name: ServiceNameLabel, Value: "unknown_service"}}

// group sorts b's records into streams as they are sent: order, start,
// recs, and the label texts in keys (as the protobuf or, if json, the
// JSON body writes them). Streams of b whose label sets are sent alike
// (they differ in labels with empty values, in names that sanitize
// alike, or in JSON in invalid UTF-8) are sent as one.
func (e *Encoder) group(b *record.Batch, json bool) {
	for len(e.slot) < b.Streams.Len() {
		e.slot = append(e.slot, -1)
	}
	if e.table == nil {
		e.seed = maphash.MakeSeed()
		e.table = make([]int32, 64)
	}
	e.order, e.start, e.used = e.order[:0], e.start[:0], e.used[:0]
	e.keys, e.kend = e.keys[:0], e.kend[:0]
	clear(e.table)
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		id := b.Records[i].Stream
		if e.slot[id] < 0 {
			e.slot[id] = e.groupOf(b, id, json)
			e.used = append(e.used, id)
		}
		e.start[e.slot[id]]++
	}
	// Counts to starts, then place each record: a counting sort, stable.
	sum := int32(0)
	for k, c := range e.start {
		e.start[k], sum = sum, sum+c
	}
	e.start = append(e.start, sum)
	e.recs = slices.Grow(e.recs[:0], b.NumKept())[:b.NumKept()]
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		k := e.slot[b.Records[i].Stream]
		e.recs[e.start[k]] = int32(i)
		e.start[k]++
	}
	// The starts moved one group on: put them back. Clear the slots, so
	// that the next batch finds them all -1.
	copy(e.start[1:], e.start[:len(e.order)])
	e.start[0] = 0
	for _, id := range e.used {
		e.slot[id] = -1
	}
}

// groupOf returns the group of stream id, a new one unless an earlier
// stream's labels are sent alike.
func (e *Encoder) groupOf(b *record.Batch, id uint32, json bool) int32 {
	n := len(e.keys)
	if json {
		e.keys = e.appendPairsJSON(e.keys, e.labels(b, id))
	} else {
		e.keys = e.appendPairs(e.keys, e.labels(b, id))
	}
	key := e.keys[n:]
	if 2*(len(e.order)+1) > len(e.table) {
		e.rehash(2 * len(e.table))
	}
	mask := len(e.table) - 1
	for h := int(maphash.Bytes(e.seed, key)) & mask; ; h = (h + 1) & mask {
		k := e.table[h] - 1
		if k < 0 {
			k = int32(len(e.order))
			e.table[h] = k + 1
			e.order = append(e.order, id)
			e.start = append(e.start, 0)
			e.kend = append(e.kend, int32(len(e.keys)))
			return k
		}
		if string(e.key(int(k))) == string(key) {
			e.keys = e.keys[:n]
			return k
		}
	}
}

// key returns group k's label text.
func (e *Encoder) key(k int) []byte {
	start := int32(0)
	if k > 0 {
		start = e.kend[k-1]
	}
	return e.keys[start:e.kend[k]]
}

func (e *Encoder) rehash(size int) {
	e.table = make([]int32, size)
	mask := size - 1
	for k := range e.order {
		h := int(maphash.Bytes(e.seed, e.key(k))) & mask
		for e.table[h] != 0 {
			h = (h + 1) & mask
		}
		e.table[h] = int32(k) + 1
	}
}

// streamRecs returns the record indexes of group k.
func (e *Encoder) streamRecs(k int) []int32 { return e.recs[e.start[k]:e.start[k+1]] }

// labels sets e.pairs to the labels records of stream id are sent under:
// empty values left out, names sanitized, sorted by name.
func (e *Encoder) labels(b *record.Batch, id uint32) []pair {
	ls := b.Streams.Get(id)
	if !hasValue(ls) {
		ls = e.NoLabels
		if ls == nil {
			ls = unknownService
		}
	}
	e.pairs, e.nbuf = e.pairs[:0], e.nbuf[:0]
	sorted := true
	for _, l := range ls {
		if l.Value == "" {
			continue
		}
		off := int32(len(e.nbuf))
		e.nbuf = appendSanitized(e.nbuf, l.Name)
		e.pairs = append(e.pairs, pair{off, int32(len(e.nbuf)), l.Value})
		if n := len(e.pairs); n > 1 && string(e.name(e.pairs[n-2])) > string(e.name(e.pairs[n-1])) {
			sorted = false
		}
	}
	if !sorted { // only when sanitizing reorders names
		slices.SortStableFunc(e.pairs, func(x, y pair) int { return bytes.Compare(e.name(x), e.name(y)) })
	}
	return e.pairs
}

func (e *Encoder) name(p pair) []byte { return e.nbuf[p.off:p.end] }

func hasValue(ls record.Labels) bool {
	for _, l := range ls {
		if l.Value != "" {
			return true
		}
	}
	return false
}

// appendSanitized appends name as a Prometheus label name.
func appendSanitized(dst []byte, name string) []byte {
	if validLabelName(name) {
		return append(dst, name...)
	}
	if name == "" {
		return append(dst, '_')
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case i == 0 && c >= '0' && c <= '9':
			dst = append(dst, '_', c)
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			dst = append(dst, c)
		default:
			dst = append(dst, '_')
		}
	}
	return dst
}

// appendPairs appends a label set as the protobuf push carries it.
func (e *Encoder) appendPairs(dst []byte, ps []pair) []byte {
	dst = append(dst, '{')
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, e.name(p)...)
		dst = append(dst, '=')
		dst = strconv.AppendQuote(dst, p.value)
	}
	return append(dst, '}')
}

// AppendLabels appends ls in the text form of Loki's protobuf push and of
// Prometheus, {a="x", b="y"}, skipping labels with empty values. Values
// are quoted as Go strings (strconv.Quote), which the decoder's
// strconv.Unquote, Loki's and Prometheus' all read back exactly, invalid
// UTF-8 included. Names are written as given.
func AppendLabels(dst []byte, ls record.Labels) []byte {
	dst = append(dst, '{')
	first := true
	for _, l := range ls {
		if l.Value == "" {
			continue
		}
		if !first {
			dst = append(dst, ", "...)
		}
		first = false
		dst = append(dst, l.Name...)
		dst = append(dst, '=')
		dst = strconv.AppendQuote(dst, l.Value)
	}
	return append(dst, '}')
}

// appendPairsJSON appends a label set as the JSON push carries it: an
// object, where invalid UTF-8 in a value becomes U+FFFD (so two sets
// that differ only there are sent as one).
func (e *Encoder) appendPairsJSON(dst []byte, ps []pair) []byte {
	dst = append(dst, '{')
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, e.name(p))
		dst = append(dst, ':')
		dst = appendJSONString(dst, p.value)
	}
	return append(dst, '}')
}

// AppendMetadata appends to dst the fields of record i that are
// structured metadata (record.Record.IsMetadata), in their order.
func AppendMetadata(dst []record.Field, b *record.Batch, i int) []record.Field {
	r := &b.Records[i]
	if r.NumFields == 0 || !r.MsgIsLine() {
		return dst
	}
	fs := b.RecordFields(i)
	for k := range fs {
		if r.IsMetadata(&fs[k]) {
			dst = append(dst, fs[k])
		}
	}
	return dst
}

// metaValue returns the bytes of a metadata value: the stored bytes (as
// sent, invalid UTF-8 included) unless they hold escapes.
func (e *Encoder) metaValue(b *record.Batch, f *record.Field) []byte {
	if f.Flags&(record.Escaped|record.SDEscaped) == 0 {
		return b.Raw(f)
	}
	e.vbuf = record.AppendUnescaped(e.vbuf[:0], b.Raw(f), f.Flags&^record.BadUTF8)
	return e.vbuf
}

// AppendPushProto appends b as a protobuf push body: a
// logproto.PushRequest compressed as one snappy block, as Promtail sends
// it (Content-Type application/x-protobuf).
func (e *Encoder) AppendPushProto(dst []byte, b *record.Batch) []byte {
	e.raw = e.AppendPushRequest(e.raw[:0], b)
	n := snappy.MaxEncodedLen(len(e.raw))
	dst = slices.Grow(dst, n)
	enc := snappy.Encode(dst[len(dst):len(dst)+n], e.raw)
	return dst[:len(dst)+len(enc)]
}

// AppendPushRequest appends b as an uncompressed logproto.PushRequest:
// streams (1), each a StreamAdapter with labels (1) and entries (2), each
// an EntryAdapter with timestamp (1: seconds 1, nanos 2), line (2) and
// structured metadata (3: name 1, value 2).
func (e *Encoder) AppendPushRequest(dst []byte, b *record.Batch) []byte {
	e.group(b, false)
	for k := range e.order {
		s := e.sbuf[:0]
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendBytes(s, e.key(k))
		for _, i := range e.streamRecs(k) {
			s = protowire.AppendTag(s, 2, protowire.BytesType)
			s = protowire.AppendVarint(s, uint64(e.entrySize(b, int(i))))
			s = e.appendEntry(s, b, int(i))
		}
		e.sbuf = s
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendBytes(dst, s)
	}
	return dst
}

// splitTime returns ns as a protobuf Timestamp's seconds and nanos (0 to
// 999999999, as the Timestamp wants them even before 1970).
func splitTime(ns int64) (sec, nanos int64) {
	sec, nanos = ns/1e9, ns%1e9
	if nanos < 0 {
		sec, nanos = sec-1, nanos+1e9
	}
	return sec, nanos
}

func timestampSize(ns int64) int {
	sec, nanos := splitTime(ns)
	n := 0
	if sec != 0 {
		n += 1 + protowire.SizeVarint(uint64(sec))
	}
	if nanos != 0 {
		n += 1 + protowire.SizeVarint(uint64(nanos))
	}
	return n
}

func appendTimestamp(dst []byte, ns int64) []byte {
	sec, nanos := splitTime(ns)
	if sec != 0 {
		dst = protowire.AppendTag(dst, 1, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(sec))
	}
	if nanos != 0 {
		dst = protowire.AppendTag(dst, 2, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(nanos))
	}
	return dst
}

// entrySize is the size of record i's EntryAdapter, as appendEntry writes it.
func (e *Encoder) entrySize(b *record.Batch, i int) int {
	r := &b.Records[i]
	n := 1 + protowire.SizeBytes(timestampSize(r.Time))
	if r.Line.Len > 0 {
		n += 1 + protowire.SizeBytes(int(r.Line.Len))
	}
	e.meta = AppendMetadata(e.meta[:0], b, i)
	meta := e.meta
	for k := range meta {
		v := e.metaValue(b, &meta[k])
		if len(v) == 0 {
			continue
		}
		name := b.Names.Get(meta[k].Name)
		n += 1 + protowire.SizeBytes(1+protowire.SizeBytes(len(name))+1+protowire.SizeBytes(len(v)))
	}
	return n
}

// appendEntry appends record i's EntryAdapter, without its tag and length.
func (e *Encoder) appendEntry(dst []byte, b *record.Batch, i int) []byte {
	r := &b.Records[i]
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(timestampSize(r.Time)))
	dst = appendTimestamp(dst, r.Time)
	if r.Line.Len > 0 {
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		dst = protowire.AppendBytes(dst, b.Bytes(r.Line))
	}
	e.meta = AppendMetadata(e.meta[:0], b, i)
	meta := e.meta
	for k := range meta {
		v := e.metaValue(b, &meta[k])
		if len(v) == 0 {
			continue
		}
		name := b.Names.Get(meta[k].Name)
		dst = protowire.AppendTag(dst, 3, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(1+protowire.SizeBytes(len(name))+1+protowire.SizeBytes(len(v))))
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendString(dst, name)
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		dst = protowire.AppendBytes(dst, v)
	}
	return dst
}

// AppendPushJSON appends b as a JSON push body (Content-Type
// application/json): {"streams":[{"stream":{...},"values":[["ns","line",
// {metadata}]...]}...]}. Strings that hold invalid UTF-8 (lines, label
// and metadata values) carry U+FFFD in its place: JSON cannot hold it.
func (e *Encoder) AppendPushJSON(dst []byte, b *record.Batch) []byte {
	e.group(b, true)
	dst = append(dst, `{"streams":[`...)
	for k := range e.order {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"stream":`...)
		dst = append(dst, e.key(k)...)
		dst = append(dst, `,"values":[`...)
		for j, i := range e.streamRecs(k) {
			if j > 0 {
				dst = append(dst, ',')
			}
			r := &b.Records[i]
			dst = append(dst, `["`...)
			dst = strconv.AppendInt(dst, r.Time, 10)
			dst = append(dst, `",`...)
			dst = appendJSONString(dst, b.Bytes(r.Line))
			if e.meta = AppendMetadata(e.meta[:0], b, int(i)); len(e.meta) > 0 {
				meta := e.meta
				dst = append(dst, ",{"...)
				first := true
				for m := range meta {
					f := &meta[m]
					v := e.metaValue(b, f)
					if len(v) == 0 {
						continue
					}
					if !first {
						dst = append(dst, ',')
					}
					first = false
					dst = appendJSONString(dst, b.Names.Get(f.Name))
					dst = append(dst, ':')
					dst = appendJSONString(dst, v)
				}
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, "]}"...)
}

func appendJSONString[T ~string | ~[]byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	dst = record.AppendJSONEscaped(dst, s)
	return append(dst, '"')
}
