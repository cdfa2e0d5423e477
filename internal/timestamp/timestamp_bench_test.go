package timestamp

import (
	"testing"
	"time"
)

var benchFormats = []struct {
	format string
	in     string
	layout string // for impl=stdlib; empty when time.Parse cannot read it
}{
	{"rfc3339", "2026-01-15T08:00:00Z", time.RFC3339Nano},
	{"rfc3339nano", "2026-01-15T08:00:00.123456789+07:00", time.RFC3339Nano},
	{"log4j", "2015-10-18 18:01:47,978", "2006-01-02 15:04:05"},
	{"db2", "2005-06-03-15.42.50.675872", "2006-01-02-15.04.05"},
	{"compact", "20171223-22:15:29:606", ""},
	{"clf", "10/Oct/2000:13:55:36 -0700", "02/Jan/2006:15:04:05 -0700"},
	{"syslog", "Jun 14 15:16:01", "Jan _2 15:04:05"},
	{"ctime", "Sun Dec 04 04:47:44 2005", time.ANSIC},
	{"epoch_s", "1768464000", ""},
	{"epoch_ms", "1768464000123", ""},
	{"epoch_frac", "1768464000.123456", ""},
}

var (
	sinkNs int64
	sinkOK bool
)

func BenchmarkParse(b *testing.B) {
	for _, f := range benchFormats {
		in := []byte(f.in)
		b.Run("format="+f.format+"/impl=sluice", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				sinkNs, sinkOK = Parse(in, testRef)
			}
			if !sinkOK {
				b.Fatalf("Parse(%q) failed", in)
			}
		})
		if f.layout == "" {
			continue
		}
		b.Run("format="+f.format+"/impl=stdlib", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				tm, err := time.Parse(f.layout, string(in))
				sinkNs, sinkOK = tm.UnixNano(), err == nil
			}
		})
	}
}

// BenchmarkParsePrefix reads timestamps at the start of real log lines
// (Loghub samples), where the rest of the line is not scanned.
func BenchmarkParsePrefix(b *testing.B) {
	for _, c := range []struct{ format, line string }{
		{"log4j", "2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster"},
		{"syslog", "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 euid=0"},
		{"miss", "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block"},
	} {
		line := []byte(c.line)
		b.Run("format="+c.format, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				sinkNs, _, sinkOK = ParsePrefix(line, testRef)
			}
		})
	}
}

func BenchmarkParseLayout(b *testing.B) {
	for _, c := range []struct {
		layout Layout
		in     string
	}{
		{HDFS, "081109 203615"},
		{Spark, "17/06/09 20:10:40"},
		{Logcat, "03-17 16:13:38.811"},
	} {
		in := []byte(c.in)
		b.Run("layout="+c.layout.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				sinkNs, _, sinkOK = ParseLayout(in, c.layout, testRef)
			}
			if !sinkOK {
				b.Fatalf("ParseLayout(%q) failed", in)
			}
		})
	}
}

// benchEpochs is a variable so the compiler cannot fold FromEpoch away.
var benchEpochs = []int64{1768464000, 1768464000123, 1768464000123456, 1768464000123456789}

func BenchmarkFromEpoch(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sinkNs = FromEpoch(benchEpochs[i&3])
		i++
	}
}

func BenchmarkFromEpochFloat(b *testing.B) {
	for _, c := range []struct {
		name string
		f    float64
	}{
		{"seconds_fraction", 1768464000.123},
		{"millis", 1768464000123},
		{"nanos", 1.768464000123456789e18},
	} {
		b.Run("value="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkNs, sinkOK = FromEpochFloat(c.f)
			}
		})
	}
}

func BenchmarkAppendRFC3339(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 64)
	b.SetBytes(int64(len(rfc3339Nano)))
	for b.Loop() {
		buf = AppendRFC3339(buf[:0], testRef+870000)
	}
}
