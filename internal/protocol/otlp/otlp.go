// Package otlp decodes OpenTelemetry log exports (OTLP/HTTP, POST
// /v1/logs, protobuf or JSON) into records as Loki 3 stores them (its
// distributor turns an export into a Loki push, pkg/loghttp/push/otlp.go):
//
//   - the line is the record's body: a string as it is, any other value as
//     OpenTelemetry's AsString writes it (maps and arrays as JSON, bytes
//     as base64);
//   - the stream labels are the resource attributes IndexAttributes names
//     (service.name, k8s.pod.name, ...), their names made label names
//     (service_name), and service_name as discovery says;
//   - everything else is the record's structured metadata: its
//     attributes, observed_timestamp, severity_number, severity_text,
//     flags, trace_id and span_id (hex), event_name, then the other
//     resource attributes, then the scope's attributes, scope_name and
//     scope_version. A map attribute becomes one entry per key, named
//     parent_key.
//
// Names are made label names as Prometheus' OTLP translator does: every
// byte other than an ASCII letter, digit or _ becomes _, a name starting
// with a digit gets "key_" and one starting with a single _ gets "key".
//
// It knows nothing of storage or HTTP: it fills a record.Batch through a
// loki.Decoder, which applies Loki's limits and discovery.
package otlp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrBadRequest is matched by the error for a body that is not an export
// request.
var ErrBadRequest = errors.New("bad OTLP request")

// IndexAttributes are the resource attributes that make a record's
// stream labels: Loki's default_resource_attributes_as_index_labels.
var IndexAttributes = []string{"service.name", "service.namespace", "service.instance.id",
	"deployment.environment", "deployment.environment.name", "cloud.region", "cloud.availability_zone",
	"k8s.cluster.name", "k8s.namespace.name", "k8s.pod.name", "k8s.container.name", "container.name",
	"k8s.replicaset.name", "k8s.deployment.name", "k8s.statefulset.name", "k8s.daemonset.name",
	"k8s.cronjob.name", "k8s.job.name"}

// value is an AnyValue: its JSON text, its text as OpenTelemetry's
// AsString gives it (Loki's rendering of a value as a label or line), and
// for a map its entries, which Loki makes labels of their own.
type value struct {
	json  string // the value as JSON, in the order sent
	str   string // the value as text: a string as it is, others as JSON
	isMap bool
	kvs   []kv    // a map's entries
	elems []value // an array's
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

// labelName writes an attribute name as a label name, as Prometheus' OTLP
// translator (otlptranslator.LabelNamer) does for Loki: each character
// other than an ASCII letter, digit or _ becomes _; a name that starts
// with a digit gets "key_", one that starts with a single _ gets "key".
// A name that is empty, or all _ once changed, is an error.
func labelName(s string) (string, error) {
	if s == "" {
		return "", errors.New("attribute without a key")
	}
	b := make([]byte, 0, len(s))
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			c = '_'
		}
		b = append(b, byte(c))
	}
	n := string(b)
	switch {
	case n[0] >= '0' && n[0] <= '9':
		n = "key_" + n
	case n[0] == '_' && !(len(n) > 1 && n[1] == '_'):
		n = "key" + n
	}
	if n != s && strings.Trim(n, "_") == "" {
		return "", fmt.Errorf("attribute %q: its label name would be %q", s, n)
	}
	return n, nil
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
		return strconv.Quote(floatText(f)) // JSON has no NaN
	}
	return floatText(f)
}

// floatText writes a double as JavaScript (and encoding/json, and so
// OpenTelemetry's AsString) does: no exponent between 1e-6 and 1e21.
func floatText(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as JavaScript writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
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
			v.str = string(r.bytes())
			v.json = jsonString(v.str)
		case num == 2 && typ == protowire.VarintType:
			v.json = strconv.FormatBool(r.varint() != 0)
		case num == 3 && typ == protowire.VarintType:
			v.json = strconv.FormatInt(int64(r.varint()), 10)
		case num == 4 && typ == protowire.Fixed64Type:
			f := math.Float64frombits(r.fixed64())
			v.json, v.str = floatJSON(f), floatText(f)
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
					v.elems = append(v.elems, ev)
				} else {
					p, err := protoKV(inner.bytes(), depth+1)
					if err != nil {
						return v, err
					}
					out = append(append(append(out, jsonString(p.key)...), ':'), p.val.json...)
					v.kvs = append(v.kvs, p)
				}
			}
			if inner.err != nil {
				return v, inner.err
			}
			if num == 5 {
				out = append(out, ']')
			} else {
				out = append(out, '}')
				v.isMap = true
			}
			v.json = string(out)
		case num == 7 && typ == protowire.BytesType:
			v.str = base64.StdEncoding.EncodeToString(r.bytes())
			v.json = `"` + v.str + `"`
		default:
			r.skip(num, typ)
		}
	}
	v.setStr()
	return v, r.err
}

// setStr sets the text of a value that is not a string (of a string, or
// of bytes, it is set already): its JSON as OpenTelemetry's AsString
// writes it, which Go's encoding/json writes: a map's keys sorted (the
// last of equal keys kept).
func (v *value) setStr() {
	if v.str == "" && v.json != "null" && (v.json == "" || v.json[0] != '"') {
		v.str = string(v.appendSorted(nil))
	}
}

// appendSorted appends the JSON of v with its maps' keys sorted.
func (v *value) appendSorted(dst []byte) []byte {
	switch {
	case v.isMap:
		kvs := slices.Clone(v.kvs)
		slices.SortStableFunc(kvs, func(a, b kv) int { return strings.Compare(a.key, b.key) })
		dst = append(dst, '{')
		n := 0
		for i := range kvs {
			if i+1 < len(kvs) && kvs[i+1].key == kvs[i].key {
				continue // the last one wins, as in a Go map
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = append(append(dst, jsonString(kvs[i].key)...), ':')
			dst = kvs[i].val.appendSorted(dst)
		}
		return append(dst, '}')
	case v.elems != nil:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = v.elems[i].appendSorted(dst)
		}
		return append(dst, ']')
	}
	return append(dst, v.json...)
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

func decodeProto(m *mapper, body []byte) (int, error) {
	bad := func(err error) (int, error) {
		return 0, fmt.Errorf("%w: protobuf: %v", ErrBadRequest, err)
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
		if err := m.resource(resource); err != nil {
			return bad(err)
		}
		for _, sb := range scopes {
			n, err := protoScope(m, sb)
			if err != nil {
				return bad(err)
			}
			count += n
		}
	}
	if r.err != nil {
		return bad(r.err)
	}
	return count, nil
}

func protoScope(m *mapper, b []byte) (int, error) {
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
						return 0, err
					}
					attrs = append(attrs, p)
				default:
					s.skip(n, t)
				}
			}
			if s.err != nil {
				return 0, s.err
			}
		case num == 2 && typ == protowire.BytesType:
			recs = append(recs, r.bytes())
		default:
			r.skip(num, typ)
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	if err := m.scope(name, version, attrs); err != nil {
		return 0, err
	}
	for _, rb := range recs {
		lr, err := protoRecord(rb)
		if err != nil {
			return 0, err
		}
		if err := m.record(&lr); err != nil {
			return 0, err
		}
	}
	return len(recs), nil
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
