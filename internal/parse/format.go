package parse

import (
	"fmt"
	"strings"

	"github.com/sluicelog/sluice/internal/parse/json"
	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/logfmt"
	"github.com/sluicelog/sluice/internal/parse/pattern"
	"github.com/sluicelog/sluice/internal/parse/regex"
	"github.com/sluicelog/sluice/internal/parse/syslog"
	"github.com/sluicelog/sluice/internal/parse/text"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Formats lists the format names New accepts, for help texts.
const Formats = "auto, json, logfmt, text, syslog, pattern=EXPR, regexp=EXPR"

// NewLineParser returns the line parser for a format spec: one of the
// names in Formats. maxDepth limits JSON nesting (0 for the default);
// layout is the time format a pattern's time capture looks for first.
func NewLineParser(spec string, maxDepth int, layout timestamp.Layout) (lines.Parser, error) {
	name, arg, hasArg := strings.Cut(spec, "=")
	switch name {
	case "auto", "":
		if hasArg {
			break
		}
		return &Auto{json: json.Parser{MaxDepth: maxDepth}}, nil
	case "json", "ndjson", "jsonline":
		if hasArg {
			break
		}
		return &json.Parser{MaxDepth: maxDepth}, nil
	case "logfmt":
		if hasArg {
			break
		}
		return &logfmt.Parser{}, nil
	case "text", "plain":
		if hasArg {
			break
		}
		return &text.Parser{}, nil
	case "syslog":
		if hasArg {
			break
		}
		return &syslog.Parser{}, nil
	case "pattern":
		if !hasArg {
			return nil, fmt.Errorf("format pattern needs an expression: pattern=EXPR")
		}
		return pattern.CompileOptions(arg, pattern.Options{TimeLayout: layout})
	case "regexp", "regex":
		if !hasArg {
			return nil, fmt.Errorf("format regexp needs an expression: regexp=EXPR")
		}
		return regex.Compile(arg)
	default:
		return nil, fmt.Errorf("unknown format %q; known: %s", spec, Formats)
	}
	return nil, fmt.Errorf("format %s takes no argument (got %q)", name, spec)
}

// Auto chooses a format per line by its first bytes: '{' is JSON, '<'
// and a digit is syslog, a line starting with key=value is logfmt, and
// anything else is text. Choosing per line lets one input mix formats, as
// a container's output often does.
type Auto struct {
	json   json.Parser
	logfmt logfmt.Parser
	syslog syslog.Parser
	text   text.Parser
}

// ParseLine implements lines.Parser.
func (a *Auto) ParseLine(bl *record.Builder, line record.Span) {
	l := bl.Batch().Bytes(line)
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	switch {
	case i < len(l) && l[i] == '{':
		a.json.ParseLine(bl, line)
	case len(l) > 2 && l[0] == '<' && l[1]-'0' < 10:
		a.syslog.ParseLine(bl, line)
	case looksLogfmt(l):
		a.logfmt.ParseLine(bl, line)
	default:
		a.text.ParseLine(bl, line)
	}
}

// looksLogfmt reports whether l starts with key=value, where key is a run
// of letters, digits, '_', '.' or '-' and the value starts right after '='.
func looksLogfmt(l []byte) bool {
	for i, c := range l {
		switch {
		case c == '=':
			return i > 0 && i+1 < len(l) && l[i+1] != ' ' && l[i+1] != '='
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return false
}
