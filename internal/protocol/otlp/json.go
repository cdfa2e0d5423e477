package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// OTLP/JSON: lowerCamelCase names, 64-bit integers as strings or numbers,
// trace and span ids as hex.

type jsonKV struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

type jsonAny struct {
	StringValue *string          `json:"stringValue"`
	BoolValue   *bool            `json:"boolValue"`
	IntValue    *json.RawMessage `json:"intValue"`
	DoubleValue *json.RawMessage `json:"doubleValue"`
	ArrayValue  *struct {
		Values []json.RawMessage `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []jsonKV `json:"values"`
	} `json:"kvlistValue"`
	BytesValue *string `json:"bytesValue"`
}

type jsonExport struct {
	ResourceLogs []struct {
		Resource struct {
			Attributes []jsonKV `json:"attributes"`
		} `json:"resource"`
		ScopeLogs []struct {
			Scope struct {
				Name       string   `json:"name"`
				Version    string   `json:"version"`
				Attributes []jsonKV `json:"attributes"`
			} `json:"scope"`
			LogRecords []struct {
				TimeUnixNano         json.RawMessage `json:"timeUnixNano"`
				ObservedTimeUnixNano json.RawMessage `json:"observedTimeUnixNano"`
				SeverityNumber       json.RawMessage `json:"severityNumber"`
				SeverityText         string          `json:"severityText"`
				Body                 json.RawMessage `json:"body"`
				Attributes           []jsonKV        `json:"attributes"`
				Flags                uint32          `json:"flags"`
				TraceID              string          `json:"traceId"`
				SpanID               string          `json:"spanId"`
				EventName            string          `json:"eventName"`
			} `json:"logRecords"`
		} `json:"scopeLogs"`
	} `json:"resourceLogs"`
}

// jsonInt reads an integer sent as a number or a string; absent is 0.
func jsonInt(raw json.RawMessage) (int64, error) {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	if s == "" || s == "null" {
		return 0, nil
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return int64(u), nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func jsonAnyValue(raw json.RawMessage, depth int) (value, error) {
	if depth > maxDepth {
		return value{}, errors.New("values nested too deep")
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return value{json: "null"}, nil
	}
	var a jsonAny
	if err := json.Unmarshal(raw, &a); err != nil {
		return value{}, fmt.Errorf("AnyValue: %v", err)
	}
	switch {
	case a.StringValue != nil:
		return value{json: jsonString(*a.StringValue), str: *a.StringValue}, nil
	case a.BoolValue != nil:
		b := strconv.FormatBool(*a.BoolValue)
		return value{json: b, str: b}, nil
	case a.IntValue != nil:
		n, err := jsonInt(*a.IntValue)
		if err != nil {
			return value{}, fmt.Errorf("intValue: %v", err)
		}
		i := strconv.FormatInt(n, 10)
		return value{json: i, str: i}, nil
	case a.DoubleValue != nil:
		s := strings.Trim(string(*a.DoubleValue), `"`)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return value{}, fmt.Errorf("doubleValue: %v", err)
		}
		return value{json: floatJSON(f), str: floatText(f)}, nil
	case a.ArrayValue != nil:
		out := []byte{'['}
		var arr value
		for i, e := range a.ArrayValue.Values {
			v, err := jsonAnyValue(e, depth+1)
			if err != nil {
				return value{}, err
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, v.json...)
			arr.elems = append(arr.elems, v)
		}
		arr.json = string(append(out, ']'))
		arr.setStr()
		return arr, nil
	case a.KvlistValue != nil:
		out := []byte{'{'}
		m := value{isMap: true}
		for i, e := range a.KvlistValue.Values {
			v, err := jsonAnyValue(e.Value, depth+1)
			if err != nil {
				return value{}, err
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, jsonString(e.Key)...), ':'), v.json...)
			m.kvs = append(m.kvs, kv{key: e.Key, val: v})
		}
		m.json = string(append(out, '}'))
		m.setStr()
		return m, nil
	case a.BytesValue != nil:
		b, err := base64.StdEncoding.DecodeString(*a.BytesValue)
		if err != nil {
			return value{}, fmt.Errorf("bytesValue: %v", err)
		}
		e := base64.StdEncoding.EncodeToString(b)
		return value{json: `"` + e + `"`, str: e}, nil
	}
	return value{json: "null"}, nil
}

func jsonKVs(in []jsonKV) ([]kv, error) {
	out := make([]kv, 0, len(in))
	for _, p := range in {
		if p.Key == "" {
			return nil, errors.New("attribute without a key")
		}
		v, err := jsonAnyValue(p.Value, 0)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", p.Key, err)
		}
		out = append(out, kv{key: p.Key, val: v})
	}
	return out, nil
}

func decodeJSON(m *mapper, body []byte) (int, error) {
	var req jsonExport
	if err := json.Unmarshal(body, &req); err != nil {
		return 0, fmt.Errorf("%w: JSON: %v", ErrBadRequest, err)
	}
	bad := func(err error) (int, error) { return 0, fmt.Errorf("%w: JSON: %v", ErrBadRequest, err) }
	count := 0
	for _, rl := range req.ResourceLogs {
		resource, err := jsonKVs(rl.Resource.Attributes)
		if err != nil {
			return bad(err)
		}
		if err := m.resource(resource); err != nil {
			return bad(err)
		}
		for _, sl := range rl.ScopeLogs {
			scopeAttrs, err := jsonKVs(sl.Scope.Attributes)
			if err != nil {
				return bad(err)
			}
			if err := m.scope(sl.Scope.Name, sl.Scope.Version, scopeAttrs); err != nil {
				return bad(err)
			}
			for _, jr := range sl.LogRecords {
				var lr logRecord
				t, err1 := jsonInt(jr.TimeUnixNano)
				o, err2 := jsonInt(jr.ObservedTimeUnixNano)
				sev, err3 := jsonInt(jr.SeverityNumber)
				if err := errors.Join(err1, err2, err3); err != nil {
					return bad(err)
				}
				lr.time, lr.observed, lr.sevNum = uint64(t), uint64(o), sev
				lr.sevText, lr.flags, lr.eventName = jr.SeverityText, jr.Flags, jr.EventName
				if lr.traceID, err = hex.DecodeString(jr.TraceID); err != nil {
					return bad(fmt.Errorf("traceId: %v", err))
				}
				if lr.spanID, err = hex.DecodeString(jr.SpanID); err != nil {
					return bad(fmt.Errorf("spanId: %v", err))
				}
				if len(jr.Body) > 0 {
					v, err := jsonAnyValue(jr.Body, 0)
					if err != nil {
						return bad(fmt.Errorf("body: %v", err))
					}
					lr.body = &v
				}
				if lr.attrs, err = jsonKVs(jr.Attributes); err != nil {
					return bad(err)
				}
				if err := m.record(&lr); err != nil {
					return bad(err)
				}
				count++
			}
		}
	}
	return count, nil
}
