package json

import (
	"bytes"
	stdjson "encoding/json"
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// FuzzParse checks that no input panics, that feeding an input in random
// chunks gives exactly what feeding it whole gives, and that a single line
// is accepted exactly when encoding/json accepts it (within the depth
// limit, which encoding/json sets far higher).
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in), uint64(1))
	}
	f.Add([]byte("{\"a\":\"\xed\xa0\x80\"}"), uint64(2))
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		cfg := record.DefaultConfig()
		whole := parsetest.Run(&Parser{}, cfg, in, nil)
		split := parsetest.Run(&Parser{}, cfg, in, parsetest.RandomChunks(len(in), seed))
		if !slices.Equal(whole.Records, split.Records) || !slices.Equal(whole.Errors, split.Errors) {
			t.Fatalf("whole and split differ:\nwhole %q %q\nsplit %q %q", whole.Records, whole.Errors, split.Records, split.Errors)
		}
		for _, r := range whole.Records {
			if !stdjson.Valid([]byte(r)) {
				t.Fatalf("normalized output is not JSON: %q", r)
			}
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(in, []byte("\n")), []byte("\r"))
		if bytes.ContainsAny(line, "\n") || bytes.HasPrefix(line, []byte("\xEF\xBB\xBF")) || len(bytes.TrimSpace(line)) == 0 {
			return
		}
		_, verr := Validate(line)
		accepted := len(whole.Errors) == 0
		if accepted != (verr == nil) {
			t.Fatalf("ParseLine accepted=%v but Validate says %v for %q", accepted, verr, line)
		}
		if std := stdjson.Valid(line); std != accepted && bytes.Count(line, []byte("[")) < DefaultMaxDepth && bytes.Count(line, []byte("{")) < DefaultMaxDepth {
			t.Fatalf("accepted=%v, encoding/json valid=%v for %q (errors %q)", accepted, std, line, whole.Errors)
		}
	})
}

// FuzzValidate checks Validate against encoding/json on whole texts.
func FuzzValidate(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, err := Validate(in)
		if bytes.HasPrefix(in, []byte("\xEF\xBB\xBF")) || bytes.Count(in, []byte("[")) >= DefaultMaxDepth || bytes.Count(in, []byte("{")) >= DefaultMaxDepth {
			return
		}
		if std := stdjson.Valid(in); std != (err == nil) {
			t.Fatalf("Validate err=%v, encoding/json valid=%v for %q", err, std, in)
		}
	})
}
