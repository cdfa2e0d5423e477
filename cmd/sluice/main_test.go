package main

import (
	"bytes"
	stdjson "encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// sluice runs the command line in-process and returns its output and
// exit status.
func sluice(t *testing.T, stdin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = run(args, &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut})
	return out.String(), errOut.String(), status
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHelpAndVersion(t *testing.T) {
	out, _, st := sluice(t, "", "help")
	if st != 0 || !strings.Contains(out, "parse") || !strings.Contains(out, "version") {
		t.Errorf("help: status %d\n%s", st, out)
	}
	out, _, st = sluice(t, "", "parse", "-h")
	if st != 0 || !strings.Contains(out, "--strict") && !strings.Contains(out, "-strict") {
		t.Errorf("parse -h: status %d\n%s", st, out)
	}
	out, _, st = sluice(t, "", "help", "parse")
	if st != 0 || !strings.Contains(out, "FILE:LINE:COL") {
		t.Errorf("help parse: status %d\n%s", st, out)
	}
	out, _, st = sluice(t, "", "version")
	if st != 0 || !strings.HasPrefix(out, "sluice ") || !strings.Contains(out, "commit") {
		t.Errorf("version: status %d %q", st, out)
	}
	_, errOut, st := sluice(t, "", "frobnicate")
	if st != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: status %d %q", st, errOut)
	}
	_, errOut, st = sluice(t, "", "parse", "--no-such-flag", "x")
	if st != 2 || !strings.Contains(errOut, "no-such-flag") {
		t.Errorf("bad flag: status %d %q", st, errOut)
	}
	_, _, st = sluice(t, "")
	if st != 2 {
		t.Errorf("no command: status %d", st)
	}
}

func TestParseFile(t *testing.T) {
	path := writeFile(t, "app.log", `{"time":"2026-01-15T08:00:00Z","level":"info","msg":"hello","service":"api","n":1}
{"bad json
ts=2026-01-15T08:00:01Z level=warn msg="second line"
`)
	out, errOut, st := sluice(t, "", "parse", path)
	if st != 0 {
		t.Fatalf("status %d, stderr %s", st, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 records, got:\n%s", out)
	}
	want0 := `{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{service=\"api\"}","_msg":"hello","level":"info","service":"api","n":1}`
	if lines[0] != want0 {
		t.Errorf("record 0:\n got %s\nwant %s", lines[0], want0)
	}
	var rec map[string]any
	if err := stdjson.Unmarshal([]byte(lines[1]), &rec); err != nil || rec["_msg"] != "second line" || rec["_time"] != "2026-01-15T08:00:01.000000000Z" {
		t.Errorf("record 1: %v %v", rec, err)
	}
	if !strings.HasPrefix(errOut, path+":2:") {
		t.Errorf("the bad line must be reported as FILE:LINE:COL, got %q", errOut)
	}

	// --strict stops at the first bad line with status 1.
	_, errOut, st = sluice(t, "", "parse", "--strict", path)
	if st != 1 || !strings.HasPrefix(errOut, path+":2:") {
		t.Errorf("--strict: status %d, stderr %q", st, errOut)
	}

	// --stats prints only totals.
	out, _, st = sluice(t, "", "parse", "--stats", path)
	if st != 0 || !strings.Contains(out, "lines     3") || !strings.Contains(out, "records   2") || !strings.Contains(out, "syntax") {
		t.Errorf("--stats: status %d\n%s", st, out)
	}
}

func TestParseStdinFormats(t *testing.T) {
	for _, tc := range []struct {
		format, in, want string
	}{
		{"logfmt", "level=info msg=hi n=2\n", `"_msg":"hi","level":"info","n":2}`},
		{"syslog", "<34>1 2026-01-15T08:00:00Z host app 42 ID7 - boom\n", `"_msg":"boom"`},
		{"text", "2026-01-15 08:00:00,123 ERROR something broke\n", `"_time":"2026-01-15T08:00:00.123000000Z"`},
		{`pattern=<ip> - <user> [<time>] "<method> <path> <_>" <status> <size>`,
			`1.2.3.4 - - [15/Jan/2026:08:00:00 +0000] "GET /x HTTP/1.1" 200 512` + "\n", `"method":"GET","path":"/x"`},
		{`regexp=^(?P<level>[A-Z]+) (?P<msg>.*)$`, "WARN disk low\n", `"_msg":"disk low","level":"WARN"`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			out, errOut, st := sluice(t, tc.in, "parse", "--format", tc.format, "-")
			if st != 0 || errOut != "" || !strings.Contains(out, tc.want) {
				t.Errorf("status %d stderr %q\n got %s\nwant it to contain %s", st, errOut, out, tc.want)
			}
		})
	}
	_, errOut, st := sluice(t, "", "parse", "--format", "yaml", "-")
	if st != 2 || !strings.Contains(errOut, `unknown format "yaml"`) {
		t.Errorf("unknown format: status %d %q", st, errOut)
	}
}

func TestParseWhole(t *testing.T) {
	good := writeFile(t, "good.json", "{\n  \"a\": [1, 2],\n  \"msg\": \"x\"\n}\n")
	bad := writeFile(t, "bad.json", "{\n  \"a\": [1, 2,]\n}\n")
	out, _, st := sluice(t, "", "parse", "--whole", good)
	if st != 0 || !strings.Contains(out, `"_msg":"x","a":[1, 2]`) {
		t.Errorf("valid: status %d\n%s", st, out)
	}
	_, errOut, st := sluice(t, "", "parse", "--whole", bad)
	if st != 1 || !strings.HasPrefix(errOut, bad+":2:14: ") {
		t.Errorf("invalid: status %d %q", st, errOut)
	}
}

// TestParseWholeJSONTestSuite runs `sluice parse --whole` over the
// conformance files: y_ exit 0, n_ exit 1, i_ either, never a crash.
func TestParseWholeJSONTestSuite(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "jsontestsuite", "test_parsing", "*.json"))
	if len(files) == 0 {
		t.Skip("../shared/jsontestsuite is absent")
	}
	for _, f := range files {
		_, _, st := sluice(t, "", "parse", "--whole", "--stats", f)
		switch name := filepath.Base(f); {
		case strings.HasPrefix(name, "y_") && st != 0:
			t.Errorf("%s: status %d, want 0", name, st)
		case strings.HasPrefix(name, "n_") && st != 1:
			t.Errorf("%s: status %d, want 1", name, st)
		case st != 0 && st != 1:
			t.Errorf("%s: status %d", name, st)
		}
	}
}

func TestParseTimeLayout(t *testing.T) {
	in := "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 terminating\n"
	out, errOut, st := sluice(t, in, "parse", "--time-layout", "hdfs",
		"--format", "pattern=<time> <pid> <level> <component>: <msg>", "-")
	if st != 0 || errOut != "" || !strings.Contains(out, `"_time":"2008-11-09T20:36:15.000000000Z"`) || !strings.Contains(out, `"_msg":"PacketResponder 1 terminating"`) {
		t.Errorf("status %d stderr %q\n%s", st, errOut, out)
	}
	_, errOut, st = sluice(t, in, "parse", "--time-layout", "julian", "-")
	if st != 2 || !strings.Contains(errOut, `unknown time layout "julian"`) {
		t.Errorf("bad layout: status %d %q", st, errOut)
	}
}

func TestParseMultiline(t *testing.T) {
	in := "2026-01-15 08:00:00,000 ERROR boom\n" +
		"java.lang.IllegalStateException: bad\n" +
		"\tat com.example.A.run(A.java:10)\n" +
		"2026-01-15 08:00:01,000 INFO next\n"
	out, errOut, st := sluice(t, in, "parse", "--format", "text", "--multiline", `^\d{4}-\d\d-\d\d `, "-")
	recs := strings.Split(strings.TrimSpace(out), "\n")
	if st != 0 || errOut != "" || len(recs) != 2 || !strings.Contains(recs[0], `IllegalStateException: bad\n\tat com.example.A.run`) {
		t.Errorf("status %d stderr %q\n%s", st, errOut, out)
	}
	_, errOut, st = sluice(t, in, "parse", "--multiline", "(", "-")
	if st != 2 || !strings.Contains(errOut, "multiline") {
		t.Errorf("bad regexp: status %d %q", st, errOut)
	}
}

func TestParseTextTimeLayout(t *testing.T) {
	in := "17/06/09 20:10:40 INFO executor.Backend: Registered signal handlers\n"
	out, errOut, st := sluice(t, in, "parse", "--format", "text", "--time-layout", "spark", "-")
	if st != 0 || errOut != "" || !strings.Contains(out, `"_time":"2017-06-09T20:10:40.000000000Z"`) || !strings.Contains(out, `"level":"INFO"`) {
		t.Errorf("status %d stderr %q\n%s", st, errOut, out)
	}
}

func TestResolveVersion(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260115080000-0123456789ab+dirty"}}
	for _, c := range []struct {
		set  string
		bi   *debug.BuildInfo
		want string
	}{
		{"v1.2.3", stamped, "v1.2.3"},
		{"", stamped, "v0.0.0-20260115080000-0123456789ab+dirty"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"", nil, "dev"},
	} {
		if got := resolveVersion(c.set, c.bi); got != c.want {
			t.Errorf("resolveVersion(%q, %v) = %q, want %q", c.set, c.bi, got, c.want)
		}
	}
}
