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
type Handler struct {
	c      *Client
	level  slog.Leveler
	source bool
	keys   []string
	pre    []byte  // fields from WithAttrs, each preceded by a comma
	labels []Label // labels from WithAttrs
	prefix string  // the open groups, each followed by a dot
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
	return &h2
}

type state struct {
	h      *Handler
	buf    []byte
	labels []Label
}

var statePool = sync.Pool{New: func() any {
	return &state{buf: make([]byte, 0, 1024), labels: make([]Label, 0, 8)}
}}

// each encodes a under the handler's open groups, for Record.Attrs.
func (st *state) each(a slog.Attr) bool {
	st.attr(st.h.prefix, a)
	return true
}

// Handle encodes r and sends it. It returns the Client's error (ErrClosed
// after Close).
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	st := statePool.Get().(*state)
	st.h = h
	var b []byte
	switch r.Level {
	case slog.LevelDebug:
		b = append(st.buf[:0], `{"level":"DEBUG","msg":`...)
	case slog.LevelInfo:
		b = append(st.buf[:0], `{"level":"INFO","msg":`...)
	case slog.LevelWarn:
		b = append(st.buf[:0], `{"level":"WARN","msg":`...)
	case slog.LevelError:
		b = append(st.buf[:0], `{"level":"ERROR","msg":`...)
	default:
		b = append(st.buf[:0], `{"level":`...)
		b = appendJSONString(b, r.Level.String())
		b = append(b, `,"msg":`...)
	}
	b = appendJSONString(b, r.Message)
	if h.source && r.PC != 0 {
		fs := runtime.CallersFrames([]uintptr{r.PC})
		f, _ := fs.Next()
		b = append(b, `,"source":`...)
		b = appendJSONString(b, f.File+":"+strconv.Itoa(f.Line))
	}
	b = append(b, h.pre...)
	st.buf = b
	st.labels = append(st.labels[:0], h.labels...)
	if r.NumAttrs() > 0 {
		r.Attrs(st.each)
	}
	st.buf = append(st.buf, '}')
	err := h.c.send(r.Time, st.buf, st.labels, true)
	if cap(st.buf) <= 64<<10 {
		clear(st.labels)
		st.h = nil
		statePool.Put(st)
	}
	return err
}

// attr encodes a as a field (or a label) under prefix.
func (st *state) attr(prefix string, a slog.Attr) {
	if a.Value.Kind() == slog.KindLogValuer {
		a.Value = a.Value.Resolve()
	}
	if a.Value.Kind() == slog.KindGroup {
		attrs := a.Value.Group()
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
	}
	if a.Key == "" && a.Value.Any() == nil {
		return // the empty Attr
	}
	for _, k := range st.h.keys {
		if len(k) == len(prefix)+len(a.Key) && k[:len(prefix)] == prefix && k[len(prefix):] == a.Key {
			st.labels = append(st.labels, Label{Name: k, Value: a.Value.String()})
			return
		}
	}
	b := append(st.buf, ',', '"')
	if prefix != "" {
		b = appendJSONEscaped(b, prefix)
	}
	b = appendJSONEscaped(b, a.Key)
	b = append(b, '"', ':')
	st.buf = appendValue(b, a.Value)
}

func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendJSONString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return appendJSONString(b, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10)
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
