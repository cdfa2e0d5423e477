package otlp

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestErrorBody(t *testing.T) {
	ct, b := ErrorBody(true, `bad "body"`)
	if want := `{"code":3,"message":"bad \"body\""}`; ct != ContentJSON || string(b) != want {
		t.Errorf("JSON: %s %s, want %s %s", ct, b, ContentJSON, want)
	}
	ct, b = ErrorBody(false, "bad")
	if ct != ContentProto {
		t.Errorf("content type %s, want %s", ct, ContentProto)
	}
	// google.rpc.Status: code (1) = 3, message (2) = "bad".
	num, typ, n := protowire.ConsumeTag(b)
	code, m := protowire.ConsumeVarint(b[n:])
	if num != 1 || typ != protowire.VarintType || code != 3 {
		t.Fatalf("status code field %d/%d = %d, want 1/varint = 3", num, typ, code)
	}
	b = b[n+m:]
	num, typ, n = protowire.ConsumeTag(b)
	msg, m := protowire.ConsumeString(b[n:])
	if num != 2 || typ != protowire.BytesType || msg != "bad" || n+m != len(b) {
		t.Errorf("status message field %d/%d = %q, want 2/bytes = bad", num, typ, msg)
	}
}

func TestSuccessBody(t *testing.T) {
	for _, c := range []struct {
		json     bool
		rejected int64
		msg      string
		ct, body string
	}{
		{true, 0, "", ContentJSON, "{}"},
		{true, 2, "too old", ContentJSON, `{"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"too old"}}`},
		{false, 0, "", ContentProto, ""},
		{false, 2, "x", ContentProto, string(ExportResponse(2, "x"))},
	} {
		ct, b := SuccessBody(c.json, c.rejected, c.msg)
		if ct != c.ct || string(b) != c.body {
			t.Errorf("SuccessBody(%v, %d, %q) = %s %q, want %s %q", c.json, c.rejected, c.msg, ct, b, c.ct, c.body)
		}
	}
}
