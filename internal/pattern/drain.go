package pattern

import (
	"cmp"
	"slices"
	"strings"
)

// Placeholder stands in a pattern where lines differ, as in Loki's
// patterns and LogQL's pattern filter.
const Placeholder = "<_>"

// Options tune a Miner. Zero values take the defaults.
type Options struct {
	// Similarity is the least share of a line's words equal to a
	// cluster's (a placeholder equals any word) for the line to join it
	// (default 0.5; Loki's Drain uses 0.3, which over our finer tokens
	// merged unrelated statements).
	Similarity float64
	// Depth is how many leading words route a line in the tree (default
	// 1: deeper, "user alice logged in" and "user bob logged in" never
	// meet).
	Depth int
	// MaxChildren bounds a tree node's children; words past it take the
	// wildcard branch (default 100).
	MaxChildren int
	// MaxClusters bounds the clusters kept; a line that would start one
	// more is counted in Dropped (default 1000).
	MaxClusters int
	// Step is the width of a sample bucket, in the unit of the times
	// given to Add (default 1: one bucket per distinct time).
	Step int64
}

func (o *Options) defaults() {
	if o.Similarity <= 0 {
		o.Similarity = 0.5
	}
	if o.Depth <= 0 {
		o.Depth = 1
	}
	if o.MaxChildren <= 0 {
		o.MaxChildren = 100
	}
	if o.MaxClusters <= 0 {
		o.MaxClusters = 1000
	}
	if o.Step <= 0 {
		o.Step = 1
	}
}

// Pattern is one mined pattern: its text, the lines it matched and when.
type Pattern struct {
	Text    string
	Count   int64
	Samples []Sample // by time
}

// Sample counts the lines of a pattern in one bucket, which starts at Time
// (a multiple of Options.Step).
type Sample struct {
	Time  int64
	Count int64
}

// Miner clusters lines into patterns.
//
// Concurrency: one goroutine.
type Miner struct {
	opts     Options
	root     map[int]*node // by token count
	clusters []*cluster
	toks     []token
	// Dropped counts the lines that found no cluster when MaxClusters
	// were already kept.
	Dropped int
}

// token is one token of a line. Only words vary; other tokens are the
// frame (punctuation, blanks) and must match exactly.
type token struct {
	text string
	word bool
	// key marks a word that names a value (followed by '=' or '":' or
	// ':'): it is part of the frame, so that lines of the same keys but
	// different values are not counted similar for their keys.
	key  bool
	wild bool // a placeholder (in a cluster)
}

type cluster struct {
	toks    []token
	words   int
	count   int64
	samples map[int64]int64
}

type node struct {
	children map[string]*node
	clusters []*cluster
}

// wildKey is the tree branch of words that hold a digit (likely values)
// and of words past a node's MaxChildren.
const wildKey = "\x00*"

// NewMiner returns a miner.
func NewMiner(opts Options) *Miner {
	opts.defaults()
	return &Miner{opts: opts, root: map[int]*node{}}
}

// Add adds a line seen at time t. It reports false when the line was
// dropped (MaxClusters reached and no cluster fits it).
func (m *Miner) Add(t int64, line []byte) bool {
	m.toks = tokenize(m.toks[:0], string(line))
	if len(m.toks) == 0 {
		return true
	}
	words := 0
	for _, tk := range m.toks {
		if tk.word && !tk.key {
			words++
		}
	}
	leaf := m.leaf(m.toks)
	var best *cluster
	bestSim := -1.0
	for _, c := range leaf.clusters {
		if s := similarity(c, m.toks, words); s > bestSim {
			best, bestSim = c, s
		}
	}
	if best != nil && bestSim >= m.opts.Similarity {
		best.merge(m.toks)
	} else {
		if len(m.clusters) >= m.opts.MaxClusters {
			m.Dropped++
			return false
		}
		best = newCluster(m.toks, words)
		leaf.clusters = append(leaf.clusters, best)
		m.clusters = append(m.clusters, best)
	}
	best.count++
	best.samples[floorStep(t, m.opts.Step)]++
	return true
}

// leaf returns the tree leaf of a line's tokens, creating the path.
func (m *Miner) leaf(toks []token) *node {
	n := m.root[len(toks)]
	if n == nil {
		n = &node{}
		m.root[len(toks)] = n
	}
	depth := 0
	for _, tk := range toks {
		if depth >= m.opts.Depth {
			break
		}
		if !tk.word {
			continue
		}
		depth++
		key := tk.text
		if hasDigit(key) {
			key = wildKey
		}
		if n.children == nil {
			n.children = map[string]*node{}
		}
		next := n.children[key]
		if next == nil {
			if len(n.children) >= m.opts.MaxChildren {
				key = wildKey
				next = n.children[key]
			}
			if next == nil {
				next = &node{}
				n.children[strings.Clone(key)] = next
			}
		}
		n = next
	}
	return n
}

// similarity returns the share of the line's words equal to the
// cluster's (a placeholder equals any word), or -1 when their frames
// differ.
func similarity(c *cluster, toks []token, words int) float64 {
	if len(c.toks) != len(toks) {
		return -1
	}
	same := 0
	for i, tk := range toks {
		ct := c.toks[i]
		if ct.word != tk.word || ct.key != tk.key {
			return -1
		}
		if !tk.word || tk.key {
			if ct.text != tk.text {
				return -1
			}
			continue
		}
		if ct.wild || ct.text == tk.text {
			same++
		}
	}
	if words == 0 {
		return 1
	}
	return float64(same) / float64(words)
}

func newCluster(toks []token, words int) *cluster {
	c := &cluster{toks: make([]token, len(toks)), words: words, samples: map[int64]int64{}}
	for i, tk := range toks {
		tk.text = strings.Clone(tk.text)
		// A word of digits and separators (a number, a time, an address)
		// is a value from the start.
		tk.wild = tk.word && !tk.key && isValue(tk.text)
		if tk.wild {
			tk.text = ""
		}
		c.toks[i] = tk
	}
	return c
}

// merge generalises the cluster to cover toks: every word that differs
// becomes a placeholder.
func (c *cluster) merge(toks []token) {
	for i, tk := range toks {
		ct := &c.toks[i]
		if tk.word && !tk.key && !ct.wild && ct.text != tk.text {
			ct.wild, ct.text = true, ""
		}
	}
}

// text returns the cluster's pattern, or "" when it has no constant word.
func (c *cluster) text() string {
	var b strings.Builder
	constant := false
	prevWild := false
	for _, tk := range c.toks {
		if tk.wild {
			if !prevWild {
				b.WriteString(Placeholder)
			}
			prevWild = true
			continue
		}
		prevWild = false
		if tk.word {
			constant = true
		}
		b.WriteString(tk.text)
	}
	if !constant {
		return ""
	}
	return b.String()
}

// Patterns returns the patterns mined so far, those matching the most
// lines first (ties by text). Clusters whose text is the same (they
// differed once, in words now placeholders) are merged; clusters with no
// constant word are left out.
func (m *Miner) Patterns() []Pattern {
	byText := map[string]*Pattern{}
	buckets := map[string]map[int64]int64{}
	for _, c := range m.clusters {
		txt := c.text()
		if txt == "" {
			continue
		}
		p := byText[txt]
		if p == nil {
			p = &Pattern{Text: txt}
			byText[txt] = p
			buckets[txt] = map[int64]int64{}
		}
		p.Count += c.count
		for t, n := range c.samples {
			buckets[txt][t] += n
		}
	}
	out := make([]Pattern, 0, len(byText))
	for txt, p := range byText {
		for t, n := range buckets[txt] {
			p.Samples = append(p.Samples, Sample{Time: t, Count: n})
		}
		slices.SortFunc(p.Samples, func(a, b Sample) int { return cmp.Compare(a.Time, b.Time) })
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Pattern) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Text, b.Text))
	})
	return out
}

// tokenize appends the tokens of line: words, runs of blanks, and single
// other characters; a word followed by '=', ':' or '":' is a key. Tokens
// view line.
func tokenize(dst []token, line string) []token {
	start := len(dst)
	for i := 0; i < len(line); {
		c := line[i]
		j := i + 1
		switch {
		case isWordByte(c):
			for j < len(line) && (isWordByte(line[j]) || line[j] == ':' && j+1 < len(line) && isAlnum(line[j-1]) && isAlnum(line[j+1])) {
				j++
			}
			dst = append(dst, token{text: line[i:j], word: true})
		case c == ' ' || c == '\t':
			for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
				j++
			}
			dst = append(dst, token{text: line[i:j]})
		default:
			dst = append(dst, token{text: line[i:j]})
		}
		i = j
	}
	toks := dst[start:]
	for k := range toks {
		if !toks[k].word || k+1 >= len(toks) {
			continue
		}
		// A number before ':' ("order 1003: declined") is a value.
		switch next := toks[k+1].text; {
		case next == "=" && !isValue(toks[k].text), next == ":" && !hasDigit(toks[k].text):
			toks[k].key = true
		case next == `"` && k+2 < len(toks) && toks[k+2].text == ":" && !isValue(toks[k].text):
			toks[k].key = true
		}
	}
	return dst
}

// isWordByte reports whether c is part of a word: letters, digits, bytes
// of multi-byte UTF-8 characters and the separators values keep inside
// them (paths, addresses, decimals); ':' is one only between letters or
// digits (times, IPv6), so that a JSON key's colon is not.
func isWordByte(c byte) bool {
	return isAlnum(c) || c >= 0x80 ||
		c == '_' || c == '.' || c == '-' || c == '/' || c == '@' || c == '+' || c == '%'
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// isValue reports whether a word is made of digits and separators only,
// with a digit: a number, a time, a date, an address.
func isValue(s string) bool {
	digit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c == '.' || c == ':' || c == '-' || c == '/' || c == '+' || c == '%':
		default:
			return false
		}
	}
	return digit
}

// floorStep rounds t down to a multiple of step.
func floorStep(t, step int64) int64 {
	r := t % step
	if r < 0 {
		r += step
	}
	return t - r
}
