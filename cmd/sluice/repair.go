package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/sluicelog/sluice/internal/store"
)

var repairCommand = &command{
	name:  "repair",
	args:  "--data DIR",
	short: "recover a data directory in place and say what changed",
	long: `Opens a data directory read-write, which recovers it as serve and ingest do
when they start, and lists each change on standard output: a torn WAL tail cut
off at its last whole frame, a WAL segment rewritten without its damaged bytes
(the original kept as NAME.corrupt), a part whose header, footer or index is
damaged set aside as ID.part.corrupt (never deleted), leftovers of interrupted
work deleted, replayed rows flushed into parts. Read-only commands (export,
stats, check, query --data) never change the directory.

A damaged block inside a part is not repaired (its bytes cannot be recovered):
queries skip it and say so, and sluice check lists it.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o storageFlags
		o.register(fs)
		return func(args []string, e *env) error {
			if len(args) > 0 {
				return usageError("repair takes no arguments")
			}
			st, err := o.open(e.stderr)
			if errors.Is(err, store.ErrLocked) {
				return fmt.Errorf("%v: stop the process that uses it (sluice serve or ingest) first", err)
			}
			if err != nil {
				return err
			}
			defer st.Close()
			changes := st.Repairs()
			for _, c := range changes {
				fmt.Fprintln(e.stdout, c)
			}
			if err := st.Close(); err != nil {
				return err
			}
			if len(changes) == 0 {
				fmt.Fprintln(e.stdout, "nothing to repair")
			}
			if s := st.Stats(); s.BadParts > 0 {
				fmt.Fprintf(e.stdout, "%d parts are set aside as damaged (*.part.corrupt): their rows are not served; sluice check lists them\n", s.BadParts)
			}
			return nil
		}
	},
}
