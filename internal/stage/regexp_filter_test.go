package stage

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
)

// corpusRegexps are line filter and label filter regexps of the kinds
// operators write, over the Loghub samples: alternations, (?i), classes
// around literals, .* between literals, anchors, and k and s, which
// Unicode folds from runes beyond ASCII.
var corpusRegexps = []string{
	"error|fatal|panic", "(?i)error", "(?i)(failed|failure)", "[Ee]rror", ".*Exception.*", "user=\\w+",
	"\\d+\\.\\d+\\.\\d+\\.\\d+", "(?i)kernel", "session (opened|closed)", "authentication failure;.*user=root",
	"^\\[", "\\bblk_-?\\d+", "(?i)warn(ing)?", "(GET|POST) /", "jk2_init\\(\\) Found child \\d+", "(?i)s",
	"(?i)(ssh|sk)d", "[0-9]+ms", ".*(?i)(refused|denied).*", "info|warn|error", "(?s).*fail.*", "(?i)NOTICE",
	"https?://[a-z]+", "x*", ".*", "(?i)INFO.*dfs\\.DataNode", "core\\.\\d+", "(?i)[a-z]+ction",
}

// TestRegexpFilterCorpus checks, on every Loghub line, each line filter
// (|~ and !~) and each label filter (=~ and !~ on the line as a label's
// value) against the plain regexp.
func TestRegexpFilterCorpus(t *testing.T) {
	lines := bytes.Split(parsetest.LoghubCorpus(t), []byte{'\n'})
	// A few lines the samples lack: newlines, the Kelvin sign, invalid
	// UTF-8.
	if raceEnabled { // every 8th line: the race detector slows regexps tenfold
		for i := range len(lines) / 8 {
			lines[i] = lines[8*i]
		}
		lines = lines[:len(lines)/8]
	}
	lines = append(lines, []byte("an error\nTIMEOUT"), []byte("\u212aernel sſh"), []byte("err\xffor fail"))
	for _, src := range corpusRegexps {
		re := regexp.MustCompile("(?s)" + src)
		anch := regexp.MustCompile("^(?:" + src + ")$")
		var filters [2]stage
		for i, op := range []logql.FilterOp{logql.FilterRegexp, logql.FilterNotRegexp} {
			filters[i] = must(t)(newLineFilter(&logql.LineFilter{Op: op, Values: []logql.FilterValue{{Value: src, Re: re}}}))
		}
		var labels [2]stage
		for i, op := range []string{"=~", "!~"} {
			labels[i] = must(t)(newLabelFilterStage(&logql.LabelFilterString{Matcher: matcher(t, "msg"+op+strconvQuote(src))}))
		}
		for _, line := range lines {
			want := re.Match(line)
			for i, st := range filters {
				if _, got := st.process(0, line, nil); got != (want != (i == 1)) {
					t.Fatalf("%q (negated %v) on %q: %v, want %v", src, i == 1, line, got, want != (i == 1))
				}
			}
			want = anch.Match(line)
			for i, st := range labels {
				if _, _, got := runRow(st, lbls("msg", string(line)), ""); got != (want != (i == 1)) {
					t.Fatalf("msg=~%q (negated %v) on %q: %v, want %v", src, i == 1, line, got, want != (i == 1))
				}
			}
		}
	}
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// FuzzRegexpMatcher checks a regexp's matcher, unanchored and anchored,
// against the regexp on any text.
func FuzzRegexpMatcher(f *testing.F) {
	for _, src := range corpusRegexps {
		f.Add(src, "sshd[1234]: authentication failure; user=root Error: connection refused")
	}
	f.Fuzz(func(t *testing.T, src, text string) {
		if len(src) > 200 {
			return
		}
		re, err := regexp.Compile("(?s)" + src)
		if err != nil {
			return
		}
		if got, want := regexpMatcher(re, re.String(), false)([]byte(text)), re.MatchString(text); got != want {
			t.Fatalf("%q on %q: %v, want %v", src, text, got, want)
		}
		if strings.Contains(src, `\Q`) {
			return // LogQL's wrapping would quote its own )$
		}
		anch, err := regexp.Compile("^(?:" + src + ")$")
		if err != nil {
			return
		}
		if got, want := regexpMatcher(anch, src, true)([]byte(text)), anch.MatchString(text); got != want {
			t.Fatalf("anchored %q on %q: %v, want %v", src, text, got, want)
		}
	})
}

// BenchmarkRegexpFilter compares each regexp run alone (impl=regexp)
// with its matcher (impl=prefilter) over the Loghub lines: as a line
// filter, and anchored as a label filter on the line.
func BenchmarkRegexpFilter(b *testing.B) {
	corpus := parsetest.LoghubCorpus(b)
	lines := bytes.Split(corpus, []byte{'\n'})
	for _, bc := range []struct {
		name, src string
		anchored  bool
	}{
		{"re=alternation", "error|fatal|panic", false},
		{"re=fold", "(?i)(failed|failure)", false},
		{"re=class", "[Ee]rror", false},
		{"re=dotstar", ".*user.*root", false},
		{"re=required", "session (opened|closed) for user \\w+", false},
		{"re=label-contains", ".*(?i)timeout.*", true},
		{"re=label-alternation", "info|warn|error", true},
		{"re=label-prefix", "authentication.*", true},
		{"re=chain", `Failed password for \S+ from [0-9.]+`, false},
		{"re=chain-classes", `[a-z]+\[[0-9]+\]: `, false},
	} {
		src := bc.src
		if !bc.anchored {
			src = "(?s)" + src
		}
		var re *regexp.Regexp
		if bc.anchored {
			re = regexp.MustCompile("^(?:" + src + ")$")
		} else {
			re = regexp.MustCompile(src)
		}
		for _, impl := range []string{"regexp", "prefilter"} {
			match := re.Match
			if impl == "prefilter" {
				match = regexpMatcher(re, src, bc.anchored)
			}
			b.Run(bc.name+"/impl="+impl, func(b *testing.B) {
				b.SetBytes(int64(len(corpus)))
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					for _, l := range lines {
						if match(l) {
							n++
						}
					}
				}
			})
		}
	}
}
