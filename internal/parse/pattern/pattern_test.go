package pattern

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

const nginxExpr = `<ip> - <user> [<time>] "<method> <path> <proto>" <status> <bytes> "<referer>" "<ua>"`

// rt is parsetest.ReceiveTime as the normalized output prints it.
const rt = `"_time":"2026-01-15T12:00:00.000000000Z"`

var compileErrors = []struct {
	name, expr, want string
}{
	{"empty", ``, `pattern: empty expression`},
	{"adjacent", `<a><b>`, `pattern: adjacent captures <a><b> at byte 4: a literal must separate them`},
	{"adjacent skip", `x <_><b>`, `pattern: adjacent captures <_><b> at byte 6: a literal must separate them`},
	{"duplicate", `<a> <b> <a>`, `pattern: duplicate capture <a> at byte 9`},
	{"only skips", `<_> <_>`, `pattern: no named capture in "<_> <_>": at least one <name> is required`},
	{"only text", `plain text`, `pattern: no named capture in "plain text": at least one <name> is required`},
	{"bad name is literal", `<a-b> x`, `pattern: no named capture in "<a-b> x": at least one <name> is required`},
	{"digit name is literal", `<0>`, `pattern: no named capture in "<0>": at least one <name> is required`},
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range compileErrors {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.expr)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Compile(%q) error = %v, want %q", tc.expr, err, tc.want)
			}
		})
	}
}

func TestCompileNames(t *testing.T) {
	p, err := Compile(`<_a>x<B9> <_> <0> <c_d>`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Names(), []string{"_a", "B9", "c_d"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
}

var parseCases = []struct {
	name  string
	expr  string
	exact bool
	in    string
	want  []string
}{
	{
		name: "nginx combined",
		expr: nginxExpr,
		in:   `217.32.130.31 - - [15/Jan/2026:08:00:00 +0000] "HEAD /api/v1/payments/authorize HTTP/1.1" 304 42702 "-" "python-requests/2.32.3"` + "\n",
		want: []string{`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"217.32.130.31 - - [15/Jan/2026:08:00:00 +0000] \"HEAD /api/v1/payments/authorize HTTP/1.1\" 304 42702 \"-\" \"python-requests/2.32.3\"","ip":"217.32.130.31","user":"-","method":"HEAD","path":"/api/v1/payments/authorize","proto":"HTTP/1.1","status":"304","bytes":"42702","referer":"-","ua":"python-requests/2.32.3"}`},
	},
	{
		name: "unmatched line kept as message between matched ones",
		expr: `<level>: <msg>`,
		in:   "INFO: one\nno colon here\r\nWARN: two",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"one","level":"INFO"}`,
			`{` + rt + `,"_stream":"{}","_msg":"no colon here"}`,
			`{` + rt + `,"_stream":"{}","_msg":"two","level":"WARN"}`,
		},
	},
	{
		name: "leading literal must start the line",
		expr: `[<level>] <msg>`,
		in:   "[INFO] ok\nx [INFO] not at start\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"ok","level":"INFO"}`,
			`{` + rt + `,"_stream":"{}","_msg":"x [INFO] not at start"}`,
		},
	},
	{
		name: "trailing literal ignores the rest",
		expr: `<ip> - `,
		in:   "10.0.0.1 - - rest of the line\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"10.0.0.1 - - rest of the line","ip":"10.0.0.1"}`},
	},
	{
		name: "last capture takes the rest, literals included",
		expr: `<a>=<b>`,
		in:   "k=v=w x=y\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"k=v=w x=y","a":"k","b":"v=w x=y"}`},
	},
	{
		name: "non-greedy up to the first literal",
		expr: `<a>:<b>:<c>`,
		in:   "1:2:3:4\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"1:2:3:4","a":"1","b":"2","c":"3:4"}`},
	},
	{
		name: "empty captures are fields",
		expr: `"<referer>" "<ua>"`,
		in:   `"" ""` + "\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"\"\" \"\"","referer":"","ua":""}`},
	},
	{
		name: "skip capture",
		expr: `<_> <level> <_>: <msg>`,
		in:   "host1 ERROR proc[12]: disk full\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"disk full","level":"ERROR"}`},
	},
	{
		name: "missing middle literal keeps the line",
		expr: `<a> [<b>] <c>`,
		in:   "x [y z\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"x [y z"}`},
	},
	{
		name: "flexible spaces skip padding",
		expr: `<date> <clock> <pid> <tid> <level> <component>: <msg>`,
		in:   "03-17 16:13:38.811  1702  2395 D WindowManager: a  b\n03-17 16:13:38.819  1702 18671 I Power: c\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"a  b","date":"03-17","clock":"16:13:38.811","pid":"1702","tid":"2395","level":"D","component":"WindowManager"}`,
			`{` + rt + `,"_stream":"{}","_msg":"c","date":"03-17","clock":"16:13:38.819","pid":"1702","tid":"18671","level":"I","component":"Power"}`,
		},
	},
	{
		name: "flexible literal with a leading run",
		expr: `<level> [<thread>] <msg>`,
		in:   "INFO  [main] x\nERROR [io] y\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"x","level":"INFO","thread":"main"}`,
			`{` + rt + `,"_stream":"{}","_msg":"y","level":"ERROR","thread":"io"}`,
		},
	},
	{
		name:  "exact spaces as Loki",
		expr:  `<level> [<thread>] <msg>`,
		exact: true,
		in:    "INFO  [main]  x\n",
		want:  []string{`{` + rt + `,"_stream":"{}","_msg":" x","level":"INFO ","thread":"main"}`},
	},
	{
		name: "a space run is never split",
		expr: `<a> <b> c`,
		in:   "x  c\nx y c\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"x  c"}`,
			`{` + rt + `,"_stream":"{}","_msg":"x y c","a":"x","b":"y"}`,
		},
	},
	{
		name: "line starting with spaces",
		expr: ` <a>`,
		in:   "   x\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"   x","a":"x"}`},
	},
	{
		name: "time capture takes a whole timestamp",
		expr: `<time> <level> [<thread>] <msg>`,
		in:   "2015-10-18 18:01:47,978 INFO [main] started\n",
		want: []string{`{"_time":"2015-10-18T18:01:47.978000000Z","_stream":"{}","_msg":"started","level":"INFO","thread":"main"}`},
	},
	{
		name: "time capture with a literal inside the timestamp",
		expr: `<time>,<ms> <level>`,
		in:   "2015-10-18 18:01:47,978 INFO\n",
		want: []string{`{"_time":"2015-10-18T18:01:47.000000000Z","_stream":"{}","_msg":"2015-10-18 18:01:47,978 INFO","ms":"978","level":"INFO"}`},
	},
	{
		name: "time capture before a comma",
		expr: `<time>, <level> <msg>`,
		in:   "2016-09-28 04:30:30, Info                  CBS    Loaded\n",
		want: []string{`{"_time":"2016-09-28T04:30:30.000000000Z","_stream":"{}","_msg":"CBS    Loaded","level":"Info"}`},
	},
	{
		name: "time capture falls back when the rest fails after a whole timestamp",
		expr: `<time> <a> <b>`,
		in:   "2015-10-18 18:01:47 x\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"2015-10-18 18:01:47 x","time":"2015-10-18","a":"18:01:47","b":"x"}`},
	},
	{
		name: "time capture that is no timestamp stays a field",
		expr: `<time> <msg>`,
		in:   "yesterday it rained\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"it rained","time":"yesterday"}`},
	},
	{
		name: "syslog time and a stream label",
		expr: `<time> <host> <app>[<pid>]: <msg>`,
		in:   "Jan  5 10:00:00 web1 sshd[42]: Accepted\n",
		want: []string{`{"_time":"2026-01-05T10:00:00.000000000Z","_stream":"{app=\"sshd\", host=\"web1\"}","_msg":"Accepted","host":"web1","app":"sshd","pid":"42"}`},
	},
	{
		name: "angle brackets that are no capture are literal",
		expr: `<a> <0> <b>`,
		in:   "x <0> y\nx <1> y\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"x <0> y","a":"x","b":"y"}`,
			`{` + rt + `,"_stream":"{}","_msg":"x <1> y"}`,
		},
	},
	{
		name: "invalid UTF-8",
		expr: `<a> <b>`,
		in:   "ok \xff\xfe\nno-space-\xff\n",
		want: []string{
			`{` + rt + `,"_stream":"{}","_msg":"ok ` + "\uFFFD\uFFFD" + `","a":"ok","b":"` + "\uFFFD\uFFFD" + `"}`,
			`{` + rt + `,"_stream":"{}","_msg":"no-space-` + "\uFFFD" + `"}`,
		},
	},
	{
		name: "multibyte text",
		expr: `<a>：<b>`,
		in:   "订单：已创建\n",
		want: []string{`{` + rt + `,"_stream":"{}","_msg":"订单：已创建","a":"订单","b":"已创建"}`},
	},
}

func compileCase(t testing.TB, expr string, exact bool) *Parser {
	t.Helper()
	p, err := CompileOptions(expr, Options{ExactSpaces: exact})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			p := compileCase(t, tc.expr, tc.exact)
			got := parsetest.Run(p, record.DefaultConfig(), []byte(tc.in), nil)
			if len(got.Errors) != 0 {
				t.Errorf("errors: %q", got.Errors)
			}
			if !slices.Equal(got.Records, tc.want) {
				t.Errorf("records:\n got %s\nwant %s", strings.Join(got.Records, "\n     "), strings.Join(tc.want, "\n     "))
			}
		})
	}
}

func TestBadUTF8Count(t *testing.T) {
	p := MustCompile(`<a> <b>`)
	bl := record.NewBuilder(record.DefaultConfig())
	b := &record.Batch{Data: []byte("\xff \xfe\nx y\nno\xff")}
	bl.Start(b)
	var sp lines.Splitter
	lines.Run(&sp, bl, p, true)
	if len(b.Records) != 3 || b.BadUTF8 != 3 {
		t.Fatalf("records %d, BadUTF8 %d; want 3 and 3", len(b.Records), b.BadUTF8)
	}
	for i, f := range b.RecordFields(0) {
		if f.Flags != record.BadUTF8 {
			t.Errorf("field %d flags %v, want BadUTF8", i, f.Flags)
		}
	}
	if b.Records[2].MsgFlags != record.BadUTF8 {
		t.Errorf("unmatched line's message flags %v, want BadUTF8", b.Records[2].MsgFlags)
	}
}

// TestManyCaptures covers patterns with more named captures than ParseLine
// keeps on the stack.
func TestManyCaptures(t *testing.T) {
	var expr, line, fields strings.Builder
	for i := range 70 {
		if i > 0 {
			expr.WriteString(",")
			line.WriteString(",")
		}
		expr.WriteString("<f" + strconv.Itoa(i) + ">")
		line.WriteString("v" + strconv.Itoa(i))
		fields.WriteString(`,"f` + strconv.Itoa(i) + `":"v` + strconv.Itoa(i) + `"`)
	}
	var want strings.Builder
	want.WriteString(`{` + rt + `,"_stream":"{}","_msg":"` + line.String() + `"` + fields.String() + "}")
	p := MustCompile(expr.String())
	got := parsetest.Run(p, record.DefaultConfig(), []byte(line.String()), nil)
	if len(got.Records) != 1 || got.Records[0] != want.String() {
		t.Fatalf("got %q\nwant %q", got.Records, want.String())
	}
}

func TestMatch(t *testing.T) {
	p := MustCompile(nginxExpr)
	if !p.Match([]byte(`1.2.3.4 - - [15/Jan/2026:08:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "curl"`)) {
		t.Error("Match = false for an nginx line")
	}
	if p.Match([]byte(`1.2.3.4 - - [15/Jan/2026:08:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" curl`)) {
		t.Error("Match = true for a line missing its last quotes")
	}
}

// TestParseAllocs checks that a warm parser allocates nothing per line,
// matched or not.
func TestParseAllocs(t *testing.T) {
	p := MustCompile(nginxExpr)
	data := []byte(`217.32.130.31 - - [15/Jan/2026:08:00:00 +0000] "HEAD /api/v1/payments/authorize HTTP/1.1" 304 42702 "-" "python-requests/2.32.3"` +
		"\nsomething else\n")
	bl := record.NewBuilder(record.DefaultConfig())
	b := &record.Batch{Data: data, ReceiveTime: parsetest.ReceiveTime}
	bl.Start(b)
	var sp lines.Splitter
	run := func() {
		b.Records, b.Fields, b.Errors = b.Records[:0], b.Fields[:0], b.Errors[:0]
		sp.Reset()
		lines.Run(&sp, bl, p, true)
	}
	run()
	if len(b.Records) != 2 || b.RecordFields(0)[0].Kind != record.String {
		t.Fatalf("warm-up parsed %d records", len(b.Records))
	}
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
}
