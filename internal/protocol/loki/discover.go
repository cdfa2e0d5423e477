package loki

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicelog/sluice/internal/record"
)

// Discovery is what Loki 3's distributor adds to what it is pushed, by
// default: a service_name stream label (discover_service_name) and a
// detected_level structured metadata (discover_log_levels), which Grafana's
// Logs Drilldown groups by.
type Discovery struct {
	// ServiceName lists the labels whose value, the first one set, a
	// stream without service_name gets as its service_name; without any,
	// it gets "unknown_service". Empty adds no service_name.
	ServiceName []string
	// LogLevels adds detected_level to each entry (see DetectLevel).
	LogLevels bool
}

// Names Loki gives what it discovers.
const (
	ServiceNameLabel = "service_name"
	UnknownService   = "unknown_service"
	LevelLabel       = "detected_level"
)

// DefaultServiceNameLabels is Loki's default discover_service_name.
var DefaultServiceNameLabels = []string{"service", "app", "application", "app_name", "name",
	"app_kubernetes_io_name", "container", "container_name", "k8s_container_name", "component",
	"workload", "job", "k8s_job_name"}

// DefaultDiscovery is Loki's default: both on.
var DefaultDiscovery = Discovery{ServiceName: DefaultServiceNameLabels, LogLevels: true}

// levelFields are the label, metadata and line field names a level is
// read from, in order (Loki's default log_level_fields).
var levelFields = []string{"level", "LEVEL", "Level", "log.level", "severity", "SEVERITY", "Severity",
	"SeverityText", "lvl", "LVL", "Lvl", "severity_text", "Severity_Text", "SEVERITY_TEXT"}

// severityNumber is the metadata name of an OTLP record's severity number.
const severityNumber = "severity_number"

// jsonLevelDepth is how deep in a JSON line a level field is looked for
// (the top level is depth 0).
const jsonLevelDepth = 2

// addServiceName adds service_name to ls, sorted, as Loki does: unless
// it has one, the value of the first of names it has, else
// unknown_service. The result is sorted.
func addServiceName(ls record.Labels, names []string) record.Labels {
	if len(names) == 0 {
		return ls
	}
	if _, ok := ls.Get(ServiceNameLabel); ok {
		return ls
	}
	v := UnknownService
	for _, n := range names {
		if x, ok := ls.Get(n); ok && x != "" {
			v = x
			break
		}
	}
	ls = append(ls, record.Label{Name: ServiceNameLabel, Value: v})
	slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

// DetectLevel returns an entry's detected_level as Loki's distributor
// finds it: from a level field among the stream's labels, else among its
// structured metadata, else from an OTLP severity_number, else from the
// line (a JSON or logfmt level field, else the first level keyword);
// "unknown" when nothing says. Known levels come out as trace, debug,
// info, warn, error, critical or fatal; other values of a level field as
// they are. buf is scratch, returned for reuse.
func DetectLevel(stream record.Labels, meta [][2][]byte, line, buf []byte) (string, []byte) {
	for _, f := range levelFields {
		if v, ok := stream.Get(f); ok {
			return normalizeLevel(v), buf
		}
	}
	for _, f := range levelFields {
		for _, kv := range meta {
			if string(kv[0]) == f {
				return normalizeLevel(string(kv[1])), buf
			}
		}
	}
	for _, kv := range meta {
		if string(kv[0]) == severityNumber {
			return otlpLevel(string(kv[1])), buf
		}
	}
	var v []byte
	switch {
	case isJSONObject(line):
		v = jsonLevel(line)
	case bytes.IndexByte(line, '=') >= 0:
		v = logfmtLevel(line)
	}
	if l, ok := knownLevel(v); ok {
		return l, buf
	}
	buf = append(buf[:0], line...)
	lowerASCII(buf)
	return keywordLevel(buf), buf
}

// knownLevel maps the spellings Loki knows to its level names.
func knownLevel(v []byte) (string, bool) {
	switch {
	case len(v) == 0:
		return "", false
	case eqFold(v, "trace"), eqFold(v, "trc"):
		return "trace", true
	case eqFold(v, "debug"), eqFold(v, "dbg"):
		return "debug", true
	case eqFold(v, "info"), eqFold(v, "inf"), eqFold(v, "information"):
		return "info", true
	case eqFold(v, "warn"), eqFold(v, "wrn"), eqFold(v, "warning"):
		return "warn", true
	case eqFold(v, "error"), eqFold(v, "err"):
		return "error", true
	case eqFold(v, "critical"):
		return "critical", true
	case eqFold(v, "fatal"):
		return "fatal", true
	}
	return "", false
}

func eqFold(v []byte, s string) bool { return len(v) == len(s) && strings.EqualFold(string(v), s) }

// normalizeLevel is a level field's value as Loki keeps it: a known
// spelling as its level name, any other value as it is.
func normalizeLevel(v string) string {
	if l, ok := knownLevel([]byte(v)); ok {
		return l
	}
	return v
}

// otlpLevel maps an OTLP severity number (1–24, in fours: trace, debug,
// info, warn, error, fatal) to a level, as Loki does.
func otlpLevel(s string) string {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return "info"
	case n <= 0:
		return "unknown"
	case n <= 4:
		return "trace"
	case n <= 8:
		return "debug"
	case n <= 12:
		return "info"
	case n <= 16:
		return "warn"
	case n <= 20:
		return "error"
	case n <= 24:
		return "fatal"
	}
	return "unknown"
}

// levelWords are the keywords a line's level is guessed from, the first
// one in the line winning (Loki's order breaks ties at one position).
var levelWords = []struct{ word, level string }{
	{"trace", "trace"}, {"debug", "debug"}, {"fatal", "fatal"}, {"critical", "critical"},
	{"error", "error"}, {"err", "error"}, {"warning", "warn"}, {"warn", "warn"}, {"info", "info"},
}

// keywordLevel returns the level of the first level keyword in lower, a
// lower-cased line, that stands as a word; "unknown" without one.
func keywordLevel(lower []byte) string {
	best, at := "unknown", len(lower)
	for _, w := range levelWords {
		pos := boundedIndex(lower[:min(len(lower), at+len(w.word))], w.word)
		if pos < 0 || pos >= at {
			continue
		}
		best, at = w.level, pos
		if at == 0 {
			break
		}
	}
	return best
}

// boundedIndex returns the first index of word in s that a word boundary
// precedes and follows (Loki's: a colon may follow, as in "error:", but
// not precede, as in "misc:error"), or -1.
func boundedIndex(s []byte, word string) int {
	off := 0
	for {
		i := bytes.Index(s[off:], []byte(word))
		if i < 0 {
			return -1
		}
		i += off
		if (i == 0 || strings.IndexByte(" \t\n[({\"'=|", s[i-1]) >= 0) &&
			(i+len(word) == len(s) || strings.IndexByte(" \t\n[]{}():,!\"'=|", s[i+len(word)]) >= 0) {
			return i
		}
		off = i + 1
	}
}

func lowerASCII(b []byte) {
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
}

// isJSONObject reports whether line, spaces aside, starts with { and ends
// with }.
func isJSONObject(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}'
}

// logfmtLevel returns the value of the first of levelFields (compared
// without case) among a logfmt line's keys, or nil.
func logfmtLevel(line []byte) []byte {
	best, rank := []byte(nil), len(levelFields)
	for i := 0; i < len(line); {
		for i < len(line) && line[i] <= ' ' {
			i++
		}
		ks := i
		for i < len(line) && line[i] > ' ' && line[i] != '=' && line[i] != '"' {
			i++
		}
		key := line[ks:i]
		var val []byte
		if i < len(line) && line[i] == '=' {
			i++
			if i < len(line) && line[i] == '"' {
				vs := i + 1
				for i = vs; i < len(line) && line[i] != '"'; i++ {
					if line[i] == '\\' {
						i++
					}
				}
				val = line[vs:min(i, len(line))]
				i++
			} else {
				vs := i
				for i < len(line) && line[i] > ' ' {
					i++
				}
				val = line[vs:i]
			}
		} else if i == ks {
			i++ // a stray byte
		}
		for r, f := range levelFields[:rank] {
			if len(key) == len(f) && strings.EqualFold(string(key), f) {
				best, rank = val, r
				break
			}
		}
		if rank == 0 {
			break
		}
	}
	return best
}

// jsonLevel returns the string value of the first field named as one of
// levelFields in a JSON object line, looked for to jsonLevelDepth, or
// nil. It reads leniently: a malformed line gives nil or what it found.
func jsonLevel(line []byte) []byte {
	i := bytes.IndexByte(line, '{')
	v, _ := jsonObjectLevel(line, i, 0)
	return v
}

// jsonObjectLevel scans the object at line[i] == '{'; it returns the
// level found, if any, and the offset after the object.
func jsonObjectLevel(line []byte, i, depth int) ([]byte, int) {
	i++
	for {
		i = skipSpace(line, i)
		if i >= len(line) {
			return nil, i
		}
		switch line[i] {
		case '}':
			return nil, i + 1
		case ',':
			i++
			continue
		case '"':
		default:
			return nil, len(line)
		}
		key, next := jsonString(line, i)
		i = skipSpace(line, next)
		if i >= len(line) || line[i] != ':' {
			return nil, len(line)
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return nil, i
		}
		switch line[i] {
		case '"':
			val, next := jsonString(line, i)
			if slices.Contains(levelFields, string(key)) {
				return val, next
			}
			i = next
		case '{':
			if depth+1 < jsonLevelDepth {
				if v, next := jsonObjectLevel(line, i, depth+1); v != nil {
					return v, next
				} else {
					i = next
				}
			} else {
				i = skipValue(line, i)
			}
		default:
			i = skipValue(line, i)
		}
	}
}

// jsonString returns the raw text of the string at line[i] == '"' and
// the offset after it.
func jsonString(line []byte, i int) ([]byte, int) {
	s := i + 1
	for i = s; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			return line[s:i], i + 1
		}
	}
	return line[s:], len(line)
}

// skipValue returns the offset after the value at line[i].
func skipValue(line []byte, i int) int {
	depth := 0
	for ; i < len(line); i++ {
		switch c := line[i]; c {
		case '"':
			_, next := jsonString(line, i)
			i = next - 1
			if depth == 0 {
				return next
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

func skipSpace(line []byte, i int) int {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\n' || line[i] == '\r') {
		i++
	}
	return i
}
