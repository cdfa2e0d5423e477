// Package query evaluates LogQL over stored logs: it plans a query from
// its syntax tree (package logql), prunes by time, stream and block token
// filters, runs log pipelines (compiled by package stage) over the rows a
// Source yields, and evaluates range and vector aggregations into Loki's
// result types.
//
// approx_topk(k, expr) is Loki's topk estimated with a count-min sketch
// across query shards; sluice evaluates every series in one process and
// computes the exact topk instead, which any estimate approximates. As
// Loki, it is refused in range queries ("approx_topk error: count min
// sketches are only supported on instant queries") and takes no grouping.
//
// A query can also be evaluated where its data are, in parts: each node
// evaluates it on what it holds (Engine.Partial), the parts merge (Merge)
// and the merge finishes into the whole's result (Partial.Finish). A part
// is plain data, the range aggregations' per-series state or a log
// query's lines, that knows no store (partial.go).
//
// It declares the small storage interface it needs (Source) and knows no
// part file, WAL or head: a store snapshot answers it.
package query
