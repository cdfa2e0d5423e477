// Package sink forwards what sluice stored to other systems (PostgreSQL,
// files, Loki, Elasticsearch and Kafka): the runtime every
// destination shares.
//
// A sink has no queue of its own. It follows the WAL with a wal.Cursor from
// a durable position, as a PostgreSQL replication slot follows its WAL:
// everything a sink must deliver is in the WAL before ingest acknowledged
// it, and the store keeps every WAL segment a sink has not passed (the
// Manager's Hold, the store's WALHold) up to the sink's disk budget. Past
// the budget the sink's policy decides: block (ingest of the sink's tenants
// answers 503 naming the sink) or drop_oldest (the cursor jumps forward;
// what it skipped is counted and logged).
//
// The runtime decodes WAL records (package rows), keeps the records of the
// sink's subscription (a tenant or all, and an optional LogQL stream
// selector), batches them (batch size, linger), and hands each batch to its
// Destination with retries (jittered exponential backoff with a cap). A
// Destination that keeps the position with its data (PostgreSQL: in the
// same transaction as the rows; files: beside the file's size, truncated
// back on restart) makes delivery exactly once; one that keeps none (Loki,
// Elasticsearch: Positionless) has the sink's position file saved after
// every batch, and delivery is at least once. Records a destination
// rejects for good go to the sink's dead-letter file with the reason.
//
// With Concurrency above 1, an Ordered destination (PostgreSQL) takes up to
// that many batches at once, committing them in order (Batch.Turn): a
// failed attempt rolls back every later batch in flight, the failed one is
// retried alone, and the later ones go again, so the position never
// passes a batch that is not delivered.
//
// Routing by rules (the rules' route action) is carried in the WAL with the
// record: the rule stage runs before the WAL append, so its decision is
// durable with the batch, as a list of sink names per row in rows version
// 2. A sink with From "rules" takes only the rows routed to it by name (its
// tenant and selector, if set, narrow that further); a sink without takes
// its subscription, routes or not. Its block policy then refuses only the
// batches that route a line to it.
//
// It must never deliver a record that ingest did not acknowledge, never move
// a position past a record it neither delivered, dead-lettered nor counted
// as dropped, and never let the store remove a segment below a position it
// may still resume from.
package sink

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/timestamp"
	"github.com/sluicelog/sluice/internal/wal"
)

// Destination is where a sink delivers: one per sink. PostgreSQL, files,
// Loki, Elasticsearch and Kafka implement it.
//
// Concurrency: the runtime calls a Destination from one goroutine, except
// the Deliver of an Ordered one (see Ordered).
type Destination interface {
	// Open connects and returns the position the destination keeps
	// durably with its data (ok false if it keeps none: the runtime's own
	// position file is then all there is, and delivery is at least once).
	Open(ctx context.Context) (pos wal.Pos, ok bool, err error)
	// Deliver writes the records of b and, if the destination keeps
	// positions, b.End with them, atomically. It returns the records it
	// rejected for good (the others are delivered). An error means that
	// the records of b neither returned as rejected nor marked with
	// b.Settle were not delivered, and b is retried with those alone:
	// a retry skips the records b.Settled reports (a destination without
	// positions, such as Loki or Elasticsearch, settles what a partial
	// success delivered, so that only the rest is sent again). Rejected
	// records returned with an error go to the dead letter before the
	// retry. An error wrapping ErrPermanent sends every record not yet
	// settled to the dead letter with the error as the reason. An error
	// made by RetryAfter makes the retry wait at least its duration.
	Deliver(ctx context.Context, b *Batch) ([]Rejected, error)
	// Close releases what Open took. Idempotent.
	Close() error
}

// Positionless is a Destination that keeps no position with its data
// (Loki, Elasticsearch): the runtime's position file is all there is, so
// the runtime saves it after every delivered batch (an fsync each), and a
// crash re-sends the batch in flight at most, not everything since the
// WAL segment began. Delivery stays at least once.
type Positionless interface {
	Positionless()
}

// Ordered is a Destination whose Deliver may run for up to
// Config.Concurrency batches at once (from as many goroutines), each
// making its batch durable only after every batch before it: it calls
// b.Turn right before it makes b durable (PostgreSQL: before the position
// update and the commit), and when Turn returns an error it undoes b (rolls
// back) and returns that error. Turn returns nil once every earlier batch
// was delivered; the runtime then delivers b's successors the same way.
// When an earlier batch's attempt failed, Turn returns an error wrapping
// ErrEarlierFailed: the runtime retries the failed batch alone and then
// hands the later ones again, in order, so the destination's position
// never passes a batch it does not hold (no gap) and, as ever, a batch
// is written with its position or not at all (no duplicate).
//
// Concurrency: Deliver must be safe for concurrent use; Open and Close
// are called from one goroutine, with no Deliver running.
type Ordered interface {
	Destination
	// Ordered marks the destination as calling Batch.Turn as above.
	Ordered()
}

// ErrEarlierFailed is what Batch.Turn returns (wrapped) when the attempt
// of a batch before it failed: the caller must undo its batch.
var ErrEarlierFailed = errors.New("an earlier batch failed; this one is rolled back and sent again after it")

// LineOnly is a Destination that may read neither Record.FieldsJSON nor
// Record.Metadata (Kafka with value: line): when LineOnly reports true,
// the runtime renders neither (FieldsJSON and Metadata are nil) and
// decodes only each row's line. A record of such a sink that goes to the
// dead letter has its fields rendered there from the WAL.
type LineOnly interface {
	LineOnly() bool
}

// ErrPermanent marks a Deliver error that retrying cannot fix.
var ErrPermanent = errors.New("rejected for good")

// Permanent wraps err as a permanent failure (errors.Is ErrPermanent).
func Permanent(err error) error { return fmt.Errorf("%w: %w", ErrPermanent, err) }

// RetryAfterError is a retryable Deliver error whose destination asked
// for a minimum wait (HTTP 429 or 503 with Retry-After).
type RetryAfterError struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfterError) Error() string {
	if e.Wait <= 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v (retry after %v)", e.Err, e.Wait)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err so that the runtime waits at least d before the
// retry (longer if its backoff says so).
func RetryAfter(err error, d time.Duration) error { return &RetryAfterError{Wait: d, Err: err} }

// minWait returns the wait a RetryAfterError in err's chain asks for.
func minWait(err error) time.Duration {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.Wait
	}
	return 0
}

// Rejected is a record a destination refused for good, and why.
type Rejected struct {
	Index  int // in Batch.Records
	Reason string
}

// Record is one log record as destinations see it. Its slices are owned by
// the Batch and valid until the Batch is reused.
type Record struct {
	Time   int64 // Unix nanoseconds
	Tenant string
	Labels record.Labels
	// LabelsJSON and FieldsJSON are the labels and the fields (those that
	// did not become the time or the message) as JSON objects.
	LabelsJSON json.RawMessage
	FieldsJSON json.RawMessage
	Line       []byte
	Pos        wal.Pos // the WAL frame the record came from
	// Row is the record's index among the rows of its WAL frame: with
	// Pos, an identity that reading the WAL again gives again.
	Row int
	// Metadata is the record's structured metadata, as a Loki or OTLP
	// push carried it (names and unescaped values), for destinations
	// that keep it apart from the line; nil when it has none (fields
	// parsed from its line are no metadata: record.Record.IsMetadata
	// has the rule). Its fields are in FieldsJSON too.
	Metadata record.Labels
}

// AppendTime appends ns as time.RFC3339Nano in UTC does (the fraction's
// trailing zeros cut, and its dot with them when it is all zeros), by
// timestamp.AppendRFC3339's arithmetic rather than time's general
// formatter: a record's time as the file sink and Kafka's value: json
// render it.
func AppendTime(dst []byte, ns int64) []byte {
	n := len(dst)
	dst = timestamp.AppendRFC3339(dst, ns) // ....T00:00:00.000000000Z
	end := len(dst) - 1                    // the Z
	for end > n+20 && dst[end-1] == '0' {
		end--
	}
	if end == n+20 { // only the dot is left of the fraction
		end--
	}
	return append(dst[:end], 'Z')
}

// AppendJSON appends the JSON rendering of r that the file sink writes a
// line of and the Kafka sink's value: json sends:
//
//	{"time":"2024-05-01T12:00:00.123456789Z","tenant":"t","labels":{...},"fields":{...},"line":"..."}
func AppendJSON(dst []byte, r *Record) []byte {
	dst = append(dst, `{"time":"`...)
	dst = AppendTime(dst, r.Time)
	dst = append(dst, `","tenant":"`...)
	dst = record.AppendJSONEscaped(dst, r.Tenant)
	dst = append(dst, `","labels":`...)
	dst = appendObject(dst, r.LabelsJSON)
	dst = append(dst, `,"fields":`...)
	dst = appendObject(dst, r.FieldsJSON)
	dst = append(dst, `,"line":"`...)
	dst = record.AppendJSONEscaped(dst, r.Line)
	return append(dst, `"}`...)
}

// appendObject appends a rendered JSON object, {} for none.
func appendObject(dst, obj []byte) []byte {
	if len(obj) == 0 {
		return append(dst, "{}"...)
	}
	return append(dst, obj...)
}

// Batch is what one Deliver call carries: records of consecutive WAL
// frames, and the position after the last frame they cover.
type Batch struct {
	Records []Record
	// End is the WAL position after the batch: what a destination that
	// keeps positions commits with it.
	End   wal.Pos
	Bytes int // bytes of lines
	// oldest is the receive time (Unix ns) of the batch's first frame.
	oldest int64
	arena  []byte
	// scratch and keys are appendFieldsJSON's, spans appendBlock's.
	scratch []byte
	keys    jsonKeys
	spans   []recordSpan
	// deadLetter writes rejected records durably (set by the runtime);
	// lettered says it was called for this delivery.
	deadLetter func([]Rejected) error
	lettered   bool
	// settled has bit i set when record i was delivered or dead-lettered
	// by an earlier attempt; nsettled counts the set bits and nrejected
	// those that went to the dead letter.
	settled             []uint64
	nsettled, nrejected int
	// turn, if set (batches delivered concurrently), waits for every
	// earlier batch: see Turn.
	turn func(context.Context) error
	// waited is how long fill waited for the WAL while it filled b.
	waited time.Duration
}

// Turn waits until every batch handed to the destination before b was
// delivered, and returns nil; or it returns an error wrapping
// ErrEarlierFailed when one of them failed, or ctx's error. An Ordered
// destination calls it right before it makes b durable; for a batch
// delivered alone it returns nil at once.
func (b *Batch) Turn(ctx context.Context) error {
	if b.turn == nil {
		return nil
	}
	return b.turn(ctx)
}

// Settle marks record i as delivered, so that a retry of b skips it.
func (b *Batch) Settle(i int) {
	for len(b.settled) <= i/64 {
		b.settled = append(b.settled, 0)
	}
	if b.settled[i/64]&(1<<(i%64)) == 0 {
		b.settled[i/64] |= 1 << (i % 64)
		b.nsettled++
	}
}

// Settled reports whether record i was delivered or dead-lettered by an
// earlier attempt.
func (b *Batch) Settled(i int) bool {
	return i/64 < len(b.settled) && b.settled[i/64]&(1<<(i%64)) != 0
}

// Unsettled returns how many records of b are neither delivered nor
// dead-lettered yet.
func (b *Batch) Unsettled() int { return len(b.Records) - b.nsettled }

// DeadLetter writes rej to the sink's dead-letter file, durably. A
// destination that commits a position calls it before the commit, so
// that a crash in between repeats the dead letter rather than lose it (at
// least once); records it returns without calling it are written after
// Deliver returns.
func (b *Batch) DeadLetter(rej []Rejected) error {
	if len(rej) == 0 || b.deadLetter == nil {
		return nil
	}
	if err := b.deadLetter(rej); err != nil {
		return fmt.Errorf("write dead letter: %w", err)
	}
	b.lettered = true
	return nil
}

// Reset empties b, keeping its memory.
func (b *Batch) Reset() {
	clear(b.Records)
	b.Records, b.Bytes, b.oldest, b.arena = b.Records[:0], 0, 0, b.arena[:0]
	clear(b.settled)
	b.settled, b.nsettled, b.nrejected = b.settled[:0], 0, 0
	b.turn = nil
	b.waited = 0
}

// filter is a sink's subscription.
type filter struct {
	tenant   string // "" matches every tenant
	selector interface {
		Matches(get func(string) string) bool
	}
	// route, if set, is the sink's name: only rows the rules routed to
	// it pass (From "rules").
	route string
	// lineOnly: the records carry no fields (see LineOnly).
	lineOnly bool
}

// routes returns, for each route list of blk (index k-1 for route k),
// whether it names f's sink; nil and false when no row can pass: f takes
// routed rows and blk routes none to it.
func (f *filter) routes(blk *rows.Block) ([]bool, bool) {
	if f.route == "" {
		return nil, true
	}
	takes := make([]bool, len(blk.Routes))
	any := false
	for k, names := range blk.Routes {
		takes[k] = slices.Contains(names, f.route)
		any = any || takes[k]
	}
	return takes, any
}

func (f *filter) tenantMatches(t string) bool { return f.tenant == "" || f.tenant == t }

// skips reports whether f keeps no row of the encoded block p, known from
// its header alone: another tenant's block, or for a sink of routed rows
// a Version1 block (it routes no row). The fill then does not decode it.
// A block Peek cannot read is not skipped: Decode reports it.
func (f *filter) skips(p []byte) bool {
	if f.tenant == "" && f.route == "" {
		return false
	}
	v, tenant, err := rows.Peek(p)
	if err != nil {
		return false
	}
	return !f.tenantMatches(string(tenant)) || f.route != "" && v < rows.Version2
}

// recordSpan locates a record's labels, fields and line in a Batch's
// arena while it grows.
type recordSpan struct{ lab, fields, line [2]int }

// blockFill is what appendBlock and appendEncoded know of the block they
// add: which of its streams and routes the filter takes, where the kept
// streams' labels are in the arena, and where b stood before it.
type blockFill struct {
	f        *filter
	blk      *rows.Block
	at       wal.Pos
	takes    []bool   // per route of blk, as filter.routes says
	keep     []bool   // per stream of blk
	labelsAt [][2]int // per kept stream: its labels' JSON in b.arena
	// b's records, arena, bytes and oldest before the block, for end
	// and undo.
	records, arena, bytes int
	oldest                int64
}

// take sets bf's filter, routes and streams for blk, whose header alone
// it reads, and reports whether bf.f can take any row of blk.
func (bf *blockFill) take(f *filter, blk *rows.Block) bool {
	bf.f = f
	if !f.tenantMatches(blk.Tenant) {
		return false
	}
	takes, ok := f.routes(blk)
	if !ok {
		return false
	}
	bf.takes = takes
	bf.keep = make([]bool, len(blk.Streams))
	any := false
	for i, ls := range blk.Streams {
		bf.keep[i] = f.selector == nil || f.selector.Matches(func(n string) string { v, _ := ls.Get(n); return v })
		any = any || bf.keep[i]
	}
	return any
}

// count returns how many rows of the encoded block p f takes: what
// drop_oldest counts as dropped when it skips p. A filter of every row of
// its tenants (no selector, no route) reads the header's row count alone
// (rows.CountRows); another decodes each row once (rows.Each) and builds
// no record.
func (f *filter) count(p []byte) (int, error) {
	if f.skips(p) {
		return 0, nil
	}
	if f.selector == nil && f.route == "" {
		return rows.CountRows(p)
	}
	var bf blockFill
	n := 0
	_, err := rows.Each(p, func(blk *rows.Block) bool { return bf.take(f, blk) }, func(_ int, r *rows.Row) {
		if bf.takesRow(r.Stream, r.Route) {
			n++
		}
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// begin prepares bf for the rows of blk, whose header alone it reads, and
// reports whether f can take any of them.
func (b *Batch) begin(bf *blockFill, f *filter, blk *rows.Block, at wal.Pos) bool {
	*bf = blockFill{blk: blk, at: at, records: len(b.Records), arena: len(b.arena), bytes: b.Bytes, oldest: b.oldest}
	if !bf.take(f, blk) {
		return false
	}
	if len(b.Records) == 0 {
		b.oldest = blk.ReceiveTime
	}
	// The arena may move while it grows: offsets first, slices at the
	// end.
	bf.labelsAt = make([][2]int, len(blk.Streams))
	for i, ls := range blk.Streams {
		if bf.keep[i] {
			s := len(b.arena)
			b.arena = appendLabelsJSON(b.arena, ls)
			bf.labelsAt[i] = [2]int{s, len(b.arena)}
		}
	}
	if !f.lineOnly {
		b.keys.reset(blk)
	}
	b.spans = b.spans[:0]
	return true
}

// takesRow reports whether bf's filter takes a row of the stream and route
// (0: none) given.
func (bf *blockFill) takesRow(stream uint32, route uint16) bool {
	if !bf.keep[stream] {
		return false
	}
	return bf.f.route == "" || route != 0 && bf.takes[route-1]
}

// add adds row i, r, of bf's block to b: r's time, stream and line, and
// its fields unless bf's filter is line-only (then r holds no more).
func (b *Batch) add(bf *blockFill, i int, r *rows.Row) {
	sp := recordSpan{lab: bf.labelsAt[r.Stream]}
	rec := Record{Time: r.Time, Tenant: bf.blk.Tenant, Labels: bf.blk.Streams[r.Stream], Pos: bf.at, Row: i}
	if !bf.f.lineOnly {
		s := len(b.arena)
		b.arena = appendFieldsJSON(b.arena, &b.keys, r.Fields, &b.scratch)
		sp.fields = [2]int{s, len(b.arena)}
		rec.Metadata = metadataOf(bf.blk, r)
	}
	s := len(b.arena)
	b.arena = append(b.arena, r.Line...)
	sp.line = [2]int{s, len(b.arena)}
	b.spans = append(b.spans, sp)
	b.Records = append(b.Records, rec)
	b.Bytes += len(r.Line)
}

// end points the records bf's block added into the arena, now that it
// has stopped growing, and returns how many there are.
func (b *Batch) end(bf *blockFill) int {
	for k, sp := range b.spans {
		r := &b.Records[bf.records+k]
		r.LabelsJSON = b.arena[sp.lab[0]:sp.lab[1]:sp.lab[1]]
		if !bf.f.lineOnly {
			r.FieldsJSON = b.arena[sp.fields[0]:sp.fields[1]:sp.fields[1]]
		}
		r.Line = b.arena[sp.line[0]:sp.line[1]:sp.line[1]]
	}
	b.spans = b.spans[:0]
	return len(b.Records) - bf.records
}

// undo takes back what bf's block added to b.
func (b *Batch) undo(bf *blockFill) {
	clear(b.Records[bf.records:])
	b.Records, b.arena, b.Bytes, b.oldest = b.Records[:bf.records], b.arena[:bf.arena], bf.bytes, bf.oldest
	b.spans = b.spans[:0]
}

// appendBlock adds the rows of blk, decoded, that f keeps to b and
// returns how many. Every byte kept is copied into b's arena: blk views
// the cursor's buffer.
func (b *Batch) appendBlock(f *filter, blk *rows.Block, at wal.Pos) int {
	var bf blockFill
	if !b.begin(&bf, f, blk, at) {
		return 0
	}
	var r rows.Row
	var fields []rows.Field
	for i := range blk.Rows {
		ref := &blk.Rows[i]
		var route uint16
		if blk.RowRoutes != nil {
			route = blk.RowRoutes[i]
		}
		if !bf.takesRow(ref.Stream, route) {
			continue
		}
		if f.lineOnly {
			r = rows.Row{Time: ref.Time, Stream: ref.Stream, Line: blk.Line(i)}
		} else {
			fields = blk.Row(i, &r, fields)
		}
		b.add(&bf, i, &r)
	}
	return b.end(&bf)
}

// appendEncoded adds the rows of the encoded block p that f keeps to b
// and returns how many, as appendBlock does for p decoded, decoding each
// row once (rows.Each) rather than twice (rows.Decode, then Row). A block
// that does not decode adds nothing: its error is returned.
func (b *Batch) appendEncoded(f *filter, p []byte, at wal.Pos) (int, error) {
	var bf blockFill
	took := false
	_, err := rows.Each(p, func(blk *rows.Block) bool {
		took = b.begin(&bf, f, blk, at)
		return took
	}, func(i int, r *rows.Row) {
		if bf.takesRow(r.Stream, r.Route) {
			b.add(&bf, i, r)
		}
	})
	if err != nil {
		if took {
			b.undo(&bf)
		}
		return 0, err
	}
	if !took {
		return 0, nil
	}
	return b.end(&bf), nil
}

// metadataOf returns the structured metadata of r (rows.Row.IsMetadata:
// strings held apart from a line that is its message), or nil: the
// fields parsed from the line, or those of sluice's own formats, a
// destination gets in the line it is sent.
func metadataOf(blk *rows.Block, r *rows.Row) record.Labels {
	if len(r.Fields) == 0 || !r.MsgIsLine() {
		return nil
	}
	var md record.Labels
	for k := range r.Fields {
		if f := &r.Fields[k]; r.IsMetadata(f) {
			md = append(md, record.Label{Name: blk.Names[f.Name], Value: string(record.AppendUnescaped(nil, f.Value, f.Flags&^record.BadUTF8))})
		}
	}
	return md
}

// appendLabelsJSON appends ls as a JSON object of strings.
func appendLabelsJSON(dst []byte, ls record.Labels) []byte {
	dst = append(dst, '{')
	for i, l := range ls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = record.AppendJSONEscaped(dst, l.Name)
		dst = append(dst, `":"`...)
		dst = record.AppendJSONEscaped(dst, l.Value)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// jsonKeys holds the field names of a block as JSON object keys, each
// escaped once per block rather than once per row that has it.
type jsonKeys struct {
	buf  []byte
	ends []int // name i's key is buf[ends[i-1]:ends[i]] (from 0 for i 0)
}

// reset renders the keys of blk's names, keeping the memory.
func (k *jsonKeys) reset(blk *rows.Block) {
	k.buf, k.ends = k.buf[:0], k.ends[:0]
	for _, n := range blk.Names {
		k.buf = append(k.buf, '"')
		k.buf = record.AppendJSONEscaped(k.buf, n)
		k.buf = append(k.buf, '"', ':')
		k.ends = append(k.ends, len(k.buf))
	}
}

// key returns name i's key: the escaped name in quotes, and a colon.
func (k *jsonKeys) key(i uint32) []byte {
	start := 0
	if i > 0 {
		start = k.ends[i-1]
	}
	return k.buf[start:k.ends[i]]
}

// appendFieldsJSON appends the fields that are neither the time nor the
// message as a JSON object, typed as they were parsed; keys holds the
// names of their block.
// scratch holds an escaped value's text while it is escaped again for
// JSON, kept for the next call.
func appendFieldsJSON(dst []byte, keys *jsonKeys, fields []rows.Field, scratch *[]byte) []byte {
	dst = append(dst, '{')
	n := 0
	for i := range fields {
		f := &fields[i]
		if f.Role != record.RoleNone {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, keys.key(f.Name)...)
		switch f.Kind {
		case record.Null:
			dst = append(dst, "null"...)
		case record.Bool:
			dst = strconv.AppendBool(dst, f.Num != 0)
		case record.Int:
			dst = strconv.AppendInt(dst, int64(f.Num), 10)
		case record.Float:
			v := f.Float()
			switch {
			case len(f.Value) > 0:
				dst = append(dst, f.Value...)
			case math.IsInf(v, 0) || math.IsNaN(v):
				dst = strconv.AppendQuote(dst, strconv.FormatFloat(v, 'g', -1, 64))
			default:
				dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
			}
		case record.BigInt, record.JSON:
			dst = append(dst, f.Value...)
		default:
			dst = append(dst, '"')
			switch {
			case f.Flags&(record.Escaped|record.SDEscaped|record.BadUTF8) == 0:
				dst = record.AppendJSONEscaped(dst, f.Value) // the value is its text
			case f.Flags == record.Escaped && jsonStringContent(f.Value):
				// JSON's escapes, as a JSON line held them: the same
				// text, without decoding and escaping it again.
				dst = append(dst, f.Value...)
			default:
				*scratch = record.AppendUnescaped((*scratch)[:0], f.Value, f.Flags)
				dst = record.AppendJSONEscaped(dst, *scratch)
			}
			dst = append(dst, '"')
		}
	}
	return append(dst, '}')
}

// jsonStringContent reports whether raw can stand between the quotes of a
// JSON string as it is, meaning what AppendUnescaped(raw, Escaped) decodes:
// valid UTF-8, no control byte or unescaped quote, and only the escapes
// \" \\ \/ \b \f \n \r \t. A \u escape says no: a lone surrogate decodes
// to U+FFFD, and PostgreSQL's jsonb refuses \u0000, which re-escaping
// keeps but a copy must not be trusted to. Runs of plain ASCII are skipped
// eight bytes at a time.
func jsonStringContent(raw []byte) bool {
	for i := 0; i < len(raw); {
		if i+8 <= len(raw) && jsonPlain8(binary.LittleEndian.Uint64(raw[i:])) {
			i += 8
			continue
		}
		switch c := raw[i]; {
		case c == '\\':
			if i+1 == len(raw) {
				return false
			}
			switch raw[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			default:
				return false
			}
		case c == '"' || c < 0x20:
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				return false
			}
			i += size
		}
	}
	return true
}

// jsonPlain8 reports whether the eight bytes of w are all printable ASCII
// other than '"' and '\\': bytes a JSON string holds as they are. (A byte
// below n has its high bit set in x - n*lsb &^ x, as does any byte whose
// high bit is set; a borrow only follows a byte that was flagged.)
func jsonPlain8(w uint64) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	ctl := w - 0x20*lsb
	q := w ^ '"'*lsb
	bs := w ^ '\\'*lsb
	return (ctl|(q-lsb)|(bs-lsb)|w)&msb == 0
}

// Policy is what a sink does when its backlog passes its budget.
type Policy int

const (
	// Block refuses ingest for the sink's tenants (503, Retry-After,
	// naming the sink) until the sink is back under its budget.
	Block Policy = iota
	// DropOldest moves the sink's position forward past the oldest
	// records, counting and logging them, so the WAL it holds stays
	// within the budget.
	DropOldest
)

func (p Policy) String() string {
	if p == DropOldest {
		return "drop_oldest"
	}
	return "block"
}

// ParsePolicy parses "block" or "drop_oldest".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "", "block":
		return Block, nil
	case "drop_oldest":
		return DropOldest, nil
	}
	return 0, fmt.Errorf("policy %q: want block or drop_oldest", s)
}

// Backoff is a retry schedule: jittered exponential from Initial, capped
// at Max.
type Backoff struct {
	Initial, Max time.Duration
}

// delay returns the wait before retry number n (1 for the first retry):
// "equal jitter", half of the exponential step plus a random half, so
// sinks that failed together do not retry together.
func (b Backoff) delay(n int, rnd func(int64) int64) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if d <= 1 {
		return d
	}
	half := int64(d) / 2
	return time.Duration(half + rnd(half+1))
}

// MaxRetryAfter bounds the wait a Retry-After header can ask for, so
// that a wrong header cannot stall a sink for days.
const MaxRetryAfter = time.Hour

// ParseRetryAfter reads an HTTP Retry-After value, delay-seconds or an
// HTTP date (RFC 9110 10.2.3), as a wait from now, at most MaxRetryAfter.
// It returns 0 for an empty, unreadable or past value.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return min(time.Duration(min(n, int64(MaxRetryAfter/time.Second)))*time.Second, MaxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), MaxRetryAfter)
	}
	return 0
}
