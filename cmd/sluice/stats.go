package main

import (
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/sluicelog/sluice/internal/store"
)

var statsCommand = &command{
	name:  "stats",
	args:  "--data DIR",
	short: "show what a data directory holds, per tenant and day",
	long: `Prints, per tenant and day, the parts, streams, lines, the bytes of the
original lines and the bytes on disk; then the head (acknowledged lines not
yet flushed into parts, kept in the WAL), totals, and the damage known. The
directory is read, never changed (the WAL is replayed into memory).`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o storageFlags
		o.register(fs)
		return func(args []string, e *env) error {
			if len(args) > 0 {
				return usageError("stats takes no arguments")
			}
			st, err := o.openReadOnly(e.stderr)
			if err != nil {
				return err
			}
			defer st.Close()
			printStats(e, st)
			return st.Close()
		}
	},
}

func printStats(e *env, st *store.Store) {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tenant\tday\tparts\tstreams\tlines\tline bytes\tdisk bytes\tratio\t")
	type key struct{ tenant, day string }
	var order []key
	type agg struct {
		parts                  int
		streams                map[string]bool
		rows, lineBytes, bytes int64
	}
	aggs := map[key]*agg{}
	for _, p := range st.PartStats() {
		k := key{p.Tenant, p.Day}
		a := aggs[k]
		if a == nil {
			a = &agg{streams: map[string]bool{}}
			aggs[k] = a
			order = append(order, k)
		}
		a.parts++
		for _, s := range p.Streams {
			a.streams[s] = true
		}
		a.rows += p.Rows
		a.lineBytes += p.LineBytes
		a.bytes += p.Size
	}
	for _, k := range order {
		a := aggs[k]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1fx\t\n", k.tenant, k.day, a.parts, len(a.streams), a.rows, a.lineBytes, a.bytes,
			float64(a.lineBytes)/float64(max(a.bytes, 1)))
	}
	tw.Flush()
	s := st.Stats()
	fmt.Fprintf(e.stdout, "\nparts: %d, %d lines, %d line bytes, %d bytes on disk (%.1fx)\n", s.Parts, s.PartRows, s.LineBytes, s.PartBytes,
		float64(s.LineBytes)/float64(max(s.PartBytes, 1)))
	fmt.Fprintf(e.stdout, "head: %d lines not yet in parts (%d bytes, kept in the WAL)\n", s.HeadRows, s.HeadBytes)
	if s.RecoveredRecords > 0 {
		fmt.Fprintf(e.stdout, "recovered at open: %d records from the WAL in %s\n", s.RecoveredRecords, s.RecoveryTime)
	}
	if s.BadParts > 0 || s.CorruptWAL > 0 {
		fmt.Fprintf(e.stdout, "damage found at open: %d unreadable parts (their rows are not served), %d corrupt WAL regions (skipped); sluice check lists it all\n", s.BadParts, s.CorruptWAL)
	}
	if s.TornWAL != "" {
		fmt.Fprintf(e.stdout, "the WAL ends in a torn tail at %s (an interrupted write, never acknowledged): left as it is; serve or sluice repair cuts it off\n", s.TornWAL)
	}
}
