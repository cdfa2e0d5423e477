package record

import (
	"math"
	"strconv"

	"github.com/sluicelog/sluice/internal/timestamp"
)

// AppendJSON appends record i normalized as one JSON object: _time (RFC
// 3339 with nanoseconds), _stream, _msg, then the fields in input order,
// leaving out the ones that became _time and _msg. String values are
// unescaped and re-escaped, so invalid UTF-8 comes out as U+FFFD.
func (b *Batch) AppendJSON(dst []byte, i int) []byte {
	r := &b.Records[i]
	dst = append(dst, `{"_time":"`...)
	dst = timestamp.AppendRFC3339(dst, r.Time)
	dst = append(dst, `","_stream":"`...)
	dst = AppendJSONEscaped(dst, b.Streams.Get(r.Stream).String())
	dst = append(dst, `","_msg":"`...)
	dst = appendTextJSON(dst, b.msgRaw(r), r.MsgFlags)
	dst = append(dst, '"')
	for _, f := range b.RecordFields(i) {
		if f.Role != RoleNone {
			continue
		}
		dst = append(dst, ',', '"')
		dst = AppendJSONEscaped(dst, b.Names.Get(f.Name))
		dst = append(dst, '"', ':')
		dst = b.appendValueJSON(dst, &f)
	}
	return append(dst, '}')
}

// appendTextJSON appends the text of a raw value escaped for a JSON string.
func appendTextJSON(dst, v []byte, flags Flags) []byte {
	if flags&(Escaped|SDEscaped|BadUTF8) == 0 {
		return AppendJSONEscaped(dst, v)
	}
	start := len(dst)
	dst = AppendUnescaped(dst, v, flags)
	// Escape in place of the decoded text: decode into the tail, then
	// re-encode from a copy. Values needing this are rare.
	dec := append([]byte(nil), dst[start:]...)
	return AppendJSONEscaped(dst[:start], dec)
}

// appendValueJSON appends a field's value as JSON.
func (b *Batch) appendValueJSON(dst []byte, f *Field) []byte {
	switch f.Kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		if f.Bool() {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Int:
		return strconv.AppendInt(dst, f.Int(), 10)
	case Float:
		v := f.Float()
		if f.Raw.Len > 0 {
			return append(dst, b.Raw(f)...)
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return strconv.AppendQuote(dst, strconv.FormatFloat(v, 'g', -1, 64))
		}
		return strconv.AppendFloat(dst, v, 'g', -1, 64)
	case BigInt, JSON:
		return append(dst, b.Raw(f)...)
	default:
		dst = append(dst, '"')
		dst = appendTextJSON(dst, b.Raw(f), f.Flags)
		return append(dst, '"')
	}
}
