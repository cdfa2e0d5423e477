// Package parsetest holds helpers for testing format parsers: running a
// parser over an input fed whole or in chunks, and rendering what came out
// as comparable text.
package parsetest
