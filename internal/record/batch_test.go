package record

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// lineBatch makes a batch of n records, each line "line<i> v<i>" with one
// field viewing "v<i>" and the message viewing the whole line.
func lineBatch(n int) *Batch {
	b := &Batch{Names: NewNames(), Streams: NewStreams()}
	id, _ := b.Names.Lookup([]byte("f"))
	for i := range n {
		off := uint32(len(b.Data))
		b.Data = fmt.Appendf(b.Data, "line%d v%d", i, i)
		line := Span{Off: off, Len: uint32(len(b.Data)) - off}
		v := bytes.LastIndexByte(b.Data[off:], ' ') + 1
		b.Fields = append(b.Fields, Field{Name: id, Kind: String, Raw: Span{Off: off + uint32(v), Len: line.End() - off - uint32(v)}})
		b.Records = append(b.Records, Record{Time: int64(i), Line: line, Msg: line, FieldStart: uint32(i), NumFields: 1})
	}
	return b
}

var testConstMsg = Constant("keyword")

func keptIndexes(b *Batch) []int {
	var kept []int
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		kept = append(kept, i)
	}
	return kept
}

func TestBatchSelection(t *testing.T) {
	b := lineBatch(200)
	if !b.AllKept() || b.NumKept() != 200 || len(keptIndexes(b)) != 200 {
		t.Fatalf("a new batch keeps every record: AllKept %v, NumKept %d", b.AllKept(), b.NumKept())
	}
	drop := []int{0, 1, 63, 64, 65, 127, 128, 150, 199}
	for _, i := range drop {
		b.Drop(i)
	}
	b.Drop(64) // twice: no change
	if b.AllKept() || b.NumKept() != 200-len(drop) {
		t.Errorf("after %d drops: AllKept %v, NumKept %d", len(drop), b.AllKept(), b.NumKept())
	}
	var want []int
	for i := range 200 {
		if b.Kept(i) == slices.Contains(drop, i) {
			t.Errorf("Kept(%d) = %v", i, b.Kept(i))
		}
		if !slices.Contains(drop, i) {
			want = append(want, i)
		}
	}
	if got := keptIndexes(b); !slices.Equal(got, want) {
		t.Errorf("NextKept walks %v, want %v", got, want)
	}

	// Every record of a 64-record word dropped, then the rest.
	b = lineBatch(130)
	for i := 0; i < 128; i++ {
		b.Drop(i)
	}
	if got := keptIndexes(b); !slices.Equal(got, []int{128, 129}) {
		t.Errorf("NextKept walks %v, want [128 129]", got)
	}
	b.Drop(128)
	b.Drop(129)
	if got := keptIndexes(b); len(got) != 0 || b.NumKept() != 0 {
		t.Errorf("every record dropped: NextKept walks %v, NumKept %d", got, b.NumKept())
	}

	b.ClearSelection()
	if !b.AllKept() || b.NumKept() != 130 || !b.Kept(5) {
		t.Errorf("ClearSelection: AllKept %v, NumKept %d", b.AllKept(), b.NumKept())
	}
}

func TestBatchSetLine(t *testing.T) {
	b := lineBatch(3)
	b.Fields[0].Flags = 0
	before := slices.Clone(b.Records)
	oldData := slices.Clone(b.Data)
	b.SetLine(1, []byte("redacted"))

	r := &b.Records[1]
	if got := string(b.Bytes(r.Line)); got != "redacted" {
		t.Errorf("line %q, want %q", got, "redacted")
	}
	if got := string(b.AppendMsg(nil, 1)); got != "redacted" {
		t.Errorf("message %q: a message that was part of the record becomes the new line", got)
	}
	if r.NumFields != 0 || len(b.RecordFields(1)) != 0 {
		t.Errorf("%d fields: a replaced line's fields are dropped", r.NumFields)
	}
	if r.Time != before[1].Time || r.Stream != before[1].Stream || r.TimeSource != before[1].TimeSource {
		t.Errorf("time or stream changed: %+v, was %+v", *r, before[1])
	}
	for _, i := range []int{0, 2} {
		if b.Records[i] != before[i] {
			t.Errorf("record %d changed: %+v, was %+v", i, b.Records[i], before[i])
		}
		want := fmt.Sprintf("line%d v%d", i, i)
		if got := string(b.Bytes(b.Records[i].Line)); got != want {
			t.Errorf("record %d line %q, want %q", i, got, want)
		}
		if got := string(b.Raw(&b.RecordFields(i)[0])); got != fmt.Sprintf("v%d", i) {
			t.Errorf("record %d field %q", i, got)
		}
	}
	if !bytes.HasPrefix(b.Data, oldData) {
		t.Error("SetLine changed bytes of Data that other records view")
	}

	// A constant message is kept; an absent one stays absent; invalid
	// UTF-8 is flagged on the new message.
	b = lineBatch(3)
	b.Records[0].Msg, b.Records[0].MsgFlags = testConstMsg, Const
	b.Records[1].Msg = Span{}
	b.SetLine(0, []byte("x"))
	b.SetLine(1, []byte("y"))
	b.SetLine(2, []byte("bad \xff"))
	if got := string(b.AppendMsg(nil, 0)); got != "keyword" {
		t.Errorf("constant message %q, want keyword", got)
	}
	if b.Records[1].Msg.Len != 0 {
		t.Errorf("an absent message became %q", b.AppendMsg(nil, 1))
	}
	if b.Records[2].MsgFlags != BadUTF8 {
		t.Errorf("message flags %v for a line with invalid UTF-8, want BadUTF8", b.Records[2].MsgFlags)
	}
}

func TestBatchResetClearsTenantAndSelection(t *testing.T) {
	b := lineBatch(3)
	b.Tenant = "acme"
	b.Drop(1)
	b.Reset()
	if b.Tenant != "" || !b.AllKept() || b.NumKept() != 0 {
		t.Errorf("after Reset: tenant %q, AllKept %v, NumKept %d", b.Tenant, b.AllKept(), b.NumKept())
	}
	b.Records = append(b.Records, Record{}, Record{})
	if !b.Kept(1) {
		t.Error("a record dropped before Reset is still dropped after it")
	}
}
