package elastic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// Encoder writes record batches as bulk bodies, the inverse of Split and
// the JSON parsing behind it, for a sink that ships to Elasticsearch (or
// to another sluice). Every record is one create action (what data
// streams require, and what Beats send) into the caller's index, and one
// document line:
//
//   - The line itself, byte for byte, when it is a one-line JSON object
//     of valid UTF-8 and holds all the record has: its time read from
//     its @timestamp field, an ISO 8601 date and time as Elasticsearch
//     reads it (a data stream refuses a document without one), and
//     every field parsed from it, which is what sluice's JSON parsing
//     gives (and so the stream labels, which the parser takes from
//     fields). That is what Beats and Logstash send. A receiver that
//     parses documents as sluice does, with the same field lists, gets
//     the same record back.
//   - Otherwise a document written as a shipper writes one:
//     {"@timestamp":"<RFC 3339, 9 fraction digits, UTC>","message":"<the
//     line>", then the stream labels as string members, then the
//     record's fields other than its time and message fields (structured
//     metadata, or what a parser read from a logfmt or text line) with
//     their JSON types}. A name already written is not written again
//     (Elasticsearch refuses a document with a duplicate key), so
//     @timestamp and message win over a label or field of that name, and
//     a label over a field. Labels with empty values are left out. JSON
//     strings cannot carry invalid UTF-8: each invalid byte becomes
//     U+FFFD.
//
// A sluice receiving such documents gets @timestamp as the record's time
// and message as its message when they come first in its time and
// message field lists (_time_field=@timestamp,... and
// _msg_field=message,...), and the labels back as its stream when they
// are its stream fields. Times before 1970, which sluice's parsing
// refuses from a document, get the receive time there.
//
// Concurrency: one goroutine; reuse it for many batches, and it
// allocates nothing in steady state.
type Encoder struct {
	seen []string // the names written in the current document
	buf  []byte   // a value's text
}

// CheckIndex reports a name Elasticsearch refuses for an index or data
// stream: empty, over 255 bytes, not lower case, holding one of
// \ / * ? " < > | , # : or a space, starting with - _ +, or . or ..
func CheckIndex(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("index name %q is not allowed", name)
	case len(name) > 255:
		return fmt.Errorf("index name %.40q… is %d bytes, more than 255", name, len(name))
	case strings.ContainsAny(name, "\\/*?\"<>|,#: "):
		return fmt.Errorf("index name %q holds one of \\ / * ? \" < > | , # : or a space", name)
	case strings.ToLower(name) != name:
		return fmt.Errorf("index name %q is not lower case", name)
	case strings.IndexAny(name[:1], "-_+") == 0:
		return fmt.Errorf("index name %q starts with - _ or +", name)
	}
	return nil
}

// AppendBulk appends b as a bulk body into index: for each kept record
// (see record.Batch.Drop) an action line and a document line, each ending
// in '\n'.
// REQUIRES: CheckIndex(index) == nil, or Elasticsearch refuses the items.
func (e *Encoder) AppendBulk(dst []byte, b *record.Batch, index string) []byte {
	for i := b.NextKept(0); i < len(b.Records); i = b.NextKept(i + 1) {
		dst = appendAction(dst, index)
		dst = e.AppendDoc(dst, b, i)
		dst = append(dst, '\n')
	}
	return dst
}

func appendAction(dst []byte, index string) []byte {
	dst = append(dst, `{"create":{"_index":"`...)
	dst = record.AppendJSONEscaped(dst, index)
	return append(dst, "\"}}\n"...)
}

// AppendDoc appends record i's document, without a newline.
func (e *Encoder) AppendDoc(dst []byte, b *record.Batch, i int) []byte {
	line := b.Bytes(b.Records[i].Line)
	if selfContained(b, i) && jsonObjectLine(line) {
		return append(dst, line...)
	}
	r := &b.Records[i]
	dst = append(dst, `{"@timestamp":"`...)
	dst = timestamp.AppendRFC3339(dst, r.Time)
	dst = append(dst, `","message":"`...)
	dst = record.AppendJSONEscaped(dst, line)
	dst = append(dst, '"')
	e.seen = append(e.seen[:0], "@timestamp", "message")
	for _, l := range b.Labels(i) {
		if l.Value == "" || e.written(l.Name) {
			continue
		}
		dst = appendKey(dst, l.Name)
		dst = append(dst, '"')
		dst = record.AppendJSONEscaped(dst, l.Value)
		dst = append(dst, '"')
	}
	fs := b.RecordFields(i)
	for k := range fs {
		f := &fs[k]
		if f.Role != record.RoleNone {
			continue
		}
		name := b.Names.Get(f.Name)
		if e.written(name) {
			continue
		}
		dst = appendKey(dst, name)
		if f.Kind != record.String {
			dst = b.AppendString(dst, f) // the value as JSON
			continue
		}
		// Unescaped (invalid UTF-8 made U+FFFD), then escaped for JSON.
		e.buf = b.AppendString(e.buf[:0], f)
		dst = append(dst, '"')
		dst = record.AppendJSONEscaped(dst, e.buf)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// written reports whether name was written in this document, and notes
// it if not. Documents have few members: a scan beats a map.
func (e *Encoder) written(name string) bool {
	for _, s := range e.seen {
		if s == name {
			return true
		}
	}
	e.seen = append(e.seen, name)
	return false
}

func appendKey(dst []byte, name string) []byte {
	dst = append(dst, ',', '"')
	dst = record.AppendJSONEscaped(dst, name)
	return append(dst, '"', ':')
}

// selfContained reports whether record i holds nothing its line does
// not, and has the @timestamp Elasticsearch wants: its time was read
// from its @timestamp field, and all of its fields are views of the
// line.
func selfContained(b *record.Batch, i int) bool {
	r := &b.Records[i]
	if r.TimeSource != record.FromData {
		return false
	}
	hasTime := false
	fs := b.RecordFields(i)
	for k := range fs {
		f := &fs[k]
		if f.Flags&record.Const != 0 || f.Raw.Off < r.Line.Off || f.Raw.End() > r.Line.End() {
			return false
		}
		if f.Role == record.RoleTime {
			hasTime = f.Kind == record.String && f.Flags == 0 && b.Names.Get(f.Name) == "@timestamp" && isoTime(b.Raw(f))
		}
	}
	return hasTime
}

// isoTime reports whether s is a date and time as Elasticsearch's
// default date format (strict_date_optional_time) reads it, in the
// shape shippers write: yyyy-MM-ddTHH:mm:ss, an optional fraction of 1
// to 9 digits, and Z or an offset ±HH:mm.
func isoTime(s []byte) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(shape)+1 {
		return false
	}
	for i := range len(shape) {
		if c := s[i]; shape[i] == 'd' && (c < '0' || c > '9') || shape[i] != 'd' && c != shape[i] {
			return false
		}
	}
	s = s[len(shape):]
	if s[0] == '.' {
		n := 1
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n == 1 || n > 10 {
			return false
		}
		s = s[n:]
	}
	switch {
	case len(s) == 1 && s[0] == 'Z':
		return true
	case len(s) == 6 && (s[0] == '+' || s[0] == '-') && s[3] == ':':
		for _, c := range [...]byte{s[1], s[2], s[4], s[5]} {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return false
}

// jsonObjectLine reports whether line can be sent as a bulk document as
// it is: a JSON object, valid UTF-8, on one line (and not ending in
// '\r', which the bulk reader trims).
func jsonObjectLine(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r")
	return len(t) > 0 && t[0] == '{' && line[len(line)-1] != '\r' &&
		bytes.IndexByte(line, '\n') < 0 && utf8.Valid(line) && json.Valid(line)
}
