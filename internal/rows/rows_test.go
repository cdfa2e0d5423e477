package rows_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
)

var inputs = map[string]string{
	"json": `{"time":"2026-01-15T08:00:00.123Z","level":"info","msg":"hello \"x\"","service":"api","host":"h1","n":42,"f":1.5,"b":true,"z":null,"big":123456789012345678901234,"arr":[1,2],"http":{"status":200}}
{"ts":1768464000000,"level":"error","message":"boom","service":"api","host":"h2"}
not json at all
{"msg":"no time","service":"web"}
`,
	"syslog": "<34>1 2026-01-15T08:00:00.000Z host app 123 ID47 [ex@1 a=\"b\"] the message\n<13>Jan 15 08:00:00 myhost su: 'su root' failed\n",
	"logfmt": "ts=2026-01-15T08:00:00Z level=warn msg=\"quoted \\\"value\\\"\" service=api dup=1 dup=2 bare\n",
	"text":   "2026-01-15 08:00:00,123 ERROR something broke\n\tat stack\n",
}

// parseAll parses input in one batch and encodes it, returning the batch
// for comparison.
func parseAll(t *testing.T, format, input string) (*record.Batch, []byte) {
	t.Helper()
	p, err := parse.New(parse.Options{Format: format, Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	var out []byte
	var keep *record.Batch
	err = p.Bytes(context.Background(), []byte(input), func(b *record.Batch) error {
		out = enc.Append(nil, "tenant-1", b)
		keep = clone(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keep, out
}

func clone(b *record.Batch) *record.Batch {
	c := *b
	c.Data = bytes.Clone(b.Data)
	c.Records = append([]record.Record(nil), b.Records...)
	c.Fields = append([]record.Field(nil), b.Fields...)
	return &c
}

func TestRoundTrip(t *testing.T) {
	for name, input := range inputs {
		t.Run("format="+name, func(t *testing.T) {
			format := name
			if format == "json" {
				format = "auto"
			}
			b, enc := parseAll(t, format, input)
			blk, err := rows.Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if blk.Tenant != "tenant-1" || blk.ReceiveTime != b.ReceiveTime {
				t.Errorf("header: tenant %q receive %d", blk.Tenant, blk.ReceiveTime)
			}
			if len(blk.Rows) != len(b.Records) {
				t.Fatalf("%d rows, want %d", len(blk.Rows), len(b.Records))
			}
			var r rows.Row
			var fields []rows.Field
			for i := range b.Records {
				rec := &b.Records[i]
				fields = blk.Row(i, &r, fields)
				if r.Time != rec.Time || r.TimeSource != rec.TimeSource {
					t.Errorf("row %d: time %d/%d, want %d/%d", i, r.Time, r.TimeSource, rec.Time, rec.TimeSource)
				}
				if !bytes.Equal(r.Line, b.Bytes(rec.Line)) {
					t.Errorf("row %d: line %q, want %q", i, r.Line, b.Bytes(rec.Line))
				}
				if got := blk.Line(i); !bytes.Equal(got, r.Line) {
					t.Errorf("row %d: Line %q, Row's %q", i, got, r.Line)
				}
				if got, want := string(record.AppendUnescaped(nil, r.Msg, r.MsgFlags)), string(b.AppendMsg(nil, i)); got != want {
					t.Errorf("row %d: msg %q, want %q", i, got, want)
				}
				if got, want := blk.Streams[r.Stream].String(), b.Labels(i).String(); got != want {
					t.Errorf("row %d: stream %s, want %s", i, got, want)
				}
				want := b.RecordFields(i)
				if len(r.Fields) != len(want) {
					t.Fatalf("row %d: %d fields, want %d", i, len(r.Fields), len(want))
				}
				for j := range want {
					g, w := &r.Fields[j], &want[j]
					if blk.Names[g.Name] != b.Name(w) || g.Kind != w.Kind || g.Role != w.Role || g.Num != w.Num ||
						g.Flags != w.Flags&^record.Const || !bytes.Equal(g.Value, b.Raw(w)) {
						t.Errorf("row %d field %d: got %s=%q kind %v flags %v, want %s=%q kind %v flags %v",
							i, j, blk.Names[g.Name], g.Value, g.Kind, g.Flags, b.Name(w), b.Raw(w), w.Kind, w.Flags)
					}
					if g.InLine && !bytes.Equal(r.Line[g.Off:int(g.Off)+len(g.Value)], g.Value) {
						t.Errorf("row %d field %d: offset %d does not view the value", i, j, g.Off)
					}
				}
			}
		})
	}
}

// TestTruncated checks that every proper prefix of a block fails cleanly.
func TestTruncated(t *testing.T) {
	_, enc := parseAll(t, "auto", inputs["json"]+inputs["logfmt"])
	for n := range len(enc) {
		if _, err := rows.Decode(enc[:n]); !errors.Is(err, rows.ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: err %v, want ErrCorrupt", n, err)
		}
	}
	// Peek reads the version and the tenant ("tenant-1"): 10 bytes.
	for n := range 10 {
		if _, _, err := rows.Peek(enc[:n]); !errors.Is(err, rows.ErrCorrupt) {
			t.Fatalf("Peek of a prefix of %d bytes: err %v, want ErrCorrupt", n, err)
		}
	}
	if v, tenant, err := rows.Peek(enc[:10]); err != nil || v != rows.Version1 || string(tenant) != "tenant-1" {
		t.Fatalf("Peek of the header: %d %q %v", v, tenant, err)
	}
	if _, _, err := rows.Peek([]byte{7, 0}); !errors.Is(err, rows.ErrCorrupt) {
		t.Fatalf("Peek of version 7: err %v, want ErrCorrupt", err)
	}
	// CountRows reads up to the row count: every shorter prefix is
	// ErrCorrupt, the longer ones (and the whole) give the count.
	blk, err := rows.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for n := range len(enc) + 1 {
		c, err := rows.CountRows(enc[:n])
		switch {
		case err == nil && c != len(blk.Rows):
			t.Fatalf("CountRows of a prefix of %d bytes: %d, want %d", n, c, len(blk.Rows))
		case err != nil && !errors.Is(err, rows.ErrCorrupt):
			t.Fatalf("CountRows of a prefix of %d bytes: err %v, want ErrCorrupt", n, err)
		case err != nil && whole > 0:
			t.Fatalf("CountRows of a prefix of %d bytes: %v after a shorter one counted", n, err)
		case err == nil && whole == 0:
			whole = n
		}
	}
	if whole == 0 {
		t.Fatal("CountRows never read the count")
	}
}

func FuzzDecode(f *testing.F) {
	for name, in := range inputs {
		format := name
		if format == "json" {
			format = "auto"
		}
		p, _ := parse.New(parse.Options{Format: format, Record: record.DefaultConfig()})
		var enc rows.Encoder
		_ = p.Bytes(context.Background(), []byte(in), func(b *record.Batch) error {
			f.Add(enc.Append(nil, "t", b))
			return nil
		})
	}
	// Version2 seeds: the same inputs with every other record routed.
	for _, in := range inputs {
		p, _ := parse.New(parse.Options{Format: "auto", Record: record.DefaultConfig()})
		var enc rows.Encoder
		_ = p.Bytes(context.Background(), []byte(in), func(b *record.Batch) error {
			route(b)
			f.Add(enc.Append(nil, "t", b))
			return nil
		})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		blk, err := rows.Decode(data)
		checkEach(t, data, blk, err)
		n, cerr := rows.CountRows(data)
		if cerr != nil && !errors.Is(cerr, rows.ErrCorrupt) {
			t.Fatalf("CountRows: error %v is not ErrCorrupt", cerr)
		}
		if err != nil {
			if !errors.Is(err, rows.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if cerr != nil || n != len(blk.Rows) {
			t.Fatalf("CountRows %d, %v; Decode %d rows", n, cerr, len(blk.Rows))
		}
		var r rows.Row
		var fields []rows.Field
		for i := range blk.Rows {
			fields = blk.Row(i, &r, fields)
			if r.Route != 0 && int(r.Route) > len(blk.Routes) {
				t.Fatalf("row %d: route %d of %d", i, r.Route, len(blk.Routes))
			}
			if blk.RowRoutes != nil && blk.RowRoutes[i] != r.Route {
				t.Fatalf("row %d: route %d, index says %d", i, r.Route, blk.RowRoutes[i])
			}
		}
	})
}

// route gives b two routes and routes every other record: even ones to
// the first, every fourth to the second instead.
func route(b *record.Batch) {
	b.Routes = append(b.Routes, []string{"files"}, []string{"files", "pg"})
	for i := range b.Records {
		switch {
		case i%4 == 0:
			b.Records[i].Route = 2
		case i%2 == 0:
			b.Records[i].Route = 1
		}
	}
}

// TestRoutesRoundTrip checks that the routes of the kept records come
// back from a Version2 block (Append and Decode, and Block), that a
// block none of whose kept records is routed is Version1 and that its
// routes' table holds only the routes its rows use.
func TestRoutesRoundTrip(t *testing.T) {
	for name, input := range inputs {
		t.Run("format="+name, func(t *testing.T) {
			p, _ := parse.New(parse.Options{Format: "auto", Record: record.DefaultConfig()})
			var enc rows.Encoder
			err := p.Bytes(context.Background(), []byte(input), func(b *record.Batch) error {
				route(b)
				b.Drop(0) // its route, 2, must not reach the block through it
				data := enc.Append(nil, "t", b)
				blk, err := rows.Decode(data)
				if err != nil {
					return err
				}
				direct := enc.Block("t", b)
				if g, w := fmt.Sprintf("%+v", direct), fmt.Sprintf("%+v", blk); g != w {
					t.Errorf("Block:\n%s\nDecode:\n%s", g, w)
				}
				routed := false
				var r rows.Row
				var fields []rows.Field
				k := 0
				for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
					fields = blk.Row(k, &r, fields)
					if l := blk.Line(k); !bytes.Equal(l, r.Line) {
						t.Errorf("record %d: Line %q, Row's %q", i, l, r.Line)
					}
					var got []string
					if r.Route != 0 {
						got = blk.Routes[r.Route-1]
					}
					if want := b.RouteOf(i); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("record %d: routes %q, want %q", i, got, want)
					}
					routed = routed || b.Records[i].Route != 0
					k++
				}
				wantVersion := byte(rows.Version1)
				if routed {
					wantVersion = rows.Version2
				}
				if data[0] != wantVersion || blk.Version != wantVersion {
					t.Errorf("version %d (decoded %d), want %d", data[0], blk.Version, wantVersion)
				}
				if v, tenant, err := rows.Peek(data); err != nil || v != wantVersion || string(tenant) != "t" {
					t.Errorf("Peek: version %d, tenant %q, %v; want %d, t", v, tenant, err, wantVersion)
				}
				for i, names := range blk.Routes {
					if slices.IndexFunc(blk.RowRoutes, func(k uint16) bool { return int(k) == i+1 }) < 0 {
						t.Errorf("route %d %q is in the table but no row uses it", i+1, names)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	var in bytes.Buffer
	for range 2000 {
		in.WriteString(`{"ts":1768464000000,"level":"error","msg":"retrying request","service":"reports","host":"node-24","trace_id":"7ce42c8218072e8c35bf992dc9e9c616","http":{"method":"PUT","path":"/api/v1/cart/items","status":502,"latency_ms":42.078,"bytes":201105}}` + "\n")
	}
	p, _ := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
	var batch *record.Batch
	_ = p.Bytes(context.Background(), in.Bytes(), func(bt *record.Batch) error { batch = clone(bt); return nil })
	var enc rows.Encoder
	var out []byte
	b.SetBytes(int64(in.Len()))
	b.ReportAllocs()
	for b.Loop() {
		out = enc.Append(out[:0], "t", batch)
	}
	b.Run("op=decode", func(b *testing.B) {
		b.SetBytes(int64(in.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rows.Decode(out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBlock checks that Encoder.Block gives what Decode of the encoding
// gives.
func TestBlock(t *testing.T) {
	for name, input := range inputs {
		t.Run("format="+name, func(t *testing.T) {
			p, _ := parse.New(parse.Options{Format: "auto", Record: record.DefaultConfig()})
			var enc rows.Encoder
			err := p.Bytes(context.Background(), []byte(input), func(b *record.Batch) error {
				got := enc.Block("t", b)
				want, err := rows.Decode(got.Data)
				if err != nil {
					return err
				}
				// Compared as text: an empty label set is nil in one and
				// empty in the other.
				if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
					t.Errorf("Block:\n%s\nDecode:\n%s", g, w)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBlockOneRow checks Encoder.Block against Decode for one-row
// batches of every size of names (a Block with its tables in one
// allocation up to a few names, in four past them), and that a block's
// tables are its own: appending to one does not reach another.
func TestBlockOneRow(t *testing.T) {
	var enc rows.Encoder
	var kept []*rows.Block
	for fields := range 20 {
		line := []byte(`{"msg":"one"`)
		for i := range fields {
			line = fmt.Appendf(line, `,"f%d":%d`, i, i)
		}
		line = append(line, '}', '\n')
		p, _ := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
		err := p.Bytes(context.Background(), line, func(b *record.Batch) error {
			got := enc.Block("t", b)
			want, err := rows.Decode(got.Data)
			if err != nil {
				return err
			}
			if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
				t.Errorf("%d fields: Block:\n%s\nDecode:\n%s", fields, g, w)
			}
			kept = append(kept, got)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, blk := range kept {
		n := len(blk.Names)
		_ = append(blk.Names, "appended")
		_ = append(blk.Rows, rows.RowRef{})
		if i > 0 && len(kept[i-1].Names) > 0 && kept[i-1].Names[len(kept[i-1].Names)-1] == "appended" {
			t.Errorf("block %d: an append to block %d's names reached it", i-1, i)
		}
		if len(blk.Names) != n {
			t.Errorf("block %d: names changed", i)
		}
	}
}

// TestBlockOneRowAllocs checks that a one-row block costs no allocation
// of its own in steady state: its struct is carved from a slab, its Data
// from a chunk.
func TestBlockOneRowAllocs(t *testing.T) {
	p, _ := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
	var batch *record.Batch
	err := p.Bytes(context.Background(), []byte(`{"level":"info","msg":"one","status":200}`+"\n"), func(b *record.Batch) error {
		batch = clone(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	enc.Block("t", batch) // the Encoder's own tables
	if n := testing.AllocsPerRun(1000, func() { enc.Block("t", batch) }); n != 0 {
		t.Errorf("a one-row Block: %v allocations", n)
	}
}

// checkEach checks rows.Each against Decode's result for data (blk, err):
// the same error or none, the same header, and each row as Row decodes
// it, in order; with a head that declines, no row.
func checkEach(t *testing.T, data []byte, blk *rows.Block, err error) {
	t.Helper()
	var got []rows.Row
	eblk, eerr := rows.Each(data, func(h *rows.Block) bool {
		if h.Rows != nil || h.RowRoutes != nil {
			t.Fatalf("Each's header has rows: %d, routes %d", len(h.Rows), len(h.RowRoutes))
		}
		return true
	}, func(i int, r *rows.Row) {
		if i != len(got) {
			t.Fatalf("Each: row %d after %d rows", i, len(got))
		}
		c := *r
		c.Fields = slices.Clone(r.Fields)
		got = append(got, c)
	})
	if (err == nil) != (eerr == nil) || err != nil && !errors.Is(eerr, rows.ErrCorrupt) {
		t.Fatalf("Decode: %v; Each: %v", err, eerr)
	}
	if err != nil {
		return
	}
	if eblk.Tenant != blk.Tenant || eblk.ReceiveTime != blk.ReceiveTime || !slices.Equal(eblk.Names, blk.Names) ||
		len(eblk.Streams) != len(blk.Streams) || len(eblk.Routes) != len(blk.Routes) {
		t.Fatalf("Each's header %+v, Decode's %+v", eblk, blk)
	}
	if len(got) != len(blk.Rows) {
		t.Fatalf("Each gave %d rows, Decode indexed %d", len(got), len(blk.Rows))
	}
	var r rows.Row
	var fields []rows.Field
	for i := range blk.Rows {
		fields = blk.Row(i, &r, fields)
		g := got[i]
		if g.Time != r.Time || g.TimeSource != r.TimeSource || g.Stream != r.Stream || g.Route != r.Route ||
			!bytes.Equal(g.Line, r.Line) || !bytes.Equal(g.Msg, r.Msg) || g.MsgFlags != r.MsgFlags ||
			g.MsgInLine != r.MsgInLine || g.MsgOff != r.MsgOff || len(g.Fields) != len(r.Fields) {
			t.Fatalf("row %d: Each %+v, Row %+v", i, g, r)
		}
		for j := range g.Fields {
			gf, rf := &g.Fields[j], &r.Fields[j]
			if gf.Name != rf.Name || gf.Kind != rf.Kind || gf.Flags != rf.Flags || gf.Role != rf.Role || gf.Num != rf.Num ||
				gf.InLine != rf.InLine || gf.Off != rf.Off || !bytes.Equal(gf.Value, rf.Value) {
				t.Fatalf("row %d field %d: Each %+v, Row %+v", i, j, *gf, *rf)
			}
		}
	}
	n := 0
	if _, err := rows.Each(data, func(*rows.Block) bool { return false }, func(int, *rows.Row) { n++ }); err != nil || n != 0 {
		t.Fatalf("Each with a head that declines: %d rows, %v", n, err)
	}
}

// TestEach: Each gives the rows Decode and Row give, for every input and
// its routed (Version2) form, and fails as Decode does on every proper
// prefix.
func TestEach(t *testing.T) {
	for name, in := range inputs {
		format := name
		if format == "json" {
			format = "auto"
		}
		for _, routed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/routed=%v", name, routed), func(t *testing.T) {
				p, err := parse.New(parse.Options{Format: format, Record: record.DefaultConfig()})
				if err != nil {
					t.Fatal(err)
				}
				var enc rows.Encoder
				var data []byte
				err = p.Bytes(context.Background(), []byte(in), func(b *record.Batch) error {
					if routed {
						route(b)
					}
					data = enc.Append(nil, "t", b)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				for n := range len(data) + 1 {
					blk, err := rows.Decode(data[:n])
					checkEach(t, data[:n], blk, err)
				}
			})
		}
	}
}
