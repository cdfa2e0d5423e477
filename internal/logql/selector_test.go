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
		{in: `app="api"`, err: "parse error at line 1, col 1: syntax error: unexpected IDENTIFIER"},
		{in: `{app}`, err: "parse error at line 1, col 5: syntax error: unexpected }, expecting = or =~ or !~ or !="},
		{in: `{app="api"`, err: "parse error at line 1, col 11: syntax error: unexpected $end, expecting } or ,"},
		{in: `{app="api}`, err: "parse error at line 1, col 6: literal not terminated"},
		{in: `{app=~"("}`, err: "parse error at line 1, col 7: invalid regexp \"(\": error parsing regexp: missing closing ): `^(?:()$`"},
		{in: `{app=""}`, err: "parse error at line 1, col 1: " + emptyCompatibleMsg},
		{in: "{app=\"api\"}\n x", err: "parse error at line 2, col 2: syntax error: unexpected IDENTIFIER"},
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
