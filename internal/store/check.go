package store

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
	"github.com/sluicelog/sluice/internal/wal"
)

// Finding is damage that Check found.
type Finding struct {
	File string
	// Block is the damaged block's index in a part, or -1.
	Block int
	// Offset is where the damage starts in File, or -1 when the file as a
	// whole is the problem (missing, set aside).
	Offset  int64
	Problem string
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.File)
	b.WriteString(":")
	if f.Block >= 0 {
		fmt.Fprintf(&b, " block %d", f.Block)
	}
	if f.Offset >= 0 {
		fmt.Fprintf(&b, " at byte %d", f.Offset)
	}
	b.WriteString(": ")
	b.WriteString(f.Problem)
	return b.String()
}

// CheckSummary counts what Check read.
type CheckSummary struct {
	Parts, Blocks int
	Segments      int
	Records       int
	Findings      int
	// TornTail, when set, is where the WAL ends in an incomplete frame:
	// what a crash during a write leaves, not damage (the write was never
	// acknowledged under the default sync policy), so not a Finding.
	TornTail *Finding
}

// Check verifies every checksum of the data directory dir, changing
// nothing: the MANIFEST's, every WAL segment's frames (and that their
// records decode), and every part the MANIFEST names (header, footer,
// index, filters, and each block's CRC and decoding). Parts set aside
// earlier (ID.part.corrupt) are reported too; a torn WAL tail is not
// damage (CheckSummary.TornTail). fn is called for each
// finding as it is found. It holds LOCK while it reads, if LOCK exists,
// so a running server is reported as ErrLocked rather than read while it
// writes.
func Check(ctx context.Context, fs vfs.FS, dir string, fn func(Finding)) (CheckSummary, error) {
	var sum CheckSummary
	if fs == nil {
		fs = vfs.OS
	}
	report := func(f Finding) {
		sum.Findings++
		fn(f)
	}
	lock, err := openLock(fs, dir, true)
	if errors.Is(err, vfs.ErrLocked) {
		return sum, fmt.Errorf("%s: %w", dir, ErrLocked)
	}
	if err != nil {
		return sum, err
	}
	defer lock.Close()

	man, err := loadManifest(fs, dir)
	if err != nil {
		report(Finding{File: path.Join(dir, manifestName), Block: -1, Offset: -1, Problem: err.Error()})
		man = nil
	}
	if man != nil {
		for _, info := range man.Parts {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			file := path.Join(dir, info.path())
			sum.Parts++
			rd, err := part.Open(fs, file)
			if err != nil {
				var ce *part.CorruptionError
				if errors.As(err, &ce) {
					report(Finding{File: file, Block: -1, Offset: ce.Offset, Problem: ce.Reason + " (the whole part is unreadable)"})
				} else {
					report(Finding{File: file, Block: -1, Offset: -1, Problem: err.Error()})
				}
				continue
			}
			sum.Blocks += len(rd.Blocks)
			err = rd.Verify(ctx, func(ce *part.CorruptionError) {
				report(Finding{File: file, Block: ce.Block, Offset: ce.Offset, Problem: ce.Reason})
			})
			_ = rd.Close()
			if err != nil {
				return sum, err
			}
		}
	}
	aside, err := setAsideParts(fs, dir)
	if err != nil {
		return sum, err
	}
	for _, d := range aside {
		report(Finding{File: d.Part, Block: -1, Offset: d.Offset, Problem: d.Reason + " (its rows are not served)"})
	}

	from := uint64(0)
	if man != nil {
		from = man.WALFrom
	}
	walDir := path.Join(dir, "wal")
	rep, err := wal.Replay(wal.Options{FS: fs, Dir: walDir}, from, func(pos wal.Pos, payload []byte) error {
		if _, err := rows.Decode(payload); err != nil {
			report(Finding{File: path.Join(walDir, segmentFile(pos.Segment)), Block: -1, Offset: pos.Offset,
				Problem: fmt.Sprintf("record does not decode: %v", err)})
		}
		return ctx.Err()
	})
	if err != nil {
		return sum, fmt.Errorf("read WAL: %w", err)
	}
	sum.Segments, sum.Records = rep.Segments, rep.Records
	for _, c := range rep.Corrupt {
		report(Finding{File: path.Join(walDir, segmentFile(c.Segment)), Block: -1, Offset: c.Offset, Problem: c.Reason})
	}
	if t := rep.TornTail; t != nil {
		sum.TornTail = &Finding{File: path.Join(walDir, segmentFile(t.Segment)), Block: -1, Offset: t.Offset,
			Problem: "torn tail (" + rep.TornReason + "): an interrupted write, never acknowledged; sluice repair or the next serve cuts it off"}
	}
	return sum, nil
}

// segmentFile is the name of WAL segment n (wal.md).
func segmentFile(n uint64) string { return fmt.Sprintf("%020d.wal", n) }
