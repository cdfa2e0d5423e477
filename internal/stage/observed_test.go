package stage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// TestObserving: parsers compiled with the labels a query observes set
// those, the first value winning and stream labels suffixed as without
// hints, and errors as before; the names come from the pipeline's
// filters, drop and keep; a line_format the labels its template names.
func TestObserving(t *testing.T) {
	stages := func(q string) []logql.Stage {
		expr, err := logql.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		return expr.(*logql.LogExpr).Pipeline
	}
	for _, c := range []struct{ q, line, want string }{
		{`{app="api"} | json`, `{"level":"error","app":"x","trace":"abc","http":{"status":500}}`, `{app="api", app_extracted="x", http_status="500", level="error"}`},
		{`{app="api"} | json | logfmt`, `{"level":"error","app":"x","trace":"abc"}`, `{app="api", app_extracted="x", level="error"}`},
		{`{app="api"} | logfmt`, `level=info level=error trace=abc http_status=404`, `{app="api", http_status="404", level="info"}`},
		{`{app="api"} | json`, `{"level":"error","trace":`, `{__error__="JSONParserErr", __error_details__="syntax error at offset 25: unexpected end of input, expected a value", app="api", level="error"}`},
		{`{app="api"} | unpack`, `{"level":"warn","_entry":"the line","trace":"abc"}`, `{app="api", level="warn"}`},
	} {
		o := ObservedBy(stages(c.q), []string{"level", "app_extracted", "http_status"})
		p, err := CompileObserving(stages(c.q), o)
		if err != nil {
			t.Fatal(err)
		}
		var lb Labels
		lb.Reset(lbls("app", "api"))
		p.Process(0, []byte(c.line), &lb)
		if got := lb.Copy().String(); got != c.want {
			t.Errorf("%s on %s:\n got %s\nwant %s", c.q, c.line, got, c.want)
		}
	}
	if o := ObservedBy(stages(`{a="b"} | json | line_format "{{.}}"`), nil); o != nil {
		t.Errorf("line_format of the whole data: observed %v, want every label", o.Names())
	}
	if o := ObservedBy(stages(`{a="b"} | json | line_format "{{.x}}"`), nil); o == nil || !slices.Equal(o.Names(), []string{"__error__", "__error_details__", "x"}) {
		t.Errorf("line_format of x: observed %v, want x and the error labels", o.Names())
	}
	// A dropped label is not observed; label_format's sources are.
	o := ObservedBy(stages(`{a="b"} | json | x > 1 or y=~"z" | drop d | keep k="v" | label_format l=m, n="{{.p}}-{{ .q | upper }}"`), []string{"g"})
	if got, want := o.Names(), []string{"__error__", "__error_details__", "g", "k", "m", "p", "q", "x", "y"}; !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
	if o := ObservedBy(stages(`{a="b"} | json | label_format n="{{ range . }}{{ end }}"`), []string{"g"}); o != nil {
		t.Errorf("label_format of the whole data: observed %v, want every label", o.Names())
	}
	for q, want := range map[string]bool{
		`{a="b"} | label_format l=m, n="{{.p}}-{{ .q | upper }}"`: true,
		`{a="b"} | label_format n="{{ __line__ }}"`:               false,
		`{a="b"} | label_format l=m, n="{{ __timestamp__ }}"`:     false,
		`{a="b"} | label_format n="{{ . }}"`:                      false,
		`{a="b"} | label_format n="{{ now | date \"2006\" }}"`:    false,
	} {
		if got := FormatsLabelsOnly(stages(q)[0].(*logql.LabelFormat)); got != want {
			t.Errorf("%s: FormatsLabelsOnly %v, want %v", q, got, want)
		}
	}
	for src, want := range map[string]bool{
		`{{.msg}} at {{.level}}`: true,
		`{{.msg | ToUpper}}`:     true,
		`{{ if eq .level "error" }}{{.msg}}{{ else }}-{{ end }}`: true,
		`{{ __line__ }}`:                 false,
		`{{ .msg }} {{ __timestamp__ }}`: false,
		`{{ now | unixEpoch }}`:          false,
		`{{ range . }}x{{ end }}`:        false,
		`{{ $x := .msg }}{{ $x }}`:       false,
	} {
		if got := FromLabels(src); got != want {
			t.Errorf("%s: FromLabels %v, want %v", src, got, want)
		}
	}
}

// FuzzJSONObserving: for any line, json with hints sets, of the labels
// json sets, exactly those observed, errors included: the objects it
// reads over fail where the walk would, and so does the rest of a line
// read once every label observed is set. pick's top bit observes only
// names json set (otherwise one it did not, too).
func FuzzJSONObserving(f *testing.F) {
	for _, s := range []string{jsonDocLine, realisticJSON, `{"a":{"b":"\u12"},"c":1}`, `{"a":{"b":[1,{"c":2}]},"d":"x"}`, `{"a":{"b":{"c":null}},"a_b":2}`, `{"a":{"b":`, `{"x":{"y\"":"\q"}}`} {
		f.Add(s, uint8(5))
	}
	for _, s := range []string{`{"a":1,"b":"\q"}`, `{"a":1,"b":{"c":`, `{"a":{"x":1,"y":[}},"b":2}`, `{"a":1,"a":2,"b":[1,2,}`, `{"a":"x"}  {"b":1}`} {
		for _, pick := range []uint8{0x81, 0x82, 0x84, 0x86} {
			f.Add(s, pick)
		}
	}
	full, err := newJSONStage(&logql.JSONParser{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string, pick uint8) {
		_, all, _ := runRow(full, nil, line)
		o := observedOf(all, pick)
		hinted := must(t)(newJSONStage(&logql.JSONParser{})).(*jsonStage)
		hinted.observed = o
		_, got, _ := runRow(hinted, nil, line)
		var want record.Labels
		for _, l := range all {
			if o.observes(l.Name) {
				want = append(want, l)
			}
		}
		if got.String() != want.String() {
			t.Fatalf("%q observing %v:\n got %s\nwant %s", line, o.Names(), got, want)
		}
	})
}

// observedOf observes the names of some of labels, picked by the bits
// of pick (label i by bit i%8), and one none sets unless pick's top bit
// is set.
func observedOf(labels record.Labels, pick uint8) *Observed {
	names := []string{"nope_x"}
	if pick&0x80 != 0 {
		names = nil
	}
	for i, l := range labels {
		if pick>>(i%8)&1 == 1 {
			names = append(names, l.Name)
		}
	}
	return ObservedBy(nil, names)
}

// FuzzUnpackObserving: unpack observing some labels sets those of them
// the full stage sets, the same line and the same error. The stream has
// a label named "a", which a field "a" names a_extracted.
func FuzzUnpackObserving(f *testing.F) {
	for _, s := range []string{`{"_entry":"x","a":"1","b":"\u0041","c":2}`, `{"a":"1","b":"2"}`, `{"_entry":"x","b":"\q"}`,
		`{"_entry":"x","b":"\u12"}`, `{"_entry":"x","b":"y`, `{"_entry":"a\"b","b":"y","b":"z","1 x":"w"}`, `{"b":{"c":"d"},"_entry":"e"}`, `x`} {
		f.Add(s, uint8(5))
		f.Add(s, uint8(0x82))
	}
	stream := record.Labels{{Name: "a", Value: "s"}}
	f.Fuzz(func(t *testing.T, line string, pick uint8) {
		full := &unpackStage{}
		wantLine, all, _ := runRow(full, stream, line)
		o := observedOf(all, pick)
		gotLine, got, _ := runRow(&unpackStage{observed: o}, stream, line)
		var want record.Labels
		for _, l := range all {
			if o.observes(l.Name) || l.Name == "a" || l.Name == ErrorLabel || l.Name == ErrorDetailsLabel {
				want = append(want, l)
			}
		}
		if got.String() != want.String() || gotLine != wantLine {
			t.Fatalf("%q observing %v:\n got %s %q\nwant %s %q", line, o.Names(), got, gotLine, want, wantLine)
		}
	})
}

// BenchmarkJSONObserving: json on a realistic line setting every label,
// and observing one nested label (the objects without it read over).
func BenchmarkJSONObserving(b *testing.B) {
	for _, names := range [][]string{nil, {"user_vip"}, {"level"}} {
		b.Run(fmt.Sprint(names), func(b *testing.B) {
			st, err := newJSONStage(&logql.JSONParser{})
			if err != nil {
				b.Fatal(err)
			}
			if names != nil {
				st.(*jsonStage).observed = ObservedBy(nil, names)
			}
			line := []byte(realisticJSON)
			var lb Labels
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				lb.Reset(nil)
				st.process(0, line, &lb)
			}
		})
	}
}

// TestTemplateLabels: the labels a line_format template reads by name,
// or none known when it may read the whole data.
func TestTemplateLabels(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string // nil: not known
	}{
		{`{{.log}}`, []string{"log"}},
		{`{{.a}} and {{ .b | upper }} {{ if eq .c "x" }}{{.d}}{{ else }}{{ __line__ }}{{end}}`, []string{"a", "b", "c", "d"}},
		{`plain text`, []string{}},
		{`{{ . }}`, nil},
		{`{{ range $k, $v := . }}{{$k}}{{end}}`, nil},
		{`{{ with .a }}{{.}}{{end}}`, nil},
		{`{{ $x := .a }}{{$x}}`, nil},
		{`{{ index . "a" }}`, nil},
		{`{{ toJson . }}`, nil},
	} {
		got, ok := templateLabels(tc.src)
		if tc.want == nil {
			if ok {
				t.Errorf("%s: %q, want not known", tc.src, got)
			}
			continue
		}
		if !ok || !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: %q %v, want %q", tc.src, got, ok, tc.want)
		}
	}
}

// FuzzPatternRegexpObserving: for any line, pattern and regexp with
// hints set, of the labels they set without hints, exactly those
// observed (a stream label's name suffixed), though pattern stops at the
// last capture observed and regexp does not run when none is.
func FuzzPatternRegexpObserving(f *testing.F) {
	for _, s := range []string{
		`10.0.0.1 - - [15/Jan/2026:08:00:00 +0000] "GET /api/v1/orders HTTP/1.1" 500 1234 "-" "curl/8.5"`,
		`10.0.0.1 - - [x] "GET /a b" 200`, `GET /x 500 ERROR failed`, `level=info msg=x`, ``, `a b c d e`,
	} {
		f.Add(s, uint8(5))
	}
	parse := func(t *testing.T, q string) logql.Stage {
		expr, err := logql.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		return expr.(*logql.LogExpr).Pipeline[0]
	}
	stream := lbls("app", "api")
	f.Fuzz(func(t *testing.T, line string, pick uint8) {
		for _, q := range []string{
			`{app="api"} | pattern "<ip> - - [<_>] \"<method> <path> <_>\" <status> <size> <_>"`,
			`{app="api"} | pattern "<app> <path> <status> <_>"`,
			`{app="api"} | pattern "[<a>]<b>"`,
			`{app="api"} | regexp "(?P<method>[A-Z]+) (?P<path>\\S+)(?: (?P<status>\\d+))?"`,
			`{app="api"} | regexp "^(?P<app>\\w+) (?P<x>.*)$"`,
		} {
			full, err := CompileObserving([]logql.Stage{parse(t, q)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var lb Labels
			lb.Reset(stream)
			full.Process(0, []byte(line), &lb)
			all := lb.Copy()
			// Observe some of the labels set, and one never set.
			names := []string{"nope"}
			for i, l := range all {
				if pick>>(i%8)&1 == 1 {
					names = append(names, l.Name)
				}
			}
			o := ObservedBy(nil, names)
			hinted, err := CompileObserving([]logql.Stage{parse(t, q)}, o)
			if err != nil {
				t.Fatal(err)
			}
			lb.Reset(stream)
			hinted.Process(0, []byte(line), &lb)
			var want record.Labels
			for _, l := range all {
				if l.Name == "app" || o.observes(l.Name) {
					want = append(want, l)
				}
			}
			if got := lb.Copy(); got.String() != want.String() {
				t.Fatalf("%s on %q observing %v:\n got %s\nwant %s", q, line, o.Names(), got, want)
			}
		}
	})
}

// FuzzJSONDeferredErrors checks a pipeline whose json stage leaves the
// read of its line's errors until after the label filters that follow
// it (Pipeline.deferJSONErrors) against the same pipeline reading them
// where json runs: the same rows kept, with the same labels and lines.
func FuzzJSONDeferredErrors(f *testing.F) {
	for _, s := range []string{jsonDocLine, realisticJSON, `{"level":"error","msg":"x","b":"\q"}`, `{"level":"info","b":{"c":`, `{"a":{"level":"error"},"b":[}`, `{"level":"error"} x`, `{"ts":1,"level":"error","n":01}`, `not json`} {
		for _, pick := range []uint8{0x00, 0x40, 0x41, 0x60, 0xc0, 0x90} {
			f.Add(s, pick, "error")
		}
	}
	f.Fuzz(func(t *testing.T, line string, pick uint8, val string) {
		full, err := newJSONStage(&logql.JSONParser{})
		if err != nil {
			t.Fatal(err)
		}
		_, parsed, _ := runRow(full, nil, line)
		var all record.Labels
		for _, l := range parsed {
			if l.Name != ErrorLabel && l.Name != ErrorDetailsLabel {
				all = append(all, l)
			}
		}
		name, other := "level", "nope_x"
		if len(all) > 0 {
			l := all[int(pick&0x0f)%len(all)]
			name = l.Name
			if pick&0x40 != 0 {
				val = l.Value
			}
			other = all[int(pick>>4)%len(all)].Name
		}
		op := logql.MatchEqual
		if pick&0x20 != 0 {
			op = logql.MatchNotEqual
		}
		stages := []logql.Stage{
			&logql.JSONParser{},
			&logql.LabelFilterStage{Filter: &logql.LabelFilterString{Matcher: &logql.Matcher{Name: name, Type: op, Value: val}}},
		}
		if pick&0x80 != 0 {
			stages = append(stages,
				&logql.LabelFilterStage{Filter: &logql.LabelFilterString{Matcher: &logql.Matcher{Name: other, Type: logql.MatchNotEqual, Value: "zz"}}},
				&logql.LabelFilterStage{Filter: &logql.LabelFilterString{Matcher: &logql.Matcher{Name: ErrorLabel, Type: logql.MatchEqual, Value: ""}}})
		}
		o := ObservedBy(stages, nil)
		deferred, err := compileObserving(stages, o, true)
		if err != nil {
			t.Fatal(err)
		}
		eager, err := compileObserving(stages, o, false)
		if err != nil {
			t.Fatal(err)
		}
		run := func(p *Pipeline) string {
			// Twice, the first row a different line, to catch a read
			// left from one row to the next.
			lb := &Labels{}
			for _, l := range []string{`{"level":"error","zz":`, line} {
				lb.Reset(nil)
				out, ok := p.Process(testTS, []byte(l), lb)
				if l == line && !ok {
					return "dropped" // its labels are no one's
				}
				if l == line {
					return fmt.Sprintf("%q %s", out, lb.Copy())
				}
			}
			return ""
		}
		if got, want := run(deferred), run(eager); got != want {
			t.Fatalf("%q through %v:\n got %s\nwant %s", line, stages, got, want)
		}
	})
}

// FuzzPrefixRead checks PrefixRead: a row it says a prefix of its value
// drops for sure is dropped by the pipeline with the whole value, and
// one it says the prefix keeps for sure is kept, with the same labels
// but the value's.

// withoutLabel returns ls without the label of the name.
func withoutLabel(ls record.Labels, name string) record.Labels {
	return slices.DeleteFunc(ls, func(l record.Label) bool { return l.Name == name })
}

func FuzzPrefixRead(f *testing.F) {
	for _, s := range []string{realisticJSON, `{"ts":1768464000001,"level":"info","msg":"payment declined"}`, `{"level":"error","msg":"x"}`, `2026-01-15 INFO text`, `{"a":12345,"level":"info"}`, `{"level":"err`, `{"a":{"level":"x"},"level":"y"}`} {
		for _, pick := range []uint8{0x00, 0x40, 0x41, 0x60, 0xc0, 0x90, 0x13} {
			f.Add(s, pick, uint8(20), "error")
		}
	}
	f.Fuzz(func(t *testing.T, value string, pick, cut uint8, want string) {
		n := min(int(cut), len(value))
		name := "level"
		if pick&0x10 != 0 {
			name = "a"
		}
		op := logql.MatchEqual
		if pick&0x20 != 0 {
			op = logql.MatchNotEqual
		}
		parser := &logql.JSONParser{}
		if pick&0x40 != 0 {
			parser.Params = []logql.LabelExtraction{{Name: name}}
		}
		stages := []logql.Stage{
			&logql.LineFormat{Template: "{{.log}}"},
			parser,
			&logql.LabelFilterStage{Filter: &logql.LabelFilterString{Matcher: &logql.Matcher{Name: name, Type: op, Value: want}}},
		}
		if pick&0x80 != 0 {
			stages = append(stages, &logql.LabelFilterStage{Filter: &logql.LabelFilterString{Matcher: &logql.Matcher{Name: ErrorLabel, Type: logql.MatchEqual, Value: ""}}})
		}
		o := ObservedBy(stages, nil)
		p, err := CompileObserving(stages, o)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := p.PrefixRead()
		if !ok {
			t.Fatalf("%v: no PrefixRead", stages)
		}
		lb := &Labels{}
		lb.Reset(record.Labels{{Name: "log", Value: value[:n]}})
		dropped, keptCut := r.Process(testTS, lb)
		if !dropped && !keptCut {
			return
		}
		cutLabels := withoutLabel(lb.Copy(), "log")
		lb.Reset(record.Labels{{Name: "log", Value: value}})
		_, kept := p.Process(testTS, nil, lb)
		switch {
		case dropped && kept:
			t.Fatalf("%q cut at %d through %v: dropped for sure, but the whole value is kept with %s", value, n, stages, lb.Copy())
		case keptCut && !kept:
			t.Fatalf("%q cut at %d through %v: kept for sure with %s, but the whole value is dropped", value, n, stages, cutLabels)
		case keptCut && !slices.Equal(cutLabels, withoutLabel(lb.Copy(), "log")):
			t.Fatalf("%q cut at %d through %v: kept for sure with %s, but the whole value gives %s", value, n, stages, cutLabels, lb.Copy())
		}
	})
}
