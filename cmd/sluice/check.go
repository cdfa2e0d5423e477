package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sluicelog/sluice/internal/store"
)

var checkCommand = &command{
	name:  "check",
	args:  "--data DIR",
	short: "verify every checksum of a data directory, changing nothing",
	long: `Reads a whole data directory and verifies every checksum: the MANIFEST, every
WAL segment's frames (and that their records decode), and every part the
MANIFEST names (its header, footer, index and token filters, then each block's
CRC and decoding). Parts set aside as damaged earlier (*.part.corrupt) are
listed too. Nothing is changed.

Each damage found is one line on standard output:
  FILE: [block N] [at byte OFFSET]: what is wrong
then a summary line. A WAL that ends in an incomplete frame (what a crash
during a write leaves; that write was never acknowledged) is noted on a line
starting "note: " and is not counted as damage. Exit status: 0 when nothing is damaged, 1 when damage was
found (or the check could not run), 2 for a usage error. A directory in use by
a running serve or ingest is refused. sluice repair fixes what can be fixed
(a torn WAL tail); queries skip damaged blocks and say so.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var data string
		fs.StringVar(&data, "data", "", "the data `directory`")
		return func(args []string, e *env) error {
			if len(args) > 0 {
				return usageError("check takes no arguments")
			}
			if data == "" {
				return usageError("--data DIR is required")
			}
			if _, err := os.Stat(data); err != nil {
				return fmt.Errorf("data directory: %w", err)
			}
			ctx, stop := e.context()
			defer stop()
			sum, err := store.Check(ctx, nil, data, func(f store.Finding) { fmt.Fprintln(e.stdout, f) })
			if errors.Is(err, store.ErrLocked) {
				return fmt.Errorf("%v: stop the process that uses it (sluice serve or ingest) first", err)
			}
			if err != nil {
				return err
			}
			if sum.TornTail != nil {
				fmt.Fprintf(e.stdout, "note: %s\n", sum.TornTail)
			}
			fmt.Fprintf(e.stdout, "checked %d parts (%d blocks), %d WAL segments (%d records): ", sum.Parts, sum.Blocks, sum.Segments, sum.Records)
			if sum.Findings == 0 {
				fmt.Fprintln(e.stdout, "no damage")
				return nil
			}
			fmt.Fprintf(e.stdout, "%d damaged\n", sum.Findings)
			return errExit(1)
		}
	},
}

// openReadOnly opens the data directory without changing it: the WAL is
// replayed into memory and damage is skipped, not repaired (for export,
// stats and query --data).
func (o *storageFlags) openReadOnly(stderr io.Writer) (*store.Store, error) {
	if o.data == "" {
		return nil, usageError("--data DIR is required")
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return store.Open(store.Options{Dir: o.data, ReadOnly: true, Logger: log})
}

// reportDamage says on w what reading a read-only store found damaged and
// left as it is.
func reportDamage(w io.Writer, st *store.Store) {
	s := st.Stats()
	if s.TornWAL != "" {
		fmt.Fprintf(w, "sluice: the WAL ends in an incomplete frame at %s (an interrupted write, never acknowledged): left as it is; sluice repair cuts it off\n", s.TornWAL)
	}
	if n := len(st.WALReport().Corrupt); n > 0 {
		fmt.Fprintf(w, "sluice: %d damaged WAL regions skipped (the valid frames around them were read); sluice check lists them\n", n)
	}
}
