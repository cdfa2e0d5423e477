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

// foldFewMax is the most folding literals searched one by one
// (NewFoldFinder): each scans the text for its rarest byte in both cases, so
// that more cost more than the automaton (BenchmarkSet: fold, 2 literals
// in 4 KiB 6.0 against 10.2 us, 4 literals 8.9-12.2 against 10.2).
const foldFewMax = 2

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
	folds []Finder // the same, folding (NewFoldFinder)
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
	return newSet(lits, fold, fewMax, maxDenseCells, nil)
}

// NewSetYielding is NewSet calling yield every few thousand literals or
// states built (yieldEvery): a caller building a large set off the hot
// path passes a function that lets other goroutines run, so that the
// build does not hold a core for its whole time (some 5-10 ms at 10,000
// literals). yield may be nil.
func NewSetYielding(lits [][]byte, fold bool, yield func()) *Set {
	return newSet(lits, fold, fewMax, maxDenseCells, yield)
}

// yieldEvery is how many literals or states the build handles between
// two calls of its yield function: well under a millisecond of work.
const yieldEvery = 2048

// newSet is NewSet with the thresholds as arguments, so that tests
// reach each form.
func newSet(lits [][]byte, fold bool, few, denseCells int, yield func()) *Set {
	s := &Set{fold: fold}
	for _, l := range lits {
		if len(l) == 0 {
			s.empty = true
			return s
		}
	}
	if len(lits) <= few && !fold {
		for _, l := range lits {
			s.few = append(s.few, bytes.Clone(l))
		}
		return s
	}
	// Folding, a literal of more than half a chunk (whose fallback
	// lowers a text whole) takes the automaton.
	if len(lits) <= few && len(lits) <= foldFewMax && !slices.ContainsFunc(lits, func(l []byte) bool { return len(l) > foldChunk/2 }) {
		for _, l := range lits {
			s.folds = append(s.folds, NewFoldFinder(l))
		}
		return s
	}
	if yield == nil {
		yield = func() {}
	}
	s.build(lits, denseCells, yield)
	return s
}

// Match reports whether text contains one of the set's literals.
func (s *Set) Match(text []byte) bool {
	switch {
	case s.empty:
		return true
	case s.folds != nil:
		for i := range s.folds {
			if s.folds[i].Index(text) >= 0 {
				return true
			}
		}
		return false
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

// build compiles lits (none empty) into the automaton, calling yield
// every yieldEvery literals or states.
//
// The trie is built from the literals in sorted order (of their bytes as
// matched: lowered when folding): a literal shares with the one before
// it the path of their common prefix and adds states only for the rest.
// No map of (state, class) to child is needed, and since classes are
// numbered in byte order, each state's children are made in class order,
// so its edges come out sorted. A map of the trie's edges cost most of a
// build: 13 ms for the 11,000 literals of BenchmarkNewSet.
func (s *Set) build(lits [][]byte, denseCells int, yield func()) {
	// Byte classes: one per byte that occurs in a literal (a letter and
	// its other case share one when folding), numbered in byte order; 0
	// for the rest.
	lower := func(b byte) byte {
		if s.fold && b-'A' < 26 {
			return b | 0x20
		}
		return b
	}
	var present [256]bool
	total := 0
	for _, l := range lits {
		total += len(l)
		for _, b := range l {
			present[lower(b)] = true
		}
	}
	for b := range present {
		if present[b] {
			s.nclass++
			s.class[b] = uint16(s.nclass)
		}
	}
	if s.fold {
		for b := byte('A'); b <= 'Z'; b++ {
			s.class[b] = s.class[b|0x20]
		}
	}
	s.nclass++ // class 0
	// The literals as matched (lowered when folding), sorted.
	keys := lits
	if s.fold {
		buf := make([]byte, 0, total)
		keys = make([][]byte, len(lits))
		for i, l := range lits {
			k := len(buf)
			for _, b := range l {
				buf = append(buf, lower(b))
			}
			keys[i] = buf[k:len(buf):len(buf)]
		}
	}
	order := make([]int32, len(keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return bytes.Compare(keys[a], keys[b]) })
	yield()
	// The trie. path[d] is the state at depth d on the previous
	// literal's path; edges are made in order, each state's in class
	// order (the literals are sorted).
	type made struct {
		from int32
		edge
	}
	madeEdges := make([]made, 0, total/2)
	term := []bool{false}
	path := []int32{0}
	var prev []byte
	for i, li := range order {
		if i%yieldEvery == yieldEvery-1 {
			yield()
		}
		k := keys[li]
		d := 0
		for d < len(k) && d < len(prev) && k[d] == prev[d] {
			d++
		}
		path = path[:d+1]
		for ; d < len(k); d++ {
			next := int32(len(term))
			term = append(term, false)
			madeEdges = append(madeEdges, made{path[d], edge{s.class[k[d]], next}})
			path = append(path, next)
		}
		term[path[len(k)]] = true
		prev = k
	}
	n := len(term)
	// Each state's edges, in the order made: by class.
	s.start = make([]int32, n+1)
	for _, e := range madeEdges {
		s.start[e.from+1]++
	}
	for i := 1; i <= n; i++ {
		s.start[i] += s.start[i-1]
	}
	s.edges = make([]edge, len(madeEdges))
	fill := slices.Clone(s.start[:n])
	for _, e := range madeEdges {
		s.edges[fill[e.from]] = e.edge
		fill[e.from]++
	}
	yield()
	// Failure links and outputs, breadth first.
	s.fail = make([]int32, n)
	s.out = term
	queue := make([]int32, 0, n)
	for _, e := range s.edges[s.start[0]:s.start[1]] {
		queue = append(queue, e.to)
	}
	for done := 1; len(queue) > 0; done++ {
		if done%yieldEvery == 0 {
			yield()
		}
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
	bfs := make([]int32, 0, n)
	for _, e := range s.edges[s.start[0]:s.start[1]] {
		bfs = append(bfs, e.to)
	}
	for i := 0; i < len(bfs); i++ {
		if i%yieldEvery == yieldEvery-1 {
			yield()
		}
		st := bfs[i]
		row := s.dense[int(st)*nc : int(st+1)*nc]
		copy(row, s.dense[int(s.fail[st])*nc:int(s.fail[st]+1)*nc])
		for _, e := range s.edges[s.start[st]:s.start[st+1]] {
			row[e.class] = e.to * int32(nc)
			if s.out[e.to] {
				row[e.class] = matched
			}
			bfs = append(bfs, e.to)
		}
	}
	s.edges, s.start, s.fail, s.out, s.root = nil, nil, nil, nil, nil
}
