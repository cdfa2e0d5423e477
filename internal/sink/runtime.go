package sink

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/vfs"
	"github.com/sluicelog/sluice/internal/wal"
)

// Config is one sink's runtime settings; the destination has its own.
type Config struct {
	Name string
	Type string // for status: postgres, file
	// Tenant is the tenant whose records the sink takes; "" or "*" all.
	Tenant string
	// Selector, if not empty, is a LogQL stream selector the records'
	// streams must match, e.g. {app="api", level=~"error|warn"}.
	Selector string
	// From is where the sink's records come from: "" its subscription
	// (Tenant and Selector), "rules" only the records the rules route to
	// it by name (Tenant and Selector, if set, narrow them further).
	From string
	// BatchSize is the records a batch aims at; a batch ends at a WAL
	// record's end, so it may hold one record's worth more.
	BatchSize int
	// BatchBytes bounds a batch's memory: a batch ends once its records'
	// lines, labels and fields (as JSON) pass it, at a WAL record's end.
	// 0 means DefaultBatchBytes. The sink holds at most Concurrency+1
	// batches: those being delivered and the one being filled.
	BatchBytes int
	// Concurrency is how many batches may be in the destination at once
	// (0 means 1). Above 1 the destination must be Ordered (PostgreSQL)
	// and the policy block: batch k+1 is copied while batch k copies or
	// commits, and commits only after it.
	Concurrency int
	// Linger is how long a batch waits for more records once it has one.
	Linger time.Duration
	Retry  Backoff
	// Budget is the WAL bytes the sink may hold behind it; 0 means
	// DefaultBudget.
	Budget int64
	Policy Policy
	// Pace, between 0 and 1, paces a sink that falls behind ingest: while
	// the WAL grows faster than the sink reads it, the sink works Pace of
	// its time, pausing after each batch (1-Pace)/Pace times as long as
	// the batch's fill and delivery took (at most a second), so that
	// ingest keeps the CPU; it catches up at full speed once the WAL it
	// has not read stops growing or passes half the budget. 0 (the
	// default) never pauses.
	Pace float64
	// Dir holds the sink's position file and dead-letter file.
	Dir string
}

// Defaults for zero Config fields.
const (
	DefaultBatchSize = 10000
	DefaultLinger    = time.Second
	DefaultBudget    = 1 << 30
	DefaultRetryMin  = 100 * time.Millisecond
	DefaultRetryMax  = 30 * time.Second
)

// DefaultBatchBytes is BatchBytes when 0: with DefaultBatchSize, records
// of up to about 3 KB each fill a batch by count first.
const DefaultBatchBytes = 32 << 20

func (c Config) withDefaults() (Config, error) {
	if c.Name == "" {
		return c, errors.New("sink without a name")
	}
	if c.Tenant == "*" {
		c.Tenant = ""
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Concurrency > MaxConcurrency {
		return c, fmt.Errorf("sink %q: concurrency %d: at most %d", c.Name, c.Concurrency, MaxConcurrency)
	}
	if c.Concurrency > 1 && c.Policy != Block {
		return c, fmt.Errorf("sink %q: concurrency %d needs policy block: drop_oldest delivers one batch at a time", c.Name, c.Concurrency)
	}
	if c.Linger <= 0 {
		c.Linger = DefaultLinger
	}
	if c.Retry.Initial <= 0 {
		c.Retry.Initial = DefaultRetryMin
	}
	if c.Retry.Max <= 0 {
		c.Retry.Max = DefaultRetryMax
	}
	c.Retry.Max = max(c.Retry.Max, c.Retry.Initial)
	if c.Budget <= 0 {
		c.Budget = DefaultBudget
	}
	if c.Pace < 0 || c.Pace >= 1 || math.IsNaN(c.Pace) {
		return c, fmt.Errorf("sink %q: pace %v: want at least 0 (never pause) and below 1", c.Name, c.Pace)
	}
	if c.Dir == "" {
		return c, fmt.Errorf("sink %q: no directory for its position and dead letter", c.Name)
	}
	if c.From != "" && c.From != FromRules {
		return c, fmt.Errorf("sink %q: from %q: want rules, or nothing for the sink's tenant and selector", c.Name, c.From)
	}
	return c, nil
}

// MaxConcurrency bounds Config.Concurrency: each batch in flight holds a
// connection and up to BatchBytes of memory.
const MaxConcurrency = 16

// FromRules is Config.From for a sink that takes what the rules route to it.
const FromRules = "rules"

// Sink is one configured sink: a cursor on the WAL, its filter, and a
// Destination. Run delivers; the other methods are safe for concurrent
// use.
type Sink struct {
	cfg  Config
	dest Destination
	filt filter
	log  *slog.Logger
	m    *sinkMetrics

	// done is the position before which every record was delivered,
	// dead-lettered, dropped by policy or filtered out: the sink never
	// needs the WAL before it again. Kept in the position file.
	mu      sync.Mutex
	done    wal.Pos
	hasDone bool    // done is known: from the position file, or set by Run
	initial bool    // done was set by Manager.Start: where a new sink begins
	saved   wal.Pos // what the position file holds
	lastErr string

	hold    atomic.Uint64 // done.Segment, or MaxUint64 before a position is known
	backlog atomic.Int64  // WAL bytes after done
	over    atomic.Bool   // backlog above the budget
	oldest  atomic.Int64  // receive time (Unix ns) of the oldest record of the batch being filled, 0 if none
	sending atomic.Int64  // that of the batch being delivered while the next fills (pipeline), 0 if none
	dropped atomic.Uint64 // records dropped by policy (also in metrics)
	// delivering is how long (ns) the pipeline's last delivery attempt
	// took (with Concurrency above 1, its turn's wait included): with
	// the fill's, the work Pace measures.
	delivering atomic.Int64

	rnd func(int64) int64
	// onDone, if set (by tests), is called after each move of the
	// position.
	onDone func()
	// waitFn, if set (by tests), replaces the sleep before a retry of
	// Deliver.
	waitFn func(ctx context.Context, d time.Duration) bool
}

// New returns the sink of cfg delivering to dest. It reads the sink's
// position file, so that Hold is right before the store opens.
func New(cfg Config, dest Destination, log *slog.Logger) (*Sink, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, dest: dest, log: log.With("sink", cfg.Name), filt: filter{tenant: cfg.Tenant},
		rnd: rand.Int64N}
	if cfg.From == FromRules {
		s.filt.route = cfg.Name
	}
	if lo, ok := dest.(LineOnly); ok && lo.LineOnly() {
		s.filt.lineOnly = true
	}
	if _, ok := dest.(Ordered); !ok && cfg.Concurrency > 1 {
		return nil, fmt.Errorf("sink %q: concurrency %d: the %s destination delivers one batch at a time", cfg.Name, cfg.Concurrency, cmp.Or(cfg.Type, "sink's"))
	}
	if cfg.Selector != "" {
		sel, err := logql.ParseSelector(cfg.Selector)
		if err != nil {
			return nil, fmt.Errorf("sink %q: selector: %w", cfg.Name, err)
		}
		s.filt.selector = sel
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sink %q: %w", cfg.Name, err)
	}
	s.hold.Store(^uint64(0))
	p, ok, err := readPosition(s.positionPath())
	if err != nil {
		return nil, fmt.Errorf("sink %q: %w", cfg.Name, err)
	}
	if ok {
		s.done, s.hasDone, s.saved = p, true, p
		s.hold.Store(p.Segment)
	}
	return s, nil
}

// Name returns the sink's name.
func (s *Sink) Name() string { return s.cfg.Name }

func (s *Sink) positionPath() string   { return filepath.Join(s.cfg.Dir, "position") }
func (s *Sink) deadLetterPath() string { return DeadLetterPath(s.cfg.Dir) }

// DeadLetterPath is the dead-letter file of the sink whose directory is
// dir.
func DeadLetterPath(dir string) string { return filepath.Join(dir, "dead-letter.ndjson") }

// Hold returns the lowest WAL segment the sink may still read.
func (s *Sink) Hold() uint64 { return s.hold.Load() }

// Run delivers until ctx ends (returning nil) or a fault that retrying
// cannot fix.
func (s *Sink) Run(ctx context.Context, l *wal.Log) error {
	defer s.dest.Close()
	var dpos wal.Pos
	var dok bool
	for attempt := 1; ; attempt++ {
		var err error
		dpos, dok, err = s.dest.Open(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		s.setErr(err)
		s.log.Warn("sink: open destination; retrying", "attempt", attempt, "err", err)
		if err := s.dropWhileClosed(l); err != nil {
			return err
		}
		if !s.sleep(ctx, s.cfg.Retry.delay(attempt, s.rnd)) {
			return nil
		}
	}
	s.mu.Lock()
	start, has := s.done, s.hasDone
	s.mu.Unlock()
	// The destination's position wins when it is ahead: a crash between
	// its commit and our position file. Ours wins when ahead: records
	// after the destination's were filtered out or dropped.
	if dok && (!has || posLess(start, dpos)) {
		start, has = dpos, true
	}
	if !has && !dok {
		// A new sink starts where Manager.Start put it: at what ingest
		// acknowledges from then on.
		if !s.initial {
			start = l.Committed()
		}
	}
	s.setDone(start)
	if err := s.savePosition(); err != nil {
		return err
	}
	s.log.Info("sink: started", "position", start.String(), "destination_position", dok)
	cur := l.Cursor(start)
	defer cur.Close()
	if s.cfg.Policy == Block {
		// drop_oldest moves the cursor while it delivers: not ahead.
		if err := s.pipeline(ctx, l, cur, start); err != nil {
			return err
		}
		return s.savePosition()
	}
	var b Batch
	pace := s.pacer()
	for ctx.Err() == nil {
		b.Reset()
		t0 := time.Now()
		if err := s.fill(ctx, l, cur, &b, s.donePos()); err != nil {
			return err
		}
		if ctx.Err() != nil {
			break
		}
		if len(b.Records) > 0 {
			if !s.deliver(ctx, l, cur, &b) {
				break
			}
		}
		s.oldest.Store(0)
		if err := s.delivered(&b); err != nil {
			return err
		}
		if !pace.after(ctx, l, cur.Pos(), time.Since(t0)-b.waited) {
			break
		}
	}
	if err := s.savePosition(); err != nil {
		return err
	}
	return nil
}

// delivered moves the position to b.End, b being delivered, and saves
// it when it must.
func (s *Sink) delivered(b *Batch) error {
	s.setDone(b.End)
	save := s.maybeSave
	if _, ok := s.dest.(Positionless); ok && len(b.Records) > 0 {
		save = s.savePosition
	}
	if err := save(); err != nil {
		return err
	}
	if s.onDone != nil {
		s.onDone()
	}
	return nil
}

// fill reads frames into b until it holds BatchSize records or BatchBytes
// bytes, or it holds some and Linger has passed, or it holds none and
// everything committed was read past from, the end of the batch before
// (then b.End says how far the filter skipped).
func (s *Sink) fill(ctx context.Context, l *wal.Log, cur *wal.Cursor, b *Batch, from wal.Pos) error {
	var deadline time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	scanned := 0
	b.End = cur.Pos()
	for {
		changed := l.Changed()
		p, at, err := cur.Next()
		switch {
		case err == nil:
			if !s.filt.skips(p) {
				n, derr := b.appendEncoded(&s.filt, p, at)
				if derr != nil {
					// The WAL checked the CRC: a bug or a foreign writer.
					s.log.Error("sink: WAL record undecodable; skipped", "pos", at.String(), "err", derr)
				} else if n > 0 && deadline.IsZero() {
					deadline = time.Now().Add(s.cfg.Linger)
					s.oldest.Store(b.oldest)
				}
			}
			b.End = cur.Pos()
			if len(b.Records) >= s.cfg.BatchSize || len(b.arena) >= s.cfg.BatchBytes {
				return nil
			}
			if scanned++; len(b.Records) == 0 && scanned >= 1000 {
				return nil // commit how far the filter skipped now and then
			}
			continue
		case errors.Is(err, io.EOF):
		case errors.Is(err, wal.ErrGone):
			var g *wal.GoneError
			errors.As(err, &g)
			s.log.Error("sink: WAL segments removed before the sink read them; records lost, count unknown",
				"from", g.Want.String(), "to", wal.Pos{Segment: g.Oldest}.String())
			cur.Seek(wal.Pos{Segment: g.Oldest})
			b.End = cur.Pos()
			continue
		case errors.Is(err, wal.ErrCorrupt):
			next := wal.Pos{Segment: cur.Pos().Segment + 1}
			s.log.Error("sink: corrupt WAL frame; skipping to the next segment", "err", err, "to", next.String())
			s.m.dropped.Add(1)
			cur.Seek(next)
			continue
		default:
			return fmt.Errorf("sink %q: read WAL: %w", s.cfg.Name, err)
		}
		// Everything committed is read.
		b.End = cur.Pos()
		if len(b.Records) == 0 {
			if b.End != from {
				return nil
			}
		} else if !time.Now().Before(deadline) {
			return nil
		}
		var wake <-chan time.Time
		if len(b.Records) > 0 {
			if timer == nil {
				timer = time.NewTimer(time.Until(deadline))
			}
			wake = timer.C
		}
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-wake:
			b.waited += time.Since(t0)
			return nil
		}
		b.waited += time.Since(t0)
	}
}

// deliver sends b until it is delivered (true) or ctx ends (false),
// retrying with backoff; records rejected for good go to the dead letter.
// Under DropOldest, a sink over its budget drops b and skips ahead.
func (s *Sink) deliver(ctx context.Context, l *wal.Log, cur *wal.Cursor, b *Batch) bool {
	return s.retry(ctx, l, cur, b, 0, nil, nil)
}

// retry is deliver after attempt number after (0: none yet) ended with
// rej and err: it settles that attempt's outcome, then retries as deliver
// does.
func (s *Sink) retry(ctx context.Context, l *wal.Log, cur *wal.Cursor, b *Batch, after int, rej []Rejected, err error) bool {
	for attempt := after; ; attempt++ {
		if attempt > 0 {
			if s.settle(l, b, rej, err) {
				return true
			}
			if ctx.Err() != nil {
				return false
			}
			s.setErr(err)
			s.m.retries.Inc()
			s.log.Warn("sink: deliver; retrying", "attempt", attempt, "records", len(b.Records), "err", err)
			if s.cfg.Policy == DropOldest && s.over.Load() {
				s.drop(l, cur, b)
				return true
			}
			if !s.wait(ctx, max(s.cfg.Retry.delay(attempt, s.rnd), minWait(err))) {
				return false
			}
		}
		rej, err = s.attempt(ctx, l, b)
	}
}

// attempt hands b to the destination once.
func (s *Sink) attempt(ctx context.Context, l *wal.Log, b *Batch) ([]Rejected, error) {
	b.deadLetter = func(rej []Rejected) error { return s.deadLetterWrite(l, b, rej) }
	b.lettered = false
	start := time.Now()
	rej, err := s.dest.Deliver(ctx, b)
	s.m.latency.Observe(time.Since(start).Seconds())
	return rej, err
}

// settle takes the outcome of an attempt to deliver b: the records
// rejected for good go to the dead letter (unless the destination wrote
// them there) and are settled; it reports whether b is done (delivered,
// or failed for good).
func (s *Sink) settle(l *wal.Log, b *Batch, rej []Rejected, err error) bool {
	if err != nil && errors.Is(err, ErrPermanent) {
		for i := range b.Records {
			if !b.Settled(i) && !slices.ContainsFunc(rej, func(r Rejected) bool { return r.Index == i }) {
				rej = append(rej, Rejected{Index: i, Reason: err.Error()})
			}
		}
	}
	if len(rej) > 0 {
		if !b.lettered {
			if derr := s.deadLetterWrite(l, b, rej); derr != nil {
				s.log.Error("sink: write dead letter", "err", derr)
			}
		}
		for _, r := range rej {
			b.Settle(r.Index)
		}
		b.nrejected += len(rej)
		s.m.deadLettered.Add(float64(len(rej)))
		s.log.Warn("sink: records rejected for good went to the dead letter", "records", len(rej),
			"file", s.deadLetterPath(), "first_reason", rej[0].Reason)
	}
	if err == nil || errors.Is(err, ErrPermanent) {
		sent := len(b.Records) - b.nrejected
		s.m.records.Add(float64(sent))
		s.m.bytes.Add(float64(b.Bytes))
		s.m.batches.Inc()
		s.setErr(nil)
		return true
	}
	return false
}

// drop counts b as dropped and moves the cursor forward until the backlog
// is under half the budget, counting what it skips.
func (s *Sink) drop(l *wal.Log, cur *wal.Cursor, b *Batch) {
	n := b.Unsettled()
	backlog, err := l.BytesSince(b.End)
	if err != nil {
		backlog = s.backlog.Load()
	}
	for backlog > s.cfg.Budget/2 {
		p, at, err := cur.Next()
		if err != nil {
			break // EOF, or a fault fill reports next
		}
		backlog -= int64(len(p)) + 12
		k, derr := s.filt.count(p)
		if derr != nil {
			// The WAL checked the CRC: a bug or a foreign writer.
			s.log.Error("sink: WAL record undecodable; dropped without counting its records", "pos", at.String(), "err", derr)
		}
		n += k
		b.End = cur.Pos()
	}
	s.m.dropped.Add(float64(n))
	s.dropped.Add(uint64(n))
	s.backlog.Store(max(backlog, 0))
	s.over.Store(false)
	s.log.Error("sink: over its budget with policy drop_oldest; dropped records", "records", n,
		"budget", s.cfg.Budget, "resume", b.End.String())
}

// dropWhileClosed applies drop_oldest while the destination cannot even be
// opened: the sink's own position moves forward (the destination's, behind
// it, is ignored at start since ours is ahead).
func (s *Sink) dropWhileClosed(l *wal.Log) error {
	s.mu.Lock()
	done, known := s.done, s.hasDone || s.initial
	s.mu.Unlock()
	if s.cfg.Policy != DropOldest || !s.over.Load() || !known {
		return nil
	}
	cur := l.Cursor(done)
	defer cur.Close()
	b := Batch{End: done}
	s.drop(l, cur, &b)
	s.setDone(b.End)
	return s.savePosition()
}

// wait sleeps d before a retry of Deliver (s.waitFn instead, if a test
// set it).
func (s *Sink) wait(ctx context.Context, d time.Duration) bool {
	if s.waitFn != nil {
		return s.waitFn(ctx, d)
	}
	return s.sleep(ctx, d)
}

func (s *Sink) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Sink) setErr(err error) {
	s.mu.Lock()
	if err == nil {
		s.lastErr = ""
	} else {
		s.lastErr = err.Error()
	}
	s.mu.Unlock()
}

func (s *Sink) donePos() wal.Pos {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func (s *Sink) setDone(p wal.Pos) {
	s.mu.Lock()
	s.done, s.hasDone = p, true
	s.mu.Unlock()
	s.hold.Store(p.Segment)
}

// maybeSave writes the position file when the position entered another
// segment: the file only has to be at or below the truth (it bounds what
// the store keeps and where a destination without positions resumes).
func (s *Sink) maybeSave() error {
	s.mu.Lock()
	need := s.done.Segment != s.saved.Segment
	s.mu.Unlock()
	if !need {
		return nil
	}
	return s.savePosition()
}

// savePosition writes the position file atomically and durably.
func (s *Sink) savePosition() error {
	p := s.donePos()
	b := binary.LittleEndian.AppendUint64(nil, p.Segment)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Offset))
	if err := vfs.ReplaceFile(s.positionPath(), b, 0o644); err != nil {
		return fmt.Errorf("sink %q: save position: %w", s.cfg.Name, err)
	}
	s.mu.Lock()
	s.saved = p
	s.mu.Unlock()
	return nil
}

func readPosition(path string) (wal.Pos, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return wal.Pos{}, false, nil
	}
	if err != nil {
		return wal.Pos{}, false, fmt.Errorf("read position: %w", err)
	}
	if len(b) != 16 {
		return wal.Pos{}, false, fmt.Errorf("read position %s: %d bytes, want 16", path, len(b))
	}
	return wal.Pos{Segment: binary.LittleEndian.Uint64(b), Offset: int64(binary.LittleEndian.Uint64(b[8:]))}, true, nil
}

// DeadLetter is one line of a dead-letter file.
type DeadLetter struct {
	Time   time.Time       `json:"time"`
	Tenant string          `json:"tenant"`
	Labels json.RawMessage `json:"labels"`
	Fields json.RawMessage `json:"fields"`
	Line   string          `json:"line"`
	WAL    string          `json:"wal"`
	// Row is the record's index among the rows of its WAL frame: with
	// WAL, the record's identity.
	Row    int       `json:"row"`
	Reason string    `json:"reason"`
	At     time.Time `json:"dead_lettered_at"`

	labels record.Labels // Labels, decoded by readDeadLetter
}

// deadLetterWrite appends the rejected records of b to the dead-letter
// file and syncs it, under the dead letter's lock (a replay rewrites it).
// The fields of a line-only sink's records, which the batch does not
// carry, are rendered from the WAL, l.
func (s *Sink) deadLetterWrite(l *wal.Log, b *Batch, rej []Rejected) error {
	unlock, err := lockDeadLetter(s.cfg.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := os.OpenFile(s.deadLetterPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	var buf []byte
	for _, r := range rej {
		rec := &b.Records[r.Index]
		fields := rec.FieldsJSON
		if fields == nil && s.filt.lineOnly && l != nil {
			var ferr error
			if fields, ferr = fieldsFromWAL(l, rec.Pos, rec.Row); ferr != nil {
				// The dead letter still holds the line and its
				// labels; fields null.
				s.log.Warn("sink: dead letter: read the record's fields back from the WAL", "wal", rec.Pos.String(), "row", rec.Row, "err", ferr)
			}
		}
		line, err := json.Marshal(DeadLetter{Time: time.Unix(0, rec.Time).UTC(), Tenant: rec.Tenant, Labels: rec.LabelsJSON,
			Fields: fields, Line: string(rec.Line), WAL: rec.Pos.String(), Row: rec.Row, Reason: r.Reason, At: now})
		if err != nil {
			f.Close()
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fieldsFromWAL renders the fields of row row of the WAL frame at pos as
// appendBlock does: the records of a line-only sink carry none, and its
// dead letter keeps them. The sink holds the frame's segment: it is after
// the sink's position.
func fieldsFromWAL(l *wal.Log, pos wal.Pos, row int) (json.RawMessage, error) {
	cur := l.Cursor(pos)
	defer cur.Close()
	p, at, err := cur.Next()
	if err != nil {
		return nil, fmt.Errorf("read WAL frame %s: %w", pos, err)
	}
	if at != pos {
		return nil, fmt.Errorf("read WAL frame %s: got the frame at %s", pos, at)
	}
	blk, err := rows.Decode(p)
	if err != nil {
		return nil, fmt.Errorf("decode WAL frame %s: %w", pos, err)
	}
	if row < 0 || row >= len(blk.Rows) {
		return nil, fmt.Errorf("WAL frame %s: row %d of %d", pos, row, len(blk.Rows))
	}
	var r rows.Row
	var scratch []byte
	var keys jsonKeys
	keys.reset(blk)
	blk.Row(row, &r, nil)
	return appendFieldsJSON(nil, &keys, r.Fields, &scratch), nil
}

func posLess(a, b wal.Pos) bool {
	return a.Segment < b.Segment || (a.Segment == b.Segment && a.Offset < b.Offset)
}
