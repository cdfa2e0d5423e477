package record

import (
	"unsafe"
)

const (
	pageBits = 10
	pageSize = 1 << pageBits
	maxPages = 1024

	// MaxTableSize bounds a Names or Streams table. A producer whose table
	// is full starts a new one; batches keep the table they were built with.
	MaxTableSize = pageSize * maxPages
)

// table is an append-only list whose entries never move. That is what lets
// a batch handed to another goroutine read ids published before the hand-off
// while the producer keeps appending: pages are allocated once and the
// page array is fixed, so no slice header is ever re-allocated under a
// reader.
//
// Concurrency: one writer; readers may read ids below a length that was
// published to them through a synchronizing operation (a channel send).
type table[T any] struct {
	pages [maxPages]*[pageSize]T
	n     uint32
}

func (t *table[T]) get(id uint32) *T {
	return &t.pages[id>>pageBits][id&(pageSize-1)]
}

// add appends v and returns its id, or false when the table is full.
func (t *table[T]) add(v T) (uint32, bool) {
	if t.n >= MaxTableSize {
		return 0, false
	}
	p := t.n >> pageBits
	if t.pages[p] == nil {
		t.pages[p] = new([pageSize]T)
	}
	id := t.n
	t.pages[p][id&(pageSize-1)] = v
	t.n++
	return id, true
}

// reset empties t, keeping its first page (cleared, so that it holds on
// to nothing) and dropping the others.
func (t *table[T]) reset() {
	if p := t.pages[0]; p != nil {
		clear(p[:min(int(t.n), pageSize)])
	}
	for i := 1; i < maxPages && t.pages[i] != nil; i++ {
		t.pages[i] = nil
	}
	t.n = 0
}

// Names interns field names. Ids are dense from 0.
//
// Concurrency: see table. Lookup and Add are for the single writer only.
type Names struct {
	t     table[string]
	index map[string]uint32
}

// NewNames returns an empty table.
func NewNames() *Names {
	return &Names{index: make(map[string]uint32)}
}

// Reset empties the table for reuse, keeping its first page and its
// index's room: a producer that is done with one batch before it builds
// the next (a push decoded, stored and answered) then pays for no new
// table.
// REQUIRES: no batch built with the table, nor anything holding its ids,
// is used any more (the names themselves, strings, stay valid).
func (n *Names) Reset() {
	n.t.reset()
	clear(n.index)
}

// Get returns the name with the given id.
func (n *Names) Get(id uint32) string { return *n.t.get(id) }

// Len returns how many names the table holds.
func (n *Names) Len() int { return int(n.t.n) }

// Lookup returns the id of name, adding it if needed. It returns false only
// when the table is full. It does not allocate when name is present.
func (n *Names) Lookup(name []byte) (uint32, bool) {
	if id, ok := n.index[string(name)]; ok {
		return id, true
	}
	s := string(name)
	id, ok := n.t.add(s)
	if !ok {
		return 0, false
	}
	n.index[s] = id
	return id, true
}

// Label is one name=value pair of a stream's label set.
type Label struct {
	Name, Value string
}

// Labels is a label set sorted by name.
type Labels []Label

// Get returns the value of the named label and whether it is present.
func (ls Labels) Get(name string) (string, bool) {
	for _, l := range ls {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// Value returns the value of the named label, "" when absent (as a
// LogQL matcher sees an absent label).
func (ls Labels) Value(name string) string {
	v, _ := ls.Get(name)
	return v
}

// String formats the set as Loki does: {a="x", b="y"}.
func (ls Labels) String() string {
	n := 2 // the braces, and per label its quotes, '=' and separator
	for _, l := range ls {
		n += len(l.Name) + len(l.Value) + 5
	}
	b := ls.AppendString(make([]byte, 0, n))
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not kept: one allocation, not a copy
}

// AppendString appends the set as String formats it.
func (ls Labels) AppendString(dst []byte) []byte {
	dst = append(dst, '{')
	for i, l := range ls {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, l.Name...)
		dst = append(dst, `="`...)
		dst = AppendJSONEscaped(dst, l.Value)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// Streams interns stream label sets. Id 0 is always the empty set.
//
// Concurrency: as Names.
type Streams struct {
	t     table[Labels]
	index map[string]uint32
}

// NewStreams returns a table holding only the empty label set, as id 0.
func NewStreams() *Streams {
	s := &Streams{index: make(map[string]uint32)}
	s.t.add(nil)
	s.index[""] = 0
	return s
}

// Reset empties the table, as Names.Reset does, to the empty label set
// alone (id 0). The label sets it held stay valid: interning makes new
// ones.
// REQUIRES: as Names.Reset.
func (s *Streams) Reset() {
	s.t.reset()
	clear(s.index)
	s.t.add(nil)
	s.index[""] = 0
}

// Get returns the label set with the given id.
func (s *Streams) Get(id uint32) Labels { return *s.t.get(id) }

// Len returns how many label sets the table holds.
func (s *Streams) Len() int { return int(s.t.n) }

// lookup returns the id of the label set whose canonical key is key,
// building the set with build if it is new. It returns false only when the
// table is full.
func (s *Streams) lookup(key []byte, build func() Labels) (uint32, bool) {
	if id, ok := s.index[string(key)]; ok {
		return id, true
	}
	id, ok := s.t.add(build())
	if !ok {
		return 0, false
	}
	s.index[string(key)] = id
	return id, true
}

// constants holds the values that formats add without their text being in
// the input. Written only during package initialization, so reads need no
// lock.
var constants []string

// Constant registers s as a constant value and returns the Raw span that a
// Const field uses to refer to it.
// REQUIRES: called during package initialization (a package-level var),
// before any goroutine reads constants.
func Constant(s string) Span {
	constants = append(constants, s)
	return Span{Off: uint32(len(constants) - 1), Len: uint32(len(s))}
}

// AppendJSON appends the set as a JSON object: {"a":"x","b":"y"}.
func (ls Labels) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	for i, l := range ls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = AppendJSONEscaped(dst, l.Name)
		dst = append(dst, `":"`...)
		dst = AppendJSONEscaped(dst, l.Value)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}
