package text

import (
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// LevelWindow is how many bytes after the timestamp (or the line's start)
// a level word may start in.
const LevelWindow = 128

// LevelField is the name of the field that holds the level word.
const LevelField = "level"

var levelName = []byte(LevelField)

// Parser parses plain-text lines. It holds no state, so its zero value is
// ready and one Parser may serve any number of goroutines.
type Parser struct{}

// ParseLine makes one record of a line; it never fails it.
func (Parser) ParseLine(bl *record.Builder, line record.Span) {
	b := bl.Batch()
	data := b.Data[line.Off:line.End():line.End()]
	bl.Begin(line)
	var flags record.Flags
	if !utf8.Valid(data) {
		flags = record.BadUTF8
		b.BadUTF8++
	}
	bl.SetMsg(line, flags)
	start := 0
	if ns, n, ok := timestamp.LinePrefixLayout(data, bl.TimeLayout(), b.ReceiveTime); ok {
		bl.SetTime(ns)
		start = n
	}
	if off, n := FindLevel(data, start, start+LevelWindow); n > 0 {
		id, ok := bl.Name(levelName)
		if !ok {
			bl.Fail(record.ErrTooManyNames, off+1, "text: field name table full")
			return
		}
		bl.Add(record.Field{
			Name: id,
			Kind: record.String,
			Raw:  record.Span{Off: line.Off + uint32(off), Len: uint32(n)},
		})
	}
	bl.End()
}

// FindLevel returns the offset and length of the first level word in b
// that starts in b[from:to], or n == 0. A word may run past to.
func FindLevel(b []byte, from, to int) (off, n int) {
	to = min(to, len(b))
	i := from
	if i > 0 && i < to && isWord(b[i-1]) {
		// from is inside a word: it is not a whole word's start.
		for i < to && isWord(b[i]) {
			i++
		}
	}
	for i < to {
		if !isWord(b[i]) {
			i++
			continue
		}
		s := i
		i++
		for i < len(b) && isWord(b[i]) && i-s <= maxLevelLen {
			i++
		}
		if l := i - s; l <= maxLevelLen && levelLens[b[s]]&(1<<l) != 0 && isLevel(b[s:i]) {
			return s, l
		}
		for i < to && isWord(b[i]) {
			i++
		}
	}
	return 0, 0
}

const maxLevelLen = 8

// wordByte marks the bytes a word is made of.
var wordByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
	}
	return t
}()

func isWord(c byte) bool { return wordByte[c] }

var levels = []string{"trace", "debug", "info", "notice", "warn", "warning", "error", "err", "critical", "fatal", "panic"}

// levelLens has bit n set for a first letter (either case) that starts a
// level word of n bytes: one lookup rejects most words.
var levelLens = func() (t [256]uint16) {
	for _, l := range levels {
		t[l[0]] |= 1 << len(l)
		t[l[0]-'a'+'A'] |= 1 << len(l)
	}
	return t
}()

// levelWords holds each level word packed little-endian in a uint64, by
// length.
var levelWords = func() (t [maxLevelLen + 1][]uint64) {
	for _, l := range levels {
		t[len(l)] = append(t[len(l)], pack([]byte(l)))
	}
	return t
}()

// pack packs up to 8 bytes little-endian.
func pack(b []byte) uint64 {
	var x uint64
	for i := len(b) - 1; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	return x
}

// isLevel reports whether w (3 to 8 word bytes) is a level word in upper,
// lower or title case.
func isLevel(w []byte) bool {
	x := pack(w)
	mask := ^uint64(0) >> (64 - 8*len(w))
	caseBits := x & (0x2020202020202020 & mask)
	lower := x | (0x2020202020202020 & mask)
	for _, l := range levelWords[len(w)] {
		if lower == l {
			// Every byte is a letter (the words have no digits), so
			// bit 5 tells its case.
			all := 0x2020202020202020 & mask
			return caseBits == all || caseBits == 0 || caseBits == all&^0x20
		}
	}
	return false
}
