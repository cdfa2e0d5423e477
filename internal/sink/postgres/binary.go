package postgres

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/sluicelog/sluice/internal/sink"
)

// The default table's rows are written in PostgreSQL's binary COPY format
// by binaryRows, straight from the batch's bytes, when the table's columns
// have the default types, or json or text for labels and fields (checked
// at Open and in each transaction): no value boxed in an interface, no
// string copied, no per-value encode plan as with pgx.CopyFrom. Any other
// table goes through pgx.CopyFrom, which asks PostgreSQL for the columns'
// types.
//
// The format (PostgreSQL's documentation, COPY, "Binary Format"): the
// signature "PGCOPY\n\377\r\n\0", a 32-bit flags field (0) and a 32-bit
// header extension length (0); per row a 16-bit field count, then per
// field a 32-bit length and the value in its type's binary form
// (timestamptz: int64 microseconds since 2000-01-01 00:00 UTC; text and
// json: the bytes; jsonb: the version byte 1, then the JSON text); the
// trailer is a 16-bit -1. Integers are big-endian.

const copySignature = "PGCOPY\n\xff\r\n\x00"

// defaultTypes are the default table's columns (in Dest.cols order) with
// the types the binary writer encodes, as format_type prints them; "json"
// stands for the types JSON text may take: jsonb, json or text.
var defaultTypes = [][2]string{
	{"time", "timestamp with time zone"},
	{"tenant", "text"},
	{"labels", "json"},
	{"fields", "json"},
	{"line", "text"},
}

// JSON column types: the types the labels and fields columns of the
// default table may have (Config.JSONType).
const (
	JSONB = "jsonb"
	JSON  = "json"
	Text  = "text"
)

// jsonCols says which of labels and fields (in that order) are jsonb,
// whose binary form has a version byte before the JSON text.
type jsonCols [2]bool

// microsFromUnixToY2K is 2000-01-01 00:00 UTC in microseconds since the
// Unix epoch: timestamptz's zero.
const microsFromUnixToY2K = 946_684_800 * 1_000_000

// chunk is how many bytes binaryRows encodes ahead of a Read.
const chunk = 32 << 10

// binaryRows reads as the binary COPY of recs (those at only, if not
// nil) into the default table's columns, labels and fields as jsonb where
// jsonb says so.
//
// Concurrency: pgconn reads it from a goroutine of its own, which may
// outlive CopyFrom's return when the connection broke; after close, Read
// touches no record.
type binaryRows struct {
	mu      sync.Mutex
	recs    []sink.Record
	only    []int
	jsonb   jsonCols
	i       int
	buf     []byte
	off     int
	started bool
	ended   bool
	closed  bool
}

func newBinaryRows(recs []sink.Record, only []int, jsonb jsonCols) *binaryRows {
	return &binaryRows{recs: recs, only: only, jsonb: jsonb, buf: make([]byte, 0, chunk+1024)}
}

func (r *binaryRows) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, io.EOF
	}
	if r.off == len(r.buf) {
		r.buf, r.off = r.buf[:0], 0
		if !r.started {
			r.buf = append(r.buf, copySignature...)
			r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // flags
			r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // header extension
			r.started = true
		}
		n := len(r.recs)
		if r.only != nil {
			n = len(r.only)
		}
		for ; r.i < n && len(r.buf) < chunk; r.i++ {
			rec := &r.recs[r.i]
			if r.only != nil {
				rec = &r.recs[r.only[r.i]]
			}
			r.buf = appendDefaultRow(r.buf, rec, r.jsonb)
		}
		if r.i == n && !r.ended {
			r.buf = binary.BigEndian.AppendUint16(r.buf, 0xffff) // -1: the trailer
			r.ended = true
		}
		if len(r.buf) == 0 {
			return 0, io.EOF
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// close makes every later Read return io.EOF.
func (r *binaryRows) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// appendDefaultRow appends rec as a row of the default table: time,
// tenant, labels, fields, line; labels and fields as jsonb where jsonb
// says so, else as json or text (the same bytes).
func appendDefaultRow(dst []byte, rec *sink.Record, jsonb jsonCols) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(defaultTypes)))
	dst = binary.BigEndian.AppendUint32(dst, 8)
	dst = binary.BigEndian.AppendUint64(dst, uint64(floorDiv(rec.Time, 1000)-microsFromUnixToY2K))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(rec.Tenant)))
	dst = append(dst, rec.Tenant...)
	dst = appendJSON(dst, rec.LabelsJSON, jsonb[0])
	dst = appendJSON(dst, rec.FieldsJSON, jsonb[1])
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(rec.Line)))
	return append(dst, rec.Line...)
}

// appendJSON appends the JSON text j as a jsonb value (a version byte
// first) or as a json or text one.
func appendJSON(dst, j []byte, jsonb bool) []byte {
	if !jsonb {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(j)))
		return append(dst, j...)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(j)+1))
	dst = append(dst, 1)
	return append(dst, j...)
}

// floorDiv divides rounding toward negative infinity, as a time.Time's
// Unix seconds and positive nanoseconds do (and so pgx) for instants
// before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
