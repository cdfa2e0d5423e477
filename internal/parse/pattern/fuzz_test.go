package pattern

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// FuzzParse checks that no input panics, that feeding an input in random
// chunks gives exactly what feeding it whole gives, that every record
// renders as JSON, that every line becomes exactly one record, and that
// each line matches as the regexp oracle says.
func FuzzParse(f *testing.F) {
	for i, tc := range parseCases {
		f.Add(uint8(i), []byte(tc.in), uint64(i))
	}
	f.Fuzz(func(t *testing.T, which uint8, in []byte, seed uint64) {
		tc := parseCases[int(which)%len(parseCases)]
		p := compileCase(t, tc.expr, tc.exact)
		cfg := record.DefaultConfig()
		whole := parsetest.Run(p, cfg, in, nil)
		split := parsetest.Run(p, cfg, in, parsetest.RandomChunks(len(in), seed))
		if !slices.Equal(whole.Records, split.Records) || !slices.Equal(whole.Errors, split.Errors) {
			t.Fatalf("whole and split differ:\nwhole %q %q\nsplit %q %q", whole.Records, whole.Errors, split.Records, split.Errors)
		}
		if len(whole.Errors) != 0 {
			t.Fatalf("errors: %q", whole.Errors)
		}
		for _, r := range whole.Records {
			if !json.Valid([]byte(r)) {
				t.Fatalf("normalized output is not JSON: %q", r)
			}
		}
		checkOracle(t, p, tc.expr, tc.exact, in)
	})
}

// FuzzCompile checks that no expression panics Compile, that errors are
// the package's, and that compiled patterns agree with the oracle.
func FuzzCompile(f *testing.F) {
	for _, tc := range compileErrors {
		f.Add(tc.expr, []byte("a b"), false)
	}
	for _, tc := range parseCases {
		f.Add(tc.expr, []byte(tc.in), tc.exact)
	}
	f.Add(`[<time>] <msg>`, []byte("[2015-10-18 18:01:47,978] x\n[Sun Dec 04 04:47:44 2005] y"), false)
	f.Add(`<time>|<c>|<msg>`, []byte("20171223-22:15:29:606|Step|x\n"), false)
	f.Add(`"<ts>" <msg>`, []byte(`"2026-01-15T08:00:00Z" x`), true)
	f.Fuzz(func(t *testing.T, expr string, in []byte, exact bool) {
		p, err := CompileOptions(expr, Options{ExactSpaces: exact})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pattern: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		whole := parsetest.Run(p, record.DefaultConfig(), in, nil)
		if len(whole.Errors) != 0 {
			t.Fatalf("errors: %q", whole.Errors)
		}
		checkOracle(t, p, expr, exact, in)
		checkTimeShortcut(t, p, in)
	})
}

// checkTimeShortcut checks that skipping the timestamp read before a
// literal that cannot occur in a timestamp changes no match.
func checkTimeShortcut(t *testing.T, p *Parser, in []byte) {
	t.Helper()
	slow := *p
	slow.steps = slices.Clone(p.steps)
	changed := false
	for i := range slow.steps {
		st := &slow.steps[i]
		if st.name != nil && isTimeName(string(st.name)) && !st.last && !st.isTime {
			st.isTime, changed = true, true
		}
	}
	if !changed {
		return
	}
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		a := make([]record.Span, len(p.names))
		b := make([]record.Span, len(p.names))
		okA, okB := p.match(line, 0, true, a, 0), slow.match(line, 0, true, b, 0)
		if okA != okB || !slices.Equal(a, b) {
			t.Fatalf("pattern %q on %q: with the shortcut %v %v, without %v %v", p.expr, line, okA, a, okB, b)
		}
	}
}

// checkOracle compares the parser's match of every line of in, without
// the timestamp rule (which has no regexp equivalent), with a regular
// expression built from expr (a lazy group per capture between quoted
// literals), and checks that the rule changes no line's matching. Flexible spaces are checked on copies of the pattern
// and line with every run of spaces cut to one, where they must give the
// same captures, also cut.
func checkOracle(t *testing.T, p *Parser, expr string, exact bool, in []byte) {
	t.Helper()
	if !utf8.ValidString(expr) {
		return
	}
	var re strings.Builder
	re.WriteString(`^`)
	toks := tokenize(expr)
	for i, tok := range toks {
		switch {
		case !tok.capture && exact:
			re.WriteString(regexp.QuoteMeta(tok.text))
		case !tok.capture:
			re.WriteString(regexp.QuoteMeta(squeeze(tok.text)))
		case i == len(toks)-1:
			re.WriteString(`(?s:(.*))`)
		default:
			re.WriteString(`(?s:(.*?))`)
		}
	}
	if last := toks[len(toks)-1]; !last.capture {
		re.WriteString(`(?s:.*)`)
	}
	oracle := regexp.MustCompile(re.String())
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		if !utf8.Valid(line) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		out := make([]record.Span, len(p.names))
		ok := p.match(line, 0, false, out, 0)
		view := line
		if !exact {
			view = []byte(squeeze(string(line)))
		}
		m := oracle.FindSubmatch(view)
		if ok != (m != nil) {
			t.Fatalf("pattern %q on %q: match %v, oracle %v", expr, line, ok, m != nil)
		}
		// The timestamp rule only ever changes where a capture ends.
		if p.Match(line) != ok {
			t.Fatalf("pattern %q on %q: Match %v, without the timestamp rule %v", expr, line, !ok, ok)
		}
		if !ok {
			continue
		}
		var named []string // the oracle's groups of named captures
		g := 0
		for _, tok := range toks {
			if tok.capture {
				g++
				if tok.text != "_" {
					named = append(named, string(m[g]))
				}
			}
		}
		for i, sp := range out {
			got := string(line[sp.Off:sp.End()])
			if !exact {
				got = squeeze(got)
			}
			if got != named[i] {
				t.Fatalf("pattern %q on %q: capture <%s> = %q, oracle %q", expr, line, p.names[i], got, named[i])
			}
		}
	}
}

// squeeze cuts every run of spaces to one space.
func squeeze(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && i > 0 && s[i-1] == ' ' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
