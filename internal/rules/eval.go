package rules

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/stage"
)

// Action is what a rule did to a record, for Trace.
type Action uint8

const (
	Matched Action = iota // the rule's match kept the line
	Dropped
	SampledOut
	SampledIn
	Redacted // the line or a field changed
	Relabeled
	Counted     // the rule's metric counted the line
	Stopped     // keep/stop: no later rule sees the line
	Failed      // the rule failed on the line and left it as it was
	Extracted   // extract stored fields (labels extracted show as Relabeled)
	FieldsSet   // set_fields or drop_fields changed the record's fields
	Rewritten   // rewrite replaced the line
	RateLimited // rate_limit dropped the line
	Routed      // route: the line goes to the rule's sinks (Detail names them)
)

var actionNames = [...]string{"matched", "dropped", "sampled_out", "sampled_in", "redacted", "relabeled", "counted", "stopped", "failed", "extracted", "fields_set", "rewritten", "rate_limited", "routed"}

func (a Action) String() string { return actionNames[a] }

// Step is one thing a rule did to one record, for Trace.
type Step struct {
	Record int // index in b.Records
	Rule   string
	Action Action
	Detail string // for Failed: why; for Routed: the sinks, ", "-separated
}

// evaluator is what one goroutine needs to apply a Set: the rules'
// pipelines (compiled on first use), the labels builder and scratch.
type evaluator struct {
	pipes    ruleTable[*stage.Pipeline]
	setPipes ruleTable[[]*stage.Pipeline]
	lb       stage.Labels
	// sel maps a stream id of the batch to where in slab the list of
	// the rules whose tenant and selector it satisfies is: slab[off] is
	// its length, the indexes follow. streams keeps those lists across
	// batches, by tenant and label set (streamKey), so that a stream's
	// rules are decided once per evaluator, not once per batch; it and
	// slab are cleared when they pass maxStreams or maxSlab.
	sel     map[uint32]int
	slab    []int32
	streams map[string]int
	skey    []byte
	line    []byte
	out     []byte
	scratch []byte
	spans   [][2]int
	redacts []*redactor
	labels  record.Labels
	key     []byte
	capped  bool // b.Data was cut to its length for this batch
	trace   func(Step)
	cands   []int32     // scratch of streamRules
	val     []byte      // a value as redactAll redacts it
	patches [][2][]byte // escaped text in the line, and its redacted replacement
	inLine  []bool      // commitRedaction: which fields of a record were in its line
	// heads, parsers and tails are the parts of the rules' split
	// pipelines (see rule.splitParser); parsed holds what each parser
	// found of the current line, until the line or its labels change.
	heads, parsers, tails ruleTable[*stage.Pipeline]
	parsed                []parsedLabels
	nparsed               int
	xpipes                ruleTable[*stage.Pipeline]
	xlb                   stage.Labels   // what extract's parser found, alone
	xvals                 []record.Label // what extract keeps of it
	fvals                 []record.Label // the rule's field changes: a value "" removes
	rw                    []byte         // the rule's rewritten line
	mval                  float64        // the rule's metric's value for the line
	fpipes                ruleTable[[]*stage.Pipeline]
	rwpipes               ruleTable[*stage.Pipeline]
	// routes maps a set of sinks (Set.sinks bits) to its list in the
	// batch's Routes (index plus one); routedBy are the rules that
	// routed the current record.
	routes   map[uint64]uint16
	routedBy []*rule
	// lines counts the lines the evaluator applied the rules to, for
	// evalSample; timed is the rule being timed on the current line, since
	// t0.
	lines uint64
	timed *rule
	t0    time.Time
}

func (s *Set) get() *evaluator {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		ev := s.free[n-1]
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return ev
	}
	s.mu.Unlock()
	return s.newEvaluator()
}

// newEvaluator returns an evaluator of s, its tables sized for s's rules
// (a pointer per 256 rules for each until it compiles a rule's pipeline:
// see ruleTable).
func (s *Set) newEvaluator() *evaluator {
	return &evaluator{
		pipes:    newRuleTable[*stage.Pipeline](len(s.rules)),
		setPipes: newRuleTable[[]*stage.Pipeline](len(s.rules)),
		xpipes:   newRuleTable[*stage.Pipeline](len(s.rules)),
		heads:    newRuleTable[*stage.Pipeline](len(s.rules)),
		fpipes:   newRuleTable[[]*stage.Pipeline](len(s.rules)),
		rwpipes:  newRuleTable[*stage.Pipeline](len(s.rules)),
		parsers:  newRuleTable[*stage.Pipeline](len(s.rules)),
		tails:    newRuleTable[*stage.Pipeline](len(s.rules)),
		sel:      map[uint32]int{},
		routes:   map[uint64]uint16{},
		streams:  map[string]int{},
	}
}

// maxFree bounds the evaluators a set keeps: about one per goroutine
// that applies it at once.
const maxFree = 256

func (s *Set) put(ev *evaluator) {
	ev.trace = nil
	s.mu.Lock()
	if len(s.free) < maxFree {
		s.free = append(s.free, ev)
	}
	s.mu.Unlock()
}

// Apply applies the set to every kept record of b, in order: it drops
// records (record.Batch.Drop), replaces redacted lines and field values
// with new bytes appended to b.Data, and moves relabeled records to
// their new stream in b.Streams. It never fails: a rule that fails on a
// record counts an error and leaves the record as it was.
//
// Extracted fields are new fields of the record (its fields are copied
// to the end of b.Fields with them), their values appended to b.Data.
//
// A record a rule routes (route) gets the list of its sinks in b.Routes
// (record.Record.Route); a record that is dropped is routed nowhere.
//
// REQUIRES: the caller is the single writer of b.Streams and b.Names (the
// goroutine that parsed b), as record.Streams.Intern requires; no record
// of b is routed yet (the rules run once per batch).
func (s *Set) Apply(b *record.Batch) { s.apply(b, nil) }

// Trace is Apply, calling fn with each step it takes.
func (s *Set) Trace(b *record.Batch, fn func(Step)) { s.apply(b, fn) }

func (s *Set) apply(b *record.Batch, trace func(Step)) {
	if len(s.rules) == 0 || len(b.Records) == 0 {
		return
	}
	ev := s.get()
	defer s.put(ev)
	ev.trace = trace
	clear(ev.sel)
	clear(ev.routes)
	ev.capped = false
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		s.record(ev, b, i)
	}
}

func (ev *evaluator) step(i int, r *rule, a Action, detail string) {
	if ev.trace != nil {
		ev.trace(Step{Record: i, Rule: r.name, Action: a, Detail: detail})
	}
}

// selects reports whether r's tenant and selector take a record of
// tenant whose labels are ls.
func (r *rule) selects(tenant string, ls record.Labels) bool {
	if r.tenant != "" && r.tenant != tenant {
		return false
	}
	return r.all || r.selector.Matches(ls.Value)
}

// gateMin is the gated rules a stream must have for the set's gate (one
// search for every rule's literals) to pay before each rule's own: below
// it, each rule's few literals are searched alone.
const gateMin = 8

// streamRules returns the indexes of the rules that take records of
// stream id, in order, and how many of them have required literals
// (rule.gated): decided once per stream and evaluator.
func (s *Set) streamRules(ev *evaluator, b *record.Batch, id uint32) ([]int32, int) {
	if off, ok := ev.sel[id]; ok {
		return ev.slab[off+2 : off+2+int(ev.slab[off])], int(ev.slab[off+1])
	}
	ls := b.Streams.Get(id)
	ev.skey = streamKey(ev.skey[:0], b.Tenant, ls)
	if off, ok := ev.streams[string(ev.skey)]; ok {
		ev.sel[id] = off
		return ev.slab[off+2 : off+2+int(ev.slab[off])], int(ev.slab[off+1])
	}
	if len(ev.streams) >= maxStreams || len(ev.slab) >= maxSlab {
		// Offsets into slab die with it: those of this batch too. (The
		// list the last call returned is no longer read: one record is
		// evaluated at a time.)
		clear(ev.streams)
		clear(ev.sel)
		ev.slab = ev.slab[:0]
	}
	off := len(ev.slab)
	ev.slab = append(ev.slab, 0, 0)
	var gated int32
	if w, ok := s.warm[string(ev.skey)]; ok {
		ev.slab, gated = append(ev.slab, w.rules...), w.gated
	} else {
		ev.slab, gated = s.decide(ev.slab, &ev.cands, b.Tenant, ls)
	}
	ev.slab[off], ev.slab[off+1] = int32(len(ev.slab)-off-2), gated
	ev.sel[id] = off
	ev.streams[string(ev.skey)] = off
	return ev.slab[off+2:], int(gated)
}

// decide appends to dst the indexes of the rules that take records of
// tenant whose labels are ls, in order, and returns how many of them
// are gated. cands is scratch.
func (s *Set) decide(dst []int32, cands *[]int32, tenant string, ls record.Labels) ([]int32, int32) {
	// The candidates: the rules indexed under one of the stream's labels
	// and the unindexed. A rule is indexed once and a stream has a
	// label once, so none comes twice; sorted, they are in file order.
	c := append((*cands)[:0], s.unindexed...)
	for _, l := range ls {
		if vals := s.byLabel[l.Name]; vals != nil {
			c = append(c, vals[l.Value]...)
		}
	}
	slices.Sort(c)
	*cands = c
	gated := int32(0)
	for _, ri := range c {
		if s.rules[ri].selects(tenant, ls) {
			dst = append(dst, ri)
			if s.rules[ri].gated() {
				gated++
			}
		}
	}
	return dst, gated
}

// warmRules are the rules that take one stream, decided when the set
// was compiled.
type warmRules struct {
	rules []int32
	gated int32
}

// warmStreams decides, for the streams prev's idle evaluators decided
// (and those prev had decided when it was compiled), which of s's rules
// take them, into s.warm, and makes as many evaluators for s as prev
// has idle: the first batches under s find their streams
// decided, as they were under prev, instead of deciding them on the
// ingest goroutine right after the swap. It runs in the compile, off the
// ingest path, and keeps as much as an evaluator would (maxStreams,
// maxSlab). It yields as the compile does (y).
func (s *Set) warmStreams(prev *Set, y *yielder) {
	keys := map[string]struct{}{}
	prev.mu.Lock()
	idle := len(prev.free)
	for _, ev := range prev.free {
		for k := range ev.streams {
			if len(keys) >= maxStreams {
				break
			}
			keys[k] = struct{}{}
		}
	}
	prev.mu.Unlock()
	// As many evaluators as prev had made, made here: the goroutines
	// that applied prev apply s next, and need not allocate them on the
	// first batch after the swap.
	for range min(idle, maxFree) {
		y.maybe()
		s.free = append(s.free, s.newEvaluator())
	}
	for k := range prev.warm {
		if len(keys) >= maxStreams {
			break
		}
		keys[k] = struct{}{}
	}
	if len(keys) == 0 {
		return
	}
	s.warm = make(map[string]warmRules, len(keys))
	var cands, all []int32
	n := 0
	for k := range keys {
		if n++; n%16 == 0 {
			y.maybe()
		}
		tenant, ls, ok := parseStreamKey(k)
		if !ok {
			continue // not reached: made by streamKey
		}
		start := len(all)
		var gated int32
		all, gated = s.decide(all, &cands, tenant, ls)
		if len(all) > maxSlab {
			break
		}
		s.warm[k] = warmRules{rules: all[start:len(all):len(all)], gated: gated}
	}
}

// parseStreamKey returns the tenant and labels of a key streamKey made.
func parseStreamKey(key string) (string, record.Labels, bool) {
	next := func() (string, bool) {
		n, w := binary.Uvarint([]byte(key[:min(len(key), binary.MaxVarintLen64)]))
		if w <= 0 || uint64(len(key)-w) < n {
			return "", false
		}
		v := key[w : w+int(n)]
		key = key[w+int(n):]
		return v, true
	}
	tenant, ok := next()
	if !ok {
		return "", nil, false
	}
	var ls record.Labels
	for len(key) > 0 {
		name, ok1 := next()
		value, ok2 := next()
		if !ok1 || !ok2 {
			return "", nil, false
		}
		ls = append(ls, record.Label{Name: name, Value: value})
	}
	return tenant, ls, true
}

// maxStreams and maxSlab bound what an evaluator keeps of the streams
// it decided: 1,024 streams, or 256 KiB of rule indexes (300 streams
// with 200 rules each, say). A set keeps an evaluator per goroutine that
// applied it at once (up to maxFree), so this is paid per goroutine.
const (
	maxStreams = 1024
	maxSlab    = 1 << 16
)

// streamKey appends the key of a tenant's label set to dst: the tenant
// and each name and value, each with its length before it.
func streamKey(dst []byte, tenant string, ls record.Labels) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(tenant)))
	dst = append(dst, tenant...)
	for _, l := range ls {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	}
	return dst
}

// record applies the rules to record i.
func (s *Set) record(ev *evaluator, b *record.Batch, i int) {
	rec := &b.Records[i]
	line := b.Bytes(rec.Line)
	lineChanged, rewrote := false, false
	stream := b.Streams.Get(rec.Stream)
	relabeled := false
	// The rules that take the record's stream; once a rule relabels
	// it, the later rules' selectors are matched on its new labels.
	cand, gated := s.streamRules(ev, b, rec.Stream)
	useGate := gated >= gateMin
	gateKnown, gateHit := false, false
	ev.redacts = ev.redacts[:0]
	ev.nparsed = 0
	var route uint64 // the sinks the rules routed the record to
	ev.routedBy = ev.routedBy[:0]
	ev.lines++
	timing := ev.lines%evalSample == 0
	for k := 0; ; k++ {
		if timing {
			ev.stopTimer()
		}
		var ri int
		if relabeled {
			if ri = k; ri >= len(s.rules) {
				break
			}
			if !s.rules[ri].selects(b.Tenant, stream) {
				continue
			}
		} else {
			if k >= len(cand) {
				break
			}
			ri = int(cand[k])
		}
		r := s.rules[ri]
		if r.gated() {
			if useGate && !gateKnown {
				gateHit, gateKnown = s.gate.Match(line), true
			}
			if useGate && !gateHit || !r.candidate(line) {
				continue
			}
		}
		if timing {
			ev.timed, ev.t0 = r, time.Now()
		}
		ev.lb.Reset(stream)
		addMeta(&ev.lb, b, i)
		if r.parseKey != "" {
			if !ev.matchParsed(ri, r, rec.Time, line) {
				continue
			}
		} else if len(r.stages) > 0 {
			if _, ok := compiled(ev.pipes, ri, r.stages).Process(rec.Time, line, &ev.lb); !ok {
				continue
			}
		}
		c := r.counters
		c.matched.Add(1)
		ev.step(i, r, Matched, "")
		// First what can fail: extract, the label, field and line
		// templates, computed before any is applied, so that a rule that
		// fails does nothing to the line.
		next, err := ev.prepare(ri, r, b, i, rec.Time, line, stream)
		if err != "" {
			c.errors.Add(1)
			ev.step(i, r, Failed, err)
			if r.onErrorDrop {
				c.dropped.Add(1)
				ev.step(i, r, Dropped, "")
				b.Drop(i)
				ev.stopTimer()
				return
			}
			continue
		}
		if next != nil && !labelsEqual(next, stream) {
			if !relabeled {
				k = ri // from here on k counts rules, not candidates
			}
			stream, relabeled = next, true
			ev.nparsed = 0 // parsed under the old labels
			c.relabeled.Add(1)
			ev.step(i, r, Relabeled, "")
		}
		if len(ev.fvals) > 0 {
			if ev.setFields(b, i, ev.fvals) {
				if r.extract != nil && r.extract.into == "fields" && len(ev.xvals) > 0 {
					c.extracted.Add(1)
					ev.step(i, r, Extracted, "")
				}
				if len(r.fieldStages) > 0 || len(r.dropFields) > 0 {
					c.fieldsSet.Add(1)
					ev.step(i, r, FieldsSet, "")
				}
			}
		}
		if r.rewrite != "" && !bytes.Equal(ev.rw, line) {
			ev.line = append(ev.line[:0], ev.rw...)
			line, lineChanged, rewrote, gateKnown = ev.line, true, true, false
			ev.nparsed = 0 // parsed from the old line
			c.rewritten.Add(1)
			ev.step(i, r, Rewritten, "")
		}
		if r.metric != nil {
			if r.metric.count(&ev.lb, ev.mval, &ev.key) {
				ev.step(i, r, Counted, "")
			}
		}
		if r.redactor != nil {
			ev.redacts = append(ev.redacts, r.redactor)
			var n int
			ev.out, n, ev.spans = r.redactor.redact(ev.out[:0], line, ev.spans)
			if n > 0 {
				// The redacted line is the line now, and the buffer of
				// the one before (if it was ev.line) the next scratch.
				ev.line, ev.out = ev.out, ev.line
				line, lineChanged, gateKnown = ev.line, true, false
				ev.nparsed = 0 // parsed from the old line
				c.redactions.Add(uint64(n))
				ev.step(i, r, Redacted, "")
			}
		}
		if r.drop {
			c.dropped.Add(1)
			ev.step(i, r, Dropped, "")
			b.Drop(i)
			ev.stopTimer()
			return
		}
		if r.limiter != nil && !r.limiter.allow(&ev.lb, len(line), &ev.key) {
			c.rateLimited.Add(1)
			ev.step(i, r, RateLimited, "")
			b.Drop(i)
			ev.stopTimer()
			return
		}
		if r.sample != nil && !r.keepAll {
			if !r.sampleKeep(&ev.lb, line) {
				c.sampledOut.Add(1)
				ev.step(i, r, SampledOut, "")
				b.Drop(i)
				ev.stopTimer()
				return
			}
			ev.step(i, r, SampledIn, "")
		}
		if r.routeMask != 0 {
			route |= r.routeMask
			ev.routedBy = append(ev.routedBy, r)
			if ev.trace != nil {
				ev.step(i, r, Routed, strings.Join(r.route, ", "))
			}
			if !r.cont {
				// As Vector's route and Promtail's match: a routed line
				// is done with, unless the rule says continue.
				ev.step(i, r, Stopped, "")
				break
			}
		}
		if r.keep {
			ev.step(i, r, Stopped, "")
			break
		}
	}
	if timing {
		ev.stopTimer() // the rule that ended the loop (keep, route)
	}
	if len(ev.redacts) > 0 || lineChanged {
		if !ev.commitRedaction(b, i, line, lineChanged, rewrote) {
			// The batch's data would pass 4 GiB: a line that cannot be
			// redacted is not stored.
			b.Drop(i)
			return
		}
	}
	if relabeled {
		if id, ok := b.Streams.Intern(stream); ok {
			rec.Stream = id
		}
	}
	if route != 0 {
		if k := ev.routeOf(s, b, route); k > 0 {
			rec.Route = k
			for _, r := range ev.routedBy {
				r.counters.routed.Add(1)
			}
		} else {
			for _, r := range ev.routedBy {
				r.counters.errors.Add(1)
				ev.step(i, r, Failed, fmt.Sprintf("route: the batch holds %d lists of sinks already: the line is stored but not routed", record.MaxRoutes))
			}
		}
	}
}

// stopTimer counts the time since ev.t0 into the histogram of the rule
// being timed, if any.
func (ev *evaluator) stopTimer() {
	if r := ev.timed; r != nil {
		r.counters.observeEval(uint64(time.Since(ev.t0)))
		ev.timed = nil
	}
}

// MaxLabelValue bounds a label value a rule sets (Loki's default
// max_label_value_length): a longer one fails the rule on the line.
const MaxLabelValue = 2048

// relabel returns the labels of the record after r's set_labels and
// drop_labels, or why it failed.
func (ev *evaluator) relabel(ri int, r *rule, ts int64, line []byte, stream record.Labels) (record.Labels, string) {
	ev.labels = append(ev.labels[:0], stream...)
	if r.extract != nil && r.extract.into == "labels" {
		for _, l := range ev.xvals {
			if err := checkLabelValue("extract."+l.Name, l.Value); err != "" {
				return nil, err
			}
			ev.labels = setLabel(ev.labels, l.Name, strings.Clone(l.Value))
		}
	}
	if len(r.setStages) > 0 {
		pipes := ev.setPipes.get(ri)
		if pipes == nil {
			for _, st := range r.setStages {
				p, err := stage.Compile(r.setStages[len(pipes) : len(pipes)+1])
				if err != nil {
					panic("rules: a checked label template fails to compile: " + err.Error())
				}
				_ = st
				pipes = append(pipes, p)
			}
			ev.setPipes.set(ri, pipes)
		}
		hadErr := ev.lb.Get(stage.ErrorLabel)
		for k, p := range pipes {
			name := r.setLabels[k].name
			p.Process(ts, line, &ev.lb)
			if e := ev.lb.Get(stage.ErrorLabel); e != hadErr {
				return nil, "set_labels." + name + ": " + e + ": " + ev.lb.Get(stage.ErrorDetailsLabel)
			}
			v := ev.lb.Get(name)
			if err := checkLabelValue("set_labels."+name, v); err != "" {
				return nil, err
			}
			ev.labels = setLabel(ev.labels, name, strings.Clone(v))
		}
	}
	for _, name := range r.dropLabels {
		ev.labels = setLabel(ev.labels, name, "")
	}
	return slices.Clone(ev.labels), ""
}

// parsedLabels is what one parser found of the current line: the labels
// after it ran.
type parsedLabels struct {
	key    string
	labels []record.Label
}

// matchParsed runs r's split match pipeline on line: the line filters,
// then the parser, or what a rule with the same parser found of the line
// already, then the rest.
func (ev *evaluator) matchParsed(ri int, r *rule, ts int64, line []byte) bool {
	if _, ok := compiled(ev.heads, ri, r.head).Process(ts, line, &ev.lb); !ok {
		return false
	}
	hit := false
	for k := range ev.nparsed {
		if p := &ev.parsed[k]; p.key == r.parseKey {
			ev.lb.Restore(p.labels)
			hit = true
			break
		}
	}
	if !hit {
		// A parser keeps every line (a line it cannot parse gets
		// __error__) and leaves it as it is.
		compiled(ev.parsers, ri, r.parser).Process(ts, line, &ev.lb)
		if ev.nparsed == len(ev.parsed) {
			ev.parsed = append(ev.parsed, parsedLabels{})
		}
		p := &ev.parsed[ev.nparsed]
		p.key, p.labels = r.parseKey, append(p.labels[:0], ev.lb.Current()...)
		ev.nparsed++
	}
	_, ok := compiled(ev.tails, ri, r.tail).Process(ts, line, &ev.lb)
	return ok
}

// compiled returns rule ri's pipeline in pipes, compiling stages into it
// on first use.
func compiled(pipes ruleTable[*stage.Pipeline], ri int, stages []logql.Stage) *stage.Pipeline {
	p := pipes.get(ri)
	if p == nil {
		p = mustCompile(stages)
		pipes.set(ri, p)
	}
	return p
}

// mustCompile compiles stages that the set checked when it loaded.
func mustCompile(stages []logql.Stage) *stage.Pipeline {
	p, err := stage.Compile(stages)
	if err != nil {
		// Compile checked the whole pipeline when the set loaded.
		panic("rules: a checked pipeline fails to compile: " + err.Error())
	}
	return p
}

// ruleTable holds an evaluator's values by rule index, in chunks of
// ruleChunk allocated on first use: an evaluator compiles the pipelines
// of the rules its streams meet, a few of 10,000. Eight flat tables of a
// pointer per rule were 640 KB an evaluator at 10,000 rules, allocated
// for each evaluator a reload makes (warmStreams) and scanned by the GC
// in every cycle while the set runs.
type ruleTable[T any] struct{ chunks []*[ruleChunk]T }

const ruleChunk = 256

func newRuleTable[T any](rules int) ruleTable[T] {
	return ruleTable[T]{chunks: make([]*[ruleChunk]T, (rules+ruleChunk-1)/ruleChunk)}
}

func (t ruleTable[T]) get(i int) T {
	if c := t.chunks[i/ruleChunk]; c != nil {
		return c[i%ruleChunk]
	}
	var zero T
	return zero
}

func (t ruleTable[T]) set(i int, v T) {
	c := t.chunks[i/ruleChunk]
	if c == nil {
		c = new([ruleChunk]T)
		t.chunks[i/ruleChunk] = c
	}
	c[i%ruleChunk] = v
}

// checkLabelValue says why v cannot be a label's value, or "".
func checkLabelValue(key, v string) string {
	if !utf8.ValidString(v) {
		return key + ": the value is not valid UTF-8"
	}
	if len(v) > MaxLabelValue {
		return fmt.Sprintf("%s: a value of %d bytes, longer than %d", key, len(v), MaxLabelValue)
	}
	return ""
}

// runExtract runs r's extract parser over line into ev.xvals (all it
// found, or the keys it names), and adds them to ev.lb so that the
// rule's other actions see them. It returns why it
// failed: the parser's error (a line that is not JSON, say).
func (ev *evaluator) runExtract(ri int, r *rule, ts int64, line []byte) string {
	p := ev.xpipes.get(ri)
	if p == nil {
		var err error
		if p, err = stage.Compile(r.xstages); err != nil {
			panic("rules: a checked extract fails to compile: " + err.Error())
		}
		ev.xpipes.set(ri, p)
	}
	ev.xlb.Reset(nil)
	p.Process(ts, line, &ev.xlb)
	if e := ev.xlb.Get(stage.ErrorLabel); e != "" {
		return "extract: " + e + ": " + ev.xlb.Get(stage.ErrorDetailsLabel)
	}
	x := r.extract
	if x.keys == nil {
		for _, l := range ev.xlb.Current() {
			if l.Value != "" {
				ev.xvals = append(ev.xvals, l)
			}
		}
	} else {
		for _, k := range x.keys {
			if v := ev.xlb.Get(k); v != "" {
				ev.xvals = append(ev.xvals, record.Label{Name: k, Value: v})
			}
		}
	}
	// For the rule's other actions: templates, metric labels and
	// unwrap, rate_limit's and sample's labels.
	if len(r.setStages) > 0 || len(r.fieldStages) > 0 || r.rewrite != "" || r.metric != nil || r.limiter != nil || r.sample != nil {
		for _, l := range ev.xvals {
			ev.lb.SetMeta(l.Name, []byte(l.Value), 0)
		}
	}
	return ""
}

// capData cuts b.Data's capacity to its length, once per batch: b.Data
// may be a slice of a buffer that holds more than this batch (file
// ingest hands a chunk's slice), and appending must copy instead of
// writing past it.
func (ev *evaluator) capData(b *record.Batch) {
	if !ev.capped {
		b.Data = b.Data[:len(b.Data):len(b.Data)]
		ev.capped = true
	}
}

// prepare computes what r does to record i that can fail: what its
// extract finds (ev.xvals), its new labels (nil when it sets none), its
// field changes (ev.fvals) and its rewritten line (ev.rw). It returns
// why it failed, and changes nothing of the record.
func (ev *evaluator) prepare(ri int, r *rule, b *record.Batch, i int, ts int64, line []byte, stream record.Labels) (record.Labels, string) {
	ev.xvals, ev.fvals = ev.xvals[:0], ev.fvals[:0]
	if r.extract != nil {
		if err := ev.runExtract(ri, r, ts, line); err != "" {
			return nil, err
		}
	}
	var next record.Labels
	intoLabels := r.extract != nil && r.extract.into == "labels" && len(ev.xvals) > 0
	if len(r.setStages) > 0 || len(r.dropLabels) > 0 || intoLabels {
		var err string
		if next, err = ev.relabel(ri, r, ts, line, stream); err != "" {
			return nil, err
		}
	}
	if r.extract != nil && r.extract.into == "fields" {
		ev.fvals = append(ev.fvals, ev.xvals...)
	}
	if len(r.fieldStages) > 0 {
		pipes := ev.fpipes.get(ri)
		if pipes == nil {
			for k := range r.fieldStages {
				pipes = append(pipes, mustCompile(r.fieldStages[k:k+1]))
			}
			ev.fpipes.set(ri, pipes)
		}
		hadErr := ev.lb.Get(stage.ErrorLabel)
		for k, p := range pipes {
			name := r.setFields[k].name
			p.Process(ts, line, &ev.lb)
			if e := ev.lb.Get(stage.ErrorLabel); e != hadErr {
				return nil, "set_fields." + name + ": " + e + ": " + ev.lb.Get(stage.ErrorDetailsLabel)
			}
			ev.fvals = append(ev.fvals, record.Label{Name: name, Value: ev.lb.Get(name)})
		}
	}
	for _, name := range r.dropFields {
		ev.fvals = append(ev.fvals, record.Label{Name: name})
	}
	if err := ev.checkFields(b, i, ev.fvals); err != "" {
		return nil, err
	}
	if r.metric != nil {
		var ok bool
		if ev.mval, ok = r.metric.value(&ev.lb); !ok {
			return nil, fmt.Sprintf("metric.unwrap: %s: %q is not a number", r.metric.unwrap, ev.lb.Get(r.metric.unwrap))
		}
	}
	if r.rewrite != "" {
		hadErr := ev.lb.Get(stage.ErrorLabel)
		out, _ := compiled(ev.rwpipes, ri, r.rwStages).Process(ts, line, &ev.lb)
		if e := ev.lb.Get(stage.ErrorLabel); e != hadErr {
			return nil, "rewrite: " + e + ": " + ev.lb.Get(stage.ErrorDetailsLabel)
		}
		if len(out) > MaxRewrite {
			return nil, fmt.Sprintf("rewrite: a line of %d bytes, longer than %d", len(out), MaxRewrite)
		}
		ev.rw = append(ev.rw[:0], out...)
	}
	return next, ""
}

// MaxRewrite bounds a line a rule's rewrite makes: a longer one fails
// the rule on the line.
const MaxRewrite = 1 << 20

// checkFields says why setFields cannot change record i's fields by vals,
// or "".
func (ev *evaluator) checkFields(b *record.Batch, i int, vals []record.Label) string {
	if len(vals) == 0 {
		return ""
	}
	need := uint64(len(b.Data))
	for _, l := range vals {
		need += uint64(len(l.Value))
	}
	if need > 1<<32-1 {
		return "fields: the batch's data would pass 4 GiB"
	}
	if uint64(len(b.Fields))+uint64(b.Records[i].NumFields)+uint64(len(vals)) > 1<<32-1 {
		return "fields: the batch holds too many fields"
	}
	fs := b.RecordFields(i)
	for _, l := range vals {
		for k := range fs {
			if f := &fs[k]; f.Role != record.RoleNone && b.Name(f) == l.Name {
				return "fields: " + l.Name + " is the record's time or message field"
			}
		}
		if l.Value != "" {
			if _, ok := b.Names.Lookup([]byte(l.Name)); !ok {
				return "fields: the batch's table of field names is full"
			}
		}
	}
	return ""
}

// setFields changes record i's fields by vals, which checkFields passed:
// a value sets the field (a string; one of the same name is replaced), ""
// removes it. The record's fields are copied to the end of b.Fields and
// changed there, new values appended to b.Data. It reports whether the
// fields changed.
func (ev *evaluator) setFields(b *record.Batch, i int, vals []record.Label) bool {
	ev.capData(b)
	rec := &b.Records[i]
	start := len(b.Fields)
	b.Fields = append(b.Fields, b.RecordFields(i)...)
	changed := false
	for _, l := range vals {
		at := -1
		for j := start; j < len(b.Fields); j++ {
			if b.Name(&b.Fields[j]) == l.Name {
				at = j
				break
			}
		}
		if l.Value == "" {
			if at >= 0 {
				b.Fields = slices.Delete(b.Fields, at, at+1)
				changed = true
			}
			continue
		}
		id, ok := b.Names.Lookup([]byte(l.Name))
		if !ok {
			continue // checkFields found room; not reached
		}
		off := uint32(len(b.Data))
		b.Data = append(b.Data, l.Value...)
		f := record.Field{Name: id, Kind: record.String, Flags: utf8Flag(b.Data[off:]),
			Raw: record.Span{Off: off, Len: uint32(len(l.Value))}}
		if at >= 0 {
			b.Fields[at] = f
		} else {
			b.Fields = append(b.Fields, f)
		}
		changed = true
	}
	rec.FieldStart, rec.NumFields = uint32(start), uint32(len(b.Fields)-start)
	return changed
}

// setLabel sets name to value in the sorted set ls; an empty value
// removes the label (an empty label is no label, in LogQL).
func setLabel(ls record.Labels, name, value string) record.Labels {
	i, found := slices.BinarySearchFunc(ls, name, func(l record.Label, n string) int { return strings.Compare(l.Name, n) })
	switch {
	case found && value == "":
		return slices.Delete(ls, i, i+1)
	case found:
		ls[i].Value = value
	case value != "":
		ls = slices.Insert(ls, i, record.Label{Name: name, Value: value})
	}
	return ls
}

func labelsEqual(a, b record.Labels) bool { return slices.Equal(a, b) }

// sampleKeep decides a sampled line: by a hash of the label named by
// sample.by, or of the line when it names none or the line has no such
// label, so that the same trace id is kept or dropped everywhere.
func (r *rule) sampleKeep(lb *stage.Labels, line []byte) bool {
	var h uint64
	if v := ""; r.sample.by != "" {
		if v = lb.Get(r.sample.by); v != "" {
			h = xxhash.Sum64String(v)
		} else {
			h = xxhash.Sum64(line)
		}
	} else {
		h = xxhash.Sum64(line)
	}
	return h < r.threshold
}

// addMeta adds record i's structured metadata to lb, as a query over the
// stored record would see it: the fields record.Record.IsMetadata names
// (a Loki push's or OTLP record's, held apart from its line); nothing for
// records of sluice's own formats, whose fields are parsed from the line.
func addMeta(lb *stage.Labels, b *record.Batch, i int) {
	r := &b.Records[i]
	if r.NumFields == 0 || !r.MsgIsLine() {
		return
	}
	fs := b.RecordFields(i)
	for k := range fs {
		if f := &fs[k]; r.IsMetadata(f) {
			lb.SetMeta(b.Name(f), b.Raw(f), f.Flags)
		}
	}
}

// commitRedaction gives record i its redacted line, and runs every
// redaction that matched it over its message and each field value, so
// that no redacted value reaches the WAL through them. New bytes are
// appended to b.Data; the old ones stay but nothing refers to them.
//
// A line a rule rewrote is stored too, and, when a rewrite came after a
// redaction (its template may hold a value the redaction took out of the
// line), every redaction runs over the rewritten line again.
func (ev *evaluator) commitRedaction(b *record.Batch, i int, line []byte, lineChanged, rewrote bool) bool {
	ev.capData(b)
	rec := &b.Records[i]
	need := uint64(len(b.Data)) + uint64(len(line))*3
	for _, f := range b.RecordFields(i) {
		need += uint64(f.Raw.Len)*2 + 64
	}
	if need > 1<<32-1 {
		return false
	}
	oldLine := rec.Line
	msgIsLine := rec.MsgFlags&record.Const == 0 && rec.Msg == rec.Line
	// A value parsed from the line with escapes (JSON's \u0040 for @)
	// may hold a secret that the line's own bytes hide from the
	// detectors: once its decoded value is redacted, its escaped text
	// in the line is replaced too.
	ev.patches = ev.patches[:0]
	patch := func(raw record.Span, flags record.Flags, v []byte) {
		if flags&(record.Escaped|record.SDEscaped) != 0 && flags&record.Const == 0 &&
			raw.Off >= oldLine.Off && raw.End() <= oldLine.End() && raw.Len > 0 {
			ev.patches = append(ev.patches, [2][]byte{slices.Clone(b.Bytes(raw)), record.AppendJSONEscaped(nil, v)})
		}
	}
	if rec.Msg.Len > 0 && rec.MsgFlags&record.Const == 0 && !msgIsLine {
		if v, ok := ev.redactAll("", ev.text(b, &record.Field{Kind: record.String, Raw: rec.Msg, Flags: rec.MsgFlags})); ok {
			patch(rec.Msg, rec.MsgFlags, v)
			off := uint32(len(b.Data))
			b.Data = append(b.Data, v...)
			rec.Msg = record.Span{Off: off, Len: uint32(len(v))}
			rec.MsgFlags = utf8Flag(v)
		}
	}
	fs := b.RecordFields(i)
	// A record whose message is its line (a Loki push's) holds the keys
	// of a JSON line as fields of the line beside its structured
	// metadata: which are which is known by their place, before the
	// redaction moves values.
	ev.inLine = ev.inLine[:0]
	if msgIsLine {
		for k := range fs {
			ev.inLine = append(ev.inLine, rec.InLine(&fs[k]))
		}
	}
	for k := range fs {
		f := &fs[k]
		if f.Kind == record.Null || f.Kind == record.Bool {
			continue
		}
		v, ok := ev.redactAll(b.Name(f), ev.text(b, f))
		if !ok {
			continue
		}
		patch(f.Raw, f.Flags, v)
		off := uint32(len(b.Data))
		b.Data = append(b.Data, v...)
		f.Kind, f.Flags, f.Num = record.String, utf8Flag(v), 0
		f.Raw = record.Span{Off: off, Len: uint32(len(v))}
	}
	for _, p := range ev.patches {
		if bytes.Contains(line, p[0]) {
			line = bytes.ReplaceAll(line, p[0], p[1])
			lineChanged = true
		}
	}
	if rewrote && len(ev.redacts) > 0 {
		if v, ok := ev.redactAll("", line); ok {
			line = v
		}
	}
	if lineChanged {
		off := uint32(len(b.Data))
		b.Data = append(b.Data, line...)
		rec.Line = record.Span{Off: off, Len: uint32(len(line))}
		if msgIsLine {
			rec.Msg = rec.Line
			rec.MsgFlags = utf8Flag(line)
			// The fields parsed from the old line go (the new one is
			// stored as text); held apart from the new line, they would
			// read as structured metadata. The metadata stay.
			kept := 0
			for k := range fs {
				if !ev.inLine[k] {
					fs[kept] = fs[k]
					kept++
				}
			}
			rec.NumFields = uint32(kept)
		}
	}
	return true
}

// text returns the text of f (a field, or a record's message as one) as
// the detectors read it: its bytes in b.Data where they need no
// unescaping (most values: nothing is copied), else unescaped into
// ev.scratch (valid until the next call).
func (ev *evaluator) text(b *record.Batch, f *record.Field) []byte {
	if f.Kind == record.String && f.Flags&(record.Escaped|record.SDEscaped|record.BadUTF8) == 0 {
		return b.Raw(f)
	}
	ev.scratch = b.AppendString(ev.scratch[:0], f)
	return ev.scratch
}

// redactAll runs every redaction that matched the record over a value;
// it returns the result and whether it differs. A value nothing is
// found in is not copied.
func (ev *evaluator) redactAll(name string, v []byte) ([]byte, bool) {
	changed := false
	cur := v
	for _, r := range ev.redacts {
		var n int
		if name != "" {
			ev.out, n, ev.spans = r.field(ev.out[:0], name, cur, ev.spans)
		} else {
			ev.out, n, ev.spans = r.redact(ev.out[:0], cur, ev.spans)
		}
		if n > 0 {
			// The result is the value now; the buffer of the one before
			// (if it was ev.val) the next scratch.
			changed = true
			ev.val, ev.out = ev.out, ev.val
			cur = ev.val
		}
	}
	return cur, changed
}

func utf8Flag(v []byte) record.Flags {
	if utf8.Valid(v) {
		return 0
	}
	return record.BadUTF8
}
