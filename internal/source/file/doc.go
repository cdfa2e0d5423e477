// Package file reads log files (or standard input) in large chunks cut at
// line boundaries, parses the chunks in parallel, and writes each batch
// through a flow (internal/flow), as every protocol does: the bulk loading
// behind `sluice ingest`. It reports, in input order, how many lines are
// done, so a caller can say exactly which prefix of the input is durable.
//
// It knows nothing of storage: the flow's sink decides what durable means.
package file
