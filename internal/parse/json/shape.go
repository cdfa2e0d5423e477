package json

import (
	"encoding/binary"

	"github.com/sluicelog/sluice/internal/record"
)

// The shape cache.
//
// Lines from one source repeat their keys in much the same order, so the
// parser remembers each key it has seen as a slot (a key under a given
// parent object) and, for each slot, the slot that followed it last time.
// Reading a key then starts with a guess: compare the input with the
// expected key's bytes and its closing quote. A hit skips scanning the key,
// building its dotted name and looking the name up; the field's name id is
// in the slot. A miss scans the key as usual and finds or makes its slot.
//
// Slots hold name ids of the builder's table, so the cache is dropped
// whenever the builder starts new tables (or the parser meets another
// builder).

// guesses is how many successors a slot remembers: after a trace_id may
// come http, error, user or tags.
const guesses = 4

var noNext = [guesses]uint32{noSlot, noSlot, noSlot, noSlot}

const (
	noSlot   = ^uint32(0)
	rootSlot = 0 // the parent of top-level keys, and the start of a line
	maxSlots = 1 << 16
)

type slot struct {
	parent uint32          // the slot of the object this key is in
	next   [guesses]uint32 // the slots that followed this one lately, latest first
	name   uint32          // the builder's id of the full dotted name, if named
	named  bool
	key    string // the key as written in the input, escapes and all
	key8   uint64 // its first 8 bytes, little endian, zero padded
	mask8  uint64 // which bytes of key8 are the key's
	uname  string // the key unescaped: a segment of the dotted name
}

type shapes struct {
	slots []slot
	index map[string]uint32 // parent id (4 bytes) + raw key → slot
	owner *record.Builder
	gen   uint64
	ikey  []byte // scratch for index keys
	name  []byte // scratch for dotted names
}

// reset empties the cache, keeping the root slot.
func (s *shapes) reset(bl *record.Builder) {
	s.owner, s.gen = bl, bl.Generation()
	s.slots = append(s.slots[:0], slot{parent: noSlot, next: noNext})
	if s.index == nil {
		s.index = make(map[string]uint32)
	}
	clear(s.index)
}

// match reports whether data[i:] starts with the slot's key and its
// closing quote.
func (sl *slot) match(data []byte, i, end int) bool {
	n := len(sl.key)
	if i+n >= end {
		return false
	}
	if i+8 <= end {
		if binary.LittleEndian.Uint64(data[i:])&sl.mask8 != sl.key8 {
			return false
		}
		if n <= 8 {
			return data[i+n] == '"'
		}
	}
	return data[i+n] == '"' && string(data[i:i+n]) == sl.key
}

// guess tries the second and later guesses for the key after slot last,
// under parent, at data[i:]; on a hit it moves the guess to the front and
// returns it, else noSlot. (The first guess is tried inline by the caller.)
func (s *shapes) guess(last, parent uint32, data []byte, i, end int) uint32 {
	next := &s.slots[last].next
	for k := 1; k < guesses; k++ {
		g := next[k]
		if g == noSlot {
			return noSlot
		}
		if s.slots[g].parent == parent && s.slots[g].match(data, i, end) {
			copy(next[1:k+1], next[:k])
			next[0] = g
			return g
		}
	}
	return noSlot
}

// follows records that slot next came after slot last.
func (s *shapes) follows(last, next uint32) {
	n := &s.slots[last].next
	copy(n[1:], n[:guesses-1])
	n[0] = next
}

// find returns the slot of raw key under parent, making it if new. The
// cache may outgrow maxSlots within a line; ParseLine drops it before the
// next line then, so it holds at most maxSlots plus one line's keys.
func (s *shapes) find(parent uint32, raw []byte, flags record.Flags) uint32 {
	k := binary.LittleEndian.AppendUint32(s.ikey[:0], parent)
	k = append(k, raw...)
	s.ikey = k
	if id, ok := s.index[string(k)]; ok {
		return id
	}
	sl := slot{parent: parent, next: noNext, key: string(raw)}
	sl.uname = string(record.AppendUnescaped(nil, raw, flags))
	var pad [8]byte
	copy(pad[:], raw)
	sl.key8 = binary.LittleEndian.Uint64(pad[:])
	sl.mask8 = ^uint64(0)
	if len(raw) < 8 {
		sl.mask8 = uint64(1)<<(8*len(raw)) - 1
	}
	id := uint32(len(s.slots))
	s.slots = append(s.slots, sl)
	s.index[string(k)] = id
	return id
}

// appendName appends the dotted name of slot id to dst.
func (s *shapes) appendName(dst []byte, id uint32) []byte {
	sl := &s.slots[id]
	if sl.parent != rootSlot {
		dst = s.appendName(dst, sl.parent)
		dst = append(dst, '.')
	}
	return append(dst, sl.uname...)
}

// nameOf returns the builder's name id for slot id, interning its dotted
// name the first time.
func (s *shapes) nameOf(bl *record.Builder, id uint32) (uint32, bool) {
	sl := &s.slots[id]
	if sl.named {
		return sl.name, true
	}
	s.name = s.appendName(s.name[:0], id)
	n, ok := bl.Name(s.name)
	if ok {
		sl.name, sl.named = n, true
	}
	return n, ok
}
