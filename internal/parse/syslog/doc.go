// Package syslog parses syslog messages, one per line (or per span: a
// message framed by octet counting may hold newlines and is parsed the
// same way), into records: RFC 5424 and RFC 3164 (BSD) with or without
// its <PRI>, which is what /var/log/syslog and macOS system.log hold.
//
// # Formats
//
// A line starting with <PRI> followed by a VERSION and SP is RFC 5424:
//
//	<PRI>VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP STRUCTURED-DATA [SP MSG]
//
// Any other line is RFC 3164, with or without <PRI>:
//
//	[<PRI>]TIMESTAMP SP [HOSTNAME SP] [TAG[PID][:] SP] MSG
//
// where TIMESTAMP is anything timestamp.ParsePrefix reads, usually
// "Jan _2 15:04:05" (its year taken from the batch's ReceiveTime) or RFC
// 3339 (rsyslog's high-precision format).
//
// # Fields
//
//	priority        Int     PRI, 0-191 (only with <PRI>)
//	facility        Int     PRI / 8    (only with <PRI>)
//	severity        Int     PRI % 8    (only with <PRI>)
//	level           String  the severity's keyword: emerg alert crit err
//	                        warning notice info debug (only with <PRI>)
//	hostname        String
//	app_name        String  5424 APP-NAME, 3164 TAG
//	proc_id         String  5424 PROCID, 3164 PID
//	msg_id          String  5424 MSGID
//	sd.ID.PARAM     String  one per SD-PARAM of each SD-ELEMENT
//	sd.ID           Null    an SD-ELEMENT without parameters (its presence)
//
// A PARAM-VALUE is a span of the input, flagged SDEscaped when it holds a
// backslash, so that decoding it turns exactly `\"`, `\\` and `\]` into
// the character escaped and keeps any other backslash.
//
// A NILVALUE ("-") gives no field. The header's timestamp becomes the
// record's time (SetTime) and MSG its message (SetMsg), with a leading
// UTF-8 BOM removed. facility and severity are computed, so their Raw is
// an empty span at the PRI digits; consumers format their Num. level is
// a constant value (record.Const): its text is not in the input.
//
// The RFC 3164 header is read as real senders write it, not as the RFC
// draws it: any run of spaces separates its parts; the hostname is left
// out when the first word after the timestamp is already a tag ("sshd:",
// "sshd[42]"); the TAG is whatever precedes the first '[' or ':' within 48
// bytes, one space allowed ("Microsoft Word[340]:", "syslogd 1.4.1:"), if a
// "[PID]" followed by ':', SP or the end, or a ':' followed by SP or the
// end, closes it; otherwise the line has no tag and MSG is all that
// follows the hostname. Text after "[PID]" other than ':' (macOS writes
// "sandboxd[129] ([31211]): ...") stays in MSG.
//
// # Errors
//
// A line without a syslog header is rejected, never taken as a bare
// message: the text format is there for lenient use. So are a PRI over
// 191, a VERSION other than 1, a truncated RFC 5424 header, a timestamp
// that does not parse and malformed STRUCTURED-DATA; the error names what
// was expected, at the column where it was expected. RFC 5424's length
// limits (HOSTNAME 255, APP-NAME 48, ...) are not enforced.
//
// This package must never do I/O, allocate per line in steady state, or
// look past the span it is given.
package syslog
