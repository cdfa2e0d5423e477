package elastic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// FilterPath is Elasticsearch's filter_path parameter (response
// filtering): comma-separated dotted paths of field names. A name may
// hold * wildcards (matching within one name, "*" alone any name); "**"
// matches any number of levels; arrays are transparent (a path applies to
// every element). A path starting with "-" excludes what it matches.
//
// As Elasticsearch: with inclusions, only matched fields are kept, with
// the objects and arrays that lead to them, and objects and array
// elements left with nothing matched are dropped (so
// "errors,items.*.error" on a bulk reply without errors is
// {"errors":false}); a reply with nothing matched is {}. Exclusions are
// applied first, then inclusions. Key order is kept.
type FilterPath struct {
	include, exclude [][]string
}

// ParseFilterPath reads a filter_path value; it returns nil for "".
func ParseFilterPath(v string) (*FilterPath, error) {
	var f FilterPath
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		list := &f.include
		if strings.HasPrefix(p, "-") {
			list, p = &f.exclude, p[1:]
		}
		segs := strings.Split(p, ".")
		for _, s := range segs {
			if s == "" {
				return nil, fmt.Errorf("filter_path %q: empty field name", p)
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("filter_path %q: bad pattern %q", p, s)
			}
		}
		*list = append(*list, segs)
	}
	if len(f.include) == 0 && len(f.exclude) == 0 {
		return nil, nil
	}
	return &f, nil
}

// Apply filters a JSON document.
func (f *FilterPath) Apply(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil, fmt.Errorf("filter_path: %w", err)
	}
	if len(f.exclude) > 0 {
		n, _ = filterNode(n, start(f.exclude), true)
	}
	if len(f.include) > 0 {
		var kept bool
		if n, kept = filterNode(n, start(f.include), false); !kept {
			return []byte("{}"), nil
		}
	}
	return n.append(nil), nil
}

// A position in a path: path p, its next segment i.
type pathPos struct {
	segs []string
	i    int
}

func start(paths [][]string) []pathPos {
	out := make([]pathPos, len(paths))
	for i, p := range paths {
		out[i] = pathPos{p, 0}
	}
	return out
}

// step returns the positions after a field named name, and whether a
// path ends there.
func step(in []pathPos, name string) (out []pathPos, done bool) {
	var add func(p pathPos)
	add = func(p pathPos) {
		if p.i == len(p.segs) {
			done = true
			return
		}
		out = append(out, p)
	}
	for _, p := range in {
		seg := p.segs[p.i]
		if seg == "**" {
			add(p) // ** stays to match deeper levels
			// ... or matches no level: the next segment against name.
			if p.i+1 == len(p.segs) {
				done = true
				continue
			}
			if ok, _ := path.Match(p.segs[p.i+1], name); ok {
				add(pathPos{p.segs, p.i + 2})
			}
			continue
		}
		if ok, _ := path.Match(seg, name); ok {
			add(pathPos{p.segs, p.i + 1})
		}
	}
	return out, done
}

// filterNode applies positions to n: for inclusions it returns what is
// kept and whether anything is; for exclusions, n without what matched
// (and false only if n itself matched).
func filterNode(n node, pos []pathPos, exclude bool) (node, bool) {
	for _, p := range pos {
		if allStars(p.segs[p.i:]) { // "a.**" matches a itself, whatever it holds
			return n, !exclude
		}
	}
	switch n.kind {
	case '{':
		out := node{kind: '{'}
		for i, k := range n.keys {
			next, done := step(pos, k)
			v := n.vals[i]
			switch {
			case done && exclude:
				continue
			case done:
			case len(next) == 0 && exclude:
			case len(next) == 0:
				continue
			default:
				var kept bool
				if v, kept = filterNode(v, next, exclude); !kept {
					continue
				}
			}
			out.keys = append(out.keys, k)
			out.vals = append(out.vals, v)
		}
		return out, exclude || len(out.keys) > 0
	case '[':
		out := node{kind: '['}
		for _, v := range n.vals {
			if v, kept := filterNode(v, pos, exclude); kept {
				out.vals = append(out.vals, v)
			}
		}
		return out, exclude || len(out.vals) > 0
	}
	return n, exclude
}

func allStars(segs []string) bool {
	for _, s := range segs {
		if s != "**" {
			return false
		}
	}
	return true
}

// node is a JSON value with its object keys in order.
type node struct {
	kind byte // '{', '[', or 0 for a scalar in raw
	keys []string
	vals []node
	raw  []byte
}

func decodeNode(dec *json.Decoder) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := node{kind: byte(t)}
		if t != '{' && t != '[' {
			return node{}, fmt.Errorf("unexpected %q", t)
		}
		for dec.More() {
			if n.kind == '{' {
				k, err := dec.Token()
				if err != nil {
					return node{}, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := decodeNode(dec)
			if err != nil {
				return node{}, err
			}
			n.vals = append(n.vals, v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return node{}, err
		}
		return n, nil
	default:
		raw, err := json.Marshal(t)
		return node{raw: raw}, err
	}
}

func (n node) append(b []byte) []byte {
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, quote(k)...)
			b = append(b, ':')
			b = n.vals[i].append(b)
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.append(b)
		}
		return append(b, ']')
	}
	return append(b, n.raw...)
}
