package stage

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
)

// labelFilterStage is a label filter in a pipeline. The semantics are
// those of Loki's code (its documentation is older in places):
//   - a string filter (= != =~ !~) compares the label's value, "" when
//     it is absent; __error__ is a plain label to it, so
//     `| __error__=""` drops the rows with errors;
//   - a number, duration or bytes filter drops a row without the label,
//     and when the value does not convert keeps the row and sets
//     __error__=LabelFilterErr with the conversion error in
//     __error_details__ (unless the row has an error already);
//   - an ip filter keeps every row that already has __error__, else
//     drops a row without the label;
//   - "and" and "or" combine filters left to right.
type labelFilterStage struct {
	pred labelPred
	// errorBlind: every filter in it is a string filter of a label
	// other than the error labels; it neither reads nor sets them.
	errorBlind bool
	// reads is the labels it reads; ok false when unknown.
	reads   []string
	readsOK bool
	// needLabel = needValue is an equality every row it keeps holds
	// (needValue not empty; none when needLabel is empty): PrefixRead.Needle.
	needLabel, needValue string
}

// labelPred reports whether a row passes; it may set an error label.
type labelPred func(lb *Labels) bool

func newLabelFilterStage(f logql.LabelFilter) (stage, error) {
	p, err := compileLabelFilter(f)
	if err != nil {
		return nil, err
	}
	reads, ok := appendFilterNames(nil, f)
	st := &labelFilterStage{pred: p, errorBlind: errorBlind(f), reads: reads, readsOK: ok}
	st.needLabel, st.needValue = requiredEquality(f)
	return st, nil
}

// requiredEquality returns an equality `name = value` that every row f
// keeps holds, with value not empty: f's own, or the longer of the two
// sides' of an and; none ("") for an or or another filter.
func requiredEquality(f logql.LabelFilter) (name, value string) {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		if !f.And {
			return "", ""
		}
		ln, lv := requiredEquality(f.Left)
		rn, rv := requiredEquality(f.Right)
		if len(rv) > len(lv) {
			return rn, rv
		}
		return ln, lv
	case *logql.LabelFilterString:
		if m := f.Matcher; m != nil && m.Type == logql.MatchEqual && m.Value != "" {
			return m.Name, m.Value
		}
	}
	return "", ""
}

// errorBlind reports whether f and every filter in it is a string
// filter of a label other than __error__ and __error_details__.
func errorBlind(f logql.LabelFilter) bool {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		return errorBlind(f.Left) && errorBlind(f.Right)
	case *logql.LabelFilterString:
		return f.Matcher != nil && f.Matcher.Name != ErrorLabel && f.Matcher.Name != ErrorDetailsLabel
	}
	return false
}

func (s *labelFilterStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	return line, s.pred(lb)
}

func compileLabelFilter(f logql.LabelFilter) (labelPred, error) {
	switch f := f.(type) {
	case *logql.LabelFilterBinary:
		l, err := compileLabelFilter(f.Left)
		if err != nil {
			return nil, err
		}
		r, err := compileLabelFilter(f.Right)
		if err != nil {
			return nil, err
		}
		// Loki evaluates the right side of "and" even when the left one
		// failed; that only differs in error labels of a dropped row.
		if f.And {
			return func(lb *Labels) bool { return l(lb) && r(lb) }, nil
		}
		return func(lb *Labels) bool { return l(lb) || r(lb) }, nil
	}
	leaf, err := compileLeaf(f)
	if err != nil {
		return nil, err
	}
	if match, name := leaf.match, leaf.name; match != nil {
		return func(lb *Labels) bool { return match(lb.Get(name)) }, nil
	}
	return convertingFilter(leaf.name, leaf.passErrors, leaf.test), nil
}

// filterLeaf is a label filter that is not "and" or "or": a string
// filter's match of the label's value ("" when absent), or a converting
// filter's test (passErrors: it keeps the rows that have an error).
type filterLeaf struct {
	name       string
	match      func(v string) bool
	test       func(v string) (bool, error)
	passErrors bool
}

// StringFilter returns the label filters fs (all must hold) as one test
// of label name's value, when every one is a string matcher of that
// label, or such matchers joined by and and or: a test that reads no
// other label, converts nothing and sets no error, so that a column's
// values can each be decided by it alone.
func StringFilter(fs []logql.LabelFilter, name string) (func(v string) bool, bool) {
	var one func(f logql.LabelFilter) func(string) bool
	one = func(f logql.LabelFilter) func(string) bool {
		switch f := f.(type) {
		case *logql.LabelFilterBinary:
			l, r := one(f.Left), one(f.Right)
			if l == nil || r == nil {
				return nil
			}
			if f.And {
				return func(v string) bool { return l(v) && r(v) }
			}
			return func(v string) bool { return l(v) || r(v) }
		case *logql.LabelFilterString:
			if f.Matcher == nil || f.Matcher.Name != name {
				return nil
			}
			m, err := StringMatch(f.Matcher)
			if err != nil {
				return nil
			}
			return m
		}
		return nil
	}
	tests := make([]func(string) bool, 0, len(fs))
	for _, f := range fs {
		t := one(f)
		if t == nil {
			return nil, false
		}
		tests = append(tests, t)
	}
	if len(tests) == 1 {
		return tests[0], true
	}
	return func(v string) bool {
		for _, t := range tests {
			if !t(v) {
				return false
			}
		}
		return true
	}, true
}

// PrefixFilter returns P when fs, the filters of label name, are one
// `name=~"P.*"` with P a literal of case: a value without a newline
// (`.` matches none) passes exactly when it starts with P; or, with
// exact, one `name="P"` (P not empty): a value passes when it is P.
func PrefixFilter(fs []logql.LabelFilter, name string) (prefix string, exact, ok bool) {
	if len(fs) != 1 {
		return "", false, false
	}
	f, ok := fs[0].(*logql.LabelFilterString)
	if !ok || f.Matcher == nil || f.Matcher.Name != name {
		return "", false, false
	}
	switch f.Matcher.Type {
	case logql.MatchEqual:
		return f.Matcher.Value, true, f.Matcher.Value != ""
	case logql.MatchRegexp:
	default:
		return "", false, false
	}
	re, err := syntax.Parse(f.Matcher.Value, syntax.Perl)
	if err != nil {
		return "", false, false
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) != 2 {
		return "", false, false
	}
	lit, star := re.Sub[0], re.Sub[1]
	if lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 || star.Op != syntax.OpStar ||
		star.Sub[0].Op != syntax.OpAnyCharNotNL && star.Sub[0].Op != syntax.OpAnyChar {
		return "", false, false
	}
	return string(lit.Rune), false, true
}

// StringMatch returns m's test of a value, as the label filter stage
// runs it: a regexp's literals searched first, or searched alone when
// the regexp is exactly "holds one of them" ((?i).*timeout.*) or "is one
// of them" (info|warn), where m.Matches runs the regexp on every value.
func StringMatch(m *logql.Matcher) (func(v string) bool, error) {
	if m.Type != logql.MatchRegexp && m.Type != logql.MatchNotRegexp {
		return m.Matches, nil
	}
	re, err := regexp.Compile("^(?:" + m.Value + ")$")
	if err != nil {
		return nil, fmt.Errorf("invalid regexp %q: %w", m.Value, err)
	}
	match, negate := regexpMatcher(re, m.Value, true), m.Type == logql.MatchNotRegexp
	return func(v string) bool { return match(stringBytes(v)) != negate }, nil
}

func compileLeaf(f logql.LabelFilter) (filterLeaf, error) {
	switch f := f.(type) {
	case *logql.LabelFilterString:
		m := f.Matcher
		if m == nil {
			return filterLeaf{}, fmt.Errorf("label filter without a matcher")
		}
		match, err := StringMatch(m)
		if err != nil {
			return filterLeaf{}, err
		}
		return filterLeaf{name: m.Name, match: match}, nil
	case *logql.LabelFilterNumber:
		op, want := f.Op, f.Value
		return filterLeaf{name: f.Name, test: func(v string) (bool, error) {
			if v == "" {
				return false, errEmptyNumber // the common failure: no allocation
			}
			got, err := ParseNumber(v)
			return compareOp(op, got, want), err
		}}, nil
	case *logql.LabelFilterDuration:
		op, want := f.Op, f.Value
		return filterLeaf{name: f.Name, test: func(v string) (bool, error) {
			got, err := ParseDuration(v)
			return compareOp(op, got, want), err
		}}, nil
	case *logql.LabelFilterBytes:
		op, want := f.Op, f.Value
		return filterLeaf{name: f.Name, test: func(v string) (bool, error) {
			got, err := ParseBytes(v)
			return compareOp(op, got, want), err
		}}, nil
	case *logql.LabelFilterIP:
		m, err := newIPMatcher(f.Value)
		if err != nil {
			return filterLeaf{}, err
		}
		negate := f.Negate
		return filterLeaf{name: f.Name, passErrors: true, test: func(v string) (bool, error) {
			return m.matchText(stringBytes(v)) != negate, nil
		}}, nil
	case nil:
		return filterLeaf{}, fmt.Errorf("empty label filter")
	default:
		return filterLeaf{}, fmt.Errorf("label filter %T is not supported", f)
	}
}

// ParseNumber is strconv.ParseFloat(s, 64), with the common case, a
// decimal integer of at most 15 digits (a status, a size, a latency in
// ms), read without it: every such integer is exactly a float64.
func ParseNumber(s string) (float64, error) {
	if n := len(s); n > 0 && n <= 15 {
		var v uint64
		for i := 0; i < n; i++ {
			c := s[i] - '0'
			if c > 9 {
				return strconv.ParseFloat(s, 64)
			}
			v = v*10 + uint64(c)
		}
		return float64(v), nil
	}
	return strconv.ParseFloat(s, 64)
}

// errEmptyNumber is strconv.ParseFloat's error for "", made once.
var errEmptyNumber = func() error {
	_, err := strconv.ParseFloat("", 64)
	return errors.New(err.Error())
}()

// convertingFilter wraps a comparison that converts the label's value
// with the rules shared by number, duration, bytes and ip filters;
// passErrors keeps the rows that have an error without testing them.
func convertingFilter(name string, passErrors bool, test func(v string) (bool, error)) labelPred {
	return func(lb *Labels) bool {
		if passErrors && lb.HasError() {
			return true
		}
		v, ok := lb.lookup(name)
		if !ok {
			return false
		}
		pass, err := test(v)
		if err != nil {
			lb.setError(errLabelFilt, err.Error())
			return true
		}
		return pass
	}
}

// CompareNumbers compares two numbers as a number label filter does.
func CompareNumbers(op logql.CmpOp, got, want float64) bool { return compareOp(op, got, want) }

func compareOp[T cmp.Ordered](op logql.CmpOp, got, want T) bool {
	switch op {
	case logql.CmpEq:
		return got == want
	case logql.CmpNe:
		return got != want
	case logql.CmpGt:
		return got > want
	case logql.CmpGe:
		return got >= want
	case logql.CmpLt:
		return got < want
	case logql.CmpLe:
		return got <= want
	}
	return false
}

// ParseDuration parses a label value as a duration the way Loki
// does for duration filters and unwrap duration(): Go's syntax, a
// sequence of decimal numbers with a unit each ("300ms", "1.5h",
// "2h45m"; units ns, us, µs, ms, s, m, h). A number without a unit is
// an error, except 0.
func ParseDuration(s string) (time.Duration, error) {
	return time.ParseDuration(s)
}

// bytesUnits maps the lower-cased unit of a byte size to its multiplier,
// as go-humanize's ParseBytes (which Loki uses) accepts them: SI (k, kB:
// 1000) and IEC (ki, KiB: 1024) units up to exa, and "b" or nothing for
// bytes.
var bytesUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "ti": 1 << 40, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pi": 1 << 50, "pib": 1 << 50,
	"e": 1e18, "eb": 1e18, "ei": 1 << 60, "eib": 1 << 60,
}

// ParseBytes parses a label value as a byte size the way Loki does
// for bytes filters and unwrap bytes() (go-humanize's ParseBytes): a
// decimal number, possibly with a fraction and ',' digit separators,
// then optional space and a case-insensitive unit ("42", "20B", "1.5
// KiB", "42MB", "1,000 kb"). Fractions of a byte are truncated; sizes of
// 2^64 and more are an error.
func ParseBytes(s string) (uint64, error) {
	n := 0
	comma := false
	for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.' || s[n] == ',') {
		comma = comma || s[n] == ','
		n++
	}
	num := s[:n]
	if comma {
		num = strings.ReplaceAll(num, ",", "")
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid byte size %q", s)
	}
	unit := strings.TrimSpace(s[n:])
	mult, ok := bytesUnits[unit]
	if !ok && len(unit) <= 3 {
		// Lower-case into an array: no allocation on the filter's path.
		var low [3]byte
		for i := range len(unit) {
			low[i] = unit[i]
			if c := unit[i]; c >= 'A' && c <= 'Z' {
				low[i] = c + 'a' - 'A'
			}
		}
		mult, ok = bytesUnits[string(low[:len(unit)])]
	}
	if !ok {
		return 0, fmt.Errorf("invalid byte size %q: unknown unit %q", s, unit)
	}
	f *= float64(mult)
	if f >= math.MaxUint64 {
		return 0, fmt.Errorf("byte size %q is too large", s)
	}
	return uint64(f), nil
}
