package stage

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

func TestLineFormat(t *testing.T) {
	mk := func(tmpl string) func() stage {
		return func() stage { return must(t)(newLineFormatStage(&logql.LineFormat{Template: tmpl})) }
	}
	stream := lbls("app", "api", "status", "200", "duration", "3000", "ip", "1.1.1.1")
	runCases(t, mk(`{{.ip}} {{.status}} {{div .duration 1000}}`), []stageCase{
		{name: "doc example", stream: stream, line: "x", want: "1.1.1.1 200 3", labels: stream.String()},
		{name: "missing label is empty", stream: lbls("ip", "a"), line: "x", want: "a  0", labels: `{ip="a"}`},
	})
	runCases(t, mk(`{{ __line__ | upper }} at {{ __timestamp__ | unixEpochMillis }}`), []stageCase{
		{name: "line and timestamp", line: "hello", want: "HELLO at 1700000000123", labels: `{}`},
	})
	runCases(t, mk(`{{ div 1 .zero }}`), []stageCase{
		{name: "error keeps the line", stream: lbls("zero", "0"), line: "original",
			labels: `{__error__="TemplateFormatErr", __error_details__="template: line:1:3: executing \"line\" at <div 1 .zero>: error calling div: division by zero", zero="0"}`},
	})
	runCases(t, mk(`{{ if eq .level "error" }}E{{ else }}{{ .level | default "-" }}{{ end }} {{ index . "a-b" }}`), []stageCase{
		{name: "control flow", stream: lbls("level", "error"), line: "x", want: "E ", labels: `{level="error"}`},
		{name: "default", line: "x", want: "- ", labels: `{}`},
	})
	runCases(t, mk(`{{ .m | ToUpper }} {{ Replace .p "/" "_" 1 }} {{ TrimLeft .p "/a" }} {{ TrimSpace " x " }}`), []stageCase{
		{name: "Go's strings functions", stream: lbls("m", "get", "p", "/a/b"), line: "x", want: "GET _a/b b x", labels: `{m="get", p="/a/b"}`},
	})
	for _, bad := range []string{`{{ .a `, `{{ nosuchfunc }}`} {
		if _, err := newLineFormatStage(&logql.LineFormat{Template: bad}); err == nil {
			t.Errorf("line_format %q compiled", bad)
		}
	}
}

func TestLabelFormat(t *testing.T) {
	mk := func(items ...logql.LabelFormatItem) func() stage {
		return func() stage { return must(t)(newLabelFormatStage(&logql.LabelFormat{Items: items})) }
	}
	rename := func(dst, src string) logql.LabelFormatItem { return logql.LabelFormatItem{Dst: dst, Src: src} }
	tmpl := func(dst, t string) logql.LabelFormatItem { return logql.LabelFormatItem{Dst: dst, Template: t} }
	runCases(t, mk(rename("dst", "src")), []stageCase{
		{name: "rename", stream: lbls("src", "v", "x", "y"), line: "l", labels: `{dst="v", x="y"}`},
		{name: "rename missing", stream: lbls("x", "y"), line: "l", labels: `{x="y"}`},
		{name: "rename over", stream: lbls("src", "v", "dst", "old"), line: "l", labels: `{dst="v"}`},
	})
	runCases(t, mk(tmpl("dst", "{{.src}}-{{ __line__ }}")), []stageCase{
		{name: "template keeps source", stream: lbls("src", "v"), line: "l", labels: `{dst="v-l", src="v"}`},
	})
	runCases(t, mk(rename("a", "b"), tmpl("c", "{{.a}}|{{.b}}|{{.d}}"), tmpl("d", "{{.c}}new")), []stageCase{
		{name: "templates see the labels before the stage's templates", stream: lbls("b", "B", "c", "C", "d", "D"), line: "l",
			labels: `{a="B", c="B||D", d="Cnew"}`},
	})
	runCases(t, mk(tmpl("x", "{{ div 1 0 }}"), tmpl("y", "ok")), []stageCase{
		{name: "error skips the label", stream: lbls("x", "old"), line: "l",
			labels: `{__error__="TemplateFormatErr", __error_details__="template: label:1:3: executing \"label\" at <div 1 0>: error calling div: division by zero", x="old", y="ok"}`},
	})
	runCases(t, mk(rename("a", "a")), []stageCase{
		{name: "rename to itself", stream: lbls("a", "1"), line: "l", labels: `{a="1"}`},
	})
	for _, bad := range [][]logql.LabelFormatItem{
		nil,
		{rename("a", "b"), tmpl("a", "x")},
		{tmpl("a", "{{")},
		{rename("a-b", "c")},
		{tmpl("__error__", "x")},
	} {
		if _, err := newLabelFormatStage(&logql.LabelFormat{Items: bad}); err == nil {
			t.Errorf("label_format %v compiled", bad)
		}
	}
}

func TestLabelFormatBuffers(t *testing.T) {
	// Values a template writes live in the stage's arena for the row:
	// they must not change when later items or rows write more.
	st := must(t)(newLabelFormatStage(&logql.LabelFormat{Items: []logql.LabelFormatItem{
		{Dst: "a", Template: "{{ __line__ }}"},
		{Dst: "b", Template: `{{ repeat 100 "b" }}`},
	}}))
	lb := &Labels{}
	for i, line := range []string{"first", "second"} {
		lb.Reset(nil)
		st.process(0, []byte(line), lb)
		if got := lb.Get("a"); got != line {
			t.Errorf("row %d: a = %q", i, got)
		}
		if got := lb.Get("b"); got != strings.Repeat("b", 100) {
			t.Errorf("row %d: b = %q", i, got)
		}
	}
}

// TestTemplateFuncs runs each template function through line_format.
func TestTemplateFuncs(t *testing.T) {
	ts := time.Unix(0, testTS)
	stream := lbls("path", "/a b/c", "n", "7", "f", "2.5", "s", "  hi  ", "e", "", "size", "1.5KiB", "d", "1m30s", "q", `[{"query":"a"},{"query":"b"}]`, "from", "1679577215")
	for _, c := range []struct {
		tmpl string
		want string
	}{
		{`{{ .path | replace " " "_" | trunc 5 | upper }}`, "/A_B/"},
		{`{{ if and (contains "he" "hello") (contains "llo" "hello") }}yes{{ end }}`, "yes"},
		{`{{ lower "HeLLo" }} {{ upper "x" }} {{ title "hello wide-world" }}`, "hello X Hello Wide-World"},
		{`[{{ trim .s }}] [{{ trimSpace .s }}] [{{ trimAll "$" "$5.00$" }}] [{{ trimPrefix "-" "-hello" }}] [{{ trimSuffix "-" "hello-" }}]`, "[hi] [hi] [5.00] [hello] [hello]"},
		{`{{ substr 0 5 "hello world" }}|{{ substr 6 11 "hello world" }}|{{ substr -1 2 "abc" }}|{{ substr 1 -1 "abc" }}|{{ substr 5 9 "abc" }}|{{ substr 2 1 "abc" }}`, "hello|world|ab|bc||"},
		{`{{ trunc 5 "hello world" }}|{{ trunc -5 "hello world" }}|{{ trunc 50 "x" }}|{{ trunc -50 "x" }}`, "hello|world|x|x"},
		{`{{ hasPrefix "he" "hello" }} {{ hasSuffix "lo" "hello" }} {{ hasSuffix "x" "hello" }}`, "true true false"},
		{`{{ indent 2 "a\nb" }}|{{ nindent 1 "a" }}|{{ indent -1 "a" }}`, "  a\n  b|\n a|a"},
		{`{{ repeat 3 "hello" }}|{{ repeat 0 "x" }}|{{ repeat -1 "x" }}`, "hellohellohello||"},
		{`{{ default "-" "" }} {{ default "-" "foo" }} {{ .e | default "none" }} {{ .missing | default "m" }} {{ default "z" 0 }}`, "- foo none m z"},
		{`[{{ alignLeft 5 "hello world" }}] [{{ alignLeft 5 "hi" }}] [{{ alignRight 5 "hello world" }}] [{{ alignRight 5 "hi" }}] [{{ alignLeft 2 "日本語" }}]`, "[hello] [hi   ] [world] [   hi] [日本]"},
		{`{{ urlencode "a b&c" }} {{ urldecode "a+b%26c" }}`, "a+b%26c a b&c"},
		{`{{ b64enc "hello" }} {{ b64dec "aGVsbG8=" }}`, "aGVsbG8= hello"},
		{`{{ range $q := fromJson .q }}{{ $q.query }};{{ end }}`, "a;b;"},
		{`{{ fromJson "{\"foo\": 55}" }}|{{ fromJson "nope" }}`, "map[foo:55]|"},
		{`{{ count "a|b" "abab" }} {{ count "o" "foo" }} {{ __line__ | count "l" }}`, "4 2 2"},
		{`{{ regexReplaceAll "(a*)bc" "aabcxbc" "${1}X" }} {{ regexReplaceAllLiteral "(ts=)" "ts=1" "timestamp=" }} {{ regexReplaceAllLiteral "a" "aa" "$1" }}`, "aaXxX timestamp=1 $1$1"},
		{`{{ .size | bytes }} {{ bytes "20MB" }} {{ .d | duration }} {{ duration_seconds "1.5s" }}`, "1536 2e+07 90 1.5"},
		{`{{ "3" | int }} {{ "3.9" | int }} {{ "x" | int }} {{ "3.5" | float64 }} {{ int64 "12" }}`, "3 3 0 3.5 12"},
		{`{{ add 3 2 5 }} {{ add .n "1" }} {{ sub 5 2 }} {{ mul 5 2 3 }} {{ div 10 2 }} {{ div .n 2 }} {{ mod 10 3 }}`, "10 8 3 30 5 3 1"},
		{`{{ addf 3.5 2 5 }} {{ addf 0.1 0.2 }} {{ subf 5.5 2 1.5 }} {{ mulf 5.5 2 2.5 }} {{ divf 10 2 4 }} {{ mulf .f 2 }}`, "10.5 0.3 2 27.5 1.25 5"},
		{`{{ max 1 2 3 }} {{ min 1 2 3 }} {{ maxf 1 2.5 3 }} {{ minf 1.5 2.5 3 }} {{ max .n 3 }}`, "3 1 3 1.5 7"},
		{`{{ ceil 123.001 }} {{ floor 123.9999 }} {{ round 123.555555 3 }} {{ round 123.88571428571 5 .2 }} {{ round 2.5 0 }}`, "124 123 123.556 123.88572 3"},
		{`{{ printf "%-5.5s|%03d" "abcdefg" 7 }}`, "abcde|007"},
		{`{{ toDateInZone "2006-01-02" "UTC" "2021-11-02" | unixEpoch }} {{ toDateInZone "2006-01-02" "Nowhere/Zone" "2021-11-02" | unixEpoch }}`, "1635811200 1635811200"},
		{`{{ toDateInZone "2006-01-02" "Europe/Paris" "2021-11-02" | unixEpoch }}`, "1635807600"},
		{`{{ __timestamp__ | unixEpoch }} {{ __timestamp__ | unixEpochMillis }} {{ __timestamp__ | unixEpochNanos }}`, "1700000000 1700000000123 1700000000123456789"},
		{`{{ __timestamp__ | date "2006-01-02T15:04:05.000Z07:00" }}`, ts.Local().Format("2006-01-02T15:04:05.000Z07:00")},
		{`{{ date "2006-01-02" (unixToTime .from) }}`, time.Unix(1679577215, 0).Local().Format("2006-01-02")},
		{`{{ unixToTime "19443" | unixEpoch }} {{ unixToTime "1679577215000" | unixEpoch }} {{ unixToTime "1679577215000000" | unixEpoch }} {{ unixToTime "1679577215000000000" | unixEpoch }}`,
			"1679875200 1679577215 1679577215 1679577215"},
		{`{{ toDate "2006-01-02" "2021-11-02" | unixEpoch }}`, func() string {
			d, _ := time.ParseInLocation("2006-01-02", "2021-11-02", time.Local)
			return strconv.FormatInt(d.Unix(), 10)
		}()},
		{`{{ if lt (unixEpoch now) "2000000000" }}ok{{ end }}`, "ok"},
		{`{{ date "2006" 0 }}`, time.Unix(0, 0).Local().Format("2006")},
	} {
		t.Run(c.tmpl, func(t *testing.T) {
			st := must(t)(newLineFormatStage(&logql.LineFormat{Template: c.tmpl}))
			out, ls, _ := runRow(st, stream, "hello")
			if e, ok := ls.Get(ErrorLabel); ok {
				d, _ := ls.Get(ErrorDetailsLabel)
				t.Fatalf("%s: %s", e, d)
			}
			if out != c.want {
				t.Errorf("got %q, want %q", out, c.want)
			}
		})
	}
	// Functions that fail set the error and keep the line.
	for _, tmpl := range []string{
		`{{ div 1 0 }}`, `{{ mod 1 0 }}`, `{{ divf 1 0 }}`,
		`{{ b64dec "!!" }}`, `{{ urldecode "%zz" }}`,
		`{{ count "(" "x" }}`, `{{ regexReplaceAll "(" "x" "y" }}`, `{{ regexReplaceAllLiteral "[" "x" "y" }}`,
		`{{ bytes "x" }}`, `{{ duration "5" }}`, `{{ unixToTime "123" }}`, `{{ unixToTime "abc" }}`,
		`{{ repeat 100000000 "xx" }}`,
	} {
		st := must(t)(newLineFormatStage(&logql.LineFormat{Template: tmpl}))
		out, ls, ok := runRow(st, nil, "orig")
		if e, _ := ls.Get(ErrorLabel); !ok || out != "orig" || e != errTemplate {
			t.Errorf("%s: line %q, labels %s", tmpl, out, ls)
		}
	}
}

func TestLineFormatOutputLimit(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	st := must(t)(newLineFormatStage(&logql.LineFormat{Template: `{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}{{.a}}`}))
	out, ls, _ := runRow(st, lbls("a", big), "orig")
	if e, _ := ls.Get(ErrorLabel); out != "orig" || e != errTemplate {
		t.Errorf("17 MiB of output: line of %d bytes, error %q", len(out), e)
	}
}

func BenchmarkLineFormat(b *testing.B) {
	st, err := newLineFormatStage(&logql.LineFormat{Template: `{{.method}} {{.path}} {{.status}} {{ .duration | upper }}`})
	if err != nil {
		b.Fatal(err)
	}
	lb := &Labels{}
	stream := lbls("app", "api", "method", "GET", "path", "/api/v1/users", "status", "200", "duration", "12ms")
	line := []byte(realisticLogfmt)
	b.ReportAllocs()
	for b.Loop() {
		lb.Reset(stream)
		st.process(0, line, lb)
	}
}

// TestPlainTemplates: which templates are appended without
// text/template: label references, perhaps through functions of one
// string to a string, and nothing else.
func TestPlainTemplates(t *testing.T) {
	for src, want := range map[string]bool{
		"{{.log}}":                       true,
		"x {{- .log | ToUpper }} y":      true,
		"{{ToLower .log}}":               true,
		"{{upper .log | trim | b64enc}}": true,
		"{{.log | b64dec}}":              false, // it may fail
		"{{.log | printf \"%s\"}}":       false,
		"{{ToUpper .log .level}}":        false,
		"{{ToUpper (lower .log)}}":       false,
		"{{.log | replace \"a\" \"b\"}}": false,
		"{{.log.x}}":                     false,
		"{{ if .log }}x{{ end }}":        false,
		"{{ $x := .log }}{{ $x }}":       false,
	} {
		tmpl, err := parseTemplate("line", src, &templateCtx{})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if _, got := plainOf(tmpl); got != want {
			t.Errorf("%s: plain %v, want %v", src, got, want)
		}
	}
}

// FuzzPlainLineFormat: a line_format template of text and label
// references alone, appended without text/template, gives what
// text/template gives, for any label values and any text around them.
func FuzzPlainLineFormat(f *testing.F) {
	f.Add("{{.log}}", "a \"b\" c", "", true)
	f.Add("x={{ .log }} y={{.level}}!", "v\x00w", "error", false)
	f.Add("{{- .log -}}  {{.missing}}", "\xff\xfe", "", true)
	f.Add("plain text only", "", "", false)
	f.Add("{{.log | ToUpper}}", "naïve ǅ ß", "", false)
	f.Add("{{lower .log}} {{ .level | trim | title }}", "A\tB", "  warn  ", true)
	f.Add("{{ToUpper .log | urlencode | b64enc}}={{.missing | upper}}", "a b&c", "", false)
	f.Fuzz(func(t *testing.T, src, log, level string, withLevel bool) {
		tmpl, err := parseTemplate("line", src, &templateCtx{})
		if err != nil {
			return
		}
		if _, ok := plainOf(tmpl); !ok {
			return
		}
		plain, err := newLineFormatStage(&logql.LineFormat{Template: src})
		if err != nil {
			t.Fatal(err)
		}
		full, err := newLineFormatStage(&logql.LineFormat{Template: src})
		if err != nil {
			t.Fatal(err)
		}
		if !plain.(*lineFormatStage).plainOK {
			t.Fatalf("%q: plain once, not plain the second time", src)
		}
		full.(*lineFormatStage).plainOK = false
		stream := record.Labels{{Name: "app", Value: "api"}, {Name: "log", Value: log}}
		if withLevel {
			stream = append(stream, record.Label{Name: "level", Value: level})
		}
		gotLine, gotLabels, _ := runRow(plain, stream, "the line")
		wantLine, wantLabels, _ := runRow(full, stream, "the line")
		if gotLine != wantLine || gotLabels.String() != wantLabels.String() {
			t.Fatalf("%q:\n got %q %s\nwant %q %s", src, gotLine, gotLabels, wantLine, wantLabels)
		}
	})
}
