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
	free map[string][]*parse.Parser
}

const (
	maxParserKeys = 256 // option sets kept; others get a parser of their own
	maxFreePerKey = 64  // idle parsers kept per option set
)

// parserKey identifies a parser's options (this is on every request's
// path: no fmt).
func parserKey(o parse.Options) string {
	b := make([]byte, 0, 128)
	str := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	str(o.Format)
	for _, l := range [][]string{o.Record.TimeFields, o.Record.MsgFields, o.Record.StreamFields} {
		b = strconv.AppendInt(b, int64(len(l)), 10)
		b = append(b, '[')
		for _, f := range l {
			str(f)
		}
	}
	for _, n := range []int{o.Record.MaxFields, int(o.Record.TimeLayout), o.MaxLineSize, o.MaxDepth} {
		b = strconv.AppendInt(append(b, '|'), int64(n), 10)
	}
	str(o.Multiline)
	return string(b)
}

// get returns a parser for opts, at the start of an input, and the
// function that gives it back.
func (ps *parsers) get(opts parse.Options) (*parse.Parser, func(), error) {
	key := parserKey(opts)
	ps.mu.Lock()
	if ps.free == nil {
		ps.free = map[string][]*parse.Parser{}
	}
	list, known := ps.free[key]
	var p *parse.Parser
	if n := len(list); n > 0 {
		p, ps.free[key] = list[n-1], list[:n-1]
	}
	keep := opts.Multiline == "" && (known || len(ps.free) < maxParserKeys)
	if keep && !known {
		ps.free[key] = nil
	}
	ps.mu.Unlock()
	if p == nil || p.ResetAt(0, 0) != nil {
		var err error
		if p, err = parse.New(opts); err != nil {
			return nil, nil, err
		}
	}
	put := func() {}
	if keep {
		put = func() {
			ps.mu.Lock()
			if l := ps.free[key]; len(l) < maxFreePerKey {
				ps.free[key] = append(l, p)
			}
			ps.mu.Unlock()
		}
	}
	return p, put, nil
}
