// Package otlp decodes OpenTelemetry log exports (OTLP/HTTP, POST
// /v1/logs, protobuf or JSON) into JSON lines, one per log record, that
// the JSON parser then turns into records: an OTLP record has no text
// line, so sluice stores this rendering of it, and gives it back byte for
// byte.
//
// A line holds, in order: time (RFC 3339, nanoseconds; the observed time
// when the record has none), observed_time, severity_text,
// severity_number, body (a string, or the JSON of a structured body),
// trace_id and span_id (hex), flags, event_name, then the resource's
// attributes, the scope's name, version and attributes (prefixed scope_),
// and the record's attributes. Attribute names are written as Loki's OTLP
// ingestion names them, every byte other than a letter, digit or _ made
// _ (service.name is service_name), so that the stream labels and fields
// they become can be named in LogQL.
//
// It knows nothing of storage or HTTP.
package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrBadRequest is matched by the error for a body that is not an export
// request.
var ErrBadRequest = errors.New("bad OTLP request")

// StreamFields are the resource attributes that make a record's stream
// unless the request says otherwise.
var StreamFields = []string{"service_name", "service_namespace", "host_name", "k8s_namespace_name", "k8s_pod_name", "k8s_container_name"}

// value is an AnyValue: a scalar kept as its JSON text, or nested values.
type value struct {
	json string // the value as JSON
}

type kv struct {
	key string
	val value
}

type logRecord struct {
	time, observed uint64
	sevNum         int64
	sevText        string
	body           *value
	attrs          []kv
	traceID        []byte
	spanID         []byte
	flags          uint32
	eventName      string
}

// Lines renders the records of an export request, one JSON object a line,
// each followed by '\n', appended to dst. It returns how many records the
// request held.
func Lines(dst, body []byte, jsonBody bool) ([]byte, int, error) {
	if jsonBody {
		return linesJSON(dst, body)
	}
	return linesProto(dst, body)
}

// render appends one record's line.
func render(dst []byte, resource []kv, scopeName, scopeVersion string, scopeAttrs []kv, r *logRecord) []byte {
	dst = append(dst, '{')
	first := true
	field := func(name, jsonValue string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, jsonString(name)...)
		dst = append(dst, ':')
		dst = append(dst, jsonValue...)
	}
	ts := r.time
	if ts == 0 {
		ts = r.observed
	}
	if ts != 0 {
		field("time", strconv.Quote(time.Unix(0, int64(ts)).UTC().Format(time.RFC3339Nano)))
	}
	if r.observed != 0 {
		field("observed_time", strconv.Quote(time.Unix(0, int64(r.observed)).UTC().Format(time.RFC3339Nano)))
	}
	if r.sevText != "" {
		field("severity_text", jsonString(r.sevText))
	}
	if r.sevNum != 0 {
		field("severity_number", strconv.FormatInt(r.sevNum, 10))
	}
	if r.body != nil {
		field("body", r.body.json)
	}
	if len(r.traceID) > 0 {
		field("trace_id", `"`+hex.EncodeToString(r.traceID)+`"`)
	}
	if len(r.spanID) > 0 {
		field("span_id", `"`+hex.EncodeToString(r.spanID)+`"`)
	}
	if r.flags != 0 {
		field("flags", strconv.FormatUint(uint64(r.flags), 10))
	}
	if r.eventName != "" {
		field("event_name", jsonString(r.eventName))
	}
	for _, a := range resource {
		field(labelName(a.key), a.val.json)
	}
	if scopeName != "" {
		field("scope_name", jsonString(scopeName))
	}
	if scopeVersion != "" {
		field("scope_version", jsonString(scopeVersion))
	}
	for _, a := range scopeAttrs {
		field("scope_"+labelName(a.key), a.val.json)
	}
	for _, a := range r.attrs {
		field(labelName(a.key), a.val.json)
	}
	dst = append(dst, '}', '\n')
	return dst
}

// labelName writes an attribute name as a label name: bytes other than
// ASCII letters, digits and _ become _, and a leading digit gets a _.
func labelName(s string) string {
	ok := s != "" && !(s[0] >= '0' && s[0] <= '9')
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if ok {
		return s
	}
	b := make([]byte, 0, len(s)+1)
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		b = append(b, '_')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			c = '_'
		}
		b = append(b, c)
	}
	return string(b)
}

// jsonString quotes s as JSON (strconv.Quote's escapes are not all JSON's).
func jsonString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
	}
	return string(append(b, '"'))
}

func floatJSON(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.Quote(strconv.FormatFloat(f, 'g', -1, 64)) // JSON has no NaN
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// ---- protobuf ----

type reader struct {
	b   []byte
	err error
}

func (r *reader) next() (protowire.Number, protowire.Type, bool) {
	if r.err != nil || len(r.b) == 0 {
		return 0, 0, false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	return num, typ, r.advance(n)
}

// advance moves past n bytes, or records the error a negative n means.
func (r *reader) advance(n int) bool {
	if n < 0 {
		r.err = protowire.ParseError(n)
		return false
	}
	r.b = r.b[n:]
	return true
}

func (r *reader) bytes() []byte {
	v, n := protowire.ConsumeBytes(r.b)
	if !r.advance(n) {
		return nil
	}
	return v
}

func (r *reader) varint() uint64 {
	v, n := protowire.ConsumeVarint(r.b)
	if !r.advance(n) {
		return 0
	}
	return v
}

func (r *reader) fixed64() uint64 {
	v, n := protowire.ConsumeFixed64(r.b)
	if !r.advance(n) {
		return 0
	}
	return v
}

func (r *reader) fixed32() uint32 {
	v, n := protowire.ConsumeFixed32(r.b)
	if !r.advance(n) {
		return 0
	}
	return v
}

func (r *reader) skip(num protowire.Number, typ protowire.Type) {
	r.advance(protowire.ConsumeFieldValue(num, typ, r.b))
}

const maxDepth = 32

func protoAny(b []byte, depth int) (value, error) {
	if depth > maxDepth {
		return value{}, errors.New("values nested too deep")
	}
	r := reader{b: b}
	v := value{json: "null"}
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			v.json = jsonString(string(r.bytes()))
		case num == 2 && typ == protowire.VarintType:
			v.json = strconv.FormatBool(r.varint() != 0)
		case num == 3 && typ == protowire.VarintType:
			v.json = strconv.FormatInt(int64(r.varint()), 10)
		case num == 4 && typ == protowire.Fixed64Type:
			v.json = floatJSON(math.Float64frombits(r.fixed64()))
		case (num == 5 || num == 6) && typ == protowire.BytesType:
			inner := reader{b: r.bytes()}
			out := []byte{'['}
			if num == 6 {
				out[0] = '{'
			}
			n := 0
			for {
				in, it, ok := inner.next()
				if !ok {
					break
				}
				if in != 1 || it != protowire.BytesType {
					inner.skip(in, it)
					continue
				}
				if n > 0 {
					out = append(out, ',')
				}
				n++
				if num == 5 {
					ev, err := protoAny(inner.bytes(), depth+1)
					if err != nil {
						return v, err
					}
					out = append(out, ev.json...)
				} else {
					p, err := protoKV(inner.bytes(), depth+1)
					if err != nil {
						return v, err
					}
					out = append(append(append(out, jsonString(p.key)...), ':'), p.val.json...)
				}
			}
			if inner.err != nil {
				return v, inner.err
			}
			if num == 5 {
				out = append(out, ']')
			} else {
				out = append(out, '}')
			}
			v.json = string(out)
		case num == 7 && typ == protowire.BytesType:
			v.json = `"` + base64.StdEncoding.EncodeToString(r.bytes()) + `"`
		default:
			r.skip(num, typ)
		}
	}
	return v, r.err
}

func protoKV(b []byte, depth int) (kv, error) {
	r := reader{b: b}
	p := kv{val: value{json: "null"}}
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			p.key = string(r.bytes())
		case num == 2 && typ == protowire.BytesType:
			v, err := protoAny(r.bytes(), depth)
			if err != nil {
				return p, err
			}
			p.val = v
		default:
			r.skip(num, typ)
		}
	}
	if r.err == nil && p.key == "" {
		return p, errors.New("attribute without a key")
	}
	return p, r.err
}

func linesProto(dst, body []byte) ([]byte, int, error) {
	bad := func(err error) ([]byte, int, error) {
		return dst, 0, fmt.Errorf("%w: protobuf: %v", ErrBadRequest, err)
	}
	r := reader{b: body}
	count := 0
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		if num != 1 || typ != protowire.BytesType { // resource_logs
			r.skip(num, typ)
			continue
		}
		rl := reader{b: r.bytes()}
		var resource []kv
		var scopes [][]byte
		for {
			num, typ, ok := rl.next()
			if !ok {
				break
			}
			switch {
			case num == 1 && typ == protowire.BytesType: // resource
				res := reader{b: rl.bytes()}
				for {
					n, t, ok := res.next()
					if !ok {
						break
					}
					if n == 1 && t == protowire.BytesType {
						p, err := protoKV(res.bytes(), 0)
						if err != nil {
							return bad(err)
						}
						resource = append(resource, p)
					} else {
						res.skip(n, t)
					}
				}
				if res.err != nil {
					return bad(res.err)
				}
			case num == 2 && typ == protowire.BytesType: // scope_logs
				scopes = append(scopes, rl.bytes())
			default:
				rl.skip(num, typ)
			}
		}
		if rl.err != nil {
			return bad(rl.err)
		}
		for _, sb := range scopes {
			var err error
			var n int
			dst, n, err = protoScope(dst, sb, resource)
			if err != nil {
				return bad(err)
			}
			count += n
		}
	}
	if r.err != nil {
		return bad(r.err)
	}
	return dst, count, nil
}

func protoScope(dst, b []byte, resource []kv) ([]byte, int, error) {
	r := reader{b: b}
	var name, version string
	var attrs []kv
	var recs [][]byte
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		switch {
		case num == 1 && typ == protowire.BytesType: // scope
			s := reader{b: r.bytes()}
			for {
				n, t, ok := s.next()
				if !ok {
					break
				}
				switch {
				case n == 1 && t == protowire.BytesType:
					name = string(s.bytes())
				case n == 2 && t == protowire.BytesType:
					version = string(s.bytes())
				case n == 3 && t == protowire.BytesType:
					p, err := protoKV(s.bytes(), 0)
					if err != nil {
						return dst, 0, err
					}
					attrs = append(attrs, p)
				default:
					s.skip(n, t)
				}
			}
			if s.err != nil {
				return dst, 0, s.err
			}
		case num == 2 && typ == protowire.BytesType:
			recs = append(recs, r.bytes())
		default:
			r.skip(num, typ)
		}
	}
	if r.err != nil {
		return dst, 0, r.err
	}
	for _, rb := range recs {
		lr, err := protoRecord(rb)
		if err != nil {
			return dst, 0, err
		}
		dst = render(dst, resource, name, version, attrs, &lr)
	}
	return dst, len(recs), nil
}

func protoRecord(b []byte) (logRecord, error) {
	r := reader{b: b}
	var lr logRecord
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			lr.time = r.fixed64()
		case num == 11 && typ == protowire.Fixed64Type:
			lr.observed = r.fixed64()
		case num == 2 && typ == protowire.VarintType:
			lr.sevNum = int64(r.varint())
		case num == 3 && typ == protowire.BytesType:
			lr.sevText = string(r.bytes())
		case num == 5 && typ == protowire.BytesType:
			v, err := protoAny(r.bytes(), 0)
			if err != nil {
				return lr, err
			}
			lr.body = &v
		case num == 6 && typ == protowire.BytesType:
			p, err := protoKV(r.bytes(), 0)
			if err != nil {
				return lr, err
			}
			lr.attrs = append(lr.attrs, p)
		case num == 8 && typ == protowire.Fixed32Type:
			lr.flags = r.fixed32()
		case num == 9 && typ == protowire.BytesType:
			lr.traceID = r.bytes()
		case num == 10 && typ == protowire.BytesType:
			lr.spanID = r.bytes()
		case num == 12 && typ == protowire.BytesType:
			lr.eventName = string(r.bytes())
		default:
			r.skip(num, typ)
		}
	}
	return lr, r.err
}

// ExportResponse returns the protobuf ExportLogsServiceResponse: empty on
// full success, partial_success otherwise.
func ExportResponse(rejected int64, msg string) []byte {
	if rejected == 0 && msg == "" {
		return nil
	}
	var ps []byte
	ps = protowire.AppendTag(ps, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, uint64(rejected))
	ps = protowire.AppendTag(ps, 2, protowire.BytesType)
	ps = protowire.AppendString(ps, msg)
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	return protowire.AppendBytes(out, ps)
}
