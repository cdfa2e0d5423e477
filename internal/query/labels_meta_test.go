package query

import (
	"testing"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store/rows"
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
