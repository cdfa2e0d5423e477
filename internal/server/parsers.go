package server

import (
	"fmt"
	"sync"

	"github.com/sluicelog/sluice/internal/parse"
)

// parsers keeps parsers between requests, by their options: building one
// (its name and stream tables, its caches) costs more than parsing a
// small request, and a parser's caches are what make it fast.
type parsers struct {
	mu    sync.Mutex
	pools map[string]*sync.Pool
}

// maxParserPools bounds the option sets kept; requests with other options
// get a parser of their own.
const maxParserPools = 256

// get returns a parser for opts, reset to the start of an input; put
// gives it back.
func (ps *parsers) get(opts parse.Options) (*parse.Parser, func(), error) {
	key := fmt.Sprintf("%q|%q|%q|%q|%d|%d|%d|%d|%q", opts.Format, opts.Record.TimeFields, opts.Record.MsgFields,
		opts.Record.StreamFields, opts.Record.MaxFields, opts.Record.TimeLayout, opts.MaxLineSize, opts.MaxDepth, opts.Multiline)
	ps.mu.Lock()
	if ps.pools == nil {
		ps.pools = map[string]*sync.Pool{}
	}
	pool := ps.pools[key]
	if pool == nil && len(ps.pools) < maxParserPools {
		pool = &sync.Pool{}
		ps.pools[key] = pool
	}
	ps.mu.Unlock()
	if pool != nil {
		if p, ok := pool.Get().(*parse.Parser); ok {
			if p.ResetAt(0, 0) == nil {
				return p, func() { pool.Put(p) }, nil
			}
		}
	}
	p, err := parse.New(opts)
	if err != nil {
		return nil, nil, err
	}
	put := func() {}
	if pool != nil && opts.Multiline == "" {
		put = func() { pool.Put(p) }
	}
	return p, put, nil
}
