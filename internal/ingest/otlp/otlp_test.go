package otlp

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzLines: any body renders as valid JSON lines or fails cleanly.
func FuzzLines(f *testing.F) {
	f.Add([]byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","body":{"kvlistValue":{"values":[{"key":"k","value":{"arrayValue":{"values":[{"intValue":2}]}}}]}}}]}]}]}`), true)
	f.Add([]byte{0x0a, 0x04, 0x12, 0x02, 0x12, 0x00}, false)
	f.Fuzz(func(t *testing.T, body []byte, isJSON bool) {
		out, _, err := Lines(nil, body, isJSON)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error %v is not ErrBadRequest", err)
			}
			return
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte{'\n'}), []byte{'\n'}) {
			if len(line) > 0 && !json.Valid(line) {
				t.Fatalf("rendered line is not JSON: %q", line)
			}
		}
	})
}

func TestLabelName(t *testing.T) {
	for in, want := range map[string]string{"service.name": "service_name", "a-b/c": "a_b_c", "9x": "_9x", "ok_1": "ok_1", "": "_"} {
		if got := labelName(in); got != want {
			t.Errorf("labelName(%q) = %q, want %q", in, got, want)
		}
	}
}
