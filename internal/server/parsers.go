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
	// plain are the options, and their keys, of requests that set no
	// parameter (jsonline.Plain), by format: most requests, whose options
	// and key are then not built again.
	plain map[string]*plainOptions
}

// plainOptions are the options of a format's requests that set no
// parameter, and their key (never modified).
type plainOptions struct {
	opts parse.Options
	key  []byte
	// list is the key's list in free, once there is one (lists are
	// never removed): found without hashing the key again.
	list *parserList
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
	ps.mu.Lock()
	return ps.getLocked(opts, appendParserKey(buf[:0], opts))
}

// getPlain is get for a request of format that sets no parameter
// (jsonline.Plain): options returns its options, called once per format.
func (ps *parsers) getPlain(format string, options func() (parse.Options, error)) (*parse.Parser, *parserList, error) {
	ps.mu.Lock()
	po, ok := ps.plain[format]
	if !ok {
		ps.mu.Unlock()
		opts, err := options()
		if err != nil {
			return nil, nil, err
		}
		po = &plainOptions{opts: opts, key: appendParserKey(nil, opts)}
		ps.mu.Lock()
		if ps.plain == nil {
			ps.plain = map[string]*plainOptions{}
		}
		if len(ps.plain) < maxParserKeys {
			ps.plain[format] = po
		}
	}
	if po.list == nil {
		// Under ps.mu, as po.list is read.
		po.list = ps.listLocked(po.opts, po.key)
	}
	return ps.popLocked(po.opts, po.list)
}

// getLocked is get with ps.mu held, which it releases; key is opts'.
func (ps *parsers) getLocked(opts parse.Options, key []byte) (*parse.Parser, *parserList, error) {
	return ps.popLocked(opts, ps.listLocked(opts, key))
}

// listLocked returns the list of key, opts' key, made if need be; nil if
// opts' parsers are not kept.
func (ps *parsers) listLocked(opts parse.Options, key []byte) *parserList {
	if ps.free == nil {
		ps.free = map[string]*parserList{}
	}
	list := ps.free[string(key)] // no allocation for the lookup
	if list == nil && opts.Multiline == "" && len(ps.free) < maxParserKeys {
		list = &parserList{}
		ps.free[string(key)] = list
	}
	return list
}

// popLocked returns an idle parser of list (nil: not kept), or a new one
// for opts, with ps.mu held, which it releases.
func (ps *parsers) popLocked(opts parse.Options, list *parserList) (*parse.Parser, *parserList, error) {
	var p *parse.Parser
	if list != nil {
		if n := len(list.idle); n > 0 {
			p = list.idle[n-1]
			list.idle[n-1] = nil
			list.idle = list.idle[:n-1]
			ps.idle--
		}
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
