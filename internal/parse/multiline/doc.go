// Package multiline joins the lines of one multi-line record (a Java stack
// trace, a Python traceback, a message with embedded newlines) into a
// single record for a line parser such as package text.
//
// A Joiner groups lines: a line that starts a record opens a group, the
// lines after it that do not start a record join it. Which lines start a
// record:
//
//   - With Config.Start, the lines that RE2 regexp matches (the line
//     without its terminator). An anchored regexp with a literal prefix
//     ("^ERROR ", "^\[") is pre-checked with a plain prefix compare.
//   - By default, it depends on the group's first line. If it starts with
//     a timestamp (what timestamp.ParsePrefix reads, also inside a leading
//     "[...]", never a bare number: timestamp.LinePrefix), the group is
//     timestamped and only
//     another line that starts with a timestamp starts a record: so the
//     unindented lines of a stack trace ("java.lang.IllegalStateException:
//     boom", "Caused by: ...", Python's "Traceback ..." and its final
//     "ValueError: ...") stay in the record. Otherwise every line that is
//     not indented (first byte neither ' ' nor '\t') starts a record,
//     except one starting "Caused by: ". Logs without timestamps whose
//     records have unindented continuation lines (a bare Python traceback)
//     need Config.Start.
//
// A group is emitted as it is when it reaches Config.MaxLines lines or
// Config.MaxBytes bytes (the next line then opens a new group, start line
// or not), and when a line too long for the Splitter cuts it.
//
// The joined record's Line spans the first line's start to the last line's
// end, newlines included: the lines are contiguous in Batch.Data, so
// nothing is copied. Blank lines inside a group stay inside the span, and
// in a CRLF file so does each inner '\r' (only the last line's terminator
// is left out). Errors from the inner parser are reported at the group's
// first line, with the column counted from its start.
//
// A group is only complete when the next start line (or the end of the
// input) arrives, so a Joiner drives the lines.Splitter itself through
// Joiner.Run, which leaves an unfinished group unconsumed for the next
// buffer and keeps line numbers right when those lines come around again.
//
// The package owns only the grouping. It must never copy line bytes,
// never parse a record's content (the inner parser does), and never
// allocate per line in steady state.
package multiline
