package timestamp

// LinePrefix reads a timestamp at the start of a text line, also one
// enclosed in a leading "[...]" (Apache's error log), and returns it and
// the bytes it spans, brackets included. Unlike ParsePrefix it never takes
// a bare run of digits for an epoch: at the start of a line that is a
// counter or an id. ref is as for ParsePrefix.
func LinePrefix(b []byte, ref int64) (ns int64, n int, ok bool) {
	return LinePrefixLayout(b, Auto, ref)
}

// LinePrefixLayout is LinePrefix for a source whose timestamps are in the
// given layout (see ParseLayout); Auto detects any format.
func LinePrefixLayout(b []byte, layout Layout, ref int64) (ns int64, n int, ok bool) {
	if len(b) > 0 && b[0] == '[' {
		ns, n, ok = ParseLayout(b[1:], layout, ref)
		if !ok || n+1 >= len(b) || b[n+1] != ']' || layout == Auto && isNumber(b[1:n+1]) {
			return 0, 0, false
		}
		return ns, n + 2, true
	}
	ns, n, ok = ParseLayout(b, layout, ref)
	if !ok || layout == Auto && isNumber(b[:n]) {
		return 0, 0, false
	}
	return ns, n, true
}

// isNumber reports whether b is digits and dots, the shape of an epoch.
func isNumber(b []byte) bool {
	if len(b) == 0 || !isDigit(b[0]) {
		return false
	}
	for _, c := range b {
		if !isDigit(c) && c != '.' {
			return false
		}
	}
	return true
}
