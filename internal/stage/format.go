package stage

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/logql"
)

// lineFormatStage is `| line_format "template"`: the line becomes the
// output of a Go text/template whose data is the row's labels (.name; an
// absent label is ""), with Loki's template functions (templateFuncs).
// When the template fails the row keeps its line and gets
// __error__=TemplateFormatErr with the error in __error_details__.
type lineFormatStage struct {
	tmpl *template.Template
	tc   *templateCtx
	data map[string]string
	out  appendWriter
	// plain, when ok, is tmpl as text and label values to append.
	plain   plainTemplate
	plainOK bool
}

func newLineFormatStage(f *logql.LineFormat) (stage, error) {
	tc := &templateCtx{}
	t, err := parseTemplate("line", f.Template, tc)
	if err != nil {
		return nil, fmt.Errorf("line_format: %w", err)
	}
	s := &lineFormatStage{tmpl: t, tc: tc, data: map[string]string{}}
	s.plain, s.plainOK = plainOf(t)
	return s, nil
}

func (s *lineFormatStage) process(ts int64, line []byte, lb *Labels) ([]byte, bool) {
	if s.plainOK {
		s.out.reset()
		for _, p := range s.plain {
			v := p.text
			if p.isLabel {
				v = lb.Get(p.label) // an absent label prints as "" (missingkey=zero)
				for _, fn := range p.fns {
					v = fn(v)
				}
			}
			if _, err := s.out.WriteString(v); err != nil {
				lb.ReplaceError(errTemplate, err.Error())
				return line, true
			}
		}
		return s.out.b, true
	}
	s.tc.row(ts, line)
	templateData(s.data, lb)
	s.out.reset()
	if err := s.tmpl.Execute(&s.out, s.data); err != nil {
		lb.ReplaceError(errTemplate, err.Error())
		return line, true
	}
	return s.out.b, true
}

// labelFormatStage is `| label_format a=b, c="{{...}}"`. A rename sets
// dst to src's value and removes src (nothing happens when src is
// absent); a template sets dst to its output, the template seeing the
// labels as they were at the first template of the stage (renames
// before it done), as in Loki. A failing template sets
// __error__=TemplateFormatErr and leaves dst as it was. A label can be
// assigned once per stage.
type labelFormatStage struct {
	items []labelFormatItem
	tc    *templateCtx
	data  map[string]string
	out   appendWriter
	buf   rowBuf
}

type labelFormatItem struct {
	dst, src string
	tmpl     *template.Template // nil for a rename
}

func newLabelFormatStage(f *logql.LabelFormat) (stage, error) {
	if len(f.Items) == 0 {
		return nil, fmt.Errorf("label_format: no labels given")
	}
	s := &labelFormatStage{tc: &templateCtx{}, data: map[string]string{}}
	seen := map[string]bool{}
	for _, it := range f.Items {
		if !validLabelName(it.Dst) {
			return nil, fmt.Errorf("label_format: invalid label name %q", it.Dst)
		}
		if it.Dst == ErrorLabel {
			// Loki's words: the error label is the pipeline's to set.
			return nil, fmt.Errorf("label_format: %s cannot be formatted", ErrorLabel)
		}
		if seen[it.Dst] {
			return nil, fmt.Errorf("label_format: label %s is assigned more than once; use a second label_format", it.Dst)
		}
		seen[it.Dst] = true
		item := labelFormatItem{dst: it.Dst, src: it.Src}
		if it.Src == "" {
			t, err := parseTemplate("label", it.Template, s.tc)
			if err != nil {
				return nil, fmt.Errorf("label_format %s: %w", it.Dst, err)
			}
			item.tmpl = t
		}
		s.items = append(s.items, item)
	}
	return s, nil
}

func (s *labelFormatStage) process(ts int64, line []byte, lb *Labels) ([]byte, bool) {
	s.buf.reset()
	ready := false
	for _, it := range s.items {
		if it.tmpl == nil {
			if it.src == it.dst {
				continue
			}
			if v, ok := lb.lookup(it.src); ok {
				lb.set(it.dst, v)
				lb.Del(it.src)
			}
			continue
		}
		if !ready {
			s.tc.row(ts, line)
			templateData(s.data, lb)
			ready = true
		}
		s.out.reset()
		if err := it.tmpl.Execute(&s.out, s.data); err != nil {
			lb.ReplaceError(errTemplate, err.Error())
			continue
		}
		lb.set(it.dst, s.buf.str(s.out.b))
	}
	return line, true
}

// plainTemplate is a template of text and label references alone
// ({{.name}}, {{- .name }}...), each perhaps through functions of one
// string to a string ({{.msg | ToUpper}}, {{lower .name}}), executed by
// appending the text and the labels' values as text/template prints
// them, without its reflection: line_format "{{.log}}" was a sixth of
// the time of a query parsing the JSON inside a field
// (k8s-inner-errors), and text/template half of a count of the
// messages a `{{.msg | ToUpper}}` line holds TIMEOUT in.
type plainTemplate []plainPart

type plainPart struct {
	text    string
	label   string
	isLabel bool
	fns     []func(string) string // applied to the label's value in order
}

// oneLabel returns the label when the template is one label's value
// alone, unchanged.
func (p plainTemplate) oneLabel() (string, bool) {
	if len(p) != 1 || !p[0].isLabel || len(p[0].fns) > 0 {
		return "", false
	}
	return p[0].label, true
}

// stringFuncs are the template functions of one string to a string
// (ToUpper, lower, trim...), the very functions templateFuncs gives
// text/template.
var stringFuncs = func() map[string]func(string) string {
	m := map[string]func(string) string{}
	for name, f := range templateFuncs(&templateCtx{}) {
		if fn, ok := f.(func(string) string); ok {
			m[name] = fn
		}
	}
	return m
}()

// FromLabels reports whether a line_format template's output depends on
// the row's labels only, not on its line, its time or the clock: text,
// label references, functions of those and conditions on them.
func FromLabels(src string) bool {
	_, row, ok := templateRefs(src)
	return ok && !row
}

// plainOf returns t as a plainTemplate, if it is one.
func plainOf(t *template.Template) (plainTemplate, bool) {
	if t.Tree == nil || t.Tree.Root == nil {
		return nil, false
	}
	var p plainTemplate
	for _, n := range t.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			p = append(p, plainPart{text: string(n.Text)})
		case *parse.ActionNode:
			part, ok := plainAction(n.Pipe)
			if !ok {
				return nil, false
			}
			p = append(p, part)
		default:
			return nil, false
		}
	}
	return p, true
}

// plainAction returns an action's pipeline as a label reference and
// the functions it is piped through: .name, then perhaps `| F` for each
// F of stringFuncs; or `F .name`, then perhaps `| G`...
func plainAction(pipe *parse.PipeNode) (plainPart, bool) {
	if pipe == nil || len(pipe.Decl) > 0 || len(pipe.Cmds) == 0 {
		return plainPart{}, false
	}
	fn := func(n parse.Node) (func(string) string, bool) {
		id, ok := n.(*parse.IdentifierNode)
		if !ok {
			return nil, false
		}
		f, ok := stringFuncs[id.Ident]
		return f, ok
	}
	var part plainPart
	args := pipe.Cmds[0].Args
	switch len(args) {
	case 1:
	case 2:
		f, ok := fn(args[0])
		if !ok {
			return plainPart{}, false
		}
		part.fns = append(part.fns, f)
		args = args[1:]
	default:
		return plainPart{}, false
	}
	field, ok := args[0].(*parse.FieldNode)
	if !ok || len(field.Ident) != 1 {
		return plainPart{}, false
	}
	part.label, part.isLabel = field.Ident[0], true
	for _, c := range pipe.Cmds[1:] {
		if len(c.Args) != 1 {
			return plainPart{}, false
		}
		f, ok := fn(c.Args[0])
		if !ok {
			return plainPart{}, false
		}
		part.fns = append(part.fns, f)
	}
	return part, true
}

// templateData fills m with the row's labels.
func templateData(m map[string]string, lb *Labels) {
	clear(m)
	for _, l := range lb.cur {
		m[l.Name] = l.Value
	}
}

// appendWriter is an io.Writer that appends to a reused buffer.
type appendWriter struct {
	b []byte
}

func (w *appendWriter) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > maxTemplateOutput {
		return 0, errTemplateTooLarge
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// WriteString is Write for a string.
func (w *appendWriter) WriteString(s string) (int, error) {
	if len(w.b)+len(s) > maxTemplateOutput {
		return 0, errTemplateTooLarge
	}
	w.b = append(w.b, s...)
	return len(s), nil
}

func (w *appendWriter) reset() {
	if cap(w.b) > maxRowBuf {
		w.b = nil
	}
	w.b = w.b[:0]
}

// maxTemplateOutput bounds what one template writes for a row, so that
// a template such as `{{ repeat 1000000000 __line__ }}` fails instead of
// exhausting memory.
const maxTemplateOutput = 16 << 20

var errTemplateTooLarge = errors.New("template output is larger than 16 MiB")

// templateCtx is the row a stage's templates are executing for, which
// __line__ and __timestamp__ return, and the caches of its functions.
type templateCtx struct {
	line  string
	ts    int64
	res   map[string]*regexp.Regexp
	zones map[string]*time.Location
}

func (c *templateCtx) row(ts int64, line []byte) {
	c.line, c.ts = bytesView(line), ts
}

// parseTemplate parses a template with the functions of c, missing keys
// giving "" as in Loki.
func parseTemplate(name, src string, c *templateCtx) (*template.Template, error) {
	return template.New(name).Option("missingkey=zero").Funcs(templateFuncs(c)).Parse(src)
}

// templateFuncs returns Loki's template functions: those of its
// documentation (most from sprig) with sprig's argument order, the piped
// value last.
func templateFuncs(c *templateCtx) template.FuncMap {
	return template.FuncMap{
		"__line__":      func() string { return c.line },
		"__timestamp__": func() time.Time { return time.Unix(0, c.ts) },

		// Strings. The capitalized names are Go's strings functions with
		// their own argument order, which Loki keeps for old queries.
		"ToLower":    strings.ToLower,
		"ToUpper":    strings.ToUpper,
		"Replace":    strings.Replace,
		"Trim":       strings.Trim,
		"TrimLeft":   strings.TrimLeft,
		"TrimRight":  strings.TrimRight,
		"TrimPrefix": strings.TrimPrefix,
		"TrimSuffix": strings.TrimSuffix,
		"TrimSpace":  strings.TrimSpace,
		"lower":      strings.ToLower,
		"upper":      strings.ToUpper,
		"title":      title,
		"trim":       strings.TrimSpace,
		"trimSpace":  strings.TrimSpace,
		"trimAll":    func(cutset, s string) string { return strings.Trim(s, cutset) },
		"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"substr":     substr,
		"trunc":      trunc,
		"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
		"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
		"indent":     indent,
		"nindent":    func(n int, s string) string { return "\n" + indent(n, s) },
		"repeat":     repeat,
		"default":    dfault,
		"alignLeft":  alignLeft,
		"alignRight": alignRight,
		"urlencode":  url.QueryEscape,
		"urldecode":  url.QueryUnescape,
		"b64enc":     func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"b64dec":     b64dec,
		"fromJson":   fromJSON,

		// Regular expressions.
		"count": func(expr, s string) (int, error) {
			re, err := c.regexp(expr)
			if err != nil {
				return 0, err
			}
			return len(re.FindAllStringIndex(s, -1)), nil
		},
		"regexReplaceAll": func(expr, s, repl string) (string, error) {
			re, err := c.regexp(expr)
			if err != nil {
				return "", err
			}
			return re.ReplaceAllString(s, repl), nil
		},
		"regexReplaceAllLiteral": func(expr, s, repl string) (string, error) {
			re, err := c.regexp(expr)
			if err != nil {
				return "", err
			}
			return re.ReplaceAllLiteralString(s, repl), nil
		},

		// Conversions.
		"bytes": func(s string) (float64, error) {
			n, err := ParseBytes(s)
			return float64(n), err
		},
		"duration":         durationSeconds,
		"duration_seconds": durationSeconds,
		"int":              func(v any) int { return int(toInt64(v)) },
		"int64":            toInt64,
		"float64":          toFloat64,

		// Dates, in the server's time zone as in Loki.
		"now":  time.Now,
		"date": date,
		"toDate": func(layout, s string) time.Time {
			t, _ := time.ParseInLocation(layout, s, time.Local)
			return t
		},
		"toDateInZone": func(layout, zone, s string) time.Time {
			t, _ := time.ParseInLocation(layout, s, c.zone(zone))
			return t
		},
		"unixEpoch":       func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) },
		"unixEpochMillis": func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) },
		"unixEpochNanos":  func(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) },
		"unixToTime":      unixToTime,

		// Arithmetic: integers (sprig truncates) and floats.
		"add": func(vs ...any) int64 {
			var n int64
			for _, v := range vs {
				n += toInt64(v)
			}
			return n
		},
		"sub": func(a, b any) int64 { return toInt64(a) - toInt64(b) },
		"mul": func(a any, vs ...any) int64 {
			n := toInt64(a)
			for _, v := range vs {
				n *= toInt64(v)
			}
			return n
		},
		"div": func(a, b any) (int64, error) {
			d := toInt64(b)
			if d == 0 {
				return 0, errors.New("division by zero")
			}
			return toInt64(a) / d, nil
		},
		"mod": func(a, b any) (int64, error) {
			d := toInt64(b)
			if d == 0 {
				return 0, errors.New("division by zero")
			}
			return toInt64(a) % d, nil
		},
		"max": func(a any, vs ...any) int64 {
			n := toInt64(a)
			for _, v := range vs {
				n = max(n, toInt64(v))
			}
			return n
		},
		"min": func(a any, vs ...any) int64 {
			n := toInt64(a)
			for _, v := range vs {
				n = min(n, toInt64(v))
			}
			return n
		},
		"addf": func(vs ...any) (float64, error) { return decimalOp('+', 0, vs) },
		"subf": func(a any, vs ...any) (float64, error) { return decimalOp('-', a, vs) },
		"mulf": func(a any, vs ...any) (float64, error) { return decimalOp('*', a, vs) },
		"divf": func(a any, vs ...any) (float64, error) { return decimalOp('/', a, vs) },
		"maxf": func(a any, vs ...any) float64 {
			f := toFloat64(a)
			for _, v := range vs {
				f = math.Max(f, toFloat64(v))
			}
			return f
		},
		"minf": func(a any, vs ...any) float64 {
			f := toFloat64(a)
			for _, v := range vs {
				f = math.Min(f, toFloat64(v))
			}
			return f
		},
		"ceil":  func(a any) float64 { return math.Ceil(toFloat64(a)) },
		"floor": func(a any) float64 { return math.Floor(toFloat64(a)) },
		"round": round,
	}
}

func (c *templateCtx) regexp(expr string) (*regexp.Regexp, error) {
	if re, ok := c.res[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	if c.res == nil || len(c.res) >= 64 {
		c.res = map[string]*regexp.Regexp{}
	}
	c.res[expr] = re
	return re, nil
}

// zone returns the named location, UTC when it is unknown (as sprig).
func (c *templateCtx) zone(name string) *time.Location {
	if loc, ok := c.zones[name]; ok {
		return loc
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = time.UTC
	}
	if c.zones == nil || len(c.zones) >= 64 {
		c.zones = map[string]*time.Location{}
	}
	c.zones[name] = loc
	return loc
}

// title upper-cases the first letter of each word, words being separated
// by spaces and ASCII punctuation.
func title(s string) string {
	prev := ' '
	return strings.Map(func(r rune) rune {
		sep := wordSeparator(prev)
		prev = r
		if sep {
			return unicode.ToTitle(r)
		}
		return r
	}, s)
}

func wordSeparator(r rune) bool {
	if r < utf8.RuneSelf {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}
	return unicode.IsSpace(r)
}

// substr is sprig's: s[:end] when start < 0, s[start:] when end < 0 or
// past the end, else s[start:end]; out-of-range bounds give "" instead of
// failing.
func substr(start, end int, s string) string {
	switch {
	case start < 0:
		return s[:min(max(end, 0), len(s))]
	case start > len(s):
		return ""
	case end < 0 || end > len(s):
		return s[start:]
	case end < start:
		return ""
	}
	return s[start:end]
}

// trunc keeps the first n bytes of s, or with n < 0 the last -n.
func trunc(n int, s string) string {
	switch {
	case n < 0 && len(s)+n > 0:
		return s[len(s)+n:]
	case n >= 0 && len(s) > n:
		return s[:n]
	}
	return s
}

func indent(n int, s string) string {
	pad := strings.Repeat(" ", max(n, 0))
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func repeat(n int, s string) (string, error) {
	if n <= 0 || s == "" {
		return "", nil
	}
	if len(s) > maxTemplateOutput/n {
		return "", errTemplateTooLarge
	}
	return strings.Repeat(s, n), nil
}

// dfault is sprig's default: given when it is set and not empty, else d.
func dfault(d any, given ...any) any {
	if len(given) == 0 || empty(given[0]) {
		return d
	}
	return given[0]
}

func empty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return rv.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	case reflect.Struct:
		return false
	}
	return rv.IsZero()
}

// alignLeft pads s with spaces on the right to n runes, or keeps its
// first n runes.
func alignLeft(n int, s string) string {
	c := utf8.RuneCountInString(s)
	switch {
	case n < 0:
		return s
	case c < n:
		return s + strings.Repeat(" ", n-c)
	}
	i := 0
	for k := 0; k < n; k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i]
}

// alignRight pads s with spaces on the left to n runes, or keeps its last
// n runes.
func alignRight(n int, s string) string {
	c := utf8.RuneCountInString(s)
	switch {
	case n < 0:
		return s
	case c < n:
		return strings.Repeat(" ", n-c) + s
	}
	i := len(s)
	for k := 0; k < n; k++ {
		_, w := utf8.DecodeLastRuneInString(s[:i])
		i -= w
	}
	return s[i:]
}

func b64dec(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// fromJSON decodes a JSON document, "" when it is not one.
func fromJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return ""
	}
	return v
}

func durationSeconds(s string) (float64, error) {
	d, err := ParseDuration(s)
	return d.Seconds(), err
}

// date formats a time.Time, or Unix seconds, in the server's zone.
func date(layout string, v any) string {
	var t time.Time
	switch v := v.(type) {
	case time.Time:
		t = v
	case *time.Time:
		if v != nil {
			t = *v
		}
	case int64:
		t = time.Unix(v, 0)
	case int:
		t = time.Unix(int64(v), 0)
	case int32:
		t = time.Unix(int64(v), 0)
	default:
		t = time.Now()
	}
	return t.In(time.Local).Format(layout)
}

// unixToTime converts an epoch given, by its number of digits, in days
// (5), seconds (10), milliseconds (13), microseconds (16) or nanoseconds
// (19).
func unixToTime(epoch string) (time.Time, error) {
	n, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("unable to parse time %q: %w", epoch, err)
	}
	switch len(epoch) {
	case 5:
		return time.Unix(n*86400, 0).UTC(), nil
	case 10:
		return time.Unix(n, 0).UTC(), nil
	case 13:
		return time.UnixMilli(n).UTC(), nil
	case 16:
		return time.UnixMicro(n).UTC(), nil
	case 19:
		return time.Unix(0, n).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("unable to parse time %q: not 5, 10, 13, 16 or 19 digits", epoch)
}

// toInt64 converts a template value to an integer: numbers truncated,
// strings parsed as a decimal integer or else a float truncated, anything
// else 0.
func toInt64(v any) int64 {
	switch v := v.(type) {
	case string:
		s := strings.TrimSpace(v)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
			return int64(f)
		}
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case nil:
		return 0
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return rv.Int()
	case rv.CanUint():
		return int64(rv.Uint())
	case rv.CanFloat():
		return int64(rv.Float())
	}
	return 0
}

// toFloat64 converts a template value to a float: strings parsed,
// anything that is not a number 0.
func toFloat64(v any) float64 {
	switch v := v.(type) {
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0
		}
		return f
	case bool:
		if v {
			return 1
		}
		return 0
	case nil:
		return 0
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return float64(rv.Int())
	case rv.CanUint():
		return float64(rv.Uint())
	case rv.CanFloat():
		return rv.Float()
	}
	return 0
}

// decimalOp folds vs into a with op in decimal arithmetic, as sprig's
// addf, subf, mulf and divf do, so that addf 0.1 0.2 is 0.3: each operand
// is taken at its shortest decimal form.
func decimalOp(op byte, a any, vs []any) (float64, error) {
	f0 := toFloat64(a)
	acc, ok := decimal(f0)
	if !ok {
		return floatFold(op, f0, vs), nil
	}
	for _, v := range vs {
		x, ok := decimal(toFloat64(v))
		if !ok {
			// Infinities and NaN: plain float arithmetic.
			return floatFold(op, f0, vs), nil
		}
		switch op {
		case '+':
			acc.Add(acc, x)
		case '-':
			acc.Sub(acc, x)
		case '*':
			acc.Mul(acc, x)
		case '/':
			if x.Sign() == 0 {
				return 0, errors.New("division by zero")
			}
			acc.Quo(acc, x)
		}
	}
	f, _ := acc.Float64()
	return f, nil
}

func decimal(f float64) (*big.Rat, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return r, ok
}

func floatFold(op byte, acc float64, vs []any) float64 {
	for _, v := range vs {
		f := toFloat64(v)
		switch op {
		case '+':
			acc += f
		case '-':
			acc -= f
		case '*':
			acc *= f
		case '/':
			acc /= f
		}
	}
	return acc
}

// round rounds a to p decimals, rounding up from the fraction roundOn
// (default .5) as sprig's round does.
func round(a any, p int, roundOn ...float64) float64 {
	on := .5
	if len(roundOn) > 0 {
		on = roundOn[0]
	}
	pow := math.Pow(10, float64(p))
	digit := pow * toFloat64(a)
	if _, frac := math.Modf(digit); frac >= on {
		return math.Ceil(digit) / pow
	}
	return math.Floor(digit) / pow
}
