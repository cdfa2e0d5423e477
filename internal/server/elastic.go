package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/protocol/elastic"
	"github.com/sluicelog/sluice/internal/protocol/jsonline"
	"github.com/sluicelog/sluice/internal/record"
)

// esVersion is the Elasticsearch version sluice answers as: clients (Beats,
// the elasticsearch clients, rsyslog) check it before they send.
const esVersion = "8.11.0"

// elasticRoutes adds the Elasticsearch-compatible endpoints.
func (s *Server) elasticRoutes() {
	m := s.mux
	for _, method := range []string{"POST", "PUT"} {
		s.addIngestRoute(method+" /_bulk", "elastic", s.es(s.ingest("elastic", s.handleBulk)))
		s.addIngestRoute(method+" /{index}/_bulk", "elastic", s.es(s.ingest("elastic", s.handleBulk)))
		m.HandleFunc(method+" /{index}/_doc", s.es(s.ingest("elastic", s.handleDoc)))
		m.HandleFunc(method+" /{index}/_doc/{id}", s.es(s.ingest("elastic", s.handleDoc)))
		m.HandleFunc(method+" /{index}/_create/{id}", s.es(s.ingest("elastic", s.handleDoc)))
	}
	// The pre-7 form rsyslog's omelasticsearch uses without bulk mode;
	// /insert/ is sluice's own, so a mistyped /insert/... gets a 404
	// that says so rather than an index of that name.
	m.HandleFunc("POST /{index}/{type}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("index") == "insert" {
			http.Error(w, "no such endpoint: use /insert/jsonline or /insert/lines?format=...", http.StatusNotFound)
			return
		}
		// Index names never start with "_": these are the management
		// calls (POST /_index_template/NAME and the like).
		if strings.HasPrefix(r.PathValue("index"), "_") {
			if h := s.esMetaHandler(r); h != nil {
				s.es(h)(w, r)
				return
			}
			http.NotFound(w, r)
			return
		}
		s.es(s.ingest("elastic", s.handleDoc))(w, r)
	})
	m.HandleFunc("GET /{$}", s.es(s.handleESRoot))
	m.HandleFunc("HEAD /{$}", s.es(func(w http.ResponseWriter, r *http.Request) {}))
	m.HandleFunc("GET /_cluster/health", s.es(jsonReply(`{"cluster_name":"sluice","status":"green","timed_out":false,"number_of_nodes":1,"number_of_data_nodes":1}`)))
	m.HandleFunc("GET /_cat/health", s.es(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d %s sluice green 1 1 - - - - - - - 100.0%%\n", time.Now().Unix(), time.Now().UTC().Format("15:04:05"))
	}))
	m.HandleFunc("GET /_license", s.es(jsonReply(`{"license":{"status":"active","uid":"sluice","type":"basic","issue_date_in_millis":0}}`)))
	// ILM available and enabled: Logstash with ilm_enabled => true checks
	// it (features.ilm) before it installs its policy, which sluice keeps
	// (elastic_meta.go) and does not apply.
	m.HandleFunc("GET /_xpack", s.es(jsonReply(`{"build":{},"license":{"status":"active","type":"basic"},"features":{"ilm":{"available":true,"enabled":true}}}`)))
	// Templates, lifecycle policies, pipelines, data streams, aliases and
	// nodes (elastic_meta.go). A catch-all, because patterns for them
	// would clash with /{index}/_bulk in the mux.
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if h := s.esMetaHandler(r); h != nil {
			s.es(h)(w, r)
			return
		}
		http.NotFound(w, r)
	})
}

// es adds the header Elasticsearch clients check for, and applies
// filter_path to the reply.
func (s *Server) es(h http.HandlerFunc) http.HandlerFunc {
	h = filterPath(h)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		h(w, r)
	}
}

func jsonReply(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func (s *Server) handleESRoot(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"name":"sluice","cluster_name":"sluice","cluster_uuid":"sluice","version":{"number":%q,"build_flavor":"default",`+
		`"build_type":"sluice","build_hash":"sluice","build_date":"2026-01-01T00:00:00Z","build_snapshot":false,"lucene_version":"9.8.0",`+
		`"minimum_wire_compatibility_version":"7.17.0","minimum_index_compatibility_version":"7.0.0"},"tagline":"You Know, for Search"}`, esVersion)
}

// esDocs parses and stores documents (one per line) through pipe, and
// returns, per document line (from 1), the error that kept it out.
func (s *Server) esDocs(r *http.Request, tenant string, docs []byte, pipe *storePipe) (map[int64]*record.LineError, int, error) {
	opts, err := jsonline.Options(r.URL.Query(), r.Header, "json", s.cfg.Parse)
	if err != nil {
		return nil, 0, err
	}
	p, list, err := s.parsers.get(opts)
	if err != nil {
		return nil, 0, err
	}
	failed := map[int64]*record.LineError{}
	next := int64(1) // the first document line of the next batch
	err = p.Bytes(r.Context(), docs, func(b *record.Batch) error {
		for i := range b.Errors {
			e := b.Errors[i]
			failed[e.Line] = &e
		}
		// Documents are one a line, none blank: record i is the i-th
		// line of the batch that is not an error. Refused records come
		// in order, so one walk finds them all.
		line, k, errs := next, 0, b.Errors
		next += int64(len(b.Records) + len(b.Errors))
		b.Tenant = tenant
		in := flow.Input{Protocol: "elastic", Refused: func(i int) {
			for {
				if len(errs) > 0 && errs[0].Line == line {
					errs = errs[1:]
					line++
					continue
				}
				if k == i {
					break
				}
				k++
				line++
			}
			failed[line] = &record.LineError{Line: line, Msg: streamLimited}
		}}
		if res := s.flow.Admit(in, b); res.Refused > 0 {
			s.log.Warn("ingest: stream limit", "protocol", "elastic", "msg", res.Message)
		}
		if err := pipe.push(r.Context(), in, b); err != nil {
			return storeFailure{err}
		}
		return nil
	})
	// Back before the last batch's fsync is waited for, as in
	// handleLines.
	s.parsers.put(list, p)
	if serr := pipe.settle(); serr != nil && (err == nil || !errors.As(err, new(storeFailure))) {
		err = storeFailure{serr}
	}
	return failed, pipe.accepted, err
}

// streamLimited is the message of a document refused for the stream
// limit, told apart from parse errors by handleBulk.
const streamLimited = "stream limit"

// storeFailure marks an error of the store, as opposed to the request.
type storeFailure struct{ error }

func (e storeFailure) Unwrap() error { return e.error }

// handleBulk serves _bulk: every item gets its own status; a bad document
// fails its item, not the request.
func (s *Server) handleBulk(w http.ResponseWriter, r *http.Request, tenant string, body *reqBody) (int, int) {
	start := time.Now()
	data, err := s.readWhole(body)
	if err != nil {
		return bodyError(w, err), 0
	}
	docs, items, err := elastic.Split(data, r.PathValue("index"))
	var ve *elastic.ValidationError
	if errors.As(err, &ve) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(elastic.ErrorReply("action_request_validation_exception", ve.Reason, http.StatusBadRequest))
		return http.StatusBadRequest, 0
	}
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(elastic.ErrorReply("illegal_argument_exception", err.Error(), http.StatusBadRequest))
		return http.StatusBadRequest, 0
	}
	failed, stored, err := s.esDocs(r, tenant, docs, body.pipe.start(s.flow))
	var sf storeFailure
	switch {
	case errors.As(err, &sf):
		return s.storeError(w, sf.error, ""), stored
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, stored
	}
	for i := range items {
		it := &items[i]
		if it.Doc == 0 {
			continue
		}
		switch e := failed[int64(it.Doc)]; {
		case e == nil:
			it.Created()
		case e.Msg == streamLimited:
			it.StreamLimited(s.streams.Max())
		default:
			it.Unreadable(e.Col, e.Msg)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(elastic.Reply(time.Since(start), items))
	return http.StatusOK, stored
}

// handleDoc serves a single document (_doc, _create, or /index/type).
func (s *Server) handleDoc(w http.ResponseWriter, r *http.Request, tenant string, body *reqBody) (int, int) {
	data, err := s.readWhole(body)
	if err != nil {
		return bodyError(w, err), 0
	}
	var probe json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(elastic.DocError(err.Error()))
		return http.StatusBadRequest, 0
	}
	// A document may span lines: store it as one line.
	doc := compactJSON(data)
	failed, stored, err := s.esDocs(r, tenant, append(doc, '\n'), body.pipe.start(s.flow))
	var sf storeFailure
	switch {
	case errors.As(err, &sf):
		return s.storeError(w, sf.error, ""), stored
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, stored
	}
	w.Header().Set("Content-Type", "application/json")
	if e := failed[1]; e != nil && e.Msg == streamLimited {
		// As a bulk item of a new stream over the limit: retry-safe.
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write(elastic.DocStreamLimited(s.streams.Max()))
		return http.StatusTooManyRequests, stored
	}
	if e := failed[1]; e != nil {
		w.WriteHeader(http.StatusBadRequest)
		w.Write(elastic.DocError(e.Msg))
		return http.StatusBadRequest, stored
	}
	w.WriteHeader(http.StatusCreated)
	id := r.PathValue("id")
	if id == "" {
		id = fmt.Sprintf("%x", time.Now().UnixNano())
	}
	w.Write(elastic.DocCreated(r.PathValue("index"), id))
	return http.StatusCreated, stored
}

// compactJSON removes the newlines a pretty-printed document has, so it
// is one line; a document that is already one line comes back as it is.
func compactJSON(data []byte) []byte {
	if bytes.IndexAny(data, "\r\n") < 0 {
		return data
	}
	var out bytes.Buffer
	if json.Compact(&out, data) != nil {
		return data
	}
	return out.Bytes()
}
