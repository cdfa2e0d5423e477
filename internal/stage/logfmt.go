package stage

import (
	"fmt"
	"slices"

	"github.com/sluicelog/sluice/internal/logql"
)

// logfmtStage is `| logfmt [--strict] [--keep-empty] [params]`.
//
// A pair is key=value, key="quoted value" (JSON escapes) or key=; a
// standalone key has no '='. Keys are any bytes above space other than
// '=' and '"'; an unquoted value is the same. Without parameters every
// pair becomes a label with a sanitized name; pairs with an empty value
// and standalone keys are only kept with --keep-empty (as in Loki). With
// parameters only the requested keys are extracted, empty values and
// standalone keys included, and a requested key missing from the line
// gives an empty label. The first value of a key wins, and a key that is
// a stream label gets the suffix _extracted.
//
// Malformed pairs (=value, a=b=c, fo"o=bar, an unterminated quote, a
// bad escape) are skipped up to the next space (past the closing quote
// for a bad escape); with --strict the first one stops the scan with
// __error__=LogfmtParserErr and __error_details__ as Loki writes them,
// keeping what was extracted before it.
//
// Processing a line allocates nothing once the stage's buffers have
// grown, unless it sets an error.
type logfmtStage struct {
	strict    bool
	keepEmpty bool
	params    []logql.LabelExtraction // Expr is the key; nil: every key
	observed  *Observed               // the labels set; nil: all
	sc        jsonScanner             // unquotes values
	buf       rowBuf
	name      []byte

	// Without --strict a malformed pair sets nothing and the first value
	// of a key wins, so once every label the stage can still change for
	// the query has been given a value, no later pair matters and the
	// scan stops: all has a bit per parameter (by index), or per name
	// observed (wanted; a name set before the stage counts as given);
	// found are those given on the line at hand. all is 0 when the scan
	// never stops early (--strict; without parameters or hints; over 64).
	wanted []string
	all    uint64
	found  uint64
}

// stopEarly readies s's early stop for its parameters, or the names o
// observes; called when both are known.
func (s *logfmtStage) stopEarly() {
	s.all, s.wanted = 0, nil
	switch {
	case s.strict:
	case s.params != nil:
		if len(s.params) <= 64 {
			s.all = 1<<len(s.params) - 1
		}
	case s.observed != nil:
		for _, n := range s.observed.names {
			if n != ErrorLabel && n != ErrorDetailsLabel && !slices.Contains(s.wanted, n) {
				s.wanted = append(s.wanted, n)
			}
		}
		if len(s.wanted) > 0 && len(s.wanted) <= 64 {
			s.all = 1<<len(s.wanted) - 1
		}
	}
}

// give marks the wanted name n given.
func (s *logfmtStage) give(n string) {
	if i := slices.Index(s.wanted, n); i >= 0 {
		s.found |= 1 << i
	}
}

func newLogfmtStage(l *logql.LogfmtParser) (stage, error) {
	s := &logfmtStage{strict: l.Strict, keepEmpty: l.KeepEmpty}
	for _, p := range l.Params {
		if !validLabelName(p.Name) {
			return nil, fmt.Errorf("logfmt: invalid label name %q", p.Name)
		}
		if p.Expr == "" {
			p.Expr = p.Name
		}
		s.params = append(s.params, p)
	}
	s.stopEarly()
	return s, nil
}

func (s *logfmtStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	s.buf.reset()
	s.sc.reset(line, &s.buf)
	s.found = 0
	for k, n := range s.wanted {
		if _, ok := lb.lookup(n); ok {
			s.found |= 1 << k
		}
	}
	i := 0
	for {
		if s.all != 0 && s.found == s.all {
			break
		}
		for i < len(line) && line[i] <= ' ' {
			i++
		}
		if i >= len(line) {
			break
		}
		var errAt int
		var msg string
		i, errAt, msg = s.pair(i, lb)
		if msg == "" {
			continue
		}
		if s.strict {
			lb.ReplaceError(errLogfmt, fmt.Sprintf("logfmt syntax error at pos %d : %s", errAt+1, msg))
			return line, true
		}
		if msg == "invalid quoted value" {
			continue // i is past the closing quote
		}
		for i < len(line) && line[i] > ' ' {
			i++
		}
	}
	// As Loki, a requested key missing from the line gives "" unless the
	// label is set (a stream label included).
	for _, p := range s.params {
		if _, ok := lb.lookup(p.Name); !ok {
			setParsed(lb, &s.buf, s.observed, p.Name, "")
		}
	}
	return line, true
}

// pair reads the pair at i (not space) and extracts it. It returns the
// offset after the pair or, when the pair is malformed, where it stopped,
// the offset of the error and a message.
func (s *logfmtStage) pair(i int, lb *Labels) (next, errAt int, msg string) {
	line := s.sc.data
	ks := i
	for i < len(line) && line[i] > ' ' && line[i] != '=' && line[i] != '"' {
		i++
	}
	if i < len(line) && line[i] == '"' {
		return i, i, `unexpected '"'`
	}
	if i == ks {
		return i, i, "unexpected '='"
	}
	key := line[ks:i]
	if i >= len(line) || line[i] <= ' ' {
		s.extract(key, "", true, lb)
		return i, 0, ""
	}
	i++ // '='
	if i >= len(line) || line[i] <= ' ' {
		s.extract(key, "", true, lb)
		return i, 0, ""
	}
	if line[i] == '"' {
		// The value ends at the first quote not escaped by a backslash;
		// then it is unescaped. What follows the closing quote starts the
		// next pair, as in Loki's decoder.
		end := closingLogfmtQuote(line, i)
		if end < 0 {
			return len(line), len(line), "unterminated quoted value"
		}
		v, next := s.sc.str(i)
		if next < 0 {
			s.sc.errMsg, s.sc.errChar = "", false
			return end + 1, end + 1, "invalid quoted value"
		}
		s.extract(key, v, v == "", lb)
		return next, 0, ""
	}
	vs := i
	for i < len(line) && line[i] > ' ' {
		if line[i] == '=' || line[i] == '"' {
			return i, i, fmt.Sprintf("unexpected %q", line[i])
		}
		i++
	}
	s.extract(key, bytesView(line[vs:i]), false, lb)
	return i, 0, ""
}

// extract sets the label of a pair; empty is true for a standalone key
// or an empty value.
func (s *logfmtStage) extract(key []byte, value string, empty bool, lb *Labels) {
	if s.params != nil {
		for k, p := range s.params {
			if p.Expr == bytesView(key) {
				setParsed(lb, &s.buf, s.observed, p.Name, value)
				s.found |= 1 << k
			}
		}
		return
	}
	if empty && !s.keepEmpty {
		return
	}
	s.name = AppendLabelName(s.name[:0], key, true)
	setParsedName(lb, &s.buf, s.observed, s.name, value)
	if s.all != 0 {
		n := bytesView(s.name)
		if lb.IsStream(n) || lb.IsMeta(n) {
			return // set as n_extracted: never marked, so a query observing it reads every pair
		}
		s.give(n)
	}
}

// closingLogfmtQuote returns the offset of the quote that closes the
// quoted value at i, skipping quotes escaped by a backslash, or -1.
func closingLogfmtQuote(line []byte, i int) int {
	for j := i + 1; j < len(line); j++ {
		switch line[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}
