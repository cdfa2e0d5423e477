// Package lines splits an input buffer into lines for the line-oriented
// format parsers: it numbers lines across buffers, strips the UTF-8 byte
// order mark and CRLF terminators, skips blank lines, and rejects lines
// over a size limit without holding them in memory.
//
// It never interprets a line's content; that is the format parser's job.
package lines
