package timestamp

import (
	"math"
	"testing"
	"time"
)

// testRef is the receive time of the tests unless a case says otherwise.
var testRef = time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).UnixNano()

// prefixCase is a timestamp that must be read, checked against time.Parse.
type prefixCase struct {
	name   string
	in     string
	n      int    // bytes the timestamp spans
	layout string // time.Parse layout of goIn
	goIn   string // what time.Parse reads; in[:n] when empty
	year   int    // for layouts without a year: the year that must be inferred
	add    time.Duration
	ref    int64 // testRef when 0
}

// want computes the expected Unix ns with time.Parse.
func (c prefixCase) want(t testing.TB) int64 {
	t.Helper()
	in := c.goIn
	if in == "" {
		in = c.in[:c.n]
	}
	tm, err := time.Parse(c.layout, in)
	if err != nil {
		t.Fatalf("time.Parse(%q, %q): %v", c.layout, in, err)
	}
	if c.year != 0 {
		tm = time.Date(c.year, tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), time.UTC)
	}
	return tm.Add(c.add).UnixNano()
}

func (c prefixCase) refNs() int64 {
	if c.ref != 0 {
		return c.ref
	}
	return testRef
}

// prefixCases are the formats ParsePrefix detects, one table per format.
var prefixCases = []struct {
	format string
	cases  []prefixCase
}{
	{"rfc3339", []prefixCase{
		{name: "utc", in: "2026-01-15T08:00:00Z", n: 20, layout: time.RFC3339Nano},
		{name: "micro", in: "2026-01-15T08:00:00.000870Z", n: 27, layout: time.RFC3339Nano},
		{name: "nano_offset", in: "2026-01-15T08:00:00.123456789+07:00", n: 35, layout: time.RFC3339Nano},
		{name: "one_digit_negative_half_hour", in: "2026-01-15T08:00:00.1-00:30", n: 27, layout: time.RFC3339Nano},
		{name: "comma_fraction", in: "2026-01-15T08:00:00,5Z", n: 22, layout: time.RFC3339Nano},
		{name: "lower_case", in: "2026-01-15t08:00:00.25z", n: 23, layout: "2006-01-02t15:04:05z"},
		{name: "offset_hhmm", in: "2026-01-15T08:00:00-0700", n: 24, layout: "2006-01-02T15:04:05-0700"},
		{name: "offset_hh", in: "2026-01-15T08:00:00+07", n: 22, layout: "2006-01-02T15:04:05-07"},
		{name: "no_offset", in: "2026-01-15T08:00:00", n: 19, layout: "2006-01-02T15:04:05"},
		{name: "space", in: "2026-01-15 08:00:00Z", n: 20, layout: "2006-01-02 15:04:05Z07:00"},
		{name: "spaced_offset", in: "2026-01-15 08:00:00.123 +0700 UTC", n: 29, layout: "2006-01-02 15:04:05 -0700"},
		{name: "prefix", in: "2026-01-15T08:00:00.5Z INFO hello", n: 22, layout: time.RFC3339Nano},
		{name: "spaced_hh_is_message", in: "2026-01-15 08:00:00 -12 degrees", n: 19, layout: "2006-01-02 15:04:05"},
		{name: "spaced_bad_offset_is_message", in: "2026-01-15 08:00:00 +07:x", n: 19, layout: "2006-01-02 15:04:05"},
		{name: "spaced_offset_colon", in: "2026-01-15 08:00:00 -07:30 x", n: 26, layout: "2006-01-02 15:04:05 -07:00"},
		{name: "leap_day", in: "2024-02-29T23:59:59.999999999Z", n: 30, layout: time.RFC3339Nano},
		{name: "dot_without_digits", in: "2026-01-15T08:00:00. x", n: 19, layout: "2006-01-02T15:04:05"},
		{name: "sign_without_digits", in: "2026-01-15T08:00:00-x", n: 19, layout: "2006-01-02T15:04:05"},
		{name: "min_year", in: "1678-01-01T00:00:00+23:59", n: 25, layout: time.RFC3339Nano},
		{name: "max_year", in: "2261-12-31T23:59:59.999999999-23:59", n: 35, layout: time.RFC3339Nano},
		{name: "pre_epoch", in: "1969-12-31T23:59:59.5Z", n: 22, layout: time.RFC3339Nano},
		{name: "leap_second", in: "2016-12-31T23:59:60.5Z", n: 22, layout: time.RFC3339Nano,
			goIn: "2017-01-01T00:00:00.5Z"},
	}},
	{"log4j", []prefixCase{
		{name: "hadoop", in: "2015-10-18 18:01:47,978 INFO [main] org.apache", n: 23, layout: "2006-01-02 15:04:05"},
		{name: "zookeeper", in: "2015-07-29 17:41:44,747 - INFO  [QuorumPeer", n: 23, layout: "2006-01-02 15:04:05"},
		{name: "openstack", in: "2017-05-16 00:00:00.008 25746 INFO", n: 23, layout: "2006-01-02 15:04:05"},
		{name: "windows_cbs", in: "2016-09-28 04:30:30, Info     CBS", n: 19, layout: "2006-01-02 15:04:05"},
		{name: "python", in: "2006-01-02 15:04:05.000", n: 23, layout: "2006-01-02 15:04:05"},
		{name: "no_fraction", in: "2006-01-02 15:04:05 main", n: 19, layout: "2006-01-02 15:04:05"},
	}},
	{"db2", []prefixCase{
		{name: "bgl", in: "2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11", n: 26, layout: "2006-01-02-15.04.05"},
		{name: "no_fraction", in: "2005-06-03-15.42.50", n: 19, layout: "2006-01-02-15.04.05"},
	}},
	{"compact", []prefixCase{
		{name: "healthapp", in: "20171223-22:15:29:606|Step_LSC|30002312", n: 21, layout: "20060102-15:04:05",
			goIn: "20171223-22:15:29", add: 606 * time.Millisecond},
		{name: "unpadded", in: "20171223-2:1:9:9|x", n: 16, layout: "20060102-15:04:05",
			goIn: "20171223-02:01:09", add: 9 * time.Millisecond},
		{name: "no_millis", in: "20171223-22:16:0", n: 16, layout: "20060102-15:04:05", goIn: "20171223-22:16:00"},
	}},
	{"clf", []prefixCase{
		{name: "nginx", in: "10/Oct/2000:13:55:36 -0700] \"GET /", n: 26, layout: "02/Jan/2006:15:04:05 -0700"},
		{name: "lower_month", in: "02/jan/2006:15:04:05 +0000", n: 26, layout: "02/Jan/2006:15:04:05 -0700"},
		{name: "no_zone", in: "02/Jan/2006:15:04:05]", n: 20, layout: "02/Jan/2006:15:04:05"},
	}},
	{"syslog", []prefixCase{
		{name: "linux", in: "Jun 14 15:16:01 combo sshd(pam_unix)[19939]", n: 15, layout: "Jan _2 15:04:05", year: 2025},
		{name: "mac_padded", in: "Jul  1 09:00:55 calvisitor-10-105-160-95", n: 15, layout: "Jan _2 15:04:05", year: 2025},
		{name: "unpadded", in: "Nov 9 12:01:01 dn228/dn228", n: 14, layout: "Jan _2 15:04:05", year: 2025},
		{name: "december", in: "Dec 31 23:59:59 host", n: 15, layout: "Jan _2 15:04:05", year: 2025},
		{name: "fraction", in: "Jan 15 07:59:59.123 host", n: 19, layout: "Jan _2 15:04:05", year: 2026},
		{name: "lower_case", in: "jan  2 15:04:05", n: 15, layout: "Jan _2 15:04:05", year: 2026},
		{name: "within_slack", in: "Feb 10 00:00:00 x", n: 15, layout: "Jan _2 15:04:05", year: 2026},
		{name: "beyond_slack", in: "Feb 16 09:00:00 x", n: 15, layout: "Jan _2 15:04:05", year: 2025},
		{name: "sender_past_new_year", in: "Jan  1 00:00:01 x", n: 15, layout: "Jan _2 15:04:05", year: 2026,
			ref: time.Date(2025, 12, 31, 23, 59, 0, 0, time.UTC).UnixNano()},
		{name: "leap_day", in: "Feb 29 12:00:00 x", n: 15, layout: "Jan _2 15:04:05", year: 2028,
			ref: time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
	}},
	{"ctime", []prefixCase{
		{name: "apache", in: "Sun Dec 04 04:47:44 2005] [notice]", n: 24, layout: time.ANSIC},
		{name: "ansic", in: "Mon Jan  2 15:04:05 2006", n: 24, layout: time.ANSIC},
		{name: "apache24", in: "Fri Sep 09 10:42:29.902022 2011] [core:error]", n: 31, layout: time.ANSIC},
	}},
}

// epochCases are epochs in digits: Parse reads them, ParsePrefix only whole.
var epochCases = []struct {
	name string
	in   string
	want int64
}{
	{"seconds", "1768464000", 1768464000_000000000},
	{"millis", "1768464000123", 1768464000_123000000},
	{"micros", "1768464000123456", 1768464000_123456000},
	{"nanos", "1768464000123456789", 1768464000_123456789},
	{"seconds_fraction", "1768464000.123", 1768464000_123000000},
	{"millis_fraction", "1768464000123.5", 1768464000_123500000},
	{"sub_ns_fraction_dropped", "1768464000.1234567891", 1768464000_123456789},
	{"leading_zeros", "0001768464000", 1768464000_000000000},
	{"max", "9223372036854775807", math.MaxInt64},
	{"max_seconds_fraction", "9223372036.854775807", math.MaxInt64},
}

// badCases must not be read by ParsePrefix (nor, therefore, by Parse).
var badCases = []struct{ name, in string }{
	{"empty", ""},
	{"letter", "x"},
	{"short_epoch", "081109"},
	{"zero", "0"},
	{"leading_space", " 2026-01-15T08:00:00Z"},
	{"month_13", "2026-13-01T00:00:00Z"},
	{"month_0", "2026-00-01T00:00:00Z"},
	{"day_0", "2026-01-00T00:00:00Z"},
	{"feb_29_common_year", "2026-02-29T00:00:00Z"},
	{"feb_29_century", "2100-02-29T00:00:00Z"},
	{"april_31", "2026-04-31T00:00:00Z"},
	{"hour_24", "2026-01-15T24:00:00Z"},
	{"minute_60", "2026-01-15T23:60:00Z"},
	{"second_61", "2026-01-15T23:59:61Z"},
	{"offset_hour_24", "2026-01-15T08:00:00+24:00"},
	{"offset_minute_60", "2026-01-15T08:00:00+23:60"},
	{"year_1677", "1677-12-31T23:59:59Z"},
	{"year_2262", "2262-01-01T00:00:00Z"},
	{"year_0", "0000-01-01T00:00:00Z"},
	{"zone_continues", "2026-01-15T08:00:00Zulu"},
	{"ten_fraction_digits", "2026-01-15T08:00:00.1234567890Z"},
	{"short_offset_minutes", "2026-01-15T08:00:00+07:0"},
	{"one_digit_offset", "2026-01-15T08:00:00+7"},
	{"three_digit_offset", "2026-01-15T08:00:00+070"},
	{"attached_bad_offset", "2026-01-15 08:00:00+07:x"},
	{"letters_follow", "2026-01-15T08:00:00abc"},
	{"digit_follows", "2026-01-15 08:00:001"},
	{"bad_separator", "2026-01-15X08:00:00Z"},
	{"one_digit_month", "2026-1-15T08:00:00Z"},
	{"one_digit_hour", "2026-01-15T8:00:00Z"},
	{"truncated", "2026-01-15T08:00"},
	{"db2_colons", "2005-06-03-15:42:50"},
	{"hdfs", "081109 203615 148 INFO dfs.DataNode$PacketResponder"},
	{"spark", "17/06/09 20:10:40 INFO executor"},
	{"logcat", "03-17 16:13:38.811  1702  2395 D"},
	{"proxifier", "10.30 16:49:06"},
	{"epoch_prefix", "1768464000 foo"},
	{"epoch_letter", "1768464000x"},
	{"epoch_20_digits", "12345678901234567890"},
	{"epoch_beyond_int64", "9223372036854775808"},
	{"epoch_beyond_int64_by_fraction", "9223372036.9"},
	{"epoch_dot_only", "1768464000."},
	{"epoch_bad_fraction", "1768464000.12a"},
	{"epoch_two_dots", "1768464000.1.2"},
	{"negative_epoch", "-1768464000"},
	{"compact_4_millis", "20171223-22:15:29:6060"},
	{"compact_truncated", "20171223-22:15"},
	{"compact_3_digit_hour", "20171223-222:15:29"},
	{"syslog_letter_follows", "Jun 14 15:16:01x"},
	{"syslog_bad_month", "Foo 14 15:16:01"},
	{"syslog_day_32", "Jun 32 15:16:01"},
	{"syslog_day_0", "Jun  0 15:16:01"},
	{"syslog_padded_two_digits", "Jun  14 15:16:01"},
	{"syslog_feb_29_no_leap_year_near", "Feb 29 00:00:00"},
	{"syslog_short", "Jun 14 15:16"},
	{"ctime_no_year", "Sun Dec 04 04:47:44 host"},
	{"ctime_5_digit_year", "Sun Dec 04 04:47:44 20051"},
	{"ctime_bad_weekday", "Sux Dec 04 04:47:44 2005"},
	{"clf_bad_month", "10/Foo/2000:13:55:36 -0700"},
	{"clf_space", "10/Oct/2000 13:55:36 -0700"},
	{"clf_bad_offset", "10/Oct/2000:13:55:36-07:"},
}

func TestParsePrefix(t *testing.T) {
	for _, f := range prefixCases {
		t.Run(f.format, func(t *testing.T) {
			for _, c := range f.cases {
				t.Run(c.name, func(t *testing.T) {
					want := c.want(t)
					ns, n, ok := ParsePrefix([]byte(c.in), c.refNs())
					if !ok || n != c.n || ns != want {
						t.Fatalf("ParsePrefix(%q) = %d (%s), %d, %v; want %d (%s), %d, true",
							c.in, ns, AppendRFC3339(nil, ns), n, ok, want, AppendRFC3339(nil, want), c.n)
					}
					ns, ok = Parse([]byte(c.in[:c.n]), c.refNs())
					if !ok || ns != want {
						t.Fatalf("Parse(%q) = %d, %v; want %d, true", c.in[:c.n], ns, ok, want)
					}
					if c.n < len(c.in) {
						if _, ok := Parse([]byte(c.in), c.refNs()); ok {
							t.Fatalf("Parse(%q) accepted trailing bytes", c.in)
						}
					}
				})
			}
		})
	}
}

func TestParseEpoch(t *testing.T) {
	for _, c := range epochCases {
		t.Run(c.name, func(t *testing.T) {
			ns, ok := Parse([]byte(c.in), testRef)
			if !ok || ns != c.want {
				t.Fatalf("Parse(%q) = %d, %v; want %d, true", c.in, ns, ok, c.want)
			}
			if _, _, ok := ParsePrefix([]byte(c.in+" x"), testRef); ok {
				t.Fatalf("ParsePrefix(%q) read an epoch as a prefix", c.in+" x")
			}
		})
	}
}

func TestParsePrefixRejects(t *testing.T) {
	for _, c := range badCases {
		t.Run(c.name, func(t *testing.T) {
			if ns, n, ok := ParsePrefix([]byte(c.in), testRef); ok {
				t.Fatalf("ParsePrefix(%q) = %d (%s), %d, true; want false", c.in, ns, AppendRFC3339(nil, ns), n)
			}
		})
	}
}

// layoutCases are read by ParseLayout in their layout.
var layoutCases = []struct {
	layout Layout
	prefixCase
}{
	{HDFS, prefixCase{name: "hdfs", in: "081109 203615 148 INFO dfs", n: 13, layout: "060102 150405"}},
	{HDFS, prefixCase{name: "hdfs_1969", in: "691109 203615", n: 13, layout: "060102 150405"}},
	{Spark, prefixCase{name: "spark", in: "17/06/09 20:10:40 INFO executor", n: 17, layout: "06/01/02 15:04:05"}},
	{Spark, prefixCase{name: "spark_fraction", in: "17/06/09 20:10:40,123 INFO", n: 21, layout: "06/01/02 15:04:05"}},
	{Logcat, prefixCase{name: "logcat", in: "03-17 16:13:38.811  1702  2395 D", n: 18, layout: "01-02 15:04:05", year: 2025}},
	{Logcat, prefixCase{name: "logcat_no_fraction", in: "01-02 15:04:05 x", n: 14, layout: "01-02 15:04:05", year: 2026}},
	{Auto, prefixCase{name: "auto", in: "2026-01-15T08:00:00Z x", n: 20, layout: time.RFC3339}},
}

var badLayoutCases = []struct {
	layout Layout
	in     string
}{
	{HDFS, "081109 2036151"},
	{HDFS, "081109-203615"},
	{HDFS, "081309 203615"},
	{HDFS, "081109 20361"},
	{Spark, "17-06-09 20:10:40"},
	{Spark, "17/06/09 20:10:40x"},
	{Spark, "17/06/09 25:10:40"},
	{Logcat, "13-17 16:13:38.811"},
	{Logcat, "03-17 16:13:38.8111111111"},
	{Logcat, "03-17 16:13"},
	{Auto, "081109 203615"},
	{numLayouts, "2026-01-15T08:00:00Z"},
}

func TestParseLayout(t *testing.T) {
	for _, c := range layoutCases {
		t.Run("layout="+c.layout.String()+"/"+c.name, func(t *testing.T) {
			want := c.want(t)
			ns, n, ok := ParseLayout([]byte(c.in), c.layout, c.refNs())
			if !ok || n != c.n || ns != want {
				t.Fatalf("ParseLayout(%q, %v) = %d (%s), %d, %v; want %d (%s), %d, true",
					c.in, c.layout, ns, AppendRFC3339(nil, ns), n, ok, want, AppendRFC3339(nil, want), c.n)
			}
		})
	}
	for _, c := range badLayoutCases {
		t.Run("layout="+c.layout.String()+"/bad", func(t *testing.T) {
			if ns, n, ok := ParseLayout([]byte(c.in), c.layout, testRef); ok {
				t.Fatalf("ParseLayout(%q, %v) = %d, %d, true; want false", c.in, c.layout, ns, n)
			}
		})
	}
}

func TestLayoutNamed(t *testing.T) {
	for l := range numLayouts {
		got, ok := LayoutNamed(l.String())
		if !ok || got != l {
			t.Errorf("LayoutNamed(%q) = %v, %v; want %v, true", l.String(), got, ok, l)
		}
	}
	if _, ok := LayoutNamed("unknown"); ok {
		t.Error(`LayoutNamed("unknown") = _, true`)
	}
}

func TestFromEpoch(t *testing.T) {
	for _, c := range []struct {
		v, want int64
	}{
		{0, 0},
		{1, 1e9},
		{1768464000, 1768464000_000000000},
		{-1768464000, -1768464000_000000000},
		{1768464000123, 1768464000_123000000},
		{1768464000123456, 1768464000_123456000},
		{1768464000123456789, 1768464000_123456789},
		{maxSec, maxSec * 1e9},
		{maxSec + 1, (maxSec + 1) * 1e6},
		{-maxSec - 1, (-maxSec - 1) * 1e6},
		{999999999999, 999999999999 * 1e6}, // 2001-09-09 in ms
		{maxMs + 1, (maxMs + 1) * 1e3},
		{maxUs + 1, maxUs + 1},
		{math.MaxInt64, math.MaxInt64},
		{math.MinInt64, math.MinInt64},
	} {
		if got := FromEpoch(c.v); got != c.want {
			t.Errorf("FromEpoch(%d) = %d; want %d", c.v, got, c.want)
		}
	}
}

func TestFromEpochFloat(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want int64
		ok   bool
	}{
		{0, 0, true},
		{0.5, 5e8, true},
		{-1.5, -15e8, true},
		{1e-300, 0, true},
		{1768464000, 1768464000_000000000, true},
		{1768464000.123, 1768464000_123000000, true},
		{1768464000123.5, 1768464000_123500000, true},
		{1768464000123456.5, 1768464000_123456500, true},
		{1 << 53, (1 << 53) * 1e3, true},
		{1.768464000123456789e18, 1768464000123456768, true},
		{-1768464000.25, -1768464000_250000000, true},
		{9.2e18, 9.2e18, true},
		{math.NaN(), 0, false},
		{math.Inf(1), 0, false},
		{math.Inf(-1), 0, false},
		{1 << 63, 0, false},
		{-1e19, 0, false},
	} {
		got, ok := FromEpochFloat(c.f)
		if ok != c.ok || got != c.want {
			t.Errorf("FromEpochFloat(%v) = %d, %v; want %d, %v", c.f, got, ok, c.want, c.ok)
		}
	}
}

func TestAppendRFC3339(t *testing.T) {
	for _, ns := range []int64{
		0, -1, 1, 870000, testRef + 870000, math.MaxInt64, math.MinInt64,
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC).UnixNano(),
		time.Date(2000, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		time.Date(1900, 2, 28, 12, 0, 0, 0, time.UTC).UnixNano(),
	} {
		want := "prefix " + time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
		if got := AppendRFC3339([]byte("prefix "), ns); string(got) != want {
			t.Errorf("AppendRFC3339(%d) = %q; want %q", ns, got, want)
		}
	}
}

// TestCivil checks the days-from-civil arithmetic against package time on
// every day of the supported years.
func TestCivil(t *testing.T) {
	d := time.Date(minYear, 1, 1, 0, 0, 0, 0, time.UTC)
	for days := d.Unix() / secPerDay; d.Year() <= maxYear; d, days = d.AddDate(0, 0, 1), days+1 {
		if got := daysFromCivil(d.Year(), int(d.Month()), d.Day()); got != days {
			t.Fatalf("daysFromCivil(%s) = %d; want %d", d.Format(time.DateOnly), got, days)
		}
		if y, m, dd := civilFromDays(days); y != d.Year() || m != int(d.Month()) || dd != d.Day() {
			t.Fatalf("civilFromDays(%d) = %d-%d-%d; want %s", days, y, m, dd, d.Format(time.DateOnly))
		}
	}
}

// TestZeroAllocs holds the package's promise of no allocation per call,
// for every format.
func TestZeroAllocs(t *testing.T) {
	check := func(name string, f func()) {
		t.Helper()
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocs per call; want 0", name, a)
		}
	}
	for _, f := range prefixCases {
		for _, c := range f.cases {
			b, ref := []byte(c.in), c.refNs()
			check("ParsePrefix/"+f.format+"/"+c.name, func() { ParsePrefix(b, ref) })
		}
	}
	for _, c := range layoutCases {
		b, ref := []byte(c.in), c.refNs()
		check("ParseLayout/"+c.name, func() { ParseLayout(b, c.layout, ref) })
	}
	for _, c := range epochCases {
		b := []byte(c.in)
		check("Parse/epoch/"+c.name, func() { Parse(b, testRef) })
	}
	for _, c := range badCases {
		b := []byte(c.in)
		check("ParsePrefix/bad/"+c.name, func() { ParsePrefix(b, testRef) })
	}
	for _, f := range []float64{0.5, 1768464000.123, 1768464000123456.5, 9.2e18, math.NaN()} {
		check("FromEpochFloat", func() { FromEpochFloat(f) })
	}
	buf := make([]byte, 0, 64)
	check("AppendRFC3339", func() { AppendRFC3339(buf[:0], testRef) })
}
