package logql

import (
	"errors"
	"fmt"
	"strings"
)

// compilePattern parses Loki's pattern syntax: literals and captures,
// <name> or the unnamed <_>. A '<' that does not open a capture (no name,
// or a name that is not a label name) is literal text. Two captures with
// no literal between them cannot be matched and are an error; the
// pattern parser stage (named) also needs a named capture and distinct
// names, while a pattern line filter (|>, !>) treats every capture as a
// wildcard.
func compilePattern(src string, named bool) (*Pattern, error) {
	pat := &Pattern{Source: src}
	var lit strings.Builder
	seen := map[string]bool{}
	prevCapture := false
	for i := 0; i < len(src); {
		name, n := captureAt(src, i)
		if n == 0 {
			lit.WriteByte(src[i])
			i++
			continue
		}
		if lit.Len() > 0 {
			pat.Parts = append(pat.Parts, PatternPart{Literal: lit.String()})
			lit.Reset()
			prevCapture = false
		}
		if prevCapture {
			return nil, fmt.Errorf("found consecutive capture '%s'", src[i:i+n])
		}
		if name == "_" {
			name = ""
		}
		if named && name != "" {
			if seen[name] {
				return nil, fmt.Errorf("duplicate capture name (%s) found", name)
			}
			seen[name] = true
		}
		pat.Parts = append(pat.Parts, PatternPart{Name: name, Capture: true})
		prevCapture = true
		i += n
	}
	if lit.Len() > 0 {
		pat.Parts = append(pat.Parts, PatternPart{Literal: lit.String()})
	}
	if named && len(seen) == 0 {
		return nil, errNoCapture
	}
	return pat, nil
}

var errNoCapture = errors.New("at least one capture is required")

// captureAt returns the name of the capture <name> at src[i] and its
// length, or a zero length if none starts there.
func captureAt(src string, i int) (string, int) {
	if src[i] != '<' {
		return "", 0
	}
	j := i + 1
	for j < len(src) && isIdentByte(src[j]) {
		j++
	}
	if j == i+1 || j >= len(src) || src[j] != '>' || !isIdentStart(src[i+1]) {
		return "", 0
	}
	return src[i+1 : j], j + 1 - i
}
