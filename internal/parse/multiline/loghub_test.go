package multiline

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/parse/text"
)

// loghubDir returns ../shared/loghub, or skips the test when it is absent
// (its terms keep it out of the repository).
func loghubDir(tb testing.TB) string { return parsetest.Shared(tb, "loghub") }

// TestLoghub runs the Joiner's default rule over the Loghub samples, whose
// records are all one line: it must join none of them.
func TestLoghub(t *testing.T) {
	dir := loghubDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*", "*_2k.log"))
	if err != nil || len(files) == 0 {
		t.Skip("no Loghub samples")
	}
	for _, name := range files {
		t.Run("system="+filepath.Base(filepath.Dir(name)), func(t *testing.T) {
			in, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			j, err := New(text.Parser{}, Config{})
			if err != nil {
				t.Fatal(err)
			}
			got := run(j, 0, in, nil)
			n := bytes.Count(in, []byte("\n"))
			if !bytes.HasSuffix(in, []byte("\n")) {
				n++
			}
			if len(got.Records) != n || len(got.Errors) != 0 {
				for _, l := range got.Lines {
					if bytes.Contains([]byte(l), []byte("\n")) {
						t.Logf("joined: %q", l)
						break
					}
				}
				t.Errorf("%d records from %d lines, errors %q", len(got.Records), n, got.Errors)
			}
		})
	}
}
