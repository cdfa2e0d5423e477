package loki

import (
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

// TestEncodeSkipsDropped: a dropped record (record.Batch.Drop) is in
// neither push body; the kept ones decode as sent, a stream whose every
// record was dropped is not sent at all.
func TestEncodeSkipsDropped(t *testing.T) {
	a := record.Labels{{Name: "app", Value: "a"}}
	b := record.Labels{{Name: "app", Value: "b"}}
	p := newPushBatch()
	p.add(t, a, 1, "a0")
	p.add(t, b, 2, "b0")
	p.add(t, a, 3, "a1")
	p.add(t, a, 4, "a2")
	p.b.Drop(1) // the only record of stream b
	p.b.Drop(2)
	var e Encoder
	for _, json := range []bool{false, true} {
		var got record.Batch
		d := Decoder{Limits: testLimits}
		var err error
		var res Result
		if json {
			res, err = d.DecodeJSON(e.AppendPushJSON(nil, &p.b), &got)
		} else {
			res, err = d.DecodeProto(e.AppendPushProto(nil, &p.b), &got, 1<<30)
		}
		if err != nil || res.Rejected > 0 {
			t.Fatalf("json=%v: decode: %v, %+v", json, err, res)
		}
		var lines []string
		for i := range got.Records {
			lines = append(lines, string(got.Bytes(got.Records[i].Line)))
			if v, _ := got.Labels(i).Get("app"); v != "a" {
				t.Errorf("json=%v: record %d in stream %v", json, i, got.Labels(i))
			}
		}
		if want := []string{"a0", "a2"}; !slices.Equal(lines, want) {
			t.Errorf("json=%v: decoded lines %q, want %q", json, lines, want)
		}
	}
}
