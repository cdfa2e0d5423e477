// Package text parses plain-text log lines, one line at a time, as a
// lines.Parser: the whole line is the record's message (_msg), a
// timestamp at its start becomes the record's time, and a severity word
// near its start becomes a field "level".
//
// What it reads:
//
//   - Time: a timestamp that timestamp.ParsePrefix reads at the very start
//     of the line, or right after a leading '[' and followed by ']'
//     ("[Sun Dec 04 04:47:44 2005] [notice] ..."). A bare number is never
//     taken for an epoch here: at the start of a plain line it is far more
//     often a counter or a pid.
//   - Level: the first whole word among TRACE DEBUG INFO NOTICE WARN
//     WARNING ERROR ERR CRITICAL FATAL PANIC, written all upper case, all
//     lower case or title case, that starts within the 128 bytes after the
//     timestamp (or the line's start). A word is a run of ASCII letters,
//     digits, '_' and non-ASCII bytes, so "[error]", "level=WARN" and
//     "ERROR:" match and "errors", "on_error" and "eRRor" do not. The field
//     holds the word as written, without brackets.
//   - The message is the line byte-exact; invalid UTF-8 is flagged BadUTF8
//     on it and counted in Batch.BadUTF8.
//
// The package never fails a line: any bytes are a valid text line. It must
// never allocate per line in steady state and never look past the bounded
// prefix for the level, so that its cost per line stays flat.
package text
