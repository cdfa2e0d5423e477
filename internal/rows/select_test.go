package rows_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
)

// encodeChanged parses input as JSON lines, lets change alter the batch,
// and returns the batch's lines as change left them (kept records only,
// in order) and the block the encoder makes of it, by Append and by Block.
func encodeChanged(t *testing.T, input string, change func(b *record.Batch)) (want []string, appended, block []byte) {
	t.Helper()
	p, err := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	err = p.Bytes(context.Background(), []byte(input), func(b *record.Batch) error {
		change(b)
		for i := range b.Records {
			if b.Kept(i) {
				want = append(want, string(b.Bytes(b.Records[i].Line)))
			}
		}
		appended = enc.Append(nil, "t", b)
		block = enc.Block("t", b).Data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return want, appended, block
}

// decodedLines decodes a block and returns its rows' lines and messages.
func decodedLines(t *testing.T, data []byte) (lines, msgs []string, nfields []int) {
	t.Helper()
	blk, err := rows.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var r rows.Row
	var fields []rows.Field
	for i := range blk.Rows {
		fields = blk.Row(i, &r, fields)
		lines = append(lines, string(r.Line))
		msgs = append(msgs, string(r.Msg))
		nfields = append(nfields, len(fields))
	}
	return lines, msgs, nfields
}

func TestEncodeSkipsDroppedRecords(t *testing.T) {
	input := `{"msg":"zero","n":0}
{"msg":"one","n":1}
{"msg":"two","n":2}
{"msg":"three","n":3}
`
	want, appended, block := encodeChanged(t, input, func(b *record.Batch) {
		b.Drop(1)
		b.Drop(3)
	})
	if len(want) != 2 || want[0] != `{"msg":"zero","n":0}` || want[1] != `{"msg":"two","n":2}` {
		t.Fatalf("kept lines %q", want)
	}
	for name, data := range map[string][]byte{"Append": appended, "Block": block} {
		lines, msgs, nfields := decodedLines(t, data)
		if len(lines) != 2 || lines[0] != want[0] || lines[1] != want[1] {
			t.Errorf("%s: decoded lines %q, want %q", name, lines, want)
		}
		if len(msgs) == 2 && (msgs[0] != "zero" || msgs[1] != "two") {
			t.Errorf("%s: decoded messages %q", name, msgs)
		}
		for i, n := range nfields {
			if n != 2 {
				t.Errorf("%s: row %d has %d fields, want 2", name, i, n)
			}
		}
		for _, gone := range []string{"one", "three"} {
			if bytes.Contains(data, []byte(gone)) {
				t.Errorf("%s: the block holds %q, a dropped record's", name, gone)
			}
		}
	}
}

func TestEncodeDroppedAll(t *testing.T) {
	_, appended, block := encodeChanged(t, "{\"msg\":\"a\"}\n{\"msg\":\"b\"}\n", func(b *record.Batch) {
		b.Drop(0)
		b.Drop(1)
	})
	for name, data := range map[string][]byte{"Append": appended, "Block": block} {
		lines, _, _ := decodedLines(t, data)
		if len(lines) != 0 {
			t.Errorf("%s: decoded %q from a batch with every record dropped", name, lines)
		}
	}
}

// TestEncodeReplacedLineHidesSecret replaces a line holding a secret, in
// its line, its message and a field, and checks that the secret is nowhere
// in the encoded block: a redacted value never reaches the WAL.
func TestEncodeReplacedLineHidesSecret(t *testing.T) {
	const secret = "hunter2-s3cr3t"
	input := `{"msg":"before","user":"ann"}
{"msg":"login ` + secret + `","password":"` + secret + `","user":"bob","tok":"a\"` + secret + `"}
{"msg":"after","user":"cy"}
`
	const redacted = `{"msg":"login [REDACTED]","password":"[REDACTED]","user":"bob"}`
	want, appended, block := encodeChanged(t, input, func(b *record.Batch) {
		b.SetLine(1, []byte(redacted))
	})
	wantLines := []string{`{"msg":"before","user":"ann"}`, redacted, `{"msg":"after","user":"cy"}`}
	if len(want) != 3 || want[1] != redacted {
		t.Fatalf("batch lines after SetLine %q", want)
	}
	for name, data := range map[string][]byte{"Append": appended, "Block": block} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s: the encoded block holds the redacted secret", name)
		}
		lines, msgs, nfields := decodedLines(t, data)
		if len(lines) != 3 {
			t.Fatalf("%s: %d rows, want 3", name, len(lines))
		}
		for i := range wantLines {
			if lines[i] != wantLines[i] {
				t.Errorf("%s: row %d line %q, want %q", name, i, lines[i], wantLines[i])
			}
		}
		if msgs[0] != "before" || msgs[1] != redacted || msgs[2] != "after" {
			t.Errorf("%s: messages %q: the replaced line's message is the new line, the others unchanged", name, msgs)
		}
		if nfields[0] != 2 || nfields[1] != 0 || nfields[2] != 2 {
			t.Errorf("%s: fields per row %v, want [2 0 2]: a replaced line's fields are dropped", name, nfields)
		}
	}
}
