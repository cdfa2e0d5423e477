package timestamp

// parseISO reads the formats that start with an ISO 8601 date, "2006-01-02",
// followed by
//   - 'T', 't' or ' ' and "15:04:05", an optional fraction after '.' or ','
//     and an optional zone (see zone): RFC 3339, and the layouts of
//     log4j, Python logging, Hadoop and Zookeeper;
//   - '-' and "15.04.05" with an optional '.' fraction: IBM DB2's
//     timestamp, as BGL logs it, in UTC.
//
// REQUIRES: len(b) > 4 && b[4] == '-'.
func parseISO(b []byte) (int64, int, bool) {
	if len(b) < 19 || b[7] != '-' {
		return 0, 0, false
	}
	year, month, day := num4(b, 0), num2(b, 5), num2(b, 8)
	var hour, minute, sec, nsec, off int
	i := 19
	switch b[10] {
	case 'T', 't', ' ':
		hour, minute, sec = hms(b, 11, ':')
		nsec, i = optFrac(b, i, true)
		var ok bool
		if off, i, ok = zone(b, i); !ok {
			return 0, 0, false
		}
	case '-':
		hour, minute, sec = hms(b, 11, '.')
		nsec, i = optFrac(b, i, false)
	default:
		return 0, 0, false
	}
	if !boundary(b, i) {
		return 0, 0, false
	}
	ns, ok := unixNano(year, month, day, hour, minute, sec, nsec, off)
	return ns, i, ok
}

// parseCompact reads "20171223-22:15:29:606", Java's "yyyyMMdd-H:m:s:S" as
// HealthApp logs it: hour, minute and second of one or two digits, then an
// optional count of milliseconds of one to three digits (":9" is 9 ms, not
// 900), in UTC.
//
// REQUIRES: len(b) > 8 && b[8] == '-'.
func parseCompact(b []byte) (int64, int, bool) {
	year, month, day := num4(b, 0), num2(b, 4), num2(b, 6)
	hour, i := numN(b, 9, 2)
	if i >= len(b) || b[i] != ':' {
		return 0, 0, false
	}
	minute, i := numN(b, i+1, 2)
	if i >= len(b) || b[i] != ':' {
		return 0, 0, false
	}
	sec, i := numN(b, i+1, 2)
	nsec := 0
	if i+1 < len(b) && b[i] == ':' && isDigit(b[i+1]) {
		var ms int
		ms, i = numN(b, i+1, 3)
		nsec = ms * 1e6
	}
	if !boundary(b, i) {
		return 0, 0, false
	}
	ns, ok := unixNano(year, month, day, hour, minute, sec, nsec, 0)
	return ns, i, ok
}

// zone reads an optional zone at b[i:]: 'Z', 'z', or a numeric offset
// (see offset). It returns the offset east of UTC in seconds and the index
// after the zone; with no zone it returns 0, i, true.
//
// An attached sign followed by a digit commits to an offset: if the offset
// is then malformed, ok is false rather than the time being read as UTC.
// After one space ("15:04:05 -0700", as the common log format and Go's
// time.String write it) only a complete "±hhmm" or "±hh:mm" is an offset;
// anything else there ("-12 retries") is the message, and the zone is none.
func zone(b []byte, i int) (off, end int, ok bool) {
	if i >= len(b) {
		return 0, i, true
	}
	switch b[i] {
	case 'Z', 'z':
		return 0, i + 1, true
	case '+', '-':
		if i+1 < len(b) && isDigit(b[i+1]) {
			return offset(b, i)
		}
	case ' ':
		if i+2 < len(b) && (b[i+1] == '+' || b[i+1] == '-') && isDigit(b[i+2]) {
			if off, end, ok := offset(b, i+1); ok && end-i > len(" -07") && boundary(b, end) {
				return off, end, true
			}
		}
	}
	return 0, i, true
}

// offset reads "±hh", "±hhmm" or "±hh:mm" at b[i:], within ±23:59.
// REQUIRES: b[i] is '+' or '-'.
func offset(b []byte, i int) (off, end int, ok bool) {
	if i+3 > len(b) {
		return 0, 0, false
	}
	hh, mm, end := num2(b, i+1), 0, i+3
	switch {
	case end < len(b) && b[end] == ':':
		if end+3 > len(b) {
			return 0, 0, false
		}
		mm, end = num2(b, end+1), end+3
	case end+1 < len(b) && isDigit(b[end]) && isDigit(b[end+1]):
		mm, end = num2(b, end), end+2
	}
	if uint(hh) > 23 || uint(mm) > 59 {
		return 0, 0, false
	}
	off = (hh*60 + mm) * 60
	if b[i] == '-' {
		off = -off
	}
	return off, end, true
}
