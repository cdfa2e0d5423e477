package sink

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/wal"
)

// corpusBlock is a WAL record of 1,000 lines shaped as the canonical
// corpus's, encoded as ingest does.
func corpusBlock(tb testing.TB) []byte {
	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf(`{"ts":%d,"level":"error","msg":"retrying request","service":"reports","host":"node-%d",`+
			`"trace_id":"7ce42c8218072e8c35bf992dc9e9c616","http":{"method":"PUT","path":"/api/v1/cart/items","status":502,`+
			`"latency_ms":42.078,"bytes":201105,"user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},`+
			`"error":{"type":"SQLException","message":"failed to call upstream: payment declined","stack":"Traceback (most recent call last):\n  File \"app.py\", line 739, in handler\n    raise\n"}}`,
			1768464000000+i, i%32))
	}
	cfg := record.DefaultConfig()
	cfg.StreamFields = []string{"service", "host"}
	p, err := parse.New(parse.Options{Format: "json", Record: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	var enc rows.Encoder
	var data []byte
	err = p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(rb *record.Batch) error {
		data = enc.Append(nil, "default", rb)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkAppendBlock: a WAL record of 1,000 lines shaped as the
// canonical corpus's, decoded and turned into records (the sink's fill
// without the WAL read); line_only=true as for a destination that reads
// only lines (LineOnly: Kafka's value: line).
//
// path=encoded is the fill's (appendEncoded: each row decoded once),
// path=decoded AppendBlock's (rows.Decode, then Row for each row).
func BenchmarkAppendBlock(b *testing.B) {
	data := corpusBlock(b)
	for _, path := range []string{"encoded", "decoded"} {
		for _, lineOnly := range []bool{false, true} {
			b.Run(fmt.Sprintf("path=%s/line_only=%v", path, lineOnly), func(b *testing.B) {
				var batch Batch
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					batch.Reset()
					var n int
					if path == "encoded" {
						var err error
						if n, err = batch.appendEncoded(&filter{lineOnly: lineOnly}, data, wal.Pos{}); err != nil {
							b.Fatal(err)
						}
					} else {
						blk, err := rows.Decode(data)
						if err != nil {
							b.Fatal(err)
						}
						n = batch.appendBlock(&filter{lineOnly: lineOnly}, blk, wal.Pos{})
					}
					if n != 1000 {
						b.Fatalf("%d records, want %d", n, 1000)
					}
				}
			})
		}
	}
}

// BenchmarkDropCount: drop_oldest counting the records of a WAL record it
// skips (the corpus block of BenchmarkAppendBlock). path=count is
// filter.count of every row (the header's row count), count_selector
// with a stream selector (each row decoded once, no record built);
// path=decoded
// what drop did before: rows.Decode, then appendBlock into a scratch
// batch (each row decoded twice, labels and fields rendered as JSON).
func BenchmarkDropCount(b *testing.B) {
	data := corpusBlock(b)
	sel, err := logql.ParseSelector(`{service="reports"}`)
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"count", "count_selector", "decoded"} {
		b.Run("path="+path, func(b *testing.B) {
			var f filter
			if path == "count_selector" {
				f.selector = sel
			}
			var tmp Batch
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var n int
				if path != "decoded" {
					var err error
					if n, err = f.count(data); err != nil {
						b.Fatal(err)
					}
				} else {
					blk, err := rows.Decode(data)
					if err != nil {
						b.Fatal(err)
					}
					tmp.Reset()
					n = tmp.appendBlock(&f, blk, wal.Pos{})
				}
				if n != 1000 {
					b.Fatalf("%d records, want %d", n, 1000)
				}
			}
		})
	}
}

// TestAppendBlockLineOnly: a line-only sink's records are the full
// records without their fields.
func TestAppendBlockLineOnly(t *testing.T) {
	data := corpusBlock(t)
	blk, err := rows.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	at := wal.Pos{Segment: 3, Offset: 99}
	var full, lo Batch
	full.appendBlock(&filter{}, blk, at)
	lo.appendBlock(&filter{lineOnly: true}, blk, at)
	if len(full.Records) != 1000 || len(lo.Records) != 1000 || full.Bytes != lo.Bytes {
		t.Fatalf("%d records of %d bytes, line only %d of %d; want 1000 of the same bytes", len(full.Records), full.Bytes, len(lo.Records), lo.Bytes)
	}
	for i := range full.Records {
		f, l := full.Records[i], lo.Records[i]
		if len(f.FieldsJSON) == 0 {
			t.Fatalf("record %d: the full record has no fields", i)
		}
		if l.FieldsJSON != nil || l.Metadata != nil {
			t.Fatalf("record %d: line only, but fields %q, metadata %v", i, l.FieldsJSON, l.Metadata)
		}
		f.FieldsJSON, f.Metadata = nil, nil
		if !reflect.DeepEqual(f, l) {
			t.Fatalf("record %d: line only %+v, want %+v", i, l, f)
		}
	}
}

// TestFilterSkips: blocks a sink takes nothing of are known from their
// header, and only those.
func TestFilterSkips(t *testing.T) {
	var enc rows.Encoder
	rb := &record.Batch{}
	plain := enc.Append(nil, "t1", rb) // a Version1 block of tenant t1
	if v, tenant, err := rows.Peek(plain); err != nil || v != rows.Version1 || string(tenant) != "t1" {
		t.Fatalf("Peek: %d %q %v", v, tenant, err)
	}
	for _, tc := range []struct {
		name string
		f    filter
		want bool
	}{
		{"everything", filter{}, false},
		{"its tenant", filter{tenant: "t1"}, false},
		{"another tenant", filter{tenant: "t2"}, true},
		{"routed rows, block routes none", filter{route: "k"}, true},
		{"routed rows of another tenant", filter{tenant: "t2", route: "k"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.skips(plain); got != tc.want {
				t.Errorf("skips: %v, want %v", got, tc.want)
			}
		})
	}
	if (&filter{tenant: "t2"}).skips([]byte{9}) {
		t.Error("an unreadable block is skipped; want it left to Decode")
	}
}

// TestFieldsJSON: the fields of each record, rendered with the keys of
// its block's names, are the JSON object of the fields the line had
// (other than the time and the message), typed, with names and values
// that need escapes escaped; rows of one block with different fields get
// each their own.
func TestFieldsJSON(t *testing.T) {
	lines := `{"msg":"one","we\"ird\\name":"a\tb","n":1,"nested":{"x\u00e9":true}}
{"msg":"two","n":2.5,"other":null,"we\"ird\\name":"é"}
{"msg":"three"}
`
	want := []string{
		`{"we\"ird\\name":"a\tb","n":1,"nested.xé":true}`,
		`{"n":2.5,"other":null,"we\"ird\\name":"é"}`,
		`{}`,
	}
	p, err := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	var b Batch
	err = p.Bytes(context.Background(), []byte(lines), func(rb *record.Batch) error {
		blk, err := rows.Decode(enc.Append(nil, "t1", rb))
		if err != nil {
			return err
		}
		b.appendBlock(&filter{}, blk, wal.Pos{})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Records) != len(want) {
		t.Fatalf("%d records, want %d", len(b.Records), len(want))
	}
	for i, w := range want {
		if got := string(b.Records[i].FieldsJSON); got != w {
			t.Errorf("record %d: fields %s, want %s", i, got, w)
		}
	}
}

// TestAppendEncoded: appendEncoded adds the records appendBlock adds for
// the block decoded, whatever the filter (line only, tenant, selector,
// routes), after records already in the batch; a block that does not
// decode adds nothing and leaves the batch as it was.
func TestAppendEncoded(t *testing.T) {
	plain := corpusBlock(t)
	cfg := record.DefaultConfig()
	cfg.StreamFields = []string{"service"}
	p, err := parse.New(parse.Options{Format: "json", Record: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	var routed []byte
	err = p.Bytes(context.Background(), []byte(`{"service":"a","msg":"one"}
{"service":"b","msg":"two","n":2}
{"service":"a","msg":"three"}
{"service":"b","msg":"four"}
`), func(rb *record.Batch) error {
		rb.Routes = append(rb.Routes, []string{"k"}, []string{"other"})
		rb.Records[0].Route, rb.Records[1].Route, rb.Records[3].Route = 1, 1, 2
		routed = enc.Append(nil, "t1", rb)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := logql.ParseSelector(`{service="b"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    filter
		want int // records of routed
	}{
		{"everything", filter{}, 4},
		{"line only", filter{lineOnly: true}, 4},
		{"its tenant", filter{tenant: "t1"}, 4},
		{"another tenant", filter{tenant: "t2"}, 0},
		{"selector", filter{selector: sel}, 2},
		{"routed to k", filter{route: "k"}, 2},
		{"routed to k, selector", filter{route: "k", selector: sel}, 1},
		{"routed to nobody's", filter{route: "none"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got Batch
			for k, data := range [][]byte{plain, routed} {
				blk, err := rows.Decode(data)
				if err != nil {
					t.Fatal(err)
				}
				at := wal.Pos{Segment: 1, Offset: int64(k)}
				nw := want.appendBlock(&tc.f, blk, at)
				ng, err := got.appendEncoded(&tc.f, data, at)
				if err != nil || ng != nw {
					t.Fatalf("block %d: appendEncoded %d records, %v; appendBlock %d", k, ng, err, nw)
				}
				if k == 1 && ng != tc.want {
					t.Fatalf("routed block: %d records, want %d", ng, tc.want)
				}
				// drop_oldest's count of the block agrees.
				if nc, err := tc.f.count(data); err != nil || nc != nw {
					t.Fatalf("block %d: count %d, %v; appendBlock %d records", k, nc, err, nw)
				}
			}
			if !reflect.DeepEqual(got.Records, want.Records) || got.Bytes != want.Bytes || got.oldest != want.oldest {
				t.Fatalf("appendEncoded and appendBlock differ: %d and %d records", len(got.Records), len(want.Records))
			}
			// A block that breaks after its first rows adds none of them
			// (a filter that takes none of its rows knows so from its
			// header and reads no further: no error).
			before := slices.Clone(got.Records)
			arena, bytes := len(got.arena), got.Bytes
			bad := routed[:len(routed)-3]
			if _, err := rows.Decode(bad); err == nil {
				t.Fatal("a truncated block decodes")
			}
			if n, err := got.appendEncoded(&tc.f, bad, wal.Pos{Segment: 2}); n != 0 || err == nil && tc.want != 0 {
				t.Fatalf("a truncated block: %d records, %v; want an error", n, err)
			}
			// A filter of every row counts from the header, which the
			// truncation left whole; the others decode the rows.
			wantBad := 0
			if tc.f.selector == nil && tc.f.route == "" && tc.want != 0 {
				wantBad = 4
			}
			if n, err := tc.f.count(bad); n != wantBad || wantBad == 0 && err == nil && tc.want != 0 {
				t.Fatalf("count of a truncated block: %d, %v; want %d", n, err, wantBad)
			}
			if !reflect.DeepEqual(got.Records, before) || len(got.arena) != arena || got.Bytes != bytes {
				t.Fatalf("a truncated block left %d records (%d before), arena %d (%d), bytes %d (%d)",
					len(got.Records), len(before), len(got.arena), arena, got.Bytes, bytes)
			}
		})
	}
}
