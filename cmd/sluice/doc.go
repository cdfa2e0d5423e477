// Command sluice ingests, stores and queries logs. Each job is a
// subcommand; this package only parses flags and wires packages together.
package main
