package server

import (
	"strconv"
	"sync"

	"github.com/sluicelog/sluice/internal/parse"
)

// parsers keeps parsers between requests, by their options: building one
// (its name and stream tables, its caches) costs more than parsing a
// small request, and a parser's caches are what make it fast. A free list
// rather than a sync.Pool, which the GC empties: under many small
// requests it empties often.
type parsers struct {
	mu   sync.Mutex
	free map[string]*parserList
	idle int // parsers in all the lists
}

// parserList is the idle parsers of one option set.
type parserList struct{ idle []*parse.Parser }

const (
	maxParserKeys = 256 // option sets kept; others get a parser of their own
	// Idle parsers kept per option set with their Reader buffers (4 MiB
	// each), and in all without them: as many as requests may be served
	// at once, so that a few hundred clients of one-line pushes never
	// build a parser per request (about 60 KB and 40 allocations).
	maxFreePerKey = 64
	maxIdle       = 1024
)

// appendParserKey appends what identifies a parser's options (this is on
// every request's path: no fmt, and no allocation).
func appendParserKey(b []byte, o parse.Options) []byte {
	b = appendKeyString(b, o.Format)
	for _, l := range [][]string{o.Record.TimeFields, o.Record.MsgFields, o.Record.StreamFields} {
		b = strconv.AppendInt(b, int64(len(l)), 10)
		b = append(b, '[')
		for _, f := range l {
			b = appendKeyString(b, f)
		}
	}
	for _, n := range [...]int{o.Record.MaxFields, int(o.Record.TimeLayout), o.MaxLineSize, o.MaxDepth} {
		b = strconv.AppendInt(append(b, '|'), int64(n), 10)
	}
	return appendKeyString(b, o.Multiline)
}

func appendKeyString(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	return append(append(b, ':'), s...)
}

// get returns a parser for opts, at the start of an input, and the list
// that put gives it back to (nil: not kept).
func (ps *parsers) get(opts parse.Options) (*parse.Parser, *parserList, error) {
	var buf [256]byte
	key := appendParserKey(buf[:0], opts)
	ps.mu.Lock()
	if ps.free == nil {
		ps.free = map[string]*parserList{}
	}
	list := ps.free[string(key)] // no allocation for the lookup
	var p *parse.Parser
	if list != nil {
		if n := len(list.idle); n > 0 {
			p = list.idle[n-1]
			list.idle[n-1] = nil
			list.idle = list.idle[:n-1]
			ps.idle--
		}
	} else if opts.Multiline == "" && len(ps.free) < maxParserKeys {
		list = &parserList{}
		ps.free[string(key)] = list
	}
	ps.mu.Unlock()
	if p == nil || p.ResetAt(0, 0) != nil {
		var err error
		if p, err = parse.New(opts); err != nil {
			return nil, nil, err
		}
	}
	return p, list, nil
}

// put gives p back to the list get returned with it.
func (ps *parsers) put(list *parserList, p *parse.Parser) {
	if list == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.idle >= maxIdle {
		return
	}
	if len(list.idle) >= maxFreePerKey {
		p.ReleaseBuffer()
	}
	list.idle = append(list.idle, p)
	ps.idle++
}
