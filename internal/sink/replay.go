package sink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/vfs"
	"github.com/sluicelog/sluice/internal/wal"
)

// Replayer is a Destination that takes dead-lettered records again
// (`sluice sink dead-letter NAME --replay`). Replay writes the records of
// b that it did not take before, without moving the sink's position, and
// returns those it rejects again; every other record of b was delivered,
// by this call or an earlier one. It must deliver each record at most once
// across calls, crashes included, by its identity (Record.Pos and
// Record.Row): a replay that crashed after its commit, before the dead
// letter was rewritten, sends the same records again.
//
// A Positionless destination replays through Deliver instead, at least
// once like everything it delivers.
type Replayer interface {
	Replay(ctx context.Context, b *Batch) ([]Rejected, error)
}

// ReplayResult says what a replay did.
type ReplayResult struct {
	Read      int // records in the dead letter
	Delivered int // delivered, so removed from the dead letter
	Kept      int // rejected again: still in the dead letter, with the new reason
}

// Replay sends the records of the sink's dead letter back through its
// destination (after the user fixed what made it reject them), removes
// those delivered from the dead-letter file and keeps those rejected
// again, with their new reason. It holds the dead letter's lock
// throughout, so a running sink that dead-letters meanwhile waits.
//
// An error leaves the dead letter holding every record not delivered.
//
// REQUIRES: s does not Run (its destination is opened and closed here); a
// Sink of the same name and directory may run meanwhile.
func (s *Sink) Replay(ctx context.Context) (ReplayResult, error) {
	var res ReplayResult
	rp, isReplayer := s.dest.(Replayer)
	_, positionless := s.dest.(Positionless)
	if !isReplayer && !positionless {
		return res, fmt.Errorf("sink %q: a %s destination cannot replay its dead letter", s.cfg.Name, s.cfg.Type)
	}
	unlock, err := lockDeadLetter(s.cfg.Dir)
	if err != nil {
		return res, fmt.Errorf("sink %q: %w", s.cfg.Name, err)
	}
	defer unlock()
	path := s.deadLetterPath()
	letters, err := readDeadLetter(path)
	if err != nil {
		return res, fmt.Errorf("sink %q: %w", s.cfg.Name, err)
	}
	res.Read = len(letters)
	if len(letters) == 0 {
		return res, nil
	}
	defer s.dest.Close()
	if _, _, err := s.dest.Open(ctx); err != nil {
		return res, fmt.Errorf("sink %q: open destination: %w", s.cfg.Name, err)
	}
	delivered := make([]bool, len(letters))
	var b Batch
	var derr error
	for start := 0; start < len(letters) && derr == nil; start += s.cfg.BatchSize {
		end := min(start+s.cfg.BatchSize, len(letters))
		b.Reset()
		for i := start; i < end; i++ {
			b.Records = append(b.Records, letters[i].record())
		}
		var rej []Rejected
		if isReplayer {
			rej, derr = rp.Replay(ctx, &b)
		} else {
			rej, derr = s.dest.Deliver(ctx, &b)
			if derr != nil && errors.Is(derr, ErrPermanent) {
				for i := range b.Records {
					if !b.Settled(i) && !slices.ContainsFunc(rej, func(r Rejected) bool { return r.Index == i }) {
						rej = append(rej, Rejected{Index: i, Reason: derr.Error()})
					}
				}
				derr = nil
			}
		}
		if derr != nil {
			// Only what the destination settled was delivered.
			for i := range b.Records {
				delivered[start+i] = b.Settled(i)
			}
			break
		}
		for i := start; i < end; i++ {
			delivered[i] = true
		}
		for _, r := range rej {
			delivered[start+r.Index] = false
			letters[start+r.Index].Reason = r.Reason
		}
	}
	var out []byte
	for i := range letters {
		if delivered[i] {
			res.Delivered++
			continue
		}
		res.Kept++
		line, err := json.Marshal(&letters[i])
		if err != nil {
			return res, fmt.Errorf("sink %q: rewrite dead letter: %w", s.cfg.Name, err)
		}
		out = append(append(out, line...), '\n')
	}
	if werr := vfs.ReplaceFile(path, out, 0o644); werr != nil {
		return res, fmt.Errorf("sink %q: rewrite dead letter %s: %w", s.cfg.Name, path, werr)
	}
	if derr != nil {
		return res, fmt.Errorf("sink %q: replay: %w", s.cfg.Name, derr)
	}
	return res, nil
}

// record turns a dead letter back into the record the destination
// rejected: Metadata is not kept in the dead letter (its fields are in
// Fields).
func (d *DeadLetter) record() Record {
	r := Record{Time: d.Time.UnixNano(), Tenant: d.Tenant, LabelsJSON: d.Labels, FieldsJSON: d.Fields,
		Line: []byte(d.Line), Row: d.Row, Labels: d.labels}
	r.Pos, _ = ParsePos(d.WAL) // checked by readDeadLetter
	return r
}

// readDeadLetter reads a dead-letter file; a missing file holds nothing.
func readDeadLetter(path string) ([]DeadLetter, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter: %w", err)
	}
	var out []DeadLetter
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var d DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("dead letter %s:%d: %w", path, n, err)
		}
		if _, err := ParsePos(d.WAL); err != nil {
			return nil, fmt.Errorf("dead letter %s:%d: wal: %w", path, n, err)
		}
		var m map[string]string
		if err := json.Unmarshal(d.Labels, &m); err != nil {
			return nil, fmt.Errorf("dead letter %s:%d: labels: %w", path, n, err)
		}
		if d.Fields == nil {
			d.Fields = json.RawMessage("{}")
		}
		for k, v := range m {
			d.labels = append(d.labels, record.Label{Name: k, Value: v})
		}
		slices.SortFunc(d.labels, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, d)
	}
	return out, nil
}

// ParsePos parses a wal.Pos as its String method prints it:
// "SEGMENT.wal:OFFSET", SEGMENT in 20 decimal digits.
func ParsePos(s string) (wal.Pos, error) {
	seg, off, ok := strings.Cut(s, ".wal:")
	if !ok {
		return wal.Pos{}, fmt.Errorf("position %q: want SEGMENT.wal:OFFSET", s)
	}
	n, err := strconv.ParseUint(seg, 10, 64)
	if err != nil {
		return wal.Pos{}, fmt.Errorf("position %q: segment: %w", s, err)
	}
	o, err := strconv.ParseInt(off, 10, 64)
	if err != nil || o < 0 {
		return wal.Pos{}, fmt.Errorf("position %q: offset: want a byte offset", s)
	}
	return wal.Pos{Segment: n, Offset: o}, nil
}

// lockDeadLetter takes the lock of the dead letter of the sink whose
// directory is dir, waiting for it: the runtime holds it while it
// appends, a replay while it reads, delivers and rewrites.
func lockDeadLetter(dir string) (func(), error) {
	name := filepath.Join(dir, "dead-letter.lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock dead letter: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock dead letter %s: %w", name, err)
	}
	return func() { f.Close() }, nil // closing drops the flock
}
