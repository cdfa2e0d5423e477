package logql

import "testing"

func TestParseSelector(t *testing.T) {
	labels := map[string]string{"app": "api", "env": "prod"}
	get := func(n string) string { return labels[n] }
	for _, tc := range []struct {
		in    string
		match bool
		err   string
	}{
		{in: `{app="api"}`, match: true},
		{in: ` { app = "api" , env =~ "pr.*" } `, match: true},
		{in: "{app=`api`, env!=\"dev\"}", match: true},
		{in: `{app="web"}`, match: false},
		{in: `{env=~"pro"}`, match: false}, // anchored
		{in: `{app="api", env!~"prod|dev"}`, match: false},
		{in: `{app="a\"b"}`, match: false},
		{in: `app="api"`, err: "parse error at line 1, col 1: a stream selector starts with '{'"},
		{in: `{app}`, err: "parse error at line 1, col 5: expected one of = != =~ !~ after app"},
		{in: `{app="api"`, err: "parse error at line 1, col 11: expected ',' or '}'"},
		{in: `{app="api}`, err: "parse error at line 1, col 6: unterminated string"},
		{in: `{app=~"("}`, err: "parse error at line 1, col 10: invalid regexp \"(\": error parsing regexp: missing closing ): `^(?:()$`"},
		{in: `{app=""}`, err: "parse error at line 1, col 9: queries require at least one regexp or equality matcher that does not have an empty-compatible value"},
		{in: "{app=\"api\"}\n x", err: "parse error at line 2, col 2: unexpected \"x\" after the selector"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			sel, err := ParseSelector(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Matches(get); got != tc.match {
				t.Errorf("%s matches %v: %v, want %v", sel, labels, got, tc.match)
			}
		})
	}
}
