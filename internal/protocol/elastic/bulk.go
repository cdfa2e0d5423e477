// Package elastic reads Elasticsearch's bulk API bodies (POST /_bulk,
// /<index>/_bulk): pairs of an action line and a document line, as Beats,
// rsyslog's omelasticsearch and the elasticsearch clients send them. The
// documents are then parsed as JSON lines by package parse; this package
// says which item each document is, so that every item gets its own
// status, and writes the reply, with each item's status and error
// (Item.Created, Unreadable, StreamLimited). FilterPath applies
// Elasticsearch's filter_path to any JSON reply. Encoder is the inverse,
// for a sink that ships batches to Elasticsearch: a bulk body of create
// actions.
//
// It knows nothing of storage or HTTP routing.
package elastic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Item is one action of a bulk request.
type Item struct {
	Op    string // index or create; others are refused
	Index string
	ID    string
	Doc   int // the document's line number (from 1) in Docs, or 0 if none
	// Status and Err are set by Split for items refused outright, and by
	// the caller, with Created, Unreadable or StreamLimited, for the
	// others.
	Status int
	Type   string
	Err    string
}

// RequestError is a bulk body that Elasticsearch refuses whole (400,
// nothing stored): an action line that is not an object naming one
// action, an unknown action, or an action that needs a document and has
// none.
type RequestError struct {
	Line   int // the body's line (from 1) where it was found
	Reason string
}

func (e *RequestError) Error() string { return e.Reason }

// Split reads a bulk body: it returns the documents of index and create
// actions, one per line (the bytes as sent), and the items in order.
// defaultIndex is the index of the URL path, if any. Blank lines are
// skipped. As Elasticsearch, it refuses the whole body, with a
// *RequestError, when an action line is malformed, and with a
// *ValidationError when an action has no index (in its line or the URL)
// or there is no action; update and delete are well-formed, and only
// their items fail.
func Split(body []byte, defaultIndex string) (docs []byte, items []Item, err error) {
	lines, at := 0, 0 // documents taken; the body's line last read
	next := func() []byte {
		line, rest := nextLine(body)
		body = rest
		at++
		return line
	}
	// doc returns the next non-blank line, or nil at the end.
	doc := func() []byte {
		for len(body) > 0 {
			if line := next(); len(bytes.TrimSpace(line)) > 0 {
				return line
			}
		}
		return nil
	}
	for len(body) > 0 {
		action, line := next(), at
		if len(bytes.TrimSpace(action)) == 0 {
			continue
		}
		it := Item{Index: defaultIndex}
		var a map[string]struct {
			Index string `json:"_index"`
			ID    string `json:"_id"`
		}
		if jerr := json.Unmarshal(action, &a); jerr != nil || len(a) != 1 {
			reason := fmt.Sprintf("Malformed action/metadata line [%d], expected an object naming one of [create, delete, index, update]", line)
			if jerr != nil {
				reason += ": " + jerr.Error()
			}
			return nil, nil, &RequestError{Line: line, Reason: reason}
		}
		for op, meta := range a {
			it.Op, it.ID = op, meta.ID
			if meta.Index != "" {
				it.Index = meta.Index
			}
		}
		switch it.Op {
		case "index", "create":
			d := doc()
			if d == nil {
				return nil, nil, &RequestError{Line: line, Reason: fmt.Sprintf("Malformed action/metadata line [%d]: %s without a document line", line, it.Op)}
			}
			docs = append(append(docs, d...), '\n')
			lines++
			it.Doc = lines
		case "update":
			if doc() == nil { // its partial document
				return nil, nil, &RequestError{Line: line, Reason: fmt.Sprintf("Malformed action/metadata line [%d]: update without a document line", line)}
			}
			it.Status, it.Type, it.Err = 400, "illegal_argument_exception", "update is not supported: sluice stores documents as sent (index or create)"
		case "delete":
			it.Status, it.Type, it.Err = 400, "illegal_argument_exception", "delete is not supported: stored logs are removed by retention"
		default:
			return nil, nil, &RequestError{Line: line, Reason: fmt.Sprintf(
				"Malformed action/metadata line [%d], expected one of [create, delete, index, update] but found [%s]", line, it.Op)}
		}
		items = append(items, it)
	}
	// As Elasticsearch's bulk validation: every action needs an index,
	// from its line or the URL, and the request fails whole if one has
	// none (each numbered, "1: index is missing;2: ...").
	var missing strings.Builder
	n := 0
	for _, it := range items {
		if it.Index == "" {
			n++
			fmt.Fprintf(&missing, "%d: index is missing;", n)
		}
	}
	if len(items) == 0 {
		missing.WriteString("1: no requests added;")
	}
	if missing.Len() > 0 {
		return nil, nil, &ValidationError{Reason: "Validation Failed: " + missing.String()}
	}
	return docs, items, nil
}

// ValidationError is a bulk body that Elasticsearch's request validation
// refuses whole (400 action_request_validation_exception): an action with
// no index, or no action at all.
type ValidationError struct {
	Reason string
}

func (e *ValidationError) Error() string { return e.Reason }

// ErrorReply is the body of a request refused whole, as Elasticsearch
// writes it.
func ErrorReply(typ, reason string, status int) []byte {
	return fmt.Appendf(nil, `{"error":{"root_cause":[{"type":%s,"reason":%s}],"type":%s,"reason":%s},"status":%d}`,
		quote(typ), quote(reason), quote(typ), quote(reason), status)
}

func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.TrimSuffix(b, []byte{'\r'}), nil
	}
	return bytes.TrimSuffix(b[:i], []byte{'\r'}), b[i+1:]
}

var idSeq atomic.Uint64

// newID returns an id for a document sent without one: unique in this
// process, ordered by time.
func newID() string {
	return strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.FormatUint(idSeq.Add(1), 36)
}

// Reply writes the bulk response: {"took":..,"errors":..,"items":[...]}.
func Reply(took time.Duration, items []Item) []byte {
	var b bytes.Buffer
	errors := false
	for _, it := range items {
		errors = errors || it.Status >= 300
	}
	fmt.Fprintf(&b, `{"took":%d,"errors":%t,"items":[`, took.Milliseconds(), errors)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		op := it.Op
		if op == "" {
			op = "index"
		}
		id := it.ID
		if id == "" && it.Status < 300 {
			id = newID()
		}
		fmt.Fprintf(&b, `{%s:{"_index":%s,"_id":%s,"status":%d`, quote(op), quote(it.Index), quote(id), it.Status)
		if it.Status >= 300 {
			fmt.Fprintf(&b, `,"error":{"type":%s,"reason":%s}`, quote(it.Type), quote(it.Err))
		} else {
			b.WriteString(`,"result":"created","_version":1,"_shards":{"total":1,"successful":1,"failed":0}`)
		}
		b.WriteString("}}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
