// Package timestamp reads the timestamps found in logs, fast: a
// hand-written parser per format instead of time.Parse per line.
//
// It owns only time formats; which field holds the time is the record
// package's business.
//
// # Entry points
//
//   - [ParsePrefix] detects the format of a timestamp at the start of a
//     line and says how many bytes it spans. It accepts only formats that
//     cannot be mistaken for something else at the start of a line.
//   - [Parse] reads a whole value (a "time" field) in any format
//     ParsePrefix knows, and also an epoch written as decimal digits.
//   - [ParseLayout] reads a named [Layout] the caller chose, for formats
//     too ambiguous to detect (HDFS "081109 203615", Spark "17/06/09
//     20:10:40", Android logcat "03-17 16:13:38.811").
//   - [FromEpoch] and [FromEpochFloat] scale a numeric epoch by magnitude.
//   - [AppendRFC3339] prints a time the way sluice shows it.
//
// # Formats detected by ParsePrefix (and Parse)
//
//	2026-01-15T08:00:00Z               RFC 3339 / ISO 8601: 'T', 't' or ' '
//	2026-01-15 08:00:00,123+07:00      between date and time; 1–9 fraction
//	2026-01-15T08:00:00.123456-0700    digits after '.' or ','; offset 'Z',
//	2026-01-15T08:00:00+07             'z', ±hh:mm, ±hhmm or ±hh attached,
//	2026-01-15 08:00:00 +0700          or ±hhmm, ±hh:mm after one space;
//	2015-10-18 18:01:47,978            none means UTC
//	2005-06-03-15.42.50.675872         IBM DB2 (BGL), UTC
//	20171223-22:15:29:606              yyyyMMdd-H:m:s:S (HealthApp): fields
//	                                   of 1–2 digits, then an integer count
//	                                   of milliseconds, UTC
//	02/Jan/2006:15:04:05 -0700         common log format (nginx, Apache)
//	Jan  2 15:04:05.123                syslog RFC 3164 ("Jan _2", "Jun 14",
//	                                   "Nov 9"); the year comes from ref
//	Sun Dec 04 04:47:44 2005           ctime/asctime (Apache error log),
//	Fri Sep 09 10:42:29.902022 2011    optional fraction; UTC
//
// Parse accepts, besides, an epoch written as 1–19 decimal digits with an
// optional '.' fraction ("1768464000", "1768464000123", "1768464000.123"),
// scaled like [FromEpoch]. ParsePrefix accepts such digits only when they
// run to the end of b: at the start of a line, a number is far more often a
// line number, a pid or a date in another layout (HDFS "081109 203615")
// than an epoch. Since Parse is ParsePrefix plus "nothing may follow", both
// rules hold by construction.
//
// # Rules common to every format
//
//   - A prefix ends where the format ends, and the byte after it must not
//     be an ASCII letter or digit, so that "2026-01-15T08:00:00Zulu" or a
//     tenth fraction digit is a mismatch, not a shorter timestamp. A '.' or
//     ',' not followed by a digit ends the timestamp before it (Windows CBS
//     logs write "2016-09-28 04:30:30, Info").
//   - Ranges are checked: month 1–12, day within the month (leap years
//     included), hour 0–23, minute 0–59, second 0–60, offset within
//     ±23:59. A leap second :60 is read as second 0 of the next minute,
//     which is what Unix time (and timegm) makes of it.
//   - Years outside 1678–2261 are rejected, so that every accepted time,
//     offset included, fits int64 nanoseconds; nothing ever overflows.
//   - Month and weekday names match in any letter case. Weekday names are
//     checked to be names, not checked against the date (as time.Parse).
//   - Formats without a zone are UTC; the local zone is never consulted.
//   - Formats without a year (syslog, logcat) take the year that puts the
//     time at most 31 days after ref and as close to it as possible, so a
//     December line received in January belongs to the previous year.
//
// This package must never allocate per call, call time.Parse or
// time.Date on a hot path, read the local time zone, or panic on input.
// All functions are safe for concurrent use.
package timestamp
