package regexlit

import (
	"strings"

	"github.com/sluicelog/sluice/internal/literal"
)

// Matcher evaluates a prefilter's groups over texts.
//
// Concurrency: immutable once built; safe for concurrent use.
type Matcher struct {
	groups []groupMatcher
}

// groupMatcher holds one group: its exact literals in one set, its
// folding ones in another.
type groupMatcher struct {
	exact, fold *literal.Set
}

// Matcher returns a matcher of the groups whose literals all have at
// least minLen bytes (a group of short literals is found in most texts
// and costs a search that rules little out; 0 keeps every group). It
// returns nil when no group is kept: every text passes.
func (p *Prefilter) Matcher(minLen int) *Matcher {
	m := &Matcher{}
	for _, g := range p.Groups {
		if shortestLit(g) < minLen {
			continue
		}
		var exact, fold [][]byte
		for _, l := range g {
			if l.Fold {
				fold = append(fold, []byte(l.Text))
			} else {
				exact = append(exact, []byte(l.Text))
			}
		}
		var gm groupMatcher
		if len(exact) > 0 {
			gm.exact = literal.NewSet(exact, false)
		}
		if len(fold) > 0 {
			gm.fold = literal.NewSet(fold, true)
		}
		m.groups = append(m.groups, gm)
	}
	if len(m.groups) == 0 {
		return nil
	}
	return m
}

// Useful reports whether the prefilter has a group whose literals all
// have at least minLen bytes.
func (p *Prefilter) Useful(minLen int) bool {
	for _, g := range p.Groups {
		if shortestLit(g) >= minLen {
			return true
		}
	}
	return false
}

func shortestLit(g []Lit) int {
	n := -1
	for _, l := range g {
		if n < 0 || len(l.Text) < n {
			n = len(l.Text)
		}
	}
	return n
}

// Match reports whether text holds one literal of each group.
func (m *Matcher) Match(text []byte) bool {
	for i := range m.groups {
		g := &m.groups[i]
		if !(g.exact != nil && g.exact.Match(text) || g.fold != nil && g.fold.Match(text)) {
			return false
		}
	}
	return true
}

// Equals returns a function reporting whether a text is one of the
// prefilter's Equal literals, or nil when the prefilter is not Whole.
func (p *Prefilter) Equals() func(string) bool {
	if !p.Whole {
		return nil
	}
	exact := map[string]bool{}
	var fold []string
	for _, l := range p.Equal {
		if l.Fold {
			fold = append(fold, l.Text)
		} else {
			exact[l.Text] = true
		}
	}
	return func(s string) bool {
		if exact[s] {
			return true
		}
		for _, f := range fold {
			if equalFoldASCII(s, f) {
				return true
			}
		}
		return false
	}
}

// equalFoldASCII reports whether s is low (lowercase) but for the case of
// ASCII letters. (strings.EqualFold folds beyond ASCII, as a folding Lit
// does not.)
func equalFoldASCII(s, low string) bool {
	if len(s) != len(low) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c |= 0x20
		}
		if c != low[i] {
			return false
		}
	}
	return true
}

// Common returns the longest text that every literal of a group holds
// (folding when one of them folds), which every text holding one of
// them holds: a single literal to search for, or to give a store that
// tests one literal at a time, where a group cannot go.
func Common(g []Lit) (Lit, bool) {
	if len(g) == 0 {
		return Lit{}, false
	}
	fold := false
	for _, l := range g {
		fold = fold || l.Fold
	}
	texts := make([]string, len(g))
	short := 0
	for i, l := range g {
		texts[i] = l.Text
		if fold {
			texts[i] = asciiLower(l.Text)
		}
		if len(texts[i]) < len(texts[short]) {
			short = i
		}
	}
	// The substrings of the shortest, longest first (the literals are
	// short; past maxCommon bytes only its prefixes and suffixes).
	const maxCommon = 256
	s := texts[short]
	for n := len(s); n > 0; n-- {
		for i := 0; i+n <= len(s); i++ {
			if len(s) > maxCommon && i > 0 && i+n < len(s) {
				continue
			}
			sub := s[i : i+n]
			all := true
			for _, t := range texts {
				if !strings.Contains(t, sub) {
					all = false
					break
				}
			}
			if all {
				return Lit{Text: sub, Fold: fold}, true
			}
		}
	}
	return Lit{}, false
}
