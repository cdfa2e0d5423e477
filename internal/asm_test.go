package internal_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoLegacySSEInAVXFunctions checks that an assembly function using
// 256- or 512-bit registers writes the X registers with VEX-encoded
// instructions only (VMOVQ, not MOVQ). On some Intel cores, virtualized
// ones at least, a legacy SSE instruction while the upper halves of the Y
// registers are in use costs a state transition: measured on this project's
// machine at about 280 ns for one MOVQ R8, X2 after a VPBROADCASTB into Y1,
// which made json's specialBlocks (three such MOVQs) cost 500 ns a call and
// the JSON parser 4x slower, unseen on AMD cores, which have no such
// penalty.
func TestNoLegacySSEInAVXFunctions(t *testing.T) {
	wide := regexp.MustCompile(`\b[YZ]([0-9]|[12][0-9]|3[01])\b`)
	xreg := regexp.MustCompile(`\bX([0-9]|[12][0-9]|3[01])\b`)
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, "_amd64.s") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no amd64 assembly found under internal/")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// One function per TEXT directive, to the next.
		funcs := strings.Split(string(src), "\nTEXT ")
		for _, fn := range funcs[1:] {
			name, _, _ := strings.Cut(fn, "(")
			if !wide.MatchString(stripComments(fn)) {
				continue
			}
			for i, line := range strings.Split(fn, "\n") {
				code := strings.TrimSpace(stripComments(line))
				if i == 0 || code == "" || strings.HasSuffix(code, ":") {
					continue
				}
				op, args, _ := strings.Cut(code, " ")
				if !strings.HasPrefix(op, "V") && xreg.MatchString(args) {
					t.Errorf("%s: %s uses Y or Z registers and the legacy SSE instruction %q: use its VEX form (V%s)", f, name, code, op)
				}
			}
		}
	}
}

// stripComments drops // comments.
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		code, _, _ := strings.Cut(line, "//")
		b.WriteString(code)
		b.WriteString("\n")
	}
	return b.String()
}
