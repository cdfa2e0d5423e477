package timestamp

// Parse reads a whole timestamp in any supported format and returns it as
// Unix nanoseconds. ref (Unix ns, usually the receive time) supplies what a
// format leaves out, such as the year of a syslog timestamp.
func Parse(b []byte, ref int64) (ns int64, ok bool) {
	ns, n, ok := ParsePrefix(b, ref)
	return ns, ok && n == len(b)
}

// ParsePrefix reads a timestamp at the start of b and returns it as Unix
// nanoseconds and the number of bytes it spans. ref (Unix ns, usually the
// receive time) supplies only the year of formats that have none (syslog).
//
// The formats are listed in the package documentation. An epoch in digits
// is accepted only when it is the whole of b, never as a prefix.
func ParsePrefix(b []byte, ref int64) (ns int64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch c := b[0]; {
	case isDigit(c):
		switch {
		case len(b) > 4 && b[4] == '-':
			return parseISO(b)
		case len(b) > 8 && b[8] == '-':
			return parseCompact(b)
		case len(b) > 2 && b[2] == '/':
			return parseCLF(b)
		}
		// Epoch text needs nine digits or more (1973 onwards in seconds):
		// shorter digit runs are dates and counters ("081109"), not times.
		if digits := leadingDigits(b); digits < minEpochDigits {
			return 0, 0, false
		}
		ns, ok = parseEpoch(b)
		return ns, len(b), ok
	case isLetter(c):
		return parseNamed(b, ref)
	}
	return 0, 0, false
}

func isDigit(c byte) bool { return c-'0' <= 9 }

// minEpochDigits is the fewest integer digits epoch text may have.
const minEpochDigits = 9

func leadingDigits(b []byte) int {
	n := 0
	for n < len(b) && isDigit(b[n]) {
		n++
	}
	return n
}

func isLetter(c byte) bool { return (c|0x20)-'a' <= 'z'-'a' }

// boundary reports whether a timestamp may end at b[i]: the input ends
// there or the byte cannot continue a number or a word.
func boundary(b []byte, i int) bool {
	return i >= len(b) || !isDigit(b[i]) && !isLetter(b[i])
}

// num2 returns the two-digit number at b[i:], or -1 if either byte is not
// a digit. REQUIRES: i+2 <= len(b).
func num2(b []byte, i int) int {
	d0, d1 := int(b[i])-'0', int(b[i+1])-'0'
	if uint(d0) > 9 || uint(d1) > 9 {
		return -1
	}
	return d0*10 + d1
}

// num4 returns the four-digit number at b[i:], or -1.
// REQUIRES: i+4 <= len(b).
func num4(b []byte, i int) int {
	hi, lo := num2(b, i), num2(b, i+2)
	if hi < 0 || lo < 0 {
		return -1
	}
	return hi*100 + lo
}

// numN reads 1 to maxDigits digits at b[i:] and returns the number and
// the index after it; the number is -1 when b[i] is not a digit.
func numN(b []byte, i, maxDigits int) (v, end int) {
	v, end = 0, i
	for end < len(b) && end-i < maxDigits && isDigit(b[end]) {
		v = v*10 + int(b[end]-'0')
		end++
	}
	if end == i {
		return -1, i
	}
	return v, end
}

// pow10 scales a fraction of k digits to nanoseconds: pow10[9-k].
var pow10 = [10]int{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// frac reads up to 9 fraction digits at b[i:] and returns them as
// nanoseconds and the index after them. A tenth digit is left for the
// caller's boundary check to reject. REQUIRES: isDigit(b[i]).
func frac(b []byte, i int) (nsec, end int) {
	end = i
	for end < len(b) && end-i < 9 && isDigit(b[end]) {
		nsec = nsec*10 + int(b[end]-'0')
		end++
	}
	return nsec * pow10[9-(end-i)], end
}

// optFrac reads a fraction introduced by one of the separators at b[i]
// when a digit follows it, else returns 0, i.
func optFrac(b []byte, i int, sepComma bool) (nsec, end int) {
	if i+1 < len(b) && (b[i] == '.' || sepComma && b[i] == ',') && isDigit(b[i+1]) {
		return frac(b, i+1)
	}
	return 0, i
}

// hms reads "15:04:05" at b[i:]; a field is -1 when not two digits.
// REQUIRES: i+8 <= len(b).
func hms(b []byte, i int, sep byte) (hour, minute, sec int) {
	if b[i+2] != sep || b[i+5] != sep {
		return -1, -1, -1
	}
	return num2(b, i), num2(b, i+3), num2(b, i+6)
}
