// Package query evaluates LogQL over stored logs: it plans a query from
// its syntax tree (package logql), prunes by time, stream and block token
// filters, runs log pipelines over the rows a Source yields, and evaluates
// range and vector aggregations into Loki's result types.
//
// It declares the small storage interface it needs (Source) and knows no
// part file, WAL or head: a store snapshot answers it.
package query
