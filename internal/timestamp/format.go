package timestamp

// rfc3339Nano is the shape AppendRFC3339 fills in.
const rfc3339Nano = "0000-00-00T00:00:00.000000000Z"

// AppendRFC3339 appends ns as RFC 3339 in UTC with exactly 9 fraction
// digits, e.g. 2026-01-15T08:00:00.000870000Z. Every int64 has a 4-digit
// year (1677–2262), so the output is always 30 bytes and sorts as ns does.
func AppendRFC3339(dst []byte, ns int64) []byte {
	days, sod, nsec := splitNano(ns)
	year, month, day := civilFromDays(days)
	n := len(dst)
	dst = append(dst, rfc3339Nano...)
	b := dst[n : n+len(rfc3339Nano) : n+len(rfc3339Nano)]
	put2(b[0:], year/100)
	put2(b[2:], year%100)
	put2(b[5:], month)
	put2(b[8:], day)
	put2(b[11:], sod/3600)
	put2(b[14:], sod/60%60)
	put2(b[17:], sod%60)
	b[20] = byte('0' + nsec/1e8)
	nsec %= 1e8
	put2(b[21:], nsec/1e6)
	put2(b[23:], nsec/1e4%100)
	put2(b[25:], nsec/100%100)
	put2(b[27:], nsec%100)
	return dst
}

// put2 writes v (0–99) as two digits at b[0:2].
func put2(b []byte, v int) {
	b[0] = byte('0' + v/10)
	b[1] = byte('0' + v%10)
}
