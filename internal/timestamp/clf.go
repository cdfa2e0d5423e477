package timestamp

// parseCLF reads the common log format's "02/Jan/2006:15:04:05 -0700"
// (nginx $time_local, Apache %t) without its brackets. The zone is read
// as by zone, so it may also be missing (UTC) or attached.
//
// REQUIRES: len(b) > 2 && b[2] == '/'.
func parseCLF(b []byte) (int64, int, bool) {
	if len(b) < 20 || b[6] != '/' || b[11] != ':' {
		return 0, 0, false
	}
	day, m, year := num2(b, 0), month(b, 3), num4(b, 7)
	hour, minute, sec := hms(b, 12, ':')
	nsec, i := optFrac(b, 20, false)
	off, i, ok := zone(b, i)
	if !ok || !boundary(b, i) {
		return 0, 0, false
	}
	ns, ok := unixNano(year, m, day, hour, minute, sec, nsec, off)
	return ns, i, ok
}
