package timestamp

// parseNamed reads the formats that start with a name: syslog's month
// ("Jan _2 15:04:05") and ctime's weekday ("Mon Jan _2 15:04:05 2006").
func parseNamed(b []byte, ref int64) (int64, int, bool) {
	if len(b) < 14 || b[3] != ' ' {
		return 0, 0, false
	}
	if m := month(b, 0); m != 0 {
		return parseSyslog(b, m, ref)
	}
	if weekday(b) {
		return parseCtime(b)
	}
	return 0, 0, false
}

// parseSyslog reads RFC 3164's "Jan _2 15:04:05" with an optional '.'
// fraction (rsyslog's high-precision variant without the year), taking
// the year from ref (see nearYear).
//
// REQUIRES: len(b) >= 14, b[3] == ' ' and b[:3] names month.
func parseSyslog(b []byte, month int, ref int64) (int64, int, bool) {
	day, i := dayOfMonth(b, 4)
	if i+8 > len(b) {
		return 0, 0, false
	}
	hour, minute, sec := hms(b, i, ':')
	nsec, i := optFrac(b, i+8, false)
	if !boundary(b, i) || day < 0 {
		return 0, 0, false
	}
	ns, ok := nearYear(month, day, hour, minute, sec, nsec, ref)
	return ns, i, ok
}

// parseCtime reads C's asctime layout, "Mon Jan _2 15:04:05 2006", as the
// Apache error log writes it ("Sun Dec 04 04:47:44 2005", and with a
// fraction since Apache 2.4: "Fri Sep 09 10:42:29.902022 2011"), in UTC.
//
// REQUIRES: len(b) >= 14, b[3] == ' ' and b[:3] names a weekday.
func parseCtime(b []byte) (int64, int, bool) {
	m := month(b, 4)
	if m == 0 || b[7] != ' ' {
		return 0, 0, false
	}
	day, i := dayOfMonth(b, 8)
	if i+8 > len(b) {
		return 0, 0, false
	}
	hour, minute, sec := hms(b, i, ':')
	nsec, i := optFrac(b, i+8, false)
	if i+5 > len(b) || b[i] != ' ' {
		return 0, 0, false
	}
	year, i := num4(b, i+1), i+5
	if !boundary(b, i) || day < 0 {
		return 0, 0, false
	}
	ns, ok := unixNano(year, m, day, hour, minute, sec, nsec, 0)
	return ns, i, ok
}

// dayOfMonth reads a day of the month and the space after it at b[i:]:
// "02", "2" or " 2" (padded like C's %e and Go's _2). It returns the day,
// or -1, and the index after the space.
func dayOfMonth(b []byte, i int) (day, end int) {
	if i < len(b) && b[i] == ' ' {
		i++
		if i+1 < len(b) && isDigit(b[i]) && b[i+1] == ' ' {
			return int(b[i] - '0'), i + 2
		}
		return -1, i
	}
	day, end = numN(b, i, 2)
	if end >= len(b) || b[end] != ' ' {
		return -1, end
	}
	return day, end + 1
}

// lower3 packs the three bytes at b[i:] into a key, letters folded to
// lower case. Folding with 0x20 maps only letters to letters.
// REQUIRES: i+3 <= len(b).
func lower3(b []byte, i int) uint32 {
	return uint32(b[i]|0x20)<<16 | uint32(b[i+1]|0x20)<<8 | uint32(b[i+2]|0x20)
}

// month returns the month (1–12) named by the three letters at b[i:], in
// any case, or 0.
// REQUIRES: i+3 <= len(b).
func month(b []byte, i int) int {
	switch lower3(b, i) {
	case 'j'<<16 | 'a'<<8 | 'n':
		return 1
	case 'f'<<16 | 'e'<<8 | 'b':
		return 2
	case 'm'<<16 | 'a'<<8 | 'r':
		return 3
	case 'a'<<16 | 'p'<<8 | 'r':
		return 4
	case 'm'<<16 | 'a'<<8 | 'y':
		return 5
	case 'j'<<16 | 'u'<<8 | 'n':
		return 6
	case 'j'<<16 | 'u'<<8 | 'l':
		return 7
	case 'a'<<16 | 'u'<<8 | 'g':
		return 8
	case 's'<<16 | 'e'<<8 | 'p':
		return 9
	case 'o'<<16 | 'c'<<8 | 't':
		return 10
	case 'n'<<16 | 'o'<<8 | 'v':
		return 11
	case 'd'<<16 | 'e'<<8 | 'c':
		return 12
	}
	return 0
}

// weekday reports whether b starts with a three-letter weekday name.
// REQUIRES: len(b) >= 3.
func weekday(b []byte) bool {
	switch lower3(b, 0) {
	case 's'<<16 | 'u'<<8 | 'n', 'm'<<16 | 'o'<<8 | 'n', 't'<<16 | 'u'<<8 | 'e',
		'w'<<16 | 'e'<<8 | 'd', 't'<<16 | 'h'<<8 | 'u', 'f'<<16 | 'r'<<8 | 'i',
		's'<<16 | 'a'<<8 | 't':
		return true
	}
	return false
}
