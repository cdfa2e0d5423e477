package rules

import (
	"bytes"
	"runtime"
	"time"

	"go.yaml.in/yaml/v3"
)

// A reload decodes only the rules whose text changed: the file is split
// into the text of each rule (ruleChunks), and a rule whose text the
// running set decoded already takes that set's spec. YAML decoding was
// 60-75% of a reload of 10,000 rules that changed one (yaml.v3 decodes
// about 10 MB/s and allocates a node per scalar), all of it paid while
// ingest ran.

// chunk is the text of one rule of a rules file: its sequence item, from
// the line of its "- " to the line before the next one (comments and
// blank lines after it included).
type chunk struct {
	off, end int // where its text is in the file
	line     int // the file's line of its first line, 1-based
}

// ruleChunks splits a rules file into its rules' texts, when the file has
// the plain shape operators write: blank and comment lines, then
// "rules:" at the start of a line, then a block sequence whose items
// all start with "-" at one indentation, every other line of an item
// more indented (or blank, or a comment). ok is false for any other
// shape (a flow sequence, another key, a document marker, a tab or a CR
// in the indentation, a byte order mark): the file is then decoded whole.
// hint is how many rules the file likely has (0: unknown).
//
// INVARIANT: when ok, decoding each chunk alone as a one-item sequence
// gives the items decoding the file gives, or fails (an alias to an
// anchor of another item, a quoted scalar or flow collection the split
// cut: the chunk before the cut ends inside it), and the caller then
// decodes the file whole. FuzzRuleChunks checks this.
func ruleChunks(data []byte, hint int) ([]chunk, bool) {
	if len(data) == 0 || data[0] == 0xEF || bytes.IndexByte(data, '\r') >= 0 {
		return nil, false
	}
	out := make([]chunk, 0, hint)
	inRules := false
	indent := -1
	start, startLine := 0, 0
	lineNo := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off
		}
		line := data[off:end]
		lineNo++
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		rest := line[n:]
		switch {
		case len(rest) == 0 || rest[0] == '#':
			// Blank or a comment: part of whatever it is in.
		case rest[0] == '\t':
			return nil, false
		case !inRules:
			if n != 0 || !isRulesKey(rest) {
				return nil, false
			}
			inRules = true
		default:
			item := rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ')
			switch {
			case indent < 0:
				if !item {
					return nil, false
				}
				indent = n
				start, startLine = off, lineNo
			case n < indent || n == indent && !item:
				return nil, false
			case n == indent:
				out = append(out, chunk{off: start, end: off, line: startLine})
				start, startLine = off, lineNo
			}
		}
		off = end + 1
	}
	if indent < 0 {
		return nil, false // no rules: decoded whole (rules: means none)
	}
	out = append(out, chunk{off: start, end: len(data), line: startLine})
	return out, true
}

// isRulesKey reports whether a line is "rules:", maybe with spaces and a
// comment after it.
func isRulesKey(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("rules:"))
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " ")
	return len(rest) == 0 || rest[0] == '#' && len(rest) < len(line)-len("rules:")
}

// specAt is a rule's spec as a version of the file decoded it, and the
// line its text started at in that version.
type specAt struct {
	sp   *spec
	line int
}

// parseChunks is parseFile for a file ruleChunks split: each rule's text
// taken from prev (the specs a version before decoded, by text) or
// decoded, the rules prev lacks decoded together by runs of consecutive
// chunks, up to chunkYield at a time, yielding between runs (yielder). It returns
// the specs and the specs by text for the next version, or ok false when
// a run does not decode, or decodes with a problem, to its rules: the
// caller decodes the file whole, which says what is wrong where as it
// always has.
func parseChunks(data []byte, chunks []chunk, prev map[string]specAt, y *yielder) ([]spec, map[string]specAt, bool) {
	return parseChunksBy(data, chunks, prev, chunkYield, y)
}

// parseChunksBy is parseChunks decoding runs of up to group chunks.
//
// A run is decoded by one decoder, not a decoder per rule: 10,000 rules
// decoded one by one allocate twice what one decoder does. And not the
// whole file by one either: that is one call of tens of ms that never
// yields, its tree of nodes (16 MB at 10,000 rules) all live at once,
// for the GC to mark, while ingest runs.
func parseChunksBy(data []byte, chunks []chunk, prev map[string]specAt, group int, y *yielder) ([]spec, map[string]specAt, bool) {
	src := string(data)
	specs := make([]spec, len(chunks))
	byText := make(map[string]specAt, len(chunks))
	names := make(map[string]int, len(chunks))
	l := &loader{}
	// First the rules prev does not have, decoded by runs into specs.
	fresh := make([]bool, len(chunks))
	for a := 0; a < len(chunks); {
		if _, ok := prev[src[chunks[a].off:chunks[a].end]]; ok {
			a++
			continue
		}
		b := a + 1
		for b < len(chunks) && b-a < group {
			if _, ok := prev[src[chunks[b].off:chunks[b].end]]; ok {
				break
			}
			b++
		}
		// Let the ingest goroutines run: on a small machine a reload
		// that holds a core for tens of ms is their pause.
		y.maybe()
		var doc yaml.Node
		if err := yaml.Unmarshal(data[chunks[a].off:chunks[b-1].end], &doc); err != nil {
			return nil, nil, false
		}
		if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode || len(doc.Content[0].Content) != b-a {
			return nil, nil, false
		}
		for k, item := range doc.Content[0].Content {
			s, ok := l.rule(a+k, item)
			if !ok {
				return nil, nil, false
			}
			s.base = chunks[a].line - 1 // the run's lines count from its first
			specs[a+k], fresh[a+k] = s, true
		}
		a = b
	}
	for j, c := range chunks {
		if j%64 == 0 {
			y.maybe() // 10,000 map entries: several ms
		}
		// The text as a slice of src, so that the map's keys share it.
		text := src[c.off:c.end]
		if !fresh[j] {
			// A copy, not prev's spec: the next version's map points
			// into this version's specs only, so that an old version's
			// specs are not kept alive by the one rule the file still
			// has of it.
			e := prev[text]
			specs[j] = *e.sp
			specs[j].index = j
			specs[j].base = e.sp.base + c.line - e.line
		}
		byText[text] = specAt{&specs[j], c.line}
		name := specs[j].name
		if _, dup := names[name]; dup {
			return nil, nil, false // said by the whole file's decoding
		}
		names[name] = j
	}
	return specs, byText, true
}

// chunkYield is how many rules a compile decodes at most in one run (one
// decoder), between which it may yield (yielder). A run of 256 held the
// core for 2.5-10 ms in traces of BenchmarkSwapPause (yaml.v3 decodes
// about 10 MB/s); 64 cost a cold compile of 10,000 rules 1.3% more
// bytes allocated (62.5 to 63.4 MB) than 256.
const chunkYield = 64

// yielder yields a compile's goroutine once it has run yieldAfter since
// its last yield (one yielder for the whole compile, passed down; a nil
// one never yields): the compile then waits behind the goroutines waiting
// for a core. An ingest goroutine that the GC's mark worker displaced
// from its own core waits for the compile's next yield (2 ms at most),
// not for the compile (150 ms at 10,000 rules). By time, not by a count
// of rules: under load a yield costs the compile the others' turn (a
// few ms), and yielding every 64 rules made a 10,000-rule reload take
// seconds behind four clients pushing flat out.
//
// With clock set (benchmarks: the thread's CPU time), it also keeps the
// longest time by clock the compile ran without yielding, from its start
// to its first yield, between yields, from the last to its end (done):
// the most the compile holds a core at once (BenchmarkCompile's
// max-step-us).
type yielder struct {
	last    time.Time // the last yield, or the first call
	clock   func() time.Duration
	at      time.Duration // clock at the start or the last yield
	longest time.Duration
}

const yieldAfter = 2 * time.Millisecond

// maybe yields if yieldAfter has passed since the last yield (or since
// the first call).
func (y *yielder) maybe() {
	if y == nil {
		return
	}
	now := time.Now()
	switch {
	case y.last.IsZero():
		y.last = now
		y.mark()
	case now.Sub(y.last) >= yieldAfter:
		y.done()
		runtime.Gosched()
		y.last = time.Now()
		y.mark()
	}
}

// mark starts a run without yielding, for clock.
func (y *yielder) mark() {
	if y != nil && y.clock != nil {
		y.at = y.clock()
	}
}

// done ends a run without yielding, for clock.
func (y *yielder) done() {
	if y != nil && y.clock != nil {
		y.longest = max(y.longest, y.clock()-y.at)
	}
}

// parseSpecs reads a rules file's bytes into checked specs. A file that
// splits into its rules' texts is decoded by runs of rules (parseChunks),
// only those whose text prev (the running set's specs by text) has not;
// another, or one whose runs do not decode, is decoded whole. It returns
// the specs by text for the next version (nil when the file does not
// split into rules).
func parseSpecs(name string, data []byte, prev map[string]specAt, y *yielder) ([]spec, map[string]specAt, error) {
	// The running set's rules are about as many as the file's.
	chunks, split := ruleChunks(data, len(prev)+len(prev)/8)
	if split {
		if specs, byText, ok := parseChunks(data, chunks, prev, y); ok {
			return specs, byText, nil
		}
	}
	specs, err := parseFile(name, data)
	if err != nil || !split || len(chunks) != len(specs) {
		return specs, nil, err
	}
	// Every item of the sequence starts a chunk; as many chunks as
	// items are the items.
	src := string(data)
	byText := make(map[string]specAt, len(chunks))
	for j, c := range chunks {
		byText[src[c.off:c.end]] = specAt{&specs[j], c.line}
	}
	return specs, byText, nil
}
