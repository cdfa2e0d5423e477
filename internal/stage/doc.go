// Package stage compiles and runs the stages of a LogQL log pipeline:
// line filters (|= != |~ !~ |> !>, ip(), "or" chains), the parsers json,
// logfmt, regexp, pattern and unpack, label filters, line_format and
// label_format, drop, keep and decolorize. The semantics are Loki's, as
// each stage's comment details.
//
// Compile turns the stages of a parsed query (package logql) into a
// Pipeline; Process runs one row, its line and time, through it, with the
// row's labels in a Labels: its stream's labels, its structured metadata,
// then what the stages extract and set. Labels sorts them into Loki's
// categories (stream, structured metadata, parsed) and keys a result
// series. Queries and rules compile their pipelines with this package, so
// that a rule keeps, drops and labels a line exactly as a query over the
// stored line would.
//
// The line filters, json, logfmt, pattern and the label filters
// allocate nothing per row once their buffers have grown (tests assert
// it); regexp and the templates do. What the stages return views the
// line or their buffers, valid for the row (see Process and Labels). A Pipeline and a Labels
// belong to one goroutine: compile one per worker.
//
// It owns the stages alone. It must never import the store, the query
// engine or an ingest protocol: it knows rows as a line, a time and
// labels, and what reads them from storage (package query) or from a
// batch (the rules) adapts them. internal/imports_test.go keeps the
// direction.
package stage
