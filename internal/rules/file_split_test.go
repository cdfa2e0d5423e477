package rules

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestRuleChunks(t *testing.T) {
	cases := []struct {
		src   string
		lines []int // the first line of each chunk; nil: not split
	}{
		{"rules:\n  - name: a\n    drop: true\n  - name: b\n    drop: true\n", []int{2, 4}},
		{"# head\n\nrules: # the rules\n- name: a\n  drop: true\n# between\n- name: b\n  keep: true", []int{4, 7}},
		{"rules:\n  -\n    name: a\n    drop: true\n  - {name: b, drop: true}\n", []int{2, 5}},
		{"rules:\n  - name: a\n    rewrite: |\n      x\n# a comment at column 0\n      y\n  - name: b\n    drop: true\n", []int{2, 7}},
		{"rules: []", nil},
		{"rules:", nil},
		{"rules: [{name: a, drop: true}]", nil},
		{"rules:\n  - name: a\n    drop: true\nother: 1\n", nil},
		{"rules:\n  - name: a\n    drop: true\n - name: b\n", nil},
		{"rules:\n  - name: a\n    drop: true\n  name: b\n", nil},
		{"rules:\n  - name: a\r\n    drop: true\n", nil},
		{"rules:\n\t- name: a\n", nil},
		{"---\nrules:\n  - name: a\n", nil},
		{"\xEF\xBB\xBFrules:\n  - name: a\n", nil},
		{"rulesx:\n  - name: a\n", nil},
		{"rules: &x\n  - name: a\n", nil},
	}
	for _, c := range cases {
		chunks, ok := ruleChunks([]byte(c.src), 0)
		if ok != (c.lines != nil) {
			t.Errorf("%q: split %v, want %v", c.src, ok, c.lines != nil)
			continue
		}
		var lines []int
		for _, ch := range chunks {
			lines = append(lines, ch.line)
		}
		if !slices.Equal(lines, c.lines) {
			t.Errorf("%q: chunks at lines %v, want %v", c.src, lines, c.lines)
		}
	}
}

// TestReloadDecodesChanged checks that a reload decodes only the rules
// whose text changed: the others' specs are the running set's, and the
// rules and the problems are where the new file has them.
func TestReloadDecodesChanged(t *testing.T) {
	v1 := "rules:\n  - name: a\n    match: '{s=\"x\"} |= \"a\"'\n    drop: true\n  - name: b\n    set_labels: {v: one}\n  - name: c\n    metric: {name: c_total}\n"
	prev := compile(t, v1)
	v2 := "rules:\n  # a new comment\n  - name: a\n    match: '{s=\"x\"} |= \"a\"'\n    drop: true\n  - name: b\n    set_labels: {v: two}\n  - name: c\n    metric: {name: c_total}\n"
	s, err := compileFrom("rules.yaml", []byte(v2), nil, prev)
	if err != nil {
		t.Fatal(err)
	}
	if s.specs == nil {
		t.Fatal("the file was decoded whole")
	}
	// The comment is a line of the text of the rules: "rules:" and "# a
	// new comment" before a's item. a's item text is the same.
	if s.rules[0].spec.line+s.rules[0].spec.base != 3 || s.rules[2].spec.line+s.rules[2].spec.base != 8 {
		t.Errorf("rules a and c at lines %d and %d, want 3 and 8", s.rules[0].spec.line+s.rules[0].spec.base, s.rules[2].spec.line+s.rules[2].spec.base)
	}
	// A kept spec is a copy of the running set's (see parseChunksBy),
	// sharing what that set decoded: its keys' places, for one.
	kept := 0
	for text, e := range s.specs {
		if p, ok := prev.specs[text]; ok && &p.sp.pos[0] == &e.sp.pos[0] {
			if p.sp == e.sp {
				t.Errorf("rule %s: the new set's spec is the running set's, not a copy", e.sp.name)
			}
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("%d specs kept from the running set, want 2 (a and c)", kept)
	}
	// A problem in a kept rule's compile is placed where it is now.
	bad := strings.Replace(v2, "name: c_total", "name: sluice_c", 1)
	_, err = compileFrom("rules.yaml", []byte(bad), nil, s)
	if err == nil || !strings.HasPrefix(err.Error(), "rules.yaml:9:") {
		t.Errorf("got %v, want a problem at line 9", err)
	}
	b := parseLines(t, `{"s":"x","msg":"b"}`)
	s.Apply(b)
	if got := result(b); len(got) != 1 || !strings.Contains(got[0], `v="two"`) {
		t.Errorf("stored %q, want the line tagged v=two", got)
	}
}

// absSpecs returns specs with their lines made absolute (base 0).
func absSpecs(specs []spec) []spec {
	out := slices.Clone(specs)
	for i := range out {
		s := &out[i]
		s.line += s.base
		s.pos = slices.Clone(s.pos)
		for k := range s.pos {
			s.pos[k].at[0] += s.base
		}
		s.base = 0
	}
	return out
}

// FuzzRuleChunks checks decoding a file rule by rule (parseChunks, with
// and without the specs of another version) against decoding it whole:
// when the rule by rule decoding takes a file, the whole one takes it
// too and gives the same specs, with the same lines.
func FuzzRuleChunks(f *testing.F) {
	for _, seed := range []string{
		genRules(12),
		"rules:\n  - name: a\n    drop: true\n  - name: b\n    drop: true\n",
		"rules:\n- name: a\n  match: \"x\n- name: b\"\n  drop: true\n",
		"rules:\n- name: a\n  match: 'x\n- name: b'\n  drop: true\n",
		"rules:\n- name: &n a\n  drop: true\n- name: b\n  set_labels: {x: *n}\n",
		"rules:\n- name: a\n  set_labels: {x: [1,\n- 2]}\n",
		"rules:\n  - name: a\n    rewrite: |\n      x\n# c\n      - y\n  - name: b\n    drop: true\n",
		"rules:\n  - name: a\n    match: x\n      - y\n    drop: true\n",
		"rules:\n  - name: a\n    drop: true\n  - name: a\n    drop: true\n",
		"rules:\n  - name: a\n    drop: true\n  - 3\n",
		"rules:\n  - name: a\n    drop: true\n  - name: b\n    drop: true\n    ]\n",
		"rules:\n  - name: a\n    drop: true\n  - name: b\n    drop: true\n...\n",
		"rules:\n  - name: a\n    drop: true\n  - name: b\n    dorp: true\n",
		"rules:\n  - - name: a\n  - name: b\n    drop: true\n",
		"rules:\n  - name: a\n    match: '{a=\"b\"} |= \"c\" | json | d > 1'\n    drop: true\n  - name: b\n    redact: {detectors: [email]}\n",
	} {
		f.Add([]byte(seed), []byte(genRules(3)))
	}
	f.Fuzz(func(t *testing.T, data, other []byte) {
		chunks, ok := ruleChunks(data, 0)
		if !ok {
			return
		}
		// The specs of another version, decoded rule by rule and whole,
		// and of this one, decoded whole.
		prevs := []map[string]specAt{nil}
		if oc, ok := ruleChunks(other, 0); ok {
			_, p, _ := parseChunks(other, oc, nil, nil)
			prevs = append(prevs, p)
		}
		for _, src := range [][]byte{other, data} {
			if _, p, err := parseSpecs("f.yaml", src, nil, nil); err == nil && p != nil {
				prevs = append(prevs, p)
			}
		}
		for _, p := range prevs {
			// Runs of one rule, of two, and as a compile decodes them.
			for _, group := range []int{1, 2, chunkYield} {
				specs, byText, ok := parseChunksBy(data, chunks, p, group, nil)
				if !ok {
					continue
				}
				whole, err := parseFile("f.yaml", data)
				if err != nil {
					t.Fatalf("decoded rule by rule but not whole: %v", err)
				}
				if got, want := absSpecs(specs), absSpecs(whole); !reflect.DeepEqual(got, want) {
					t.Fatalf("rule by rule:\n%+v\nwhole:\n%+v", got, want)
				}
				if len(byText) == 0 {
					t.Fatal("no specs by text for the next version")
				}
			}
		}
	})
}
