package timestamp

// Layout names a timestamp format that ParsePrefix does not detect because
// it cannot be told apart from other things at the start of a line: a
// caller that knows its source's format picks one for ParseLayout.
type Layout uint8

const (
	// Auto detects any format ParsePrefix knows.
	Auto Layout = iota
	// HDFS is "081109 203615": yyMMdd HHmmss, in UTC. Six digits, a space
	// and six digits could as well be two counters.
	HDFS
	// Spark is "17/06/09 20:10:40": yy/MM/dd HH:mm:ss with an optional
	// '.' or ',' fraction, in UTC (log4j's ISO-ordered short date, as
	// Spark's default configuration logs it). The same shape is dd/MM/yy
	// or MM/dd/yy elsewhere.
	Spark
	// Logcat is "03-17 16:13:38.811": MM-dd HH:mm:ss with an optional '.'
	// fraction, as Android's logcat prints it, in UTC; the year comes from
	// ref as for syslog. The same shape is dd-MM elsewhere.
	Logcat

	numLayouts
)

var layoutNames = [numLayouts]string{"auto", "hdfs", "spark", "logcat"}

// String returns the layout's name as LayoutNamed accepts it.
func (l Layout) String() string {
	if l < numLayouts {
		return layoutNames[l]
	}
	return "unknown"
}

// LayoutNamed returns the layout called name ("auto", "hdfs", "spark",
// "logcat"), for configuration files.
func LayoutNamed(name string) (Layout, bool) {
	for l, s := range layoutNames {
		if s == name {
			return Layout(l), true
		}
	}
	return 0, false
}

// ParseLayout reads a timestamp in the given layout at the start of b, as
// ParsePrefix does: it returns Unix nanoseconds and the number of bytes
// the timestamp spans, and requires that no letter or digit follows it.
// ref (Unix ns) supplies the year of layouts that have none. An unknown
// layout gives false.
func ParseLayout(b []byte, layout Layout, ref int64) (ns int64, n int, ok bool) {
	switch layout {
	case Auto:
		return ParsePrefix(b, ref)
	case HDFS:
		return parseHDFS(b)
	case Spark:
		return parseSpark(b)
	case Logcat:
		return parseLogcat(b, ref)
	}
	return 0, 0, false
}

// century2 expands a two-digit year as POSIX strptime and Go's time.Parse
// do: 69–99 are 1969–1999, 00–68 are 2000–2068. It keeps -1 for a
// malformed field.
func century2(yy int) int {
	switch {
	case yy < 0:
		return -1
	case yy >= 69:
		return 1900 + yy
	}
	return 2000 + yy
}

// parseHDFS reads "081109 203615".
func parseHDFS(b []byte) (int64, int, bool) {
	const n = len("081109 203615")
	if len(b) < n || b[6] != ' ' || !boundary(b, n) {
		return 0, 0, false
	}
	ns, ok := unixNano(century2(num2(b, 0)), num2(b, 2), num2(b, 4),
		num2(b, 7), num2(b, 9), num2(b, 11), 0, 0)
	return ns, n, ok
}

// parseSpark reads "17/06/09 20:10:40".
func parseSpark(b []byte) (int64, int, bool) {
	if len(b) < len("17/06/09 20:10:40") || b[2] != '/' || b[5] != '/' || b[8] != ' ' {
		return 0, 0, false
	}
	hour, minute, sec := hms(b, 9, ':')
	nsec, i := optFrac(b, 17, true)
	if !boundary(b, i) {
		return 0, 0, false
	}
	ns, ok := unixNano(century2(num2(b, 0)), num2(b, 3), num2(b, 6), hour, minute, sec, nsec, 0)
	return ns, i, ok
}

// parseLogcat reads "03-17 16:13:38.811".
func parseLogcat(b []byte, ref int64) (int64, int, bool) {
	if len(b) < len("03-17 16:13:38") || b[2] != '-' || b[5] != ' ' {
		return 0, 0, false
	}
	hour, minute, sec := hms(b, 6, ':')
	nsec, i := optFrac(b, 14, false)
	if !boundary(b, i) {
		return 0, 0, false
	}
	ns, ok := nearYear(num2(b, 0), num2(b, 3), hour, minute, sec, nsec, ref)
	return ns, i, ok
}
