package query

import (
	"context"
	"math"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// TestHasMeta: which stored rows' fields are structured metadata.
func TestHasMeta(t *testing.T) {
	line := []byte("GET /x 200")
	meta := []rows.Field{{Name: 0, Kind: record.String, Value: []byte("abc")}, {Name: 1, Kind: record.String, Value: []byte("x\xffy"), Flags: record.BadUTF8}}
	for _, tc := range []struct {
		name string
		row  rows.Row
		want record.Labels
	}{
		{"a Loki push record", rows.Row{Line: line, Msg: line, MsgInLine: true, Fields: meta},
			record.Labels{{Name: "trace_id", Value: "abc"}, {Name: "user", Value: "x\uFFFDy"}}},
		{"an empty line", rows.Row{Line: []byte{}, Fields: meta[:1]}, record.Labels{{Name: "trace_id", Value: "abc"}}},
		{"no fields", rows.Row{Line: line, Msg: line, MsgInLine: true}, nil},
		{"message part of the line (syslog)", rows.Row{Line: line, Msg: line[4:], MsgInLine: true, MsgOff: 4, Fields: meta}, nil},
		{"a field in the line (jsonline, pattern)", rows.Row{Line: line, Msg: line, MsgInLine: true,
			Fields: []rows.Field{{Kind: record.String, InLine: true, Value: line[:3]}}}, nil},
		{"a field with a role", rows.Row{Line: line, Msg: line, MsgInLine: true,
			Fields: []rows.Field{{Kind: record.String, Role: record.RoleTime, Value: []byte("1")}}}, nil},
		{"a typed field (syslog's facility)", rows.Row{Line: line, Msg: line, MsgInLine: true,
			Fields: []rows.Field{{Kind: record.Int, Num: 3}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := StructuredMetadata(nil, &tc.row, []string{"trace_id", "user"})
			if got.String() != tc.want.String() {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOwnFormatsHaveNoMeta: the records of sluice's own formats (their
// fields parsed from, or computed from, the line) have no structured
// metadata, read from the head or from parts; a Loki push's have.
func TestOwnFormatsHaveNoMeta(t *testing.T) {
	inputs := []struct{ format, lines string }{
		{"auto", "{\"msg\":\"hi\",\"level\":\"info\",\"n\":1}\nlevel=warn msg=\"slow request\" took=3s\n<34>1 2026-01-15T00:00:01Z host app 12 ID7 - message body\njust text\n"},
		{`regexp=^(?P<level>\w+) (?P<code>\d+) (?P<rest>.*)$`, "info 200 fine and dandy here\nwarn 404 where is it now\n"},
		{`regexp=^(?P<word>\w+)$`, "x\nabcdefghijklmnopqrstuvwxyz0123456789\n"},
		{"syslog", "<13>Jan 15 00:00:02 host prog[9]: a classic syslog line\n"},
	}
	for _, in := range inputs {
		t.Run(in.format, func(t *testing.T) {
			for _, flush := range []bool{false, true} {
				st, err := store.Open(store.Options{FS: vfs.NewMem(), Dir: "data"})
				if err != nil {
					t.Fatal(err)
				}
				p, err := parse.New(parse.Options{Format: in.format, Record: record.DefaultConfig()})
				if err != nil {
					t.Fatal(err)
				}
				err = p.Bytes(context.Background(), []byte(in.lines), func(b *record.Batch) error {
					b.ReceiveTime = t0
					return st.Append(context.Background(), store.DefaultTenant, b)
				})
				if err == nil && flush {
					err = st.Flush()
				}
				if err != nil {
					t.Fatal(err)
				}
				sn := st.Snapshot()
				n := 0
				for _, ls := range sn.Streams(store.DefaultTenant, math.MinInt64, math.MaxInt64) {
					err := sn.Scan(context.Background(), store.DefaultTenant, ls, math.MinInt64, math.MaxInt64,
						store.ScanOptions{LinesOnly: true, Meta: true}, func(r *rows.Row, names []string) error {
							n++
							if m := StructuredMetadata(nil, r, names); len(m) > 0 {
								t.Errorf("flushed %v: %q has metadata %v", flush, r.Line, m)
							}
							return nil
						})
					if err != nil {
						t.Fatal(err)
					}
				}
				if n == 0 {
					t.Errorf("flushed %v: no rows", flush)
				}
				sn.Release()
				st.Close()
			}
		})
	}
}
