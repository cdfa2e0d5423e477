package otlp

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
)

// Decode decodes an export request (OTLP/JSON when jsonBody, else
// protobuf) into b, replacing its content, through d: each record an
// entry of a Loki push, as the package doc says. index names the
// resource attributes that make stream labels (nil: IndexAttributes).
// The Result counts the records and those left out (a stream or line
// over d's limits), with why; the error is for a body that is not an
// export request (ErrBadRequest) or holds a name that makes no label.
func Decode(d *loki.Decoder, body []byte, jsonBody bool, b *record.Batch, index []string) (loki.Result, error) {
	if index == nil {
		index = IndexAttributes
	}
	m := &mapper{d: d, b: b, index: index}
	d.Begin(b)
	var err error
	if jsonBody {
		_, err = decodeJSON(m, body)
	} else {
		_, err = decodeProto(m, body)
	}
	return m.res, err
}

// mapper turns the decoded parts of an export into entries, one
// resource and scope at a time.
type mapper struct {
	d     *loki.Decoder
	b     *record.Batch
	index []string
	res   loki.Result

	stream    uint32
	streamErr error       // the resource's labels were refused
	resMeta   [][2]string // the resource's attributes that are not labels
	scopeMeta [][2]string // the scope's, scope_name and scope_version
	meta      [][2][]byte
}

// attrs appends the label name and text of attribute a to dst: one for
// each entry of a map, named parent_key, as Loki does.
func attrs(dst [][2]string, prefix string, a kv) ([][2]string, error) {
	name := a.key
	if prefix != "" {
		name = prefix + "_" + a.key
	}
	name, err := labelName(name)
	if err != nil {
		return dst, err
	}
	if !a.val.isMap {
		return append(dst, [2]string{name, a.val.str}), nil
	}
	for _, e := range a.val.kvs {
		if dst, err = attrs(dst, name, e); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// resource starts the records of a resource: its stream and metadata.
func (m *mapper) resource(resource []kv) error {
	m.resMeta, m.streamErr = m.resMeta[:0], nil
	var ls record.Labels
	var err error
	for _, a := range resource {
		if !slices.Contains(m.index, a.key) {
			if m.resMeta, err = attrs(m.resMeta, "", a); err != nil {
				return err
			}
			continue
		}
		var l [][2]string
		if l, err = attrs(nil, "", a); err != nil {
			return err
		}
		for _, p := range l {
			if p[1] != "" { // an empty value is no label
				ls = slices.DeleteFunc(ls, func(x record.Label) bool { return x.Name == p[0] })
				ls = append(ls, record.Label{Name: p[0], Value: p[1]})
			}
		}
	}
	if len(ls) == 0 && len(m.d.Discover.ServiceName) > 0 {
		ls = append(ls, record.Label{Name: loki.ServiceNameLabel, Value: loki.UnknownService})
	}
	m.stream, m.streamErr = m.d.Stream(m.b, ls)
	return nil
}

// scope starts the records of a scope.
func (m *mapper) scope(name, version string, scopeAttrs []kv) error {
	m.scopeMeta = m.scopeMeta[:0]
	var err error
	for _, a := range scopeAttrs {
		if m.scopeMeta, err = attrs(m.scopeMeta, "", a); err != nil {
			return err
		}
	}
	if name != "" {
		m.scopeMeta = append(m.scopeMeta, [2]string{"scope_name", name})
	}
	if version != "" {
		m.scopeMeta = append(m.scopeMeta, [2]string{"scope_version", version})
	}
	return nil
}

// record adds one log record of the current resource and scope.
func (m *mapper) record(r *logRecord) error {
	m.res.Entries++
	if m.streamErr != nil {
		m.res.Rejected++
		if len(m.res.Reasons) < 10 {
			m.res.Reasons = append(m.res.Reasons, fmt.Sprintf("resource labels: %v", m.streamErr))
		}
		return nil
	}
	var own [][2]string
	var err error
	for _, a := range r.attrs {
		if a.key == "event_name" && r.eventName != "" {
			continue // the record's own field wins, as in Loki
		}
		if own, err = attrs(own, "", a); err != nil {
			return err
		}
	}
	ts := int64(r.time)
	switch {
	case r.time != 0 && r.observed != 0:
		own = append(own, [2]string{"observed_timestamp", strconv.FormatUint(r.observed, 10)})
	case r.time == 0 && r.observed != 0:
		ts = int64(r.observed)
	case r.time == 0:
		ts = m.b.ReceiveTime
	}
	if r.sevNum != 0 {
		own = append(own, [2]string{"severity_number", strconv.FormatInt(r.sevNum, 10)})
	}
	if r.sevText != "" {
		own = append(own, [2]string{"severity_text", r.sevText})
	}
	if r.flags != 0 {
		own = append(own, [2]string{"flags", strconv.FormatUint(uint64(r.flags), 10)})
	}
	if !allZero(r.traceID) {
		own = append(own, [2]string{"trace_id", hex.EncodeToString(r.traceID)})
	}
	if !allZero(r.spanID) {
		own = append(own, [2]string{"span_id", hex.EncodeToString(r.spanID)})
	}
	if r.eventName != "" {
		own = append(own, [2]string{"event_name", r.eventName})
	}
	m.meta = m.meta[:0]
	for _, set := range [][][2]string{own, m.resMeta, m.scopeMeta} {
		for _, p := range set {
			m.meta = append(m.meta, [2][]byte{[]byte(p[0]), []byte(p[1])})
		}
	}
	var line []byte
	if r.body != nil {
		line = []byte(r.body.str)
	}
	m.d.Add(m.b, m.stream, ts, line, m.meta, &m.res)
	return nil
}

// allZero reports whether an id is absent: empty or all zero bytes, as
// OpenTelemetry's IsEmpty.
func allZero(id []byte) bool {
	for _, c := range id {
		if c != 0 {
			return false
		}
	}
	return true
}
