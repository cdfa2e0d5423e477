package stage

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// filterRow is a row for label filter tests: labels in, kept or not,
// labels out ("" when unchanged).
type filterRow struct {
	in   record.Labels
	keep bool
	out  string
}

func runFilter(t *testing.T, f logql.LabelFilter, rows []filterRow) {
	t.Helper()
	st := must(t)(newLabelFilterStage(f))
	for _, r := range rows {
		_, ls, ok := runRow(st, r.in, "line")
		if ok != r.keep {
			t.Errorf("%s on %s: kept = %v, want %v", f, r.in, ok, r.keep)
			continue
		}
		want := r.out
		if want == "" {
			want = r.in.String()
		}
		if ok && ls.String() != want {
			t.Errorf("%s on %s: labels %s, want %s", f, r.in, ls, want)
		}
	}
}

func TestLabelFilterString(t *testing.T) {
	runFilter(t, &logql.LabelFilterString{Matcher: matcher(t, `method="GET"`)}, []filterRow{
		{in: lbls("method", "GET"), keep: true},
		{in: lbls("method", "POST")},
		{in: nil},
	})
	runFilter(t, &logql.LabelFilterString{Matcher: matcher(t, `method!~"2.."`)}, []filterRow{
		{in: lbls("method", "200")},
		{in: lbls("method", "2000"), keep: true},
		{in: nil, keep: true},
	})
	// __error__ is a plain label for string filters.
	runFilter(t, &logql.LabelFilterString{Matcher: matcher(t, `__error__=""`)}, []filterRow{
		{in: lbls("a", "b"), keep: true},
		{in: lbls("__error__", "JSONParserErr")},
	})
	runFilter(t, &logql.LabelFilterString{Matcher: matcher(t, `__error__!="LabelFilterErr"`)}, []filterRow{
		{in: lbls("__error__", "JSONParserErr"), keep: true},
		{in: lbls("__error__", "LabelFilterErr")},
	})
}

func TestLabelFilterNumber(t *testing.T) {
	num := func(name string, op logql.CmpOp, v float64) logql.LabelFilter {
		return &logql.LabelFilterNumber{Name: name, Op: op, Value: v}
	}
	for _, c := range []struct {
		op    logql.CmpOp
		v     string
		match bool
	}{
		{logql.CmpEq, "500", true}, {logql.CmpEq, "500.0", true}, {logql.CmpEq, "5e2", true}, {logql.CmpEq, "501", false},
		{logql.CmpNe, "501", true}, {logql.CmpNe, "500", false},
		{logql.CmpGt, "500.5", true}, {logql.CmpGt, "500", false},
		{logql.CmpGe, "500", true}, {logql.CmpGe, "-1", false},
		{logql.CmpLt, "499.99", true}, {logql.CmpLt, "500", false},
		{logql.CmpLe, "500", true}, {logql.CmpLe, "+Inf", false},
	} {
		runFilter(t, num("status", c.op, 500), []filterRow{{in: lbls("status", c.v), keep: c.match}})
	}
	runFilter(t, num("status", logql.CmpGe, 500), []filterRow{
		// A row without the label is dropped.
		{in: lbls("other", "1")},
		// A value that is not a number keeps the row and sets an error.
		{in: lbls("status", "abc"), keep: true,
			out: `{__error__="LabelFilterErr", __error_details__="strconv.ParseFloat: parsing \"abc\": invalid syntax", status="abc"}`},
		{in: lbls("status", ""), keep: true,
			out: `{__error__="LabelFilterErr", __error_details__="strconv.ParseFloat: parsing \"\": invalid syntax", status=""}`},
		// A row that already has an error is compared all the same (Loki
		// 3; its documentation still says such rows pass), and keeps its
		// first error.
		{in: lbls("__error__", "JSONParserErr")},
		{in: lbls("__error__", "JSONParserErr", "status", "200")},
		{in: lbls("__error__", "JSONParserErr", "status", "503"), keep: true},
		{in: lbls("__error__", "JSONParserErr", "status", "x"), keep: true},
	})
	runFilter(t, num("v", logql.CmpNe, math.NaN()), []filterRow{{in: lbls("v", "NaN"), keep: true}})
}

func TestLabelFilterDuration(t *testing.T) {
	f := &logql.LabelFilterDuration{Name: "duration", Op: logql.CmpGt, Value: time.Second}
	runFilter(t, f, []filterRow{
		{in: lbls("duration", "1.5s"), keep: true},
		{in: lbls("duration", "1h30m"), keep: true},
		{in: lbls("duration", "999ms")},
		{in: lbls("duration", "1s")},
		{in: lbls("duration", "0")},
		{in: lbls("duration", "2000µs")},
		{in: lbls("duration", "5"), keep: true,
			out: `{__error__="LabelFilterErr", __error_details__="time: missing unit in duration \"5\"", duration="5"}`},
		{in: nil},
	})
	runFilter(t, &logql.LabelFilterDuration{Name: "d", Op: logql.CmpEq, Value: 90 * time.Minute}, []filterRow{
		{in: lbls("d", "1.5h"), keep: true},
		{in: lbls("d", "90m"), keep: true},
		{in: lbls("d", "5400s"), keep: true},
		{in: lbls("d", "1h"), keep: false},
	})
}

func TestLabelFilterBytes(t *testing.T) {
	f := &logql.LabelFilterBytes{Name: "size", Op: logql.CmpGe, Value: 20_000}
	runFilter(t, f, []filterRow{
		{in: lbls("size", "20KB"), keep: true},
		{in: lbls("size", "20kb"), keep: true},
		{in: lbls("size", "19.6KiB"), keep: true},
		{in: lbls("size", "19KiB")},
		{in: lbls("size", "19999")},
		{in: lbls("size", "1 MiB"), keep: true},
		{in: lbls("size", "lots"), keep: true,
			out: `{__error__="LabelFilterErr", __error_details__="invalid byte size \"lots\"", size="lots"}`},
	})
}

func TestLabelFilterIP(t *testing.T) {
	runFilter(t, &logql.LabelFilterIP{Name: "addr", Value: "192.168.4.5/16"}, []filterRow{
		{in: lbls("addr", "192.168.1.1"), keep: true},
		{in: lbls("addr", "10.0.0.1")},
		{in: lbls("addr", "not an ip")},
		{in: nil},
		{in: lbls("__error__", "x"), keep: true},
	})
	runFilter(t, &logql.LabelFilterIP{Name: "addr", Negate: true, Value: "192.168.4.2"}, []filterRow{
		{in: lbls("addr", "192.168.4.2")},
		{in: lbls("addr", "192.168.4.3"), keep: true},
		{in: nil},
	})
	if _, err := newLabelFilterStage(&logql.LabelFilterIP{Name: "a", Value: "nope"}); err == nil {
		t.Error("bad ip compiled")
	}
}

func TestLabelFilterBinary(t *testing.T) {
	dur := &logql.LabelFilterDuration{Name: "duration", Op: logql.CmpGe, Value: 20 * time.Millisecond}
	get := &logql.LabelFilterString{Matcher: matcher(t, `method="GET"`)}
	small := &logql.LabelFilterBytes{Name: "size", Op: logql.CmpLe, Value: 20_000}
	// duration >= 20ms or method="GET" and size <= 20KB, left to right.
	leftToRight := &logql.LabelFilterBinary{And: true, Left: &logql.LabelFilterBinary{Left: dur, Right: get}, Right: small}
	runFilter(t, leftToRight, []filterRow{
		{in: lbls("duration", "30ms", "size", "1KB"), keep: true},
		{in: lbls("duration", "30ms", "size", "30KB")},
		{in: lbls("duration", "1ms", "method", "GET", "size", "1KB"), keep: true},
		{in: lbls("duration", "1ms", "method", "POST", "size", "1KB")},
	})
	// duration >= 20ms or (method="GET" and size <= 20KB)
	grouped := &logql.LabelFilterBinary{Left: dur, Right: &logql.LabelFilterBinary{And: true, Left: get, Right: small}}
	runFilter(t, grouped, []filterRow{
		{in: lbls("duration", "30ms", "size", "30KB"), keep: true},
		{in: lbls("duration", "1ms", "method", "GET", "size", "30KB")},
		{in: lbls("duration", "1ms", "method", "GET", "size", "3KB"), keep: true},
		// A conversion error keeps the row.
		{in: lbls("duration", "slow", "size", "30KB"), keep: true,
			out: `{__error__="LabelFilterErr", __error_details__="time: invalid duration \"slow\"", duration="slow", size="30KB"}`},
	})
	for _, bad := range []logql.LabelFilter{nil, &logql.LabelFilterString{}, &logql.LabelFilterBinary{Left: get}} {
		if _, err := newLabelFilterStage(bad); err == nil {
			t.Errorf("%#v compiled", bad)
		}
	}
}

func TestParseDurationLabel(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"300ms", 300 * time.Millisecond, true},
		{"1.5h", 90 * time.Minute, true},
		{"2h45m", 165 * time.Minute, true},
		{"0.10ms", 100 * time.Microsecond, true},
		{"10us", 10 * time.Microsecond, true},
		{"10µs", 10 * time.Microsecond, true},
		{"-1s", -time.Second, true},
		{"0", 0, true},
		{"5", 0, false},
		{"1d", 0, false},
		{"", 0, false},
		{" 1s", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v", c.in, got, err)
		}
	}
}

func TestParseBytesLabel(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"42", 42, true},
		{"20B", 20, true},
		{"20b", 20, true},
		{"42MB", 42_000_000, true},
		{"42mb", 42_000_000, true},
		{"42 MB", 42_000_000, true},
		{"1.5KiB", 1536, true},
		{"1.5kib", 1536, true},
		{"1kB", 1000, true},
		{"1KB", 1000, true},
		{"1k", 1000, true},
		{"1Ki", 1024, true},
		{"1MiB", 1 << 20, true},
		{"2GiB", 2 << 30, true},
		{"3GB", 3e9, true},
		{"1TiB", 1 << 40, true},
		{"1TB", 1e12, true},
		{"1PB", 1e15, true},
		{"1EiB", 1 << 60, true},
		{"1,000", 1000, true},
		{"1,000 KB", 1_000_000, true},
		{"0.5", 0, true},
		{"1.0000001B", 1, true},
		{"16EiB", 0, false},
		{"20EB", 0, false},
		{"1ZB", 0, false},
		{"", 0, false},
		{"MB", 0, false},
		{"-1", 0, false},
		{" 1", 0, false},
		{"1 X", 0, false},
		{"1..2", 0, false},
	} {
		got, err := ParseBytes(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseBytes(%q) = %v, %v", c.in, got, err)
		}
	}
}

func TestLabelFilterNoAllocs(t *testing.T) {
	for _, f := range []logql.LabelFilter{
		&logql.LabelFilterNumber{Name: "v", Op: logql.CmpGe, Value: 500},
		&logql.LabelFilterDuration{Name: "d", Op: logql.CmpGt, Value: time.Second},
		&logql.LabelFilterBytes{Name: "b", Op: logql.CmpGt, Value: 1000},
		&logql.LabelFilterIP{Name: "ip", Value: "10.0.0.0/8"},
		&logql.LabelFilterString{Matcher: matcher(t, `s=~"a.*"`)},
	} {
		st := must(t)(newLabelFilterStage(f))
		lb := &Labels{}
		stream := lbls("v", "503", "d", "1.5s", "b", "20KB", "ip", "10.1.2.3", "s", "abc")
		if n := testing.AllocsPerRun(100, func() {
			lb.Reset(stream)
			if _, ok := st.process(0, nil, lb); !ok {
				t.Fatalf("%s dropped the row", f)
			}
		}); n != 0 {
			t.Errorf("%s allocates %v times per row", f, n)
		}
	}
}

// FuzzParseNumber holds ParseNumber's integer path to strconv.ParseFloat:
// the same value, bit for bit, and an error exactly when it errs.
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "500", "0503", "999999999999999", "9999999999999999", "", "-1", "+2", "1e3", "1_000", "1.5", " 5", "NaN", "inf", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, gerr := ParseNumber(s)
		want, werr := strconv.ParseFloat(s, 64)
		if (gerr != nil) != (werr != nil) || math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("%q: %v %v, strconv %v %v", s, got, gerr, want, werr)
		}
	})
}

// TestPrefixFilter: a label's filter is a prefix only when it is one
// case-sensitive `=~"P.*"` of that label, or exactly one value when it
// is one `="P"`; the values that pass it are then those that start with
// P (or are P), as the filter says.
func TestPrefixFilter(t *testing.T) {
	for q, want := range map[string]string{
		`x=~"7ce4.*"`:        "7ce4",
		`x=~"(?s)ab.*"`:      "ab",
		`x=~"a\\.b.*"`:       "a.b",
		`x=~".*"`:            "-",
		`x=~"7ce4.+"`:        "-",
		`x=~"(?i)ab.*"`:      "-",
		`x=~"ab.*c"`:         "-",
		`x=~"a|b.*"`:         "-",
		`x="7ce4"`:           "7ce4 exact",
		`x=""`:               "-",
		`x!~"7ce4.*"`:        "-",
		`y=~"7ce4.*"`:        "-",
		`x=~"ab.*", x="abc"`: "-",
	} {
		expr, err := logql.Parse(`{a="b"} | ` + q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var fs []logql.LabelFilter
		for _, s := range expr.(*logql.LogExpr).Pipeline {
			fs = append(fs, s.(*logql.LabelFilterStage).Filter)
		}
		prefix, exact, ok := PrefixFilter(fs, "x")
		got := prefix
		if exact {
			got += " exact"
		}
		if !ok {
			got = "-"
		}
		if got != want {
			t.Errorf("%s: prefix %q, want %q", q, got, want)
		}
		if !ok {
			continue
		}
		m, err := StringMatch(fs[0].(*logql.LabelFilterString).Matcher)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"", prefix, prefix + "x", "x" + prefix, prefix[:len(prefix)-1]} {
			if m(v) != (strings.HasPrefix(v, prefix) && (!exact || v == prefix)) {
				t.Errorf("%s on %q: the filter says %v", q, v, m(v))
			}
		}
	}
}
