package syslog

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// FuzzParse checks that no input panics, that feeding an input in random
// chunks gives exactly what feeding it whole gives, that every line comes
// out as a record or as an error (never dropped), and that the normalized
// output is JSON.
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in), uint64(1))
	}
	f.Add([]byte("<13>1 - - - - - [a b=\"\\"), uint64(2))
	f.Add([]byte("<13>Jan 15 08:00:00 h t["), uint64(3))
	f.Add([]byte("\xEF\xBB\xBF<13>1 2026-01-15T08:00:00Z h a - - - bom\n<13>1 - - - - - - b\n"), uint64(4))
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		cfg := record.DefaultConfig()
		whole := parsetest.Run(&Parser{}, cfg, in, nil)
		chunks := parsetest.RandomChunks(len(in), seed)
		splits := [][]int{chunks}
		if bytes.HasPrefix(in, bom) {
			// A leading BOM cut after its first and its second byte: the
			// Splitter strips it all the same.
			splits = append(splits, []int{1, len(in) - 1}, []int{2, len(in) - 2}, []int{1, 1, len(in) - 2})
		}
		for _, chunks := range splits {
			split := parsetest.Run(&Parser{}, cfg, in, chunks)
			if !slices.Equal(whole.Records, split.Records) || !slices.Equal(whole.Errors, split.Errors) {
				t.Fatalf("whole and split in chunks %v differ:\nwhole %q %q\nsplit %q %q", chunks, whole.Records, whole.Errors, split.Records, split.Errors)
			}
		}
		if got, want := len(whole.Records)+len(whole.Errors), countLines(in); got != want {
			t.Fatalf("%d records and errors for %d lines: %q %q", got, want, whole.Records, whole.Errors)
		}
		for _, r := range whole.Records {
			if !json.Valid([]byte(r)) {
				t.Fatalf("normalized output is not JSON: %q", r)
			}
		}
		for _, e := range whole.Errors {
			if !strings.Contains(e, ": syslog: ") {
				t.Fatalf("error without the syslog prefix: %q", e)
			}
		}
	})
}

var bom = []byte("\xEF\xBB\xBF")

// countLines counts the lines a Splitter hands to a parser: non-blank
// after a leading BOM, the "\n" and a "\r" before it are removed.
func countLines(in []byte) int {
	in = bytes.TrimPrefix(in, bom)
	n := 0
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		if len(bytes.TrimSuffix(line, []byte("\r"))) > 0 {
			n++
		}
	}
	return n
}
