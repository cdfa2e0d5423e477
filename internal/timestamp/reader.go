package timestamp

import "encoding/binary"

// Reader parses timestamps as Parse does, remembering the date of the last
// ISO 8601 timestamp it read. Logs come in time order, so consecutive
// timestamps nearly always share their date, and reusing its day count
// skips the date's parsing, validation and calendar arithmetic.
//
// The zero value is ready to use. Concurrency: one goroutine.
type Reader struct {
	date8 uint64 // "2026-01-", the date's first 8 bytes
	date2 uint16 // "15", its last 2
	days  int64  // days from 1970-01-01 to the date
	valid bool
}

// Parse is Parse with the date cache.
func (r *Reader) Parse(b []byte, ref int64) (int64, bool) {
	if len(b) >= 19 && r.valid && binary.LittleEndian.Uint64(b) == r.date8 &&
		binary.LittleEndian.Uint16(b[8:]) == r.date2 {
		switch b[10] {
		case 'T', 't', ' ':
			hour, minute, sec := hms(b, 11, ':')
			if uint(hour) > 23 || uint(minute) > 59 || uint(sec) > 60 {
				return 0, false
			}
			nsec, i := optFrac(b, 19, true)
			off, i, ok := zone(b, i)
			if !ok || i != len(b) {
				return 0, false
			}
			s := r.days*secPerDay + int64(hour*3600+minute*60+sec-off)
			return s*nsPerSec + int64(nsec), true
		}
	}
	ns, ok := Parse(b, ref)
	if ok && len(b) >= 19 && b[4] == '-' && b[7] == '-' && (b[10] == 'T' || b[10] == 't' || b[10] == ' ') {
		// A date Parse accepted: remember it.
		r.date8 = binary.LittleEndian.Uint64(b)
		r.date2 = binary.LittleEndian.Uint16(b[8:])
		r.days = daysFromCivil(num4(b, 0), num2(b, 5), num2(b, 8))
		r.valid = true
	}
	return ns, ok
}
