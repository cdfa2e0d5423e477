package stage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/logql"
)

// jsonDocLine is the example of Loki's documentation.
const jsonDocLine = `{
    "protocol": "HTTP/2.0",
    "servers": ["129.0.1.1","10.2.1.3"],
    "request": {
        "time": "6.032",
        "method": "GET",
        "host": "foo.grafana.net",
        "size": "55",
        "headers": {
          "Accept": "*/*",
          "User-Agent": "curl/7.68.0"
        }
    },
    "response": {
        "status": 401,
        "size": "228",
        "latency_seconds": "6.031"
    }
}`

func TestJSON(t *testing.T) {
	mk := func() stage { return must(t)(newJSONStage(&logql.JSONParser{})) }
	stream := lbls("app", "api")
	runCases(t, mk, []stageCase{
		{name: "doc example", stream: stream, line: jsonDocLine,
			labels: `{app="api", protocol="HTTP/2.0", request_headers_Accept="*/*", request_headers_User_Agent="curl/7.68.0", ` +
				`request_host="foo.grafana.net", request_method="GET", request_size="55", request_time="6.032", ` +
				`response_latency_seconds="6.031", response_size="228", response_status="401"}`},
		{name: "sanitized doc example", line: `{ "a.b": {"c": "d"}, "e": "f" }`, labels: `{a_b_c="d", e="f"}`},
		{name: "scalars", line: `{"i":-12,"f":1.5e3,"z":0,"t":true,"b":false,"n":null,"s":"","e":0.25E-2}`,
			labels: `{b="false", e="0.25E-2", f="1.5e3", i="-12", s="", t="true", z="0"}`},
		{name: "arrays skipped", line: `{"a":[1,{"x":"y"},[2]],"b":"c","d":[]}`, labels: `{b="c"}`},
		{name: "empty object", line: `{}`, labels: `{}`},
		{name: "nested empty", line: `{"a":{},"b":{"c":{}}}`, labels: `{}`},
		{name: "white space", line: " \t{ \"a\" :\n\"b\" , \"c\"\r: 1 }  ", labels: `{a="b", c="1"}`},
		{name: "escapes", line: `{"s":"a\"b\\c\/d\b\f\n\r\te"}`, labels: `{s="a\"b\\c/d\u0008\u000c\n\r\te"}`},
		{name: "unicode escapes", line: `{"s":"caf\u00e9 \u65e5\u672C"}`, labels: `{s="café 日本"}`},
		{name: "surrogate pair", line: `{"s":"\ud83d\ude00!"}`, labels: `{s="😀!"}`},
		{name: "lone high surrogate", line: `{"s":"a\ud83db"}`, labels: `{s="a�b"}`},
		{name: "lone low surrogate", line: `{"s":"\ude00"}`, labels: `{s="�"}`},
		{name: "high then non-low", line: `{"s":"\ud83d\u0041"}`, labels: `{s="�A"}`},
		{name: "raw utf8", line: `{"msg":"héllo ✓"}`, labels: `{msg="héllo ✓"}`},
		{name: "escaped key", line: `{"a\u0062":"1","\u00e9t\u00e9":"2"}`, labels: `{_t_="2", ab="1"}`},
		{name: "sanitized keys", line: `{"user-agent":"x","a b":"y","1st":"z","k:v":"w","x":{"2nd":"n"}}`,
			labels: `{_1st="z", a_b="y", k_v="w", user_agent="x", x_2nd="n"}`},
		{name: "stream collision", stream: stream, line: `{"app":"web","x":{"app":"nested"}}`,
			labels: `{app="api", app_extracted="web", x_app="nested"}`},
		{name: "duplicate keys first wins", line: `{"a":"1","a":"2","b":{"c":"3"},"b_c":"4"}`, labels: `{a="1", b_c="3"}`},
		{name: "trailing text ignored", line: `{"a":"b"} trailing`, labels: `{a="b"}`},
		{name: "not an object", stream: stream, line: `["a"]`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 0: unexpected '[', expected a JSON object", app="api"}`},
		{name: "plain text", line: `level=info msg=hi`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 0: unexpected 'l', expected a JSON object"}`},
		{name: "empty line", line: ``,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 0: unexpected end of input, expected a JSON object"}`},
		{name: "truncated keeps fields before", line: `{"a":"b","c":{"d":1,`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 20: unexpected end of input, expected a value", a="b", c_d="1"}`},
		{name: "unterminated string", line: `{"a":"b`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 5: unterminated string"}`},
		{name: "bad escape", line: `{"a":"\q"}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 6: invalid escape \"\\\\q\""}`},
		{name: "bad unicode escape", line: `{"a":"\u12"}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 6: invalid \\u escape"}`},
		{name: "bad literal", line: `{"a":tru}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 5: unexpected 't', expected true"}`},
		{name: "bad number", line: `{"a":1.}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 5: invalid number"}`},
		{name: "leading zero", line: `{"a":01}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 6: unexpected '1', expected ',' or '}'", a="0"}`},
		{name: "bad array in skipped value", line: `{"a":[1,}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 8: unexpected '}', expected a value"}`},
		{name: "missing colon", line: `{"a" "b"}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 5: unexpected '\"', expected ':'"}`},
		{name: "unquoted key", line: `{a:1}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 1: unexpected 'a', expected a string key"}`},
		{name: "trailing comma", line: `{"a":1,}`,
			labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 7: unexpected '}', expected a string key", a="1"}`},
	})
}

func TestJSONDepth(t *testing.T) {
	st := must(t)(newJSONStage(&logql.JSONParser{}))
	deep := `{"a":` + strings.Repeat(`{"a":`, maxJSONDepth) + `1` + strings.Repeat(`}`, maxJSONDepth+1)
	if _, ls, _ := runRow(st, nil, deep); ls.String() != `{__error__="JSONParserErr", __error_details__="syntax error at offset 5000: nested too deeply"}` {
		t.Errorf("deep object: %s", ls)
	}
	arr := `{"a":` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}`
	if _, ls, _ := runRow(st, nil, arr); !strings.Contains(ls.String(), "nested too deeply") {
		t.Errorf("deep array: %s", ls)
	}
	ok := `{"a":` + strings.Repeat(`{"a":`, 50) + `1` + strings.Repeat(`}`, 51)
	if _, ls, _ := runRow(st, nil, ok); ls.String() != `{`+strings.Repeat("a_", 51)[:101]+`="1"}` {
		t.Errorf("50 levels: %s", ls)
	}
}

func TestJSONParams(t *testing.T) {
	params := func(kv ...string) func() stage {
		var ps []logql.LabelExtraction
		for i := 0; i < len(kv); i += 2 {
			ps = append(ps, logql.LabelExtraction{Name: kv[i], Expr: kv[i+1]})
		}
		return func() stage { return must(t)(newJSONStage(&logql.JSONParser{Params: ps})) }
	}
	t.Run("doc", func(t *testing.T) {
		runCases(t, params("first_server", "servers[0]", "ua", `request.headers["User-Agent"]`), []stageCase{
			{name: "example", line: jsonDocLine, labels: `{first_server="129.0.1.1", ua="curl/7.68.0"}`},
		})
		runCases(t, params("server_list", "servers", "headers", "request.headers", "servers", ""), []stageCase{
			{name: "raw values", line: jsonDocLine,
				labels: `{headers="{\n          \"Accept\": \"*/*\",\n          \"User-Agent\": \"curl/7.68.0\"\n        }", ` +
					`server_list="[\"129.0.1.1\",\"10.2.1.3\"]", servers="[\"129.0.1.1\",\"10.2.1.3\"]"}`},
		})
	})
	t.Run("paths", func(t *testing.T) {
		runCases(t, params("a", "a", "b", "b.c[1].d", "n", "n", "m", "missing.x", "i", "list[5]", "k", `["dotted.key"]`, "s", "str.x", "num", "num", "u", "u"),
			[]stageCase{
				{name: "all", stream: lbls("a", "stream"),
					line:   `{"a":"x","b":{"c":[{"d":1},{"d":"two"}]},"n":null,"list":[1],"dotted.key":true,"str":"s","num":-1.5,"u":"\u00e9"}`,
					labels: `{a="stream", a_extracted="x", b="two", i="", k="true", m="", n="", num="-1.5", s="", u="é"}`},
				{name: "invalid", line: `{"a":"x",}`,
					labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 9: unexpected '}', expected a string"}`},
				{name: "not object", line: `"a"`,
					labels: `{__error__="JSONParserErr", __error_details__="syntax error at offset 0: unexpected '\"', expected a JSON object"}`},
				{name: "escaped key matches", line: `{"\u0061":"1","b":{"\u0063":[0,{"d":"2"}]}}`,
					labels: `{a="1", b="2", i="", k="", m="", n="", num="", s="", u=""}`},
				{name: "missing stream label", stream: lbls("a", "s", "u", "t"), line: `{"b":{"c":[]}}`,
					labels: `{a="s", b="", i="", k="", m="", n="", num="", s="", u="t"}`},
				{name: "duplicate first wins", line: `{"a":"1","a":"2"}`,
					labels: `{a="1", b="", i="", k="", m="", n="", num="", s="", u=""}`},
			})
	})
	for _, bad := range []logql.LabelExtraction{
		{Name: "a", Expr: "x["},
		{Name: "a", Expr: "x[-1]"},
		{Name: "a", Expr: "x[a]"},
		{Name: "a", Expr: `x["y]`},
		{Name: "a", Expr: "x..y"},
		{Name: "a", Expr: ".x"},
		{Name: "1a", Expr: "x"},
	} {
		if _, err := newJSONStage(&logql.JSONParser{Params: []logql.LabelExtraction{bad}}); err == nil {
			t.Errorf("json %s=%q compiled", bad.Name, bad.Expr)
		}
	}
}

func TestParseJSONPath(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []jsonPathElem
	}{
		{"a", []jsonPathElem{{key: "a", index: -1}}},
		{"a.b", []jsonPathElem{{key: "a", index: -1}, {key: "b", index: -1}}},
		{"list[0]", []jsonPathElem{{key: "list", index: -1}, {index: 0}}},
		{`a["b.c"][12].d`, []jsonPathElem{{key: "a", index: -1}, {key: "b.c", index: -1}, {index: 12}, {key: "d", index: -1}}},
		{"a[`x\"y`]", []jsonPathElem{{key: "a", index: -1}, {key: `x"y`, index: -1}}},
		{`["a"]`, []jsonPathElem{{key: "a", index: -1}}},
		{`a["q\"]"]`, []jsonPathElem{{key: "a", index: -1}, {key: `q"]`, index: -1}}},
		{"user-agent", []jsonPathElem{{key: "user-agent", index: -1}}},
	} {
		got, err := parseJSONPath(c.expr)
		if err != nil {
			t.Errorf("parseJSONPath(%q): %v", c.expr, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("parseJSONPath(%q) = %v, want %v", c.expr, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("parseJSONPath(%q) = %v, want %v", c.expr, got, c.want)
				break
			}
		}
	}
	for _, bad := range []string{"", "a[", "a[]", "a.", "a[1", `a["x"`, `a["x"x]`} {
		if _, err := parseJSONPath(bad); err == nil {
			t.Errorf("parseJSONPath(%q) succeeded", bad)
		}
	}
}

// realisticJSON is a typical structured access log line.
const realisticJSON = `{"ts":"2024-05-01T12:34:56.789Z","level":"info","caller":"server/http.go:142","msg":"request served",` +
	`"method":"GET","path":"/api/v1/users/12345","status":200,"duration_ms":12.5,"bytes":5123,` +
	`"remote_addr":"10.1.2.3","user_agent":"Mozilla/5.0 (X11; Linux x86_64)","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736",` +
	`"request":{"host":"api.example.com","proto":"HTTP/1.1","headers":{"Accept":"application/json","X-Req":"a\"b"}},"tags":["a","b"],"cached":false}`

func TestJSONNoAllocs(t *testing.T) {
	st := must(t)(newJSONStage(&logql.JSONParser{}))
	lb := &Labels{}
	stream := lbls("app", "api", "level", "x")
	line := []byte(realisticJSON)
	run := func() {
		lb.Reset(stream)
		if _, ok := st.process(0, line, lb); !ok || lb.HasError() {
			t.Fatal("json failed")
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("json allocates %v times per line, want 0", n)
	}
	if got := lb.Get("request_headers_X_Req"); got != `a"b` {
		t.Errorf("request_headers_X_Req = %q", got)
	}
	if got := lb.Get("level_extracted"); got != "info" {
		t.Errorf("level_extracted = %q", got)
	}
}

func BenchmarkJSON(b *testing.B) {
	for _, bc := range []struct {
		name   string
		params []logql.LabelExtraction
	}{
		{"params=none", nil},
		{"params=2", []logql.LabelExtraction{{Name: "status", Expr: "status"}, {Name: "host", Expr: "request.host"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st, err := newJSONStage(&logql.JSONParser{Params: bc.params})
			if err != nil {
				b.Fatal(err)
			}
			lb := &Labels{}
			stream := lbls("app", "api")
			line := []byte(realisticJSON)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				lb.Reset(stream)
				st.process(0, line, lb)
			}
		})
	}
}

// FuzzJSON checks the stage against encoding/json: it never panics, it
// accepts every valid object, and every value it extracts from a valid
// object is the one encoding/json finds at that key (for objects without
// repeated or sanitized keys).
func FuzzJSON(f *testing.F) {
	for _, s := range []string{jsonDocLine, realisticJSON, `{"a":"\ud83d\ude00"}`, `{"a":[1,{"b":2}]}`, `{"a":`, `{"a":"\u12"}`, `{}`, `{"a":{"b":{"c":null}}}`} {
		f.Add(s)
	}
	st, err := newJSONStage(&logql.JSONParser{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, ls, _ := runRow(st, nil, line)
		// encoding/json replaces invalid UTF-8, the stage keeps the bytes.
		if !utf8.ValidString(line) || strings.Count(line, "{")+strings.Count(line, "[") > maxJSONDepth/2 || strings.Contains(line, "__error") {
			return
		}
		var top map[string]any
		if json.Unmarshal([]byte(line), &top) != nil || top == nil {
			return
		}
		if v, ok := ls.Get(ErrorLabel); ok {
			t.Fatalf("valid object %q: %s %s", line, v, ls)
		}
		for k, v := range top {
			s, ok := v.(string)
			if !ok || !validLabelName(k) || strings.Contains(k, "_") || strings.Count(line, `"`+k+`"`) != 1 || strings.Contains(line, `\`) {
				continue
			}
			if got, _ := ls.Get(k); got != s {
				t.Fatalf("%q: %s = %q, want %q", line, k, got, s)
			}
		}
	})
}

// unescapeReference is the plain unescape the arena-writing one replaced:
// an append per byte, to b. It returns the string appended and the
// offset after it, or the offset and message of the failure.
func unescapeReference(b, d []byte, start, j int) ([]byte, int, string) {
	b = append(b, d[start:j]...)
	for j < len(d) {
		switch c := d[j]; c {
		case '"':
			return b, j + 1, ""
		case '\\':
			if j+1 >= len(d) {
				return nil, j, "unterminated string"
			}
			switch e := d[j+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(d, j+2)
				if !ok {
					return nil, j, "invalid \\u escape"
				}
				j += 6
				if utf16.IsSurrogate(r) {
					r2, ok := rune(0), false
					if r < 0xdc00 && j+1 < len(d) && d[j] == '\\' && d[j+1] == 'u' {
						r2, ok = hex4(d, j+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
						r = dec
						j += 6
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return nil, j, fmt.Sprintf("invalid escape %q", "\\"+string(rune(e)))
			}
			j += 2
		default:
			b = append(b, c)
			j++
		}
	}
	return nil, start - 1, "unterminated string"
}

// FuzzUnescape: the arena-writing unescape gives what the plain one
// gives, string, end and failure, for any bytes after any prefix of the
// arena (a row's earlier values).
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`a\"b\\c"`, `{\"ts\":1,\"level\":\"info\"}"x`, `\u00e9\ud83d\ude00\ud800x"`, `\ud83d\u0041"`, `\q"`, `\u12"`, `abc\`, `\n\t\r\b\f\/"tail`, "\xff\\\"\x00\""} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, pre uint8) {
		d := []byte(`"` + s)
		j := bytes.IndexByte(d[1:], '\\')
		if j < 0 {
			return // str views strings without escapes; unescape is for the others
		}
		j++
		wantBytes, wantEnd, wantErr := unescapeReference(nil, d, 1, j)
		want := string(wantBytes)
		buf := &rowBuf{b: bytes.Repeat([]byte("p"), int(pre))}
		var sc jsonScanner
		sc.reset(d, buf)
		got, end := sc.unescape(1, j)
		if wantErr != "" {
			if end != -1 || sc.errMsg != wantErr || sc.errOff != wantEnd {
				t.Fatalf("%q: got %q, end %d, error %q at %d; want error %q at %d", s, got, end, sc.errMsg, sc.errOff, wantErr, wantEnd)
			}
		} else if got != want || end != wantEnd || sc.errMsg != "" {
			t.Fatalf("%q: got %q, end %d, error %q; want %q, end %d", s, got, end, sc.errMsg, want, wantEnd)
		}
		if string(buf.b[:pre]) != strings.Repeat("p", int(pre)) {
			t.Fatalf("%q: the arena before the string changed: %q", s, buf.b[:pre])
		}
	})
}

// BenchmarkUnescape: a k8s log field holding escaped JSON, unescaped by
// the arena-writing unescape and by the plain one it replaced.
func BenchmarkUnescape(b *testing.B) {
	d := []byte(`"{\"ts\":1768464000001,\"level\":\"info\",\"msg\":\"payment declined\",\"service\":\"auth\",\"host\":\"node-37\",\"trace_id\":\"51431193e6c3f3391a2b8f1ff1fd42a2\",\"http\":{\"method\":\"GET\",\"path\":\"/metrics\",\"status\":502,\"latency_ms\":0.416},\"tags\":[\"us-east-2\"]}"`)
	j := bytes.IndexByte(d, '\\')
	b.Run("arena", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		var buf rowBuf
		var sc jsonScanner
		for b.Loop() {
			buf.reset()
			sc.reset(d, &buf)
			sc.unescape(1, j)
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		var buf []byte
		for b.Loop() {
			buf, _, _ = unescapeReference(buf[:0], d, 1, j)
		}
	})
}

// FuzzUnquoteAppend checks JSONScanner.UnquoteAppend, which reads a
// string's text without its quotes, against str reading the same text
// quoted: the same value, and failing alike.
func FuzzUnquoteAppend(f *testing.F) {
	for _, s := range []string{`a\"b\\c`, `{\"ts\":1,\"level\":\"info\"}`, `\u00e9\ud83d\ude00\ud800x`, `\q`, `\u12`, `abc\`, `a"b\n`, `\"`, "", `plain`} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, pre uint8) {
		var ref jsonScanner
		ref.reset([]byte(`"`+s+`"`), &rowBuf{})
		want, end := ref.str(0)
		var sc JSONScanner
		dst := bytes.Repeat([]byte("p"), int(pre))
		got, ok := sc.UnquoteAppend(dst, []byte(s))
		if ok != (end >= 0) || ok && string(got[pre:]) != want {
			t.Fatalf("%q: got %q, %v; want %q, %v", s, got[pre:], ok, want, end >= 0)
		}
		if string(got[:pre]) != strings.Repeat("p", int(pre)) {
			t.Fatalf("%q: what dst held changed: %q", s, got[:pre])
		}
	})
}
