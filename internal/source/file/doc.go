// Package file reads log files (or standard input) in large chunks cut at
// line boundaries, parses the chunks in parallel, and hands each batch to
// a sink: the bulk loading behind `sluice ingest`. It reports, in input
// order, how many lines are done, so a caller can say exactly which prefix
// of the input is durable.
//
// It knows nothing of storage: the sink decides what durable means.
package file
