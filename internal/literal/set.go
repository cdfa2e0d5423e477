package literal

import (
	"bytes"
	"slices"
)

// fewMax is the most literals searched one by one. bytes.Index costs
// per literal, the automaton (about 2 ns a byte) does not: BenchmarkSet,
// 4 KiB matching none, on a loaded shared 2-core machine (figures
// varied 3x run to run): 2 literals 2 us one by one against 8-26 for the
// automaton, 4 about 10 against 9-18, 8 about 25 against 24, 100 about
// 260 against 28. Literals whose first byte is rare in the text favour
// the loop, frequent ones the automaton.
const fewMax = 4

// maxDenseCells bounds the dense transition table (states times byte
// classes, 4 bytes each): a larger set keeps sparse edges and failure
// links, slower per byte but as small as its literals.
const maxDenseCells = 1 << 22

// Set reports whether a text contains any of its literals.
//
// Concurrency: immutable once built; safe for concurrent use.
type Set struct {
	fold  bool
	empty bool     // a literal is empty: every text matches
	few   [][]byte // set when searched one by one
	// The automaton. State 0 is the root; a transition to a state that
	// ends a literal (itself or through its failure links) is stored as
	// matched, and the search stops there.
	class  [256]uint16 // byte to class; class 0: a byte in no literal
	nclass int
	// dense[s+c], s a state's row offset (its number times nclass): the
	// next state's row offset, or matched.
	dense []int32
	// Sparse form (dense == nil): each state's edges by class, sorted,
	// in edges[start[s]:start[s+1]], and its failure link.
	edges []edge
	start []int32
	fail  []int32
	out   []bool
	root  []int32 // the root's next state for each class, or matched
}

const matched = -1

type edge struct {
	class uint16
	to    int32
}

// NewSet returns the set of lits. With fold, ASCII letters match either
// case (other bytes match exactly). The set keeps no reference to lits.
func NewSet(lits [][]byte, fold bool) *Set {
	return newSet(lits, fold, fewMax, maxDenseCells)
}

// newSet is NewSet with the thresholds as arguments, so that tests
// reach each form.
func newSet(lits [][]byte, fold bool, few, denseCells int) *Set {
	s := &Set{fold: fold}
	for _, l := range lits {
		if len(l) == 0 {
			s.empty = true
			return s
		}
	}
	if !fold && len(lits) <= few {
		for _, l := range lits {
			s.few = append(s.few, bytes.Clone(l))
		}
		return s
	}
	s.build(lits, denseCells)
	return s
}

// Match reports whether text contains one of the set's literals.
func (s *Set) Match(text []byte) bool {
	switch {
	case s.empty:
		return true
	case s.few != nil:
		for _, l := range s.few {
			if bytes.Contains(text, l) {
				return true
			}
		}
		return false
	case s.dense != nil:
		st := int32(0)
		for _, c := range text {
			st = s.dense[st+int32(s.class[c])]
			if st == matched {
				return true
			}
		}
		return false
	}
	return s.matchSparse(text)
}

func (s *Set) matchSparse(text []byte) bool {
	st := int32(0)
	for _, b := range text {
		c := s.class[b]
		for st != 0 {
			if to, ok := s.edge(st, c); ok {
				st = to
				break
			}
			st = s.fail[st]
		}
		if st == 0 {
			st = s.root[c]
		}
		if st == matched || s.out[st] {
			return true
		}
	}
	return false
}

// edge returns state st's edge of class c.
func (s *Set) edge(st int32, c uint16) (int32, bool) {
	es := s.edges[s.start[st]:s.start[st+1]]
	i, ok := slices.BinarySearchFunc(es, c, func(e edge, c uint16) int { return int(e.class) - int(c) })
	if !ok {
		return 0, false
	}
	return es[i].to, true
}

// build compiles lits (none empty) into the automaton.
func (s *Set) build(lits [][]byte, denseCells int) {
	// Byte classes: one per byte that occurs in a literal (a letter and
	// its other case share one when folding), 0 for the rest.
	lower := func(b byte) byte {
		if s.fold && b-'A' < 26 {
			return b | 0x20
		}
		return b
	}
	for _, l := range lits {
		for _, b := range l {
			b = lower(b)
			if s.class[b] == 0 {
				s.nclass++
				s.class[b] = uint16(s.nclass)
			}
		}
	}
	if s.fold {
		for b := byte('A'); b <= 'Z'; b++ {
			s.class[b] = s.class[b|0x20]
		}
	}
	s.nclass++ // class 0
	// The trie: children by (state, class).
	type key struct {
		st int32
		c  uint16
	}
	child := map[key]int32{}
	var term []bool
	term = append(term, false)
	for _, l := range lits {
		st := int32(0)
		for _, b := range l {
			k := key{st, s.class[lower(b)]}
			next, ok := child[k]
			if !ok {
				next = int32(len(term))
				term = append(term, false)
				child[k] = next
			}
			st = next
		}
		term[st] = true
	}
	n := len(term)
	// Each state's edges, sorted by class.
	s.start = make([]int32, n+1)
	for k := range child {
		s.start[k.st+1]++
	}
	for i := 1; i <= n; i++ {
		s.start[i] += s.start[i-1]
	}
	s.edges = make([]edge, len(child))
	fill := slices.Clone(s.start[:n])
	for k, to := range child {
		s.edges[fill[k.st]] = edge{k.c, to}
		fill[k.st]++
	}
	for i := range n {
		slices.SortFunc(s.edges[s.start[i]:s.start[i+1]], func(a, b edge) int { return int(a.class) - int(b.class) })
	}
	// Failure links and outputs, breadth first.
	s.fail = make([]int32, n)
	s.out = term
	queue := make([]int32, 0, n)
	for _, e := range s.edges[s.start[0]:s.start[1]] {
		queue = append(queue, e.to)
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		for _, e := range s.edges[s.start[st]:s.start[st+1]] {
			f := s.fail[st]
			for {
				if to, ok := s.edge(f, e.class); ok {
					s.fail[e.to] = to
					break
				}
				if f == 0 {
					break
				}
				f = s.fail[f]
			}
			s.out[e.to] = s.out[e.to] || s.out[s.fail[e.to]]
			queue = append(queue, e.to)
		}
	}
	s.root = make([]int32, s.nclass)
	for _, e := range s.edges[s.start[0]:s.start[1]] {
		s.root[e.class] = e.to
		if s.out[e.to] {
			s.root[e.class] = matched
		}
	}
	if n*s.nclass > denseCells {
		return
	}
	// The dense table: a state's row is its edges, and for classes it
	// has no edge for, its failure link's row (computed before it,
	// breadth first).
	nc := s.nclass
	s.dense = make([]int32, n*nc)
	for c, to := range s.root {
		if to != matched {
			to *= int32(nc)
		}
		s.dense[c] = to
	}
	order := make([]int32, 0, n)
	for _, e := range s.edges[s.start[0]:s.start[1]] {
		order = append(order, e.to)
	}
	for i := 0; i < len(order); i++ {
		st := order[i]
		row := s.dense[int(st)*nc : int(st+1)*nc]
		copy(row, s.dense[int(s.fail[st])*nc:int(s.fail[st]+1)*nc])
		for _, e := range s.edges[s.start[st]:s.start[st+1]] {
			row[e.class] = e.to * int32(nc)
			if s.out[e.to] {
				row[e.class] = matched
			}
			order = append(order, e.to)
		}
	}
	s.edges, s.start, s.fail, s.out, s.root = nil, nil, nil, nil, nil
}
