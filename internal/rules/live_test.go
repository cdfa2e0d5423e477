package rules

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeAtomic(t *testing.T, file, src string) {
	t.Helper()
	if err := os.WriteFile(file+".tmp", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
}

func TestLiveReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.yaml")
	writeAtomic(t, file, "rules:\n  - name: a\n    drop: true\n")
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	l, err := Open(file, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := l.Current()
	// The same bytes: nothing changes.
	if changed, err := l.Reload(); changed || err != nil {
		t.Errorf("reload of the same file: %v %v", changed, err)
	}
	// A bad file: the old set keeps running, the error says where.
	writeAtomic(t, file, "rules:\n  - name: a\n    dorp: true\n")
	if _, err := l.Reload(); err == nil || !strings.Contains(err.Error(), file+":3:5: rule 1 (a): unknown key \"dorp\"") {
		t.Errorf("bad reload: %v", err)
	}
	if l.Current() != first {
		t.Error("a failed reload replaced the running set")
	}
	writeAtomic(t, file, "rules:\n  - name: b\n    keep: true\n")
	if changed, err := l.Reload(); !changed || err != nil {
		t.Errorf("reload: %v %v", changed, err)
	}
	if got := l.Current().Names(); len(got) != 1 || got[0] != "b" {
		t.Errorf("running %q after the reload", got)
	}
	for result, want := range map[string]float64{"ok": 1, "error": 1, "unchanged": 1} {
		if got := testutil.ToFloat64(m.reloads.WithLabelValues(result)); got != want {
			t.Errorf("reloads{result=%s} = %v, want %v", result, got, want)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.yaml"), nil, nil); err == nil {
		t.Error("opened a missing file")
	}
	// The rules' metrics gather (the collector is unchecked).
	if _, err := reg.Gather(); err != nil {
		t.Error(err)
	}
}

func TestLiveWatch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.yaml")
	writeAtomic(t, file, "rules:\n  - name: a\n    drop: true\n")
	l, err := Open(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	reloads := make(chan error, 100)
	done := make(chan error)
	watching := make(chan struct{})
	l.watching = func() { close(watching) }
	go func() { done <- l.Watch(ctx, func(_ bool, err error) { reloads <- err }) }()
	<-watching
	writeAtomic(t, file, "rules:\n  - name: w\n    drop: true\n")
	// The rename's event comes: a reload after it runs the new file (a
	// stalled test may see one reload before it, of the old file).
	for l.Current().Names()[0] != "w" {
		if err := <-reloads; err != nil {
			t.Fatal(err)
		}
	}
	// A bad file is reported and leaves the running set.
	writeAtomic(t, file, "rules: [")
	for err := range reloads {
		if err != nil {
			break
		}
	}
	if got := l.Current().Names(); got[0] != "w" {
		t.Errorf("running %q after a bad file", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReloadKeepsCompiled checks that a reload keeps what the running
// set compiled of the rules the file still has (their matches, and the
// gate while no rule's literals change), and compiles what changed: the
// new set matches by the new file, not by what it kept.
func TestReloadKeepsCompiled(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.yaml")
	// Ten gated rules on one stream, so that the gate runs (gateMin).
	gen := func(last, action string) string {
		var sb strings.Builder
		sb.WriteString("rules:\n")
		for i := range 9 {
			fmt.Fprintf(&sb, "  - name: r%d\n    match: '{service=\"api\"} |= \"word%d\"'\n    %s\n", i, i, action)
		}
		fmt.Fprintf(&sb, "  - name: last\n    match: '{service=\"api\"} |= \"%s\"'\n    drop: true\n", last)
		return sb.String()
	}
	writeAtomic(t, file, gen("alpha", "drop: true"))
	l, err := Open(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := func(s *Set) []string {
		b := parseLines(t, "service=api alpha", "service=api beta", "service=api word3", "service=api other")
		s.Apply(b)
		var out []string
		for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
			out = append(out, string(b.Bytes(b.Records[i].Line)))
		}
		return out
	}
	old := l.Current()
	if got, want := kept(old), []string{"service=api beta", "service=api other"}; !slices.Equal(got, want) {
		t.Fatalf("kept %q, want %q", got, want)
	}

	// An action changes, no literal does: every match and the gate kept.
	writeAtomic(t, file, gen("alpha", "keep: true"))
	if changed, err := l.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	cur := l.Current()
	for i, r := range cur.rules {
		if r.compiledMatch != old.rules[i].compiledMatch {
			t.Errorf("rule %s: match compiled again, not kept", r.name)
		}
	}
	if cur.gate == nil || cur.gate != old.gate {
		t.Error("the gate was built again though no literal changed")
	}
	if got, want := kept(cur), []string{"service=api beta", "service=api word3", "service=api other"}; !slices.Equal(got, want) {
		t.Fatalf("after the first reload, kept %q, want %q", got, want)
	}

	// The last rule's literal changes: its match and the gate are new,
	// the others' matches kept.
	old = cur
	writeAtomic(t, file, gen("beta", "keep: true"))
	if changed, err := l.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	cur = l.Current()
	for i, r := range cur.rules {
		if same := r.compiledMatch == old.rules[i].compiledMatch; same != (r.name != "last") {
			t.Errorf("rule %s: match kept %v", r.name, same)
		}
	}
	if cur.gate == old.gate {
		t.Error("the gate was kept though a rule's literal changed")
	}
	if got, want := kept(cur), []string{"service=api alpha", "service=api word3", "service=api other"}; !slices.Equal(got, want) {
		t.Fatalf("after the second reload, kept %q, want %q", got, want)
	}
}

// TestGateAddsToRunning checks that a reload that changes a few rules'
// literals keeps the running set's gate and adds a set of the new
// literals to it (up to gateMaxSets), and that the new set keeps and
// drops what a cold compile of the same file does, on lines that hold
// the new literals, the removed ones, and none.
func TestGateAddsToRunning(t *testing.T) {
	gen := func(words ...string) string {
		var sb strings.Builder
		sb.WriteString("rules:\n")
		for i := range 64 { // enough that a few removed literals stay under the gate's bound
			w := fmt.Sprintf("word%d", i)
			if i < len(words) {
				w = words[i]
			}
			fmt.Fprintf(&sb, "  - name: r%d\n    match: '{service=\"api\"} |= \"%s\"'\n    drop: true\n", i, w)
		}
		return sb.String()
	}
	lines := []string{"service=api word0", "service=api word5", "service=api alpha", "service=api beta",
		"service=api gamma", "service=api delta", "service=api epsilon", "service=api other"}
	kept := func(s *Set) []string {
		b := parseLines(t, lines...)
		s.Apply(b)
		return result(b)
	}
	prev := compile(t, gen())
	first := prev.gate
	for k, words := range [][]string{{"alpha"}, {"alpha", "beta"}, {"gamma", "beta"}, {"delta"}, {"epsilon"}} {
		src := gen(words...)
		s, err := compileFrom("rules.yaml", []byte(src), nil, prev)
		if err != nil {
			t.Fatal(err)
		}
		if want := compile(t, src); !slices.Equal(kept(s), kept(want)) {
			t.Fatalf("reload %d: kept %q, a cold compile %q", k, kept(s), kept(want))
		}
		if s.gate.sets[0] != first.sets[0] && k < gateMaxSets-1 {
			t.Errorf("reload %d: the running gate's automaton was built again", k)
		}
		if len(s.gate.sets) > gateMaxSets {
			t.Errorf("reload %d: %d sets in the gate, more than %d", k, len(s.gate.sets), gateMaxSets)
		}
		prev = s
	}
	if prev.gate.sets[0] == first.sets[0] {
		t.Error("after more reloads than gateMaxSets, the gate was never built again")
	}
}
