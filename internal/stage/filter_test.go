package stage

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/logql"
)

// pat builds a pattern node from its source as the logql parser would:
// <name> and <_> captures, literals between them.
func pat(src string) *logql.Pattern {
	p := &logql.Pattern{Source: src}
	for src != "" {
		i := strings.IndexByte(src, '<')
		j := strings.IndexByte(src[max(i, 0):], '>')
		if i < 0 || j < 0 {
			p.Parts = append(p.Parts, logql.PatternPart{Literal: src})
			break
		}
		if i > 0 {
			p.Parts = append(p.Parts, logql.PatternPart{Literal: src[:i]})
		}
		name := src[i+1 : i+j]
		if name == "_" {
			name = ""
		}
		p.Parts = append(p.Parts, logql.PatternPart{Name: name, Capture: true})
		src = src[i+j+1:]
	}
	return p
}

func lit(vs ...string) []logql.FilterValue {
	var out []logql.FilterValue
	for _, v := range vs {
		out = append(out, logql.FilterValue{Value: v})
	}
	return out
}

func res(vs ...string) []logql.FilterValue {
	var out []logql.FilterValue
	for _, v := range vs {
		out = append(out, logql.FilterValue{Value: v, Re: regexp.MustCompile(v)})
	}
	return out
}

func pats(vs ...string) []logql.FilterValue {
	var out []logql.FilterValue
	for _, v := range vs {
		out = append(out, logql.FilterValue{Value: v, Pattern: pat(v)})
	}
	return out
}

func ips(vs ...string) []logql.FilterValue {
	var out []logql.FilterValue
	for _, v := range vs {
		out = append(out, logql.FilterValue{Value: v, IP: true})
	}
	return out
}

func TestLineFilter(t *testing.T) {
	for _, c := range []struct {
		name string
		op   logql.FilterOp
		vals []logql.FilterValue
		keep []string
		drop []string
	}{
		{"contains", logql.FilterContains, lit("error"), []string{"an error here", "error"}, []string{"Error", "err", ""}},
		{"contains empty", logql.FilterContains, lit(""), []string{"", "x"}, nil},
		{"contains bytes", logql.FilterContains, lit("é"), []string{"café"}, []string{"cafe"}},
		{"not contains", logql.FilterNotContains, lit("timeout"), []string{"ok", ""}, []string{"a timeout"}},
		{"or", logql.FilterContains, lit("a", "b"), []string{"xa", "xb", "ab"}, []string{"c"}},
		{"not or", logql.FilterNotContains, lit("a", "b"), []string{"c"}, []string{"xa", "xb"}},
		{"regexp", logql.FilterRegexp, res(`error=\w+`), []string{"x error=timeout y"}, []string{"error= x"}},
		{"regexp unanchored", logql.FilterRegexp, res(`tsdb-ops.*io:2003`), []string{"a tsdb-ops-1.io:2003 b"}, []string{"tsdb-ops"}},
		{"regexp literal", logql.FilterRegexp, res(`GET /`), []string{"GET /x"}, []string{"POST /x"}},
		{"regexp case-insensitive", logql.FilterRegexp, res(`(?i)error`), []string{"ERROR", "an Error"}, []string{"err"}},
		{"regexp dot newline", logql.FilterRegexp, res(`(?s)a.b`), []string{"a\nb"}, []string{"ab"}},
		{"not regexp", logql.FilterNotRegexp, res(`\d{3}`), []string{"12"}, []string{"123"}},
		{"not regexp or", logql.FilterNotRegexp, res(`^a`, `b$`), []string{"xx"}, []string{"ax", "xb"}},
		{"regexp uncompiled", logql.FilterRegexp, lit(`^\d+$`), []string{"123"}, []string{"12a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := must(t)(newLineFilter(&logql.LineFilter{Op: c.op, Values: c.vals}))
			for _, l := range c.keep {
				if out, _, ok := runRow(st, nil, l); !ok || out != l {
					t.Errorf("%q dropped", l)
				}
			}
			for _, l := range c.drop {
				if _, _, ok := runRow(st, nil, l); ok {
					t.Errorf("%q kept", l)
				}
			}
		})
	}
	for _, bad := range []*logql.LineFilter{
		{Op: logql.FilterContains},
		{Op: logql.FilterRegexp, Values: lit(`(`)},
		{Op: logql.FilterPattern, Values: lit(`<a>`)},
		{Op: logql.FilterPattern, Values: pats(`<a><b>`)},
		{Op: logql.FilterRegexp, Values: ips(`10.0.0.1`)},
		{Op: logql.FilterContains, Values: ips(`10.0.0.300`)},
	} {
		if _, err := newLineFilter(bad); err == nil {
			t.Errorf("%+v compiled", bad)
		}
	}
}

func TestPatternFilter(t *testing.T) {
	for _, c := range []struct {
		pattern string
		keep    []string
		drop    []string
	}{
		{"<_> bar <_>", []string{"foo bar baz", "x bar y bar z"}, []string{"foo bar", "bar baz", " bar baz", "foo baz"}},
		{"<_> bar", []string{"foo bar", "a bar bar"}, []string{"foo bar baz", " bar", "bar"}},
		{"<_> bar <_> baz", []string{"foo bar x baz", "foo bar x baz y baz"}, []string{"foo bar baz", "foo bar x bazz"}},
		{"foo <_>", []string{"foo x"}, []string{"xfoo x", "foo ", "foo"}},
		{"GET <path> HTTP/<_>", []string{"GET /a HTTP/1.1"}, []string{"POST /a HTTP/1.1", "GET /a HTTP/"}},
		{`<ip> - - <_> "<method> <uri> <_>" <status> <size> <_> "<agent>" <_>`,
			[]string{`0.191.12.2 - - [10/Jun/2021:09:14:29 +0000] "GET /api/plugins/versioncheck HTTP/1.1" 200 2 "-" "Go-http-client/2.0" "13.76.247.102, 34.120.177.193" "TLSv1.2" "US" ""`},
			[]string{`0.191.12.2 - - [10/Jun/2021:09:14:29 +0000] "GET /api"`}},
		{"exact", []string{"exact"}, []string{"exact ", "inexact", ""}},
		{"<_>", []string{"x"}, []string{""}},
		{"<a> <a>", []string{"x y"}, []string{"x", "x "}},
		{"", []string{""}, []string{"x"}},
		{"a<_>a<_>a", []string{"aXaYa", "aXaaYa"}, []string{"aaa", "aXaa"}},
	} {
		t.Run(c.pattern, func(t *testing.T) {
			st := must(t)(newLineFilter(&logql.LineFilter{Op: logql.FilterPattern, Values: pats(c.pattern)}))
			neg := must(t)(newLineFilter(&logql.LineFilter{Op: logql.FilterNotPattern, Values: pats(c.pattern)}))
			for _, l := range c.keep {
				if _, _, ok := runRow(st, nil, l); !ok {
					t.Errorf("|> dropped %q", l)
				}
				if _, _, ok := runRow(neg, nil, l); ok {
					t.Errorf("!> kept %q", l)
				}
			}
			for _, l := range c.drop {
				if _, _, ok := runRow(st, nil, l); ok {
					t.Errorf("|> kept %q", l)
				}
				if _, _, ok := runRow(neg, nil, l); !ok {
					t.Errorf("!> dropped %q", l)
				}
			}
		})
	}
}

func TestIPFilter(t *testing.T) {
	docLines := []string{
		`3.180.71.3 - - [17/May/2015:08:05:32 +0000] "GET /downloads/product_1 HTTP/1.1" 304 0 "-" "Debian APT-HTTP/1.3 (0.8.16~exp12ubuntu10.21)"`,
		`80.91.33.133 - - [17/May/2015:08:05:14 +0000] "GET /downloads/product_1 HTTP/1.1" 304 0 "-" "Debian APT-HTTP/1.3 (0.8.16~exp12ubuntu10.16)"`,
		`93.180.71.3 - - [17/May/2015:08:05:26 +0000] "GET /downloads/product_1 HTTP/1.1" 404 324 "-" "Debian APT-HTTP/1.3 (0.8.16~exp12ubuntu10.21)"`,
	}
	for _, c := range []struct {
		name string
		op   logql.FilterOp
		vals []logql.FilterValue
		keep []string
		drop []string
	}{
		{"single not a substring", logql.FilterContains, ips("3.180.71.3"), docLines[:1], docLines[1:]},
		{"cidr", logql.FilterContains, ips("80.91.0.0/16"), docLines[1:2], []string{docLines[0], docLines[2]}},
		{"cidr host bits", logql.FilterContains, ips("192.168.4.5/16"), []string{"from 192.168.200.1 ok"}, []string{"from 192.169.0.1"}},
		{"range", logql.FilterContains, ips("192.168.0.1-192.189.10.12"), []string{"a=192.170.0.0", "192.189.10.12"}, []string{"192.189.10.13", "192.168.0.0"}},
		{"v6", logql.FilterContains, ips("::1"), []string{"addr [::1]:8080", "0:0:0:0:0:0:0:1"}, []string{"::2", "127.0.0.1"}},
		{"v6 cidr", logql.FilterContains, ips("2001:db8::/32"), []string{"src=2001:db8:1::5 dst=x", "2001:DB8::1."}, []string{"2001:db9::1"}},
		{"v6 range", logql.FilterContains, ips("2001:db8::1-2001:db8::8"), []string{"2001:db8::8"}, []string{"2001:db8::9"}},
		{"mapped v4", logql.FilterContains, ips("10.0.0.0/8"), []string{"::ffff:10.1.2.3"}, nil},
		{"with port", logql.FilterContains, ips("10.0.0.1"), []string{"10.0.0.1:443", "host:10.0.0.1", "at 10.0.0.1."}, []string{"10.0.0.10", "110.0.0.1", "10.0.0.1.5"}},
		{"several addresses", logql.FilterContains, ips("10.0.0.2"), []string{"10.0.0.1 -> 10.0.0.2"}, []string{"10.0.0.1 -> 10.0.0.3"}},
		{"or", logql.FilterContains, ips("10.0.0.1", "10.0.0.2"), []string{"10.0.0.2"}, []string{"10.0.0.3"}},
		{"not", logql.FilterNotContains, ips("192.168.4.5-192.168.4.20"), []string{"192.168.4.21", "no address"}, []string{"ip 192.168.4.6"}},
		{"mixed with literal", logql.FilterContains, append(ips("10.0.0.1"), lit("boom")...), []string{"boom", "10.0.0.1"}, []string{"10.0.0.2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := must(t)(newLineFilter(&logql.LineFilter{Op: c.op, Values: c.vals}))
			for _, l := range c.keep {
				if _, _, ok := runRow(st, nil, l); !ok {
					t.Errorf("%q dropped", l)
				}
			}
			for _, l := range c.drop {
				if _, _, ok := runRow(st, nil, l); ok {
					t.Errorf("%q kept", l)
				}
			}
		})
	}
}

func TestNewIPMatcher(t *testing.T) {
	for _, good := range []string{"192.0.2.0", "::1", "192.168.0.1-192.189.10.12", " 10.0.0.1 - 10.0.0.2 ", "2001:db8::1-2001:db8::8", "192.51.100.0/24", "2001:db8::/32"} {
		if _, err := newIPMatcher(good); err != nil {
			t.Errorf("newIPMatcher(%q): %v", good, err)
		}
	}
	for _, bad := range []string{"", "x", "10.0.0.256", "10.0.0.2-10.0.0.1", "10.0.0.1-::1", "10.0.0.0/33", "10.0.0.1-", "-10.0.0.1"} {
		if _, err := newIPMatcher(bad); err == nil {
			t.Errorf("newIPMatcher(%q) succeeded", bad)
		}
	}
	m, _ := newIPMatcher("10.0.0.0/8")
	if !m.contains(netip.MustParseAddr("10.255.0.1")) || m.contains(netip.MustParseAddr("11.0.0.1")) {
		t.Error("10.0.0.0/8 contains")
	}
}

func TestCompilePattern(t *testing.T) {
	for _, c := range []struct {
		src      string
		needName bool
		ok       bool
	}{
		{"<a> <b>", true, true},
		{"<_> x", false, true},
		{"<_> x", true, false},
		{"<a><b>", false, false},
		{"<a> <a>", true, false},
		{"<a> <a>", false, true},
		{"<1a> x", true, false},
		{"", false, true},
		{"", true, false},
	} {
		_, err := compilePattern(pat(c.src), c.needName)
		if (err == nil) != c.ok {
			t.Errorf("compilePattern(%q, %v): %v", c.src, c.needName, err)
		}
	}
}

func BenchmarkLineFilter(b *testing.B) {
	line := []byte(realisticLogfmt)
	for _, bc := range []struct {
		name string
		f    *logql.LineFilter
	}{
		{"op=contains", &logql.LineFilter{Op: logql.FilterContains, Values: lit("status=500")}},
		{"op=regexp", &logql.LineFilter{Op: logql.FilterRegexp, Values: res(`status=5\d\d`)}},
		{"op=pattern", &logql.LineFilter{Op: logql.FilterPattern, Values: pats(`level=<_> ts=<_> status=<_> <_>`)}},
		{"op=ip", &logql.LineFilter{Op: logql.FilterContains, Values: ips("10.0.0.0/8")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st, err := newLineFilter(bc.f)
			if err != nil {
				b.Fatal(err)
			}
			lb := &Labels{}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				st.process(0, line, lb)
			}
		})
	}
}

// FuzzPatternFilter checks |> against the regexp it stands for: the
// whole line, each capture one byte or more.
func FuzzPatternFilter(f *testing.F) {
	f.Add("<_> bar <_>", "foo bar baz")
	f.Add("a<_>a<_>a", "aXaaYa")
	f.Add("GET <path> HTTP/<_>", "GET /a HTTP/1.1")
	f.Add("<_>x", "xx")
	f.Fuzz(func(t *testing.T, src, line string) {
		if !utf8.ValidString(src) {
			return // the regexp needs valid UTF-8
		}
		c, err := compilePattern(pat(src), false)
		if err != nil {
			return
		}
		var re strings.Builder
		re.WriteString(`^`)
		for _, part := range c.parts {
			if part.Capture {
				re.WriteString(`(?s:.+)`)
			} else {
				re.WriteString(regexp.QuoteMeta(part.Literal))
			}
		}
		re.WriteString(`$`)
		want := regexp.MustCompile(re.String()).MatchString(line)
		if got := c.matchWhole([]byte(line)); got != want {
			t.Fatalf("pattern %q (%s) on %q: %v, want %v", src, re.String(), line, got, want)
		}
	})
}

// TestFoldedLiteralFilter: a case-insensitive literal regexp is searched
// on the lowercased line, and still matches as the regexp does where
// Unicode folding reaches ASCII (the Kelvin sign, the long s).
func TestFoldedLiteralFilter(t *testing.T) {
	f := &logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: "(?i)ask", Re: regexp.MustCompile("(?s)(?i)ask")}}}
	st, err := newLineFilter(f)
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]bool{
		"ASK me": true, "please aSk": true, "as k": false, "": false,
		"a\u017fk": true, "as\u212a": true, "\u00e9 task": true, "\u00e9 tas": false,
	} {
		if _, got := st.process(0, []byte(line), nil); got != want {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
}

// TestFoldedLiteralNoUnicodeFold: a literal with neither k nor s has no
// non-ASCII rune folding to it: a non-ASCII line is decided by the
// lowercased search alone.
func TestFoldedLiteralNoUnicodeFold(t *testing.T) {
	f := &logql.LineFilter{Op: logql.FilterRegexp, Values: []logql.FilterValue{{Value: "(?i)payment", Re: regexp.MustCompile("(?s)(?i)payment")}}}
	st, err := newLineFilter(f)
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]bool{"\u00e9 PAYMENT": true, "\u00e9 pay": false, "paym\u00e9nt": false} {
		if _, got := st.process(0, []byte(line), nil); got != want {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
}
