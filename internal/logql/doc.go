// Package logql is the LogQL language: its lexer, parser, syntax tree and
// printer. So far it parses stream selectors ({app="api", env=~"prod|dev"});
// the rest of the language comes with the query engine.
//
// It imports nothing else of sluice: it knows no storage and no executor.
package logql
