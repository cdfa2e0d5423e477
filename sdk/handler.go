package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"
)

// HandlerOptions configures a Handler.
type HandlerOptions struct {
	// Level is the least level logged (default slog.LevelInfo).
	Level slog.Leveler
	// AddSource adds the caller's file and line as the field "source"
	// (it costs an allocation per call).
	AddSource bool
	// LabelKeys names the attributes that become stream labels instead
	// of fields, by their full dotted name (a key "service", or "req.id"
	// inside group "req"). Keep them few and of low cardinality. With
	// LokiProtobuf a record needs at least one label: give the Client
	// Config.Labels, or Handle returns ErrNoLabels.
	LabelKeys []string
}

// Handler is a slog.Handler sending each record to a Client as one JSON
// object: "level", "msg", "source" (if asked for), then the attributes,
// groups flattened to dotted names ("req.method"). The record's time is
// the entry's time. Attributes given to WithAttrs are encoded once, when
// WithAttrs is called. In steady state a call allocates nothing, except
// for values of kind Any (encoded with encoding/json) and AddSource.
//
// With NDJSON and no LabelKeys, Handle writes the record's whole line
// (time and stream fields included) before taking the Client's lock, and
// the Client appends it as it is.
//
// slog.Logger calls runtime.Callers for the caller's PC on every call,
// which this Handler uses only with AddSource: where that matters, build
// the Record yourself (see the example of Handle).
type Handler struct {
	c          *Client
	level      slog.Leveler
	source     bool
	keys       []string
	pre        []byte  // fields from WithAttrs, each preceded by a comma
	labels     []Label // labels from WithAttrs
	prefix     string  // the open groups, each followed by a dot
	prefixJSON string  // prefix escaped for a JSON string, computed once
}

// NewHandler returns a Handler writing to c.
func NewHandler(c *Client, opts *HandlerOptions) *Handler {
	h := &Handler{c: c, level: slog.LevelInfo}
	if opts != nil {
		if opts.Level != nil {
			h.level = opts.Level
		}
		h.source = opts.AddSource
		h.keys = slices.Clone(opts.LabelKeys)
	}
	return h
}

// Enabled reports whether level is at least the Handler's level.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// WithAttrs returns a Handler whose records carry attrs, encoded now.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	st := state{h: &h2, buf: slices.Clip(h.pre), labels: slices.Clip(h.labels)}
	for _, a := range attrs {
		st.attr(h.prefix, a)
	}
	h2.pre, h2.labels = st.buf, st.labels
	return &h2
}

// WithGroup returns a Handler whose later attributes are inside group
// name (a dotted prefix).
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + name + "."
	h2.prefixJSON = string(appendJSONEscaped(nil, h2.prefix))
	return &h2
}

type state struct {
	h      *Handler
	buf    []byte
	labels []Label
	tc     timeCache // for the lines Handle writes whole
}

var statePool = sync.Pool{New: func() any {
	return &state{buf: make([]byte, 0, 1024), labels: make([]Label, 0, 8)}
}}

// each encodes a under the handler's open groups, for Record.Attrs. The
// common case, a value of a fixed kind and no label keys to match, is
// done here, with the groups' prefix escaped once by WithGroup; attr
// does the rest.
func (st *state) each(a slog.Attr) bool {
	h := st.h
	switch k := a.Value.Kind(); k {
	case slog.KindAny, slog.KindGroup, slog.KindLogValuer:
	default:
		if len(h.keys) == 0 {
			b := append(st.buf, ',', '"')
			if h.prefixJSON != "" {
				b = append(b, h.prefixJSON...)
			}
			if plainLen(a.Key) == len(a.Key) {
				b = append(b, a.Key...)
			} else {
				b = appendJSONEscaped(b, a.Key)
			}
			b = append(b, '"', ':')
			st.buf = appendValue(b, k, a.Value)
			return true
		}
	}
	st.attr(h.prefix, a)
	return true
}

// Handle encodes r and sends it. It returns the Client's error (ErrClosed
// after Close).
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	var ref *streamRef
	if h.c.cfg.Protocol == NDJSON && len(h.keys) == 0 {
		// Without label keys the record's stream is the Client's base
		// stream (Config.Labels): the line is written whole here.
		var err error
		if ref, err = h.c.baseStream(); err != nil {
			return err
		}
	}
	st := statePool.Get().(*state)
	st.h = h
	b := append(st.buf[:0], '{')
	if ref != nil {
		// As batch.add writes it: _time, the stream's fields, the rest.
		if !r.Time.IsZero() {
			b = append(b, `"_time":"`...)
			b = st.tc.append(b, r.Time)
			b = append(b, '"', ',')
		}
		if len(ref.json) > 0 {
			b = append(b, ref.json...)
			b = append(b, ',')
		}
	}
	switch r.Level {
	case slog.LevelDebug:
		b = append(b, `"level":"DEBUG","msg":"`...)
	case slog.LevelInfo:
		b = append(b, `"level":"INFO","msg":"`...)
	case slog.LevelWarn:
		b = append(b, `"level":"WARN","msg":"`...)
	case slog.LevelError:
		b = append(b, `"level":"ERROR","msg":"`...)
	default:
		b = append(b, `"level":`...)
		b = appendJSONString(b, r.Level.String())
		b = append(b, `,"msg":"`...)
	}
	if plainLen(r.Message) == len(r.Message) {
		b = append(b, r.Message...)
	} else {
		b = appendJSONEscaped(b, r.Message)
	}
	b = append(b, '"')
	if h.source && r.PC != 0 {
		fs := runtime.CallersFrames([]uintptr{r.PC})
		f, _ := fs.Next()
		b = append(b, `,"source":`...)
		b = appendJSONString(b, f.File+":"+strconv.Itoa(f.Line))
	}
	b = append(b, h.pre...)
	st.buf = b
	labels := h.labels
	if len(h.keys) > 0 {
		// The record's attributes may add labels: a copy of h's.
		st.labels = append(st.labels[:0], h.labels...)
	}
	// Not guarded by NumAttrs: each call with the Record as receiver
	// copies it.
	r.Attrs(st.each)
	var err error
	if ref != nil {
		st.buf = append(st.buf, '}', '\n')
		err = h.c.sendLine(st.buf, ref.id)
	} else {
		if len(h.keys) > 0 {
			labels = st.labels
		}
		st.buf = append(st.buf, '}')
		err = h.c.send(r.Time, st.buf, labels, true)
	}
	if cap(st.buf) <= 64<<10 {
		clear(st.labels)
		st.h = nil
		statePool.Put(st)
	}
	return err
}

// attr encodes a as a field (or a label) under prefix.
func (st *state) attr(prefix string, a slog.Attr) {
	// Kind is a type switch on the Value's interface: asked once.
	v := a.Value
	k := v.Kind()
	if k == slog.KindLogValuer {
		v = v.Resolve()
		k = v.Kind()
	}
	switch k {
	case slog.KindGroup:
		attrs := v.Group()
		if len(attrs) == 0 {
			return
		}
		if a.Key != "" {
			prefix = prefix + a.Key + "."
		}
		for _, g := range attrs {
			st.attr(prefix, g)
		}
		return
	case slog.KindAny:
		if a.Key == "" && v.Any() == nil {
			return // the empty Attr
		}
	}
	for _, lk := range st.h.keys {
		if len(lk) == len(prefix)+len(a.Key) && lk[:len(prefix)] == prefix && lk[len(prefix):] == a.Key {
			st.labels = append(st.labels, Label{Name: lk, Value: v.String()})
			return
		}
	}
	b := append(st.buf, ',', '"')
	if prefix != "" {
		b = appendJSONEscaped(b, prefix)
	}
	b = appendJSONEscaped(b, a.Key)
	b = append(b, '"', ':')
	st.buf = appendValue(b, k, v)
}

// plainLen returns how many leading bytes of s stand for themselves in a
// JSON string. It is inlined: most keys, messages and values need no
// escape, and then cost this scan and one append, without a call.
func plainLen(s string) int {
	i := 0
	for i < len(s) && plainASCII[s[i]] {
		i++
	}
	return i
}

// appendValue appends v, of kind k (not LogValuer nor Group), as JSON.
// The common kinds are here; the others in appendOtherValue, so that
// this one's frame stays small.
func appendValue(b []byte, k slog.Kind, v slog.Value) []byte {
	switch k {
	case slog.KindString:
		s := v.String()
		b = append(b, '"')
		if plainLen(s) == len(s) {
			b = append(b, s...)
		} else {
			b = appendJSONEscaped(b, s)
		}
		return append(b, '"')
	case slog.KindInt64:
		return appendInt(b, v.Int64())
	case slog.KindUint64:
		return appendUint(b, v.Uint64())
	case slog.KindFloat64:
		if f := v.Float64(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return appendFloat(b, f)
		}
	case slog.KindBool:
		if v.Bool() {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case slog.KindDuration:
		return appendInt(b, int64(v.Duration()))
	}
	return appendOtherValue(b, k, v)
}

// appendOtherValue appends what appendValue leaves: times, NaN and
// infinities (as strings), and values of kind Any.
func appendOtherValue(b []byte, k slog.Kind, v slog.Value) []byte {
	switch k {
	case slog.KindFloat64:
		return appendJSONString(b, strconv.FormatFloat(v.Float64(), 'g', -1, 64))
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	a := v.Any()
	if err, ok := a.(error); ok {
		return appendJSONString(b, err.Error())
	}
	j, err := json.Marshal(a)
	if err != nil {
		return appendJSONString(b, fmt.Sprintf("%+v", a))
	}
	return append(b, j...)
}
