package loadgen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// encoder turns a batch of lines into one request body of a protocol.
type encoder struct {
	path   string // URL path (HTTP protocols)
	ctype  string
	encode func(dst []byte, lines [][]byte, now time.Time) []byte
}

func newEncoder(protocol string) (*encoder, error) {
	switch protocol {
	case "jsonline":
		return &encoder{"/insert/jsonline", "application/x-ndjson", encodeJSONLine}, nil
	case "lines":
		return &encoder{"/insert/lines", "text/plain", encodeLines}, nil
	case "loki-json":
		return &encoder{"/loki/api/v1/push", "application/json", encodeLokiJSON}, nil
	case "loki-protobuf":
		return &encoder{"/loki/api/v1/push", "application/x-protobuf", encodeLokiProto}, nil
	case "elastic":
		return &encoder{"/_bulk", "application/x-ndjson", encodeBulk}, nil
	case "otlp":
		return &encoder{"/v1/logs", "application/json", encodeOTLP}, nil
	case "syslog-tcp", "syslog-udp":
		return &encoder{"", "", encodeSyslog}, nil
	}
	return nil, fmt.Errorf("loadgen: unknown protocol %q (one of %v)", protocol, Protocols)
}

// isObject reports whether line looks like a JSON object.
func isObject(line []byte) bool {
	l := bytes.TrimSpace(line)
	return len(l) >= 2 && l[0] == '{' && l[len(l)-1] == '}'
}

func encodeJSONLine(dst []byte, lines [][]byte, now time.Time) []byte {
	for _, l := range lines {
		if isObject(l) {
			dst = append(dst, bytes.TrimSpace(l)...)
		} else {
			dst = append(dst, `{"_msg":`...)
			dst = appendJSONString(dst, l)
			dst = append(dst, '}')
		}
		dst = append(dst, '\n')
	}
	return dst
}

func encodeLines(dst []byte, lines [][]byte, now time.Time) []byte {
	for _, l := range lines {
		dst = append(dst, l...)
		dst = append(dst, '\n')
	}
	return dst
}

func encodeLokiJSON(dst []byte, lines [][]byte, now time.Time) []byte {
	dst = append(dst, `{"streams":[{"stream":{"job":"sluice-bench"},"values":[`...)
	ns := now.UnixNano()
	for i, l := range lines {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `["`...)
		dst = strconv.AppendInt(dst, ns+int64(i), 10)
		dst = append(dst, `",`...)
		dst = appendJSONString(dst, l)
		dst = append(dst, ']')
	}
	return append(dst, "]}]}"...)
}

// encodeLokiProto writes a logproto.PushRequest of one stream, snappy
// block compressed.
func encodeLokiProto(dst []byte, lines [][]byte, now time.Time) []byte {
	var s []byte
	s = protowire.AppendTag(s, 1, protowire.BytesType)
	s = protowire.AppendString(s, `{job="sluice-bench"}`)
	ns := now.UnixNano()
	for i, l := range lines {
		t := ns + int64(i)
		var ts []byte
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(t/1e9))
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(t%1e9))
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendBytes(e, ts)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendBytes(e, l)
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendBytes(s, e)
	}
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, s)
	return snappy.Encode(dst[:cap(dst)], req)
}

func encodeBulk(dst []byte, lines [][]byte, now time.Time) []byte {
	for _, l := range lines {
		dst = append(dst, `{"create":{"_index":"sluice-bench"}}`+"\n"...)
		if isObject(l) {
			dst = append(dst, bytes.TrimSpace(l)...)
		} else {
			dst = append(dst, `{"message":`...)
			dst = appendJSONString(dst, l)
			dst = append(dst, '}')
		}
		dst = append(dst, '\n')
	}
	return dst
}

func encodeOTLP(dst []byte, lines [][]byte, now time.Time) []byte {
	dst = append(dst, `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"sluice-bench"}}]},"scopeLogs":[{"logRecords":[`...)
	ns := now.UnixNano()
	for i, l := range lines {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"timeUnixNano":"`...)
		dst = strconv.AppendInt(dst, ns+int64(i), 10)
		dst = append(dst, `","body":{"stringValue":`...)
		dst = appendJSONString(dst, l)
		dst = append(dst, `}}`...)
	}
	return append(dst, "]}]}]}"...)
}

// encodeSyslog writes RFC 5424 messages, one a line.
func encodeSyslog(dst []byte, lines [][]byte, now time.Time) []byte {
	for _, l := range lines {
		dst = append(dst, "<14>1 "...)
		dst = now.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, " bench-host sluice-bench - - - "...)
		dst = append(dst, bytes.ReplaceAll(l, []byte("\n"), []byte(" "))...)
		dst = append(dst, '\n')
	}
	return dst
}

func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			dst = append(dst, s[:size]...)
		}
		s = s[size:]
	}
	return append(dst, '"')
}

// Generate returns n lines of a web server's log, JSON objects of a few
// fields, varied (seeded: the same every run).
func Generate(n int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	methods := []string{"GET", "GET", "GET", "POST", "PUT", "DELETE"}
	paths := []string{"/", "/api/users", "/api/orders", "/static/app.js", "/login", "/api/search"}
	statuses := []int{200, 200, 200, 200, 201, 204, 301, 404, 500}
	levels := []string{"info", "info", "info", "warn", "error"}
	out := make([][]byte, n)
	for i := range out {
		st := statuses[r.IntN(len(statuses))]
		out[i] = fmt.Appendf(nil, `{"level":%q,"msg":"%s %s %d","method":%q,"path":%q,"status":%d,"bytes":%d,"duration_ms":%.3f,"client":"10.%d.%d.%d","trace_id":"%016x"}`,
			levels[r.IntN(len(levels))], methods[r.IntN(len(methods))], paths[r.IntN(len(paths))], st,
			methods[r.IntN(len(methods))], paths[r.IntN(len(paths))], st, r.IntN(100000), r.Float64()*100,
			r.IntN(256), r.IntN(256), r.IntN(256), r.Uint64())
	}
	return out
}

// ReadCorpus reads a file of lines (empty lines left out).
func ReadCorpus(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	var out [][]byte
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if l = bytes.TrimRight(l, "\r"); len(l) > 0 {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read corpus: %s has no lines", path)
	}
	return out, nil
}
