package postgres

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicelog/sluice/internal/sink"
)

// TestBinaryRows: the binary COPY stream carries every value as pgx encodes
// it for the column's type (so as PostgreSQL reads it), labels and fields
// as jsonb, json or text, whatever the size of the reads.
func TestBinaryRows(t *testing.T) {
	for _, c := range []struct {
		name      string
		jsonb     jsonCols
		lab, flds uint32
	}{
		{"jsonb", jsonCols{true, true}, pgtype.JSONBOID, pgtype.JSONBOID},
		{"json", jsonCols{false, false}, pgtype.JSONOID, pgtype.JSONOID},
		{"labels=text,fields=jsonb", jsonCols{false, true}, pgtype.TextOID, pgtype.JSONBOID},
	} {
		t.Run("types="+c.name, func(t *testing.T) { testBinaryRows(t, c.jsonb, c.lab, c.flds) })
	}
}

func testBinaryRows(t *testing.T, jsonb jsonCols, labelsOID, fieldsOID uint32) {
	recs := []sink.Record{
		{Time: time.Date(2026, 1, 15, 8, 0, 0, 123456789, time.UTC).UnixNano(), Tenant: "t1",
			LabelsJSON: json.RawMessage(`{"service":"api"}`), FieldsJSON: json.RawMessage(`{"n":2,"s":"é"}`), Line: []byte(`{"msg":"hello"}`)},
		{Time: time.Date(1999, 12, 31, 23, 59, 59, 999999500, time.UTC).UnixNano(), Tenant: "",
			LabelsJSON: json.RawMessage(`{}`), FieldsJSON: json.RawMessage(`{}`), Line: nil},
		{Time: -1501, Tenant: "before 1970", LabelsJSON: json.RawMessage(`{}`), FieldsJSON: json.RawMessage(`{}`), Line: []byte("x")},
	}
	m := pgtype.NewMap()
	enc := func(dst []byte, oid uint32, v any) []byte {
		b, err := m.Encode(oid, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
		return append(dst, b...)
	}
	want := []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	for _, i := range []int{2, 0, 1} {
		r := &recs[i]
		want = binary.BigEndian.AppendUint16(want, 5)
		want = enc(want, pgtype.TimestamptzOID, time.Unix(0, r.Time).UTC())
		want = enc(want, pgtype.TextOID, r.Tenant)
		if labelsOID == pgtype.TextOID {
			want = enc(want, labelsOID, string(r.LabelsJSON))
		} else {
			want = enc(want, labelsOID, r.LabelsJSON)
		}
		want = enc(want, fieldsOID, r.FieldsJSON)
		want = enc(want, pgtype.TextOID, string(r.Line))
	}
	want = append(want, 0xff, 0xff)
	for _, size := range []int{1, 3, 7, 64, 1 << 16} {
		rd := newBinaryRows(recs, []int{2, 0, 1}, jsonb)
		var got []byte
		p := make([]byte, size)
		for {
			n, err := rd.Read(p)
			got = append(got, p[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("reads of %d bytes:\n got %q\nwant %q", size, got, want)
		}
	}
	rd := newBinaryRows(recs, nil, jsonb)
	rd.close()
	if n, err := rd.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("read after close: %d, %v", n, err)
	}
}

func BenchmarkBinaryRows(b *testing.B) {
	recs := make([]sink.Record, 10000)
	for i := range recs {
		recs[i] = sink.Record{Time: int64(i) * 1e6, Tenant: "default", LabelsJSON: json.RawMessage(`{"host":"node-24","service":"reports"}`),
			FieldsJSON: bytes.Repeat([]byte("x"), 300), Line: bytes.Repeat([]byte("y"), 350)}
	}
	p := make([]byte, 65536)
	b.ReportAllocs()
	b.SetBytes(int64(len(recs) * 700))
	for b.Loop() {
		rd := newBinaryRows(recs, nil, jsonCols{true, true})
		for {
			if _, err := rd.Read(p); err == io.EOF {
				break
			}
		}
	}
}
