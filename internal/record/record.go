package record

import (
	"fmt"
	"math"
)

// Kind is the type of a field's value.
type Kind uint8

const (
	// Null is JSON null.
	Null Kind = iota
	// Bool holds 0 or 1 in Field.Num.
	Bool
	// Int holds an int64 in Field.Num, and its text in Raw when the input
	// has it (a computed value, such as a syslog facility, has none).
	Int
	// Float holds math.Float64bits of the value in Field.Num, and in Raw
	// its text, which must be valid JSON number syntax, or nothing.
	Float
	// BigInt is an integer that does not fit int64, kept exactly as its
	// text in Field.Raw.
	BigInt
	// String is text; Field.Raw holds it as it appeared in the input, with
	// escapes if Flags has Escaped.
	String
	// JSON is a value kept as its JSON text: an array, or an empty object.
	JSON
)

var kindNames = [...]string{"null", "bool", "int", "float", "bigint", "string", "json"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Flags describe how a raw value must be read.
type Flags uint8

const (
	// Escaped means Raw holds backslash escapes (JSON's, which logfmt's
	// quoted values share) that AppendUnescaped decodes.
	Escaped Flags = 1 << iota
	// BadUTF8 means Raw holds bytes that are not valid UTF-8. The policy is
	// to keep the line (its original bytes are stored untouched) and to
	// replace each invalid sequence with U+FFFD wherever the value is
	// decoded as text.
	BadUTF8
	// Const means the value is not in the input but one of the process's
	// constant strings (a syslog severity's keyword, say): Raw.Off is its
	// id from Constant and Raw.Len its length. Read values through
	// Batch.Raw, which knows this.
	Const
	// SDEscaped means Raw holds RFC 5424 structured-data escapes: only
	// \", \\ and \] are escapes; any other backslash is a literal.
	SDEscaped
)

// Span is a view of Len bytes at Off in a batch's Data.
type Span struct {
	Off, Len uint32
}

// End returns the offset just past the span.
func (s Span) End() uint32 { return s.Off + s.Len }

// Field is one typed value of a record. 24 bytes, no pointers, so a batch's
// fields are one flat slice the garbage collector never scans.
type Field struct {
	Name  uint32 // id in the batch's Names table
	Kind  Kind
	Flags Flags
	Role  Role // set by the Builder when the field became the time or message
	_     uint8
	Raw   Span   // the value's bytes in the input (strings without quotes); see Const
	Num   uint64 // Int: int64 bits; Float: float64 bits; Bool: 0 or 1
}

// Int returns the value of an Int or Bool field.
func (f *Field) Int() int64 { return int64(f.Num) }

// Float returns the value of a Float field.
func (f *Field) Float() float64 { return math.Float64frombits(f.Num) }

// Bool returns the value of a Bool field.
func (f *Field) Bool() bool { return f.Num != 0 }

// Role marks a field that the Builder chose as the record's timestamp or
// message, so that outputs can show it once, as _time or _msg.
type Role uint8

const (
	RoleNone Role = iota
	RoleTime
	RoleMsg
)

// TimeSource tells where a record's timestamp came from.
type TimeSource uint8

const (
	// FromData means the timestamp was read from the record itself.
	FromData TimeSource = iota
	// FromReceive means no timestamp could be read and the batch's receive
	// time was used instead. The line is kept either way.
	FromReceive
)

// Record is one log record. Its spans index the batch's Data and its fields
// are Batch.Fields[FieldStart : FieldStart+NumFields].
type Record struct {
	Time       int64 // Unix nanoseconds
	TimeSource TimeSource
	MsgFlags   Flags
	// Route is the sinks the rules routed the record to: 0 none, k the
	// names Batch.Routes[k-1]. It fits the padding before Stream.
	Route      uint16
	Stream     uint32 // id in the batch's Streams table
	Line       Span   // the original line, byte-exact, without its '\n'
	Msg        Span   // the message (_msg); empty when the record has none
	FieldStart uint32
	NumFields  uint32
}

// MsgIsLine reports whether r's message is its whole line, as a Loki
// push's or an OTLP record's is (the line as sent), or r has no line.
// Only such a record has structured metadata (IsMetadata).
func (r *Record) MsgIsLine() bool {
	return r.Line.Len == 0 || r.MsgFlags&Const == 0 && r.Msg == r.Line
}

// InLine reports whether field f of r is a span of r's line.
func (r *Record) InLine(f *Field) bool {
	return f.Flags&Const == 0 && f.Raw.Off >= r.Line.Off && f.Raw.End() <= r.Line.End()
}

// IsMetadata reports whether field f of r is structured metadata, which
// LogQL sees as a label of the line: r's message is its whole line
// (MsgIsLine) and f is a string held apart from the line, with no time
// or message role. A field in the line was parsed from it (the keys of a
// pushed JSON line, a pattern's captures): no label until a query's
// parser makes it one. The fields of sluice's own formats are parsed
// from the line or computed from it (syslog's), and their message is a
// part of the line or one of the fields: never metadata.
// rows.Row.IsMetadata is the same rule for a stored row.
func (r *Record) IsMetadata(f *Field) bool {
	return f.Kind == String && f.Role == RoleNone && r.MsgIsLine() && !r.InLine(f)
}
