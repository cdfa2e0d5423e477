// Command testsum reads `go test -json` on its standard input and prints
// what `go test` prints without -v: the packages' closing lines (ok, FAIL,
// [no test files]), build errors, and the whole output of every test that
// failed; then, so that no skip goes unseen, every skipped test with its
// reason. scripts/test.sh pipes the suite through it; the exit status
// stays go test's (set -o pipefail).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // of build-output
	Test       string
	Output     string
}

type skip struct{ pkg, test, reason string }

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	outputs := map[string][]string{} // package + " " + test -> its output lines
	roots := map[string][]string{}   // package + " " + top-level test -> the output of it and its subtests
	var skips []skip
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // not an event: go test's own message
			w.Flush()
			continue
		}
		key := e.Package + " " + e.Test
		root, _, sub := strings.Cut(e.Test, "/")
		rootKey := e.Package + " " + root
		switch {
		case e.Action == "build-output":
			w.WriteString(e.Output)
		case e.Test == "" && e.Action == "output":
			// -json implies -v: drop the PASS line go test prints only then.
			if e.Output != "PASS\n" {
				w.WriteString(e.Output)
			}
		case e.Action == "output":
			outputs[key] = append(outputs[key], e.Output)
			roots[rootKey] = append(roots[rootKey], e.Output)
		case e.Action == "fail" && e.Test != "" && !sub:
			// A test failed: all it and its subtests printed, in order.
			for _, o := range roots[rootKey] {
				if !strings.HasPrefix(strings.TrimSpace(o), "=== ") {
					w.WriteString(o)
				}
			}
		case e.Action == "fail" && e.Test == "":
			// The package failed with tests that never ended: its binary
			// timed out or was killed. What they printed (the timeout's
			// goroutine dump included) is the only clue.
			var open []string
			for k := range roots {
				if strings.HasPrefix(k, e.Package+" ") {
					open = append(open, k)
				}
			}
			slices.Sort(open)
			for _, k := range open {
				fmt.Fprintf(w, "--- %s never ended; its output:\n", strings.TrimPrefix(k, e.Package+" "))
				for _, o := range roots[k] {
					w.WriteString(o)
				}
				delete(roots, k)
			}
		case e.Action == "skip" && e.Test != "":
			skips = append(skips, skip{e.Package, e.Test, reason(outputs[key])})
		}
		if e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			delete(outputs, key)
			if !sub {
				delete(roots, rootKey)
			}
		}
		if e.Test == "" || e.Action == "fail" {
			w.Flush()
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(skips) > 0 {
		fmt.Fprintf(w, "\n%d tests skipped:\n", len(skips))
		for _, s := range skips {
			fmt.Fprintf(w, "  %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	return nil
}

// reason is what a skipped test printed, but for go test's own lines.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}
