package rules

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/record"
)

// routed renders what is stored of b with its routes: "line -> sinks"
// per kept record ("-" for none).
func routed(b *record.Batch) []string {
	var out []string
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		r := "-"
		if names := b.RouteOf(i); names != nil {
			r = strings.Join(names, ",")
		}
		out = append(out, string(b.Bytes(b.Records[i].Line))+" -> "+r)
	}
	return out
}

func TestRoute(t *testing.T) {
	lines := []string{
		`level=error service=api msg="boom" user=bob@example.com`,
		`level=info service=api msg="ok"`,
		`level=debug service=web msg="noise"`,
	}
	cases := []struct {
		name, rules string
		want        []string
	}{
		{"a routed line stops at its rule", `
rules:
  - name: errors
    match: '{service=~".+"} |= "level=error"'
    route: pg
  - name: rest
    route: [files]
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> pg`,
			`level=info service=api msg="ok" -> files`,
			`level=debug service=web msg="noise" -> files`,
		}},
		{"continue lets later rules route it too", `
rules:
  - name: errors
    match: '{service=~".+"} |= "level=error"'
    route: [pg]
    continue: true
  - name: rest
    route: [files, archive]
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> archive,files,pg`,
			`level=info service=api msg="ok" -> archive,files`,
			`level=debug service=web msg="noise" -> archive,files`,
		}},
		{"continue: false is the default", `
rules:
  - name: errors
    match: '{service=~".+"} |= "level=error"'
    route: [pg]
    continue: false
  - name: redact
    redact: {detectors: [email]}
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> pg`,
			`level=info service=api msg="ok" -> -`,
			`level=debug service=web msg="noise" -> -`,
		}},
		{"a line dropped later is neither stored nor routed", `
rules:
  - name: all
    route: files
    continue: true
  - name: debug
    match: '{service=~".+"} |= "level=debug"'
    drop: true
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> files`,
			`level=info service=api msg="ok" -> files`,
		}},
		{"a line dropped before is not routed", `
rules:
  - name: debug
    match: '{service=~".+"} |= "level=debug"'
    drop: true
  - name: all
    route: files
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> files`,
			`level=info service=api msg="ok" -> files`,
		}},
		{"what is routed is what is stored: redacted", `
rules:
  - name: redact
    redact: {detectors: [email]}
  - name: errors
    match: '{service=~".+"} |= "level=error"'
    route: pg
`, []string{
			`level=error service=api msg="boom" user=<redacted> -> pg`,
			`level=info service=api msg="ok" -> -`,
			`level=debug service=web msg="noise" -> -`,
		}},
		{"a rule that routes acts first", `
rules:
  - name: web
    match: '{service=~".+"} | logfmt | service="web"'
    set_labels: {team: web}
    route: files
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> -`,
			`level=info service=api msg="ok" -> -`,
			`level=debug service=web msg="noise" -> files`,
		}},
		{"sample: only what is kept is routed", `
rules:
  - name: none
    match: '{service=~".+"} |= "level=info"'
    sample: {rate: 0}
    route: files
  - name: rest
    route: pg
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> pg`,
			`level=debug service=web msg="noise" -> pg`,
		}},
		{"a tenant's rule routes its tenant's lines only", `
rules:
  - name: other
    tenant: other
    route: files
  - name: mine
    tenant: t
    route: pg
`, []string{
			`level=error service=api msg="boom" user=bob@example.com -> pg`,
			`level=info service=api msg="ok" -> pg`,
			`level=debug service=web msg="noise" -> pg`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compile(t, c.rules)
			b := parseLines(t, lines...)
			s.Apply(b)
			if got := routed(b); !slices.Equal(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			// The batch's lists are distinct and sorted.
			for k, names := range b.Routes {
				if !slices.IsSorted(names) {
					t.Errorf("route %d %q is not sorted", k+1, names)
				}
				for j := range k {
					if slices.Equal(b.Routes[j], names) {
						t.Errorf("routes %d and %d are both %q", j+1, k+1, names)
					}
				}
			}
		})
	}
}

func TestRouteSetsLabels(t *testing.T) {
	s := compile(t, `
rules:
  - name: web
    match: '{service=~".+"} | logfmt | service="web"'
    set_labels: {team: web}
    route: files
    continue: true
  - name: team
    match: '{team="web"}'
    route: pg
`)
	b := parseLines(t, `level=debug service=web msg="noise"`, `level=info service=api msg="ok"`)
	s.Apply(b)
	if got := routed(b); !slices.Equal(got, []string{`level=debug service=web msg="noise" -> files,pg`, `level=info service=api msg="ok" -> -`}) {
		t.Errorf("got %q", got)
	}
	if got := b.Labels(0).String(); !strings.Contains(got, `team="web"`) {
		t.Errorf("labels %s", got)
	}
}

func TestRouteCountsAndTrace(t *testing.T) {
	m := NewMetrics(nil)
	s, err := Compile("r.yaml", []byte(`
rules:
  - name: all
    route: [files, pg]
    continue: true
  - name: debug
    match: '{service=~".+"} |= "level=debug"'
    drop: true
`), m)
	if err != nil {
		t.Fatal(err)
	}
	b := parseLines(t, `level=info service=api msg="ok"`, `level=debug service=web msg="noise"`)
	var steps []string
	s.Trace(b, func(st Step) {
		steps = append(steps, st.Rule+" "+st.Action.String()+" "+st.Detail)
	})
	want := []string{"all matched ", "all routed files, pg", "all matched ", "all routed files, pg", "debug matched ", "debug dropped "}
	if !slices.Equal(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	// The dropped line is not counted as routed: it goes nowhere.
	if c := m.Rule("all"); c.Matched != 2 || c.Routed != 1 {
		t.Errorf("counted %+v, want 2 matched, 1 routed", c)
	}
	if got := s.Sinks(); !slices.Equal(got, []string{"files", "pg"}) {
		t.Errorf("Sinks %q", got)
	}
}

func TestRouteToSinks(t *testing.T) {
	src := []byte("rules:\n  - name: errors\n    match: '{a=\"b\"}'\n    route: [pg, files]\n")
	sinks := Sinks{"pg": true, "files": true, "audit": false}
	if _, err := CompileRouted("r.yaml", src, nil, sinks); err != nil {
		t.Fatalf("routes to configured sinks: %v", err)
	}
	if _, err := CompileRouted("r.yaml", src, nil, nil); err != nil {
		t.Fatalf("nil sinks check no name: %v", err)
	}
	cases := []struct {
		sinks Sinks
		want  string
	}{
		{Sinks{"pg": true}, `r.yaml:4:12: rule 1 (errors): route: no sink named "files" is configured (sinks: [pg])`},
		{Sinks{}, `r.yaml:4:12: rule 1 (errors): route: no sink named "files" is configured (sinks: none)`},
		{Sinks{"pg": true, "files": false}, `r.yaml:4:12: rule 1 (errors): route: sink "files" does not take routed lines: give it from: rules in the config`},
	}
	for _, c := range cases {
		_, err := CompileRouted("r.yaml", src, nil, c.sinks)
		var le *Error
		if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sinks %v: err %v, want %q", c.sinks, err, c.want)
		}
	}
}

func TestRouteTooManySinks(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("rules:\n  - name: wide\n    route: [")
	for i := range MaxSinks + 1 {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(fmt.Sprintf("s%d", i))
	}
	sb.WriteString("]\n")
	if _, err := Compile("r.yaml", []byte(sb.String()), nil); err == nil || !strings.Contains(err.Error(), "rule 1 (wide): route: the rules route to 65 sinks, more than 64") {
		t.Errorf("err %v", err)
	}
}

// TestLiveRouted checks that every version of a Live's file is checked
// against its sinks: at open, on reload and on PUT (dry run or not).
func TestLiveRouted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.yaml")
	sinks := Sinks{"pg": true, "archive": false}
	writeAtomic(t, file, "rules:\n  - name: a\n    route: nope\n")
	if _, err := OpenRouted(file, nil, nil, sinks); err == nil || !strings.Contains(err.Error(), `:3:12: rule 1 (a): route: no sink named "nope" is configured (sinks: [archive pg])`) {
		t.Fatalf("open: %v", err)
	}
	writeAtomic(t, file, "rules:\n  - name: a\n    route: pg\n")
	l, err := OpenRouted(file, nil, nil, sinks)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, file, "rules:\n  - name: a\n    route: archive\n")
	if _, err := l.Reload(); err == nil || !strings.Contains(err.Error(), `sink "archive" does not take routed lines`) {
		t.Errorf("reload: %v", err)
	}
	for _, dry := range []bool{true, false} {
		if _, _, err := l.Put([]byte("rules:\n  - name: a\n    route: [pg, nope]\n"), dry); err == nil || !strings.Contains(err.Error(), `no sink named "nope"`) {
			t.Errorf("put (dry run %v): %v", dry, err)
		}
	}
	if got := l.Current().Sinks(); !slices.Equal(got, []string{"pg"}) {
		t.Errorf("running set routes to %q, want the first version's", got)
	}
}
