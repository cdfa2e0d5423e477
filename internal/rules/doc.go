// Package rules is sluice's rule stage: an ordered list of rules, each a
// LogQL log expression (its match) and actions (drop, keep, sample,
// redact, set_labels, drop_labels, metric, route, ...), loaded from a YAML file,
// compiled once into a Set, and applied to every batch between parsing
// and admission (see flow.Flow.Rules).
//
// A Set is immutable once compiled and safe for concurrent use; Live
// holds the current Set behind one atomic pointer, and each batch is
// evaluated under the Set it loaded once, never half of one version and
// half of another. Reloading parses, validates and compiles off the hot
// path and swaps the pointer; a file that fails to load leaves the old
// Set running. A reload keeps what the running Set decoded and compiled
// of the rules the new file still has (their YAML by each rule's text,
// their matches by text), so that it decodes and compiles the rules that
// changed, not all of them; it also decides, in the compile, the rules
// of the streams the running Set had seen and makes the evaluators its
// goroutines will take, so that the first batch after the swap costs
// what any batch does. The compile yields its goroutine after each 2 ms
// it ran, between the rules it compiles and the runs of up to 256 rules
// it decodes (YAML decoded by runs, not the whole file in one call), so
// that on a small machine the ingest goroutines keep running.
//
// Matching reuses the LogQL parser (internal/logql) and its compiled
// pipeline stages (internal/stage), so a rule matches a line exactly as
// a query with the same expression would select the stored line. Stream
// selectors are decided once per stream (by each evaluating goroutine,
// kept across batches), and a rule whose
// pipeline starts with literal line filters (|= "x", or a regexp with
// required literals) runs only on lines holding one of them, found with
// one multi-literal matcher (internal/literal) over all rules first.
//
// route marks a record with the sinks it goes to (record.Record.Route),
// which the WAL carries with it (rows version 2); it sends nothing itself.
//
// It never does I/O on the hot path, never fails a batch (a rule that
// fails on a line counts an error and leaves the line as it was), and
// knows no protocol and no storage: it changes a record.Batch in place.
package rules
