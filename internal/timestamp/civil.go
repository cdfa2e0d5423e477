package timestamp

const (
	// minYear and maxYear bound the accepted years so that any time in
	// them, shifted by any offset up to ±23:59, fits int64 nanoseconds
	// (1677-09-21 to 2262-04-11).
	minYear = 1678
	maxYear = 2261

	secPerDay = 86400
	nsPerSec  = 1_000_000_000
	nsPerDay  = secPerDay * nsPerSec
)

// unixNano validates a civil time and returns it as Unix nanoseconds. off
// is the zone's offset east of UTC in seconds. A negative field, as num2
// reports a non-digit, fails the range checks. A leap second (sec 60)
// becomes second 0 of the next minute.
//
// REQUIRES: 0 <= nsec < 1e9 and |off| < 86400.
func unixNano(year, month, day, hour, minute, sec, nsec, off int) (int64, bool) {
	if year < minYear || year > maxYear || uint(month-1) > 11 || day < 1 ||
		day > daysIn(year, month) || uint(hour) > 23 || uint(minute) > 59 || uint(sec) > 60 {
		return 0, false
	}
	s := daysFromCivil(year, month, day)*secPerDay + int64(hour*3600+minute*60+sec-off)
	return s*nsPerSec + int64(nsec), true
}

func isLeap(year int) bool {
	return year%4 == 0 && (year%100 != 0 || year%400 == 0)
}

// daysIn returns the number of days of month in year.
// REQUIRES: 1 <= month <= 12.
func daysIn(year, month int) int {
	if month == 2 {
		if isLeap(year) {
			return 29
		}
		return 28
	}
	return int(monthDays[month])
}

var monthDays = [13]uint8{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// daysFromCivil returns the days from 1970-01-01 to a proleptic Gregorian
// date: Howard Hinnant's days_from_civil, with the year counted from March
// so that the leap day ends the year.
//
// REQUIRES: year >= 1, so the era needs no floor division.
func daysFromCivil(year, month, day int) int64 {
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400 // [0, 399]
	mp := month - 3    // March = 0
	if mp < 0 {
		mp += 12
	}
	doy := (153*mp+2)/5 + day - 1          // [0, 365]
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return int64(era*146097 + doe - 719468)
}

// civilFromDays is the inverse of daysFromCivil (Hinnant's
// civil_from_days), in unsigned 32-bit arithmetic, which makes the
// divisions by constants cheaper.
//
// REQUIRES: days within int64 nanoseconds (±106752), so that days+719468
// is positive and fits uint32.
func civilFromDays(days int64) (year, month, day int) {
	z := uint32(days + 719468)
	era := z / 146097
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365]
	mp := (5*doy + 2) / 153                                // [0, 11], March = 0
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp) + 3
	year = int(era*400 + yoe)
	if month > 12 {
		month -= 12
		year++
	}
	return year, month, day
}

// splitNano splits Unix nanoseconds into days since the epoch, seconds of
// the day and nanoseconds of the second, flooring for times before 1970.
func splitNano(ns int64) (days int64, sod, nsec int) {
	s, n := ns/nsPerSec, ns%nsPerSec
	if n < 0 {
		n += nsPerSec
		s--
	}
	days, d := s/secPerDay, s%secPerDay
	if d < 0 {
		d += secPerDay
		days--
	}
	return days, int(d), int(n)
}

// futureSlack is how far after ref a time without a year may lie: clocks
// drift and queues delay, but a syslog line a year in the future is the
// previous year's.
const futureSlack = 31 * nsPerDay

// nearYear completes a time without a year with the year that puts it at
// most futureSlack after ref and closest to ref. Trying the year after
// ref's first covers a sender whose clock already passed New Year; a date
// that exists in none of the three years (Feb 29 far from a leap year)
// fails.
func nearYear(month, day, hour, minute, sec, nsec int, ref int64) (int64, bool) {
	days, _, _ := splitNano(ref)
	y, _, _ := civilFromDays(days)
	for cand := y + 1; cand >= y-1; cand-- {
		// INVARIANT: ns and ref are within about two years of each
		// other, so ns-ref cannot overflow.
		if ns, ok := unixNano(cand, month, day, hour, minute, sec, nsec, 0); ok && ns-ref <= futureSlack {
			return ns, true
		}
	}
	return 0, false
}
