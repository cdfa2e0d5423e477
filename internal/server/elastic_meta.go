package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicelog/sluice/internal/protocol/elastic"
)

// The index-management calls shippers make before they send: Filebeat
// asks GET _ilm/policy/NAME and HEAD _index_template/NAME and installs
// what is missing; Logstash asks HEAD /ALIAS, GET _ilm/policy/NAME and
// HEAD _index_template/NAME, creates its rollover index with PUT
// /<index>, and sends _bulk with filter_path; sniffing clients read
// _nodes/http. sluice stores documents as sent and applies none of these
// objects; it keeps what was installed (in memory, per tenant, lost at a
// restart, when shippers install it again) so that each call answers as
// Elasticsearch 8.11 would: what was put is there, what was not is 404.

// What one tenant may keep: objects (templates, policies, pipelines, data
// streams, indices), their bytes, and one object's body. Filebeat's
// index template, the largest a shipper installs, is well under 8 MiB.
const (
	maxESObjects     = 1024
	maxESBytes       = 32 << 20
	maxESObjectBytes = 8 << 20
)

type esKind int

const (
	esIndexTemplate esKind = iota
	esLegacyTemplate
	esComponentTemplate
	esPolicy
	esPipeline
	esDataStream
	esIndex
)

// esCatalog holds the installed objects. The zero value is ready.
type esCatalog struct {
	mu    sync.Mutex
	objs  map[esKey]*esObject
	usage map[string]esUsage // by tenant
}

type esUsage struct{ objects, bytes int }

type esKey struct {
	tenant string
	kind   esKind
	name   string
}

type esObject struct {
	body     json.RawMessage
	version  int
	modified time.Time
}

// put stores an object; it reports whether it was new, or an error at
// the limit.
func (c *esCatalog) put(k esKey, body json.RawMessage) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objs == nil {
		c.objs, c.usage = map[esKey]*esObject{}, map[string]esUsage{}
	}
	u := c.usage[k.tenant]
	o := c.objs[k]
	if o != nil {
		u.bytes -= len(o.body)
	} else {
		u.objects++
	}
	u.bytes += len(body)
	if u.objects > maxESObjects || u.bytes > maxESBytes {
		return false, fmt.Errorf("a tenant keeps at most %d index templates, policies, pipelines, data streams and indices, of %d bytes in all (maxESObjects, maxESBytes); sluice applies none of them, so a shipper can run with its index setup turned off",
			maxESObjects, maxESBytes)
	}
	c.usage[k.tenant] = u
	if o != nil {
		o.body, o.version, o.modified = body, o.version+1, time.Now()
		return false, nil
	}
	c.objs[k] = &esObject{body: body, version: 1, modified: time.Now()}
	return true, nil
}

func (c *esCatalog) get(k esKey) (esObject, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.objs[k]; o != nil {
		return *o, true
	}
	return esObject{}, false
}

func (c *esCatalog) delete(k esKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.objs[k]
	if o == nil {
		return false
	}
	delete(c.objs, k)
	u := c.usage[k.tenant]
	u.objects, u.bytes = u.objects-1, u.bytes-len(o.body)
	c.usage[k.tenant] = u
	return true
}

// match returns the names of a tenant's objects of a kind that any of
// the comma-separated patterns matches ("", "*" and "_all": all), sorted.
func (c *esCatalog) match(tenant string, kind esKind, patterns string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.objs {
		if k.tenant == tenant && k.kind == kind && matchNames(patterns, k.name) {
			out = append(out, k.name)
		}
	}
	slices.Sort(out)
	return out
}

func matchNames(patterns, name string) bool {
	if patterns == "" || patterns == "_all" {
		return true
	}
	for _, p := range strings.Split(patterns, ",") {
		if ok, _ := path.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

func hasWildcard(patterns string) bool {
	return patterns == "" || patterns == "_all" || strings.ContainsAny(patterns, "*,")
}

// esError writes Elasticsearch's error body.
func esError(w http.ResponseWriter, code int, typ, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(elastic.ErrorReply(typ, reason, code))
}

func esJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}

// esTenant reads and checks the tenant of a management call, answering
// the request itself when it is refused.
func (s *Server) esTenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	tenant, err := tenantOf(r)
	if err != nil {
		esError(w, http.StatusBadRequest, "illegal_argument_exception", err.Error())
		return "", false
	}
	if code := s.authorize(r, tenant); code != 0 {
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="sluice"`)
		}
		esError(w, code, "security_exception", http.StatusText(code))
		return "", false
	}
	return tenant, true
}

// esReadBody reads a management call's JSON body (an object, or
// nothing), through the ingest body's limits: in-flight memory, the
// slow-body cut-off, Content-Encoding.
func (s *Server) esReadBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, bool) {
	body, err := s.newBody(w, r, 64<<10, 2, 2*maxESObjectBytes+64<<10)
	if err != nil {
		code := http.StatusUnsupportedMediaType
		if errors.Is(err, errBusy) {
			code = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		}
		esError(w, code, "illegal_argument_exception", err.Error())
		return nil, false
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxESObjectBytes+1))
	switch {
	case err != nil:
		esError(w, bodyStatus(err), "illegal_argument_exception", "read body: "+err.Error())
		return nil, false
	case len(data) > maxESObjectBytes:
		esError(w, http.StatusRequestEntityTooLarge, "illegal_argument_exception",
			fmt.Sprintf("the body is over %d bytes (maxESObjectBytes)", maxESObjectBytes))
		return nil, false
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return json.RawMessage("{}"), true
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		esError(w, http.StatusBadRequest, "x_content_parse_exception", "the body is not a JSON object: "+err.Error())
		return nil, false
	}
	var out bytes.Buffer
	_ = json.Compact(&out, data)
	return out.Bytes(), true
}

// esMetaHandler returns the handler of a management path, or nil for a
// path that is none of them.
func (s *Server) esMetaHandler(r *http.Request) http.HandlerFunc {
	seg := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i := range seg {
		if u, err := url.PathUnescape(seg[i]); err == nil {
			seg[i] = u
		}
	}
	objects := func(kind esKind, name, notFound string, keep func(json.RawMessage) (json.RawMessage, error)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.esObjects(w, r, kind, name, notFound, keep) }
	}
	switch m := r.Method; {
	case seg[0] == "_index_template" && len(seg) <= 2:
		return objects(esIndexTemplate, at(seg, 1), "index template matching [%s] not found", nil)
	case seg[0] == "_component_template" && len(seg) <= 2:
		return objects(esComponentTemplate, at(seg, 1), "component template matching [%s] not found", nil)
	case seg[0] == "_template" && len(seg) <= 2:
		return objects(esLegacyTemplate, at(seg, 1), "", nil)
	case seg[0] == "_ingest" && at(seg, 1) == "pipeline" && len(seg) <= 3:
		return objects(esPipeline, at(seg, 2), "", nil)
	case seg[0] == "_ilm" && at(seg, 1) == "policy" && len(seg) <= 3:
		return objects(esPolicy, at(seg, 2), "Lifecycle policy not found: %s", policyOf)
	case seg[0] == "_ilm" && at(seg, 1) == "status" && len(seg) == 2 && m == "GET":
		return jsonReply(`{"operation_mode":"RUNNING"}`)
	case seg[0] == "_data_stream" && len(seg) <= 2:
		return objects(esDataStream, at(seg, 1), "", nil)
	case seg[0] == "_alias" && len(seg) <= 2 && (m == "GET" || m == "HEAD"):
		return func(w http.ResponseWriter, r *http.Request) { s.esAliases(w, r, at(seg, 1)) }
	case seg[0] == "_cat" && at(seg, 1) == "templates" && len(seg) <= 3 && m == "GET":
		return func(w http.ResponseWriter, r *http.Request) { s.esCatTemplates(w, r, at(seg, 2)) }
	case seg[0] == "_nodes" && len(seg) <= 3 && m == "GET":
		return s.esNodes
	case len(seg) == 1 && seg[0] != "" && !strings.HasPrefix(seg[0], "_") && (m == "PUT" || m == "HEAD" || m == "DELETE"):
		return func(w http.ResponseWriter, r *http.Request) { s.esIndex(w, r, seg[0]) }
	}
	return nil
}

// policyOf keeps the policy of a PUT _ilm/policy body.
func policyOf(body json.RawMessage) (json.RawMessage, error) {
	var b struct {
		Policy json.RawMessage `json:"policy"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.Policy) == 0 {
		return nil, fmt.Errorf("Required [policy]")
	}
	return b.Policy, nil
}

func at(seg []string, i int) string {
	if i < len(seg) {
		return seg[i]
	}
	return ""
}

// esObjects serves PUT/POST, GET, HEAD and DELETE of one kind of object.
// notFound is the reason of the 404 for a missing name ("" for the kinds
// Elasticsearch answers {} with 404); keep, if set, picks what is kept
// from a PUT body.
func (s *Server) esObjects(w http.ResponseWriter, r *http.Request, kind esKind, name, notFound string, keep func(json.RawMessage) (json.RawMessage, error)) {
	tenant, ok := s.esTenant(w, r)
	if !ok {
		return
	}
	switch r.Method {
	case "PUT", "POST":
		if name == "" || hasWildcard(name) {
			esError(w, http.StatusBadRequest, "illegal_argument_exception", fmt.Sprintf("a name is required, and may not hold wildcards: %q", name))
			return
		}
		body, ok := s.esReadBody(w, r)
		if !ok {
			return
		}
		if keep != nil {
			var err error
			if body, err = keep(body); err != nil {
				esError(w, http.StatusBadRequest, "x_content_parse_exception", err.Error())
				return
			}
		}
		if _, err := s.esMeta.put(esKey{tenant, kind, name}, body); err != nil {
			esError(w, http.StatusBadRequest, "illegal_argument_exception", err.Error())
			return
		}
		esJSON(w, 200, []byte(`{"acknowledged":true}`))
	case "DELETE":
		if !s.esMeta.delete(esKey{tenant, kind, name}) {
			s.esMissing(w, r, kind, name, notFound)
			return
		}
		esJSON(w, 200, []byte(`{"acknowledged":true}`))
	case "GET", "HEAD":
		names := s.esMeta.match(tenant, kind, name)
		if len(names) == 0 && !hasWildcard(name) {
			s.esMissing(w, r, kind, name, notFound)
			return
		}
		if r.Method == "HEAD" {
			w.WriteHeader(200)
			return
		}
		esJSON(w, 200, s.esListing(tenant, kind, names))
	default:
		esError(w, http.StatusMethodNotAllowed, "illegal_argument_exception", fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
	}
}

func (s *Server) esMissing(w http.ResponseWriter, r *http.Request, kind esKind, name, notFound string) {
	switch {
	case r.Method == "HEAD":
		w.WriteHeader(http.StatusNotFound)
	case kind == esDataStream:
		esError(w, http.StatusNotFound, "index_not_found_exception", fmt.Sprintf("no such index [%s]", name))
	case notFound == "":
		esJSON(w, http.StatusNotFound, []byte("{}"))
	default:
		esError(w, http.StatusNotFound, "resource_not_found_exception", fmt.Sprintf(notFound, name))
	}
}

// esListing is the body of a GET of names, in each kind's shape.
func (s *Server) esListing(tenant string, kind esKind, names []string) []byte {
	var b []byte
	switch kind {
	case esIndexTemplate:
		b = append(b, `{"index_templates":[`...)
	case esComponentTemplate:
		b = append(b, `{"component_templates":[`...)
	case esDataStream:
		b = append(b, `{"data_streams":[`...)
	default:
		b = append(b, '{')
	}
	n := 0
	for _, name := range names {
		o, ok := s.esMeta.get(esKey{tenant, kind, name})
		if !ok { // deleted meanwhile
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		q := strconv.Quote(name)
		switch kind {
		case esIndexTemplate:
			b = fmt.Appendf(b, `{"name":%s,"index_template":%s}`, q, o.body)
		case esComponentTemplate:
			b = fmt.Appendf(b, `{"name":%s,"component_template":%s}`, q, o.body)
		case esPolicy:
			b = fmt.Appendf(b, `%s:{"version":%d,"modified_date":%q,"policy":%s,"in_use_by":{"indices":[],"data_streams":[],"composable_templates":[]}}`,
				q, o.version, o.modified.UTC().Format("2006-01-02T15:04:05.000Z"), o.body)
		case esDataStream:
			b = fmt.Appendf(b, `{"name":%s,"timestamp_field":{"name":"@timestamp"},"indices":[],"generation":1,"status":"GREEN",`+
				`"template":"","hidden":false,"system":false,"allow_custom_routing":false,"replicated":false}`, q)
		default:
			b = fmt.Appendf(b, `%s:%s`, q, o.body)
		}
	}
	switch kind {
	case esIndexTemplate, esComponentTemplate, esDataStream:
		return append(b, "]}"...)
	}
	return append(b, '}')
}

// esIndex serves PUT, HEAD and DELETE /<index>: indices exist in sluice
// only as the names that shippers create (Logstash's rollover index,
// with its alias); documents are stored whatever index they name.
func (s *Server) esIndex(w http.ResponseWriter, r *http.Request, name string) {
	tenant, ok := s.esTenant(w, r)
	if !ok {
		return
	}
	name = resolveDateMath(name, time.Now())
	switch r.Method {
	case "HEAD": // an index or an alias of that name
		if _, ok := s.esMeta.get(esKey{tenant, esIndex, name}); ok || len(s.aliasesOf(tenant, name)) > 0 {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	case "DELETE":
		if !s.esMeta.delete(esKey{tenant, esIndex, name}) {
			esError(w, http.StatusNotFound, "index_not_found_exception", fmt.Sprintf("no such index [%s]", name))
			return
		}
		esJSON(w, 200, []byte(`{"acknowledged":true}`))
	case "PUT":
		body, ok := s.esReadBody(w, r)
		if !ok {
			return
		}
		if _, ok := s.esMeta.get(esKey{tenant, esIndex, name}); ok {
			// Logstash takes this 400 to mean its rollover index is there.
			esError(w, http.StatusBadRequest, "resource_already_exists_exception", fmt.Sprintf("index [%s/sluice] already exists", name))
			return
		}
		var def struct {
			Aliases map[string]json.RawMessage `json:"aliases"`
		}
		_ = json.Unmarshal(body, &def)
		aliases := make([]string, 0, len(def.Aliases))
		for a := range def.Aliases {
			aliases = append(aliases, a)
		}
		slices.Sort(aliases)
		kept, _ := json.Marshal(aliases)
		if _, err := s.esMeta.put(esKey{tenant, esIndex, name}, kept); err != nil {
			esError(w, http.StatusBadRequest, "illegal_argument_exception", err.Error())
			return
		}
		esJSON(w, 200, fmt.Appendf(nil, `{"acknowledged":true,"shards_acknowledged":true,"index":%s}`, strconv.Quote(name)))
	}
}

// aliasesOf returns the indices that have the alias name.
func (s *Server) aliasesOf(tenant, alias string) []string {
	var out []string
	for _, idx := range s.esMeta.match(tenant, esIndex, "") {
		o, _ := s.esMeta.get(esKey{tenant, esIndex, idx})
		var as []string
		_ = json.Unmarshal(o.body, &as)
		if slices.Contains(as, alias) {
			out = append(out, idx)
		}
	}
	return out
}

// esAliases serves GET and HEAD /_alias[/NAME].
func (s *Server) esAliases(w http.ResponseWriter, r *http.Request, names string) {
	tenant, ok := s.esTenant(w, r)
	if !ok {
		return
	}
	b := []byte{'{'}
	found := 0
	for _, idx := range s.esMeta.match(tenant, esIndex, "") {
		o, _ := s.esMeta.get(esKey{tenant, esIndex, idx})
		var as []string
		_ = json.Unmarshal(o.body, &as)
		var picked []string
		for _, a := range as {
			if matchNames(names, a) {
				picked = append(picked, a)
			}
		}
		if len(picked) == 0 && names != "" {
			continue
		}
		if found > 0 {
			b = append(b, ',')
		}
		found++
		b = fmt.Appendf(b, `%s:{"aliases":{`, strconv.Quote(idx))
		for i, a := range picked {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `%s:{}`, strconv.Quote(a))
		}
		b = append(b, "}}"...)
	}
	b = append(b, '}')
	if found == 0 && !hasWildcard(names) {
		if r.Method == "HEAD" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		esJSON(w, http.StatusNotFound, fmt.Appendf(nil, `{"error":%s,"status":404}`, strconv.Quote(fmt.Sprintf("alias [%s] missing", names))))
		return
	}
	if r.Method == "HEAD" {
		w.WriteHeader(200)
		return
	}
	esJSON(w, 200, b)
}

// esCatTemplates serves GET /_cat/templates[/NAME]: a text table (with
// ?v a header), or with format=json an array of strings.
func (s *Server) esCatTemplates(w http.ResponseWriter, r *http.Request, names string) {
	tenant, ok := s.esTenant(w, r)
	if !ok {
		return
	}
	type row struct {
		Name          string  `json:"name"`
		IndexPatterns string  `json:"index_patterns"`
		Order         string  `json:"order"`
		Version       *string `json:"version"`
		ComposedOf    string  `json:"composed_of"`
	}
	var rows []row
	for _, kind := range []esKind{esLegacyTemplate, esIndexTemplate} {
		for _, name := range s.esMeta.match(tenant, kind, names) {
			o, _ := s.esMeta.get(esKey{tenant, kind, name})
			var t struct {
				IndexPatterns json.RawMessage `json:"index_patterns"`
				Order         *int64          `json:"order"`
				Priority      *int64          `json:"priority"`
				Version       *int64          `json:"version"`
				ComposedOf    []string        `json:"composed_of"`
			}
			_ = json.Unmarshal(o.body, &t)
			var patterns []string
			if json.Unmarshal(t.IndexPatterns, &patterns) != nil {
				var one string
				if json.Unmarshal(t.IndexPatterns, &one) == nil {
					patterns = []string{one}
				}
			}
			rw := row{Name: name, IndexPatterns: "[" + strings.Join(patterns, ", ") + "]", Order: "0",
				ComposedOf: "[" + strings.Join(t.ComposedOf, ", ") + "]"}
			if kind == esLegacyTemplate {
				rw.ComposedOf = ""
			}
			if t.Order != nil {
				rw.Order = strconv.FormatInt(*t.Order, 10)
			} else if t.Priority != nil {
				rw.Order = strconv.FormatInt(*t.Priority, 10)
			}
			if t.Version != nil {
				v := strconv.FormatInt(*t.Version, 10)
				rw.Version = &v
			}
			rows = append(rows, rw)
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.Name, b.Name) })
	if r.URL.Query().Get("format") == "json" {
		if rows == nil {
			rows = []row{}
		}
		b, _ := json.Marshal(rows)
		esJSON(w, 200, b)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	var b strings.Builder
	if _, v := r.URL.Query()["v"]; v {
		b.WriteString("name index_patterns order version composed_of\n")
	}
	for _, rw := range rows {
		v := ""
		if rw.Version != nil {
			v = *rw.Version
		}
		fmt.Fprintf(&b, "%s %s %s %s %s\n", rw.Name, rw.IndexPatterns, rw.Order, v, rw.ComposedOf)
	}
	io.WriteString(w, b.String())
}

// esNodes serves GET /_nodes[/...]: one node, whose HTTP address is the
// one the client reached, so that a sniffing client keeps using it.
func (s *Server) esNodes(w http.ResponseWriter, r *http.Request) {
	addr := r.Host
	if r.TLS == nil && addr == "" {
		addr = "127.0.0.1:9200"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	q := strconv.Quote
	esJSON(w, 200, fmt.Appendf(nil, `{"_nodes":{"total":1,"successful":1,"failed":0},"cluster_name":"sluice","nodes":{"sluice":{`+
		`"name":"sluice","transport_address":%s,"host":%s,"ip":%s,"version":%q,"build_flavor":"default","build_type":"sluice","build_hash":"sluice",`+
		`"roles":["data","ingest","master"],"attributes":{},"http":{"bound_address":[%s],"publish_address":%s,"max_content_length_in_bytes":%d}}}}`,
		q(addr), q(host), q(host), esVersion, q(addr), q(addr), s.cfg.MaxWholeBodyBytes))
}

// resolveDateMath resolves an index name in date math, as Logstash's
// rollover index "<logstash-{now/d}-000001>": {now/d} and {now} become
// the UTC date as yyyy.MM.dd (Elasticsearch's default format); other
// names are returned as they are.
func resolveDateMath(name string, now time.Time) string {
	if !strings.HasPrefix(name, "<") || !strings.HasSuffix(name, ">") {
		return name
	}
	inner := name[1 : len(name)-1]
	day := now.UTC().Format("2006.01.02")
	inner = strings.ReplaceAll(inner, "{now/d}", day)
	return strings.ReplaceAll(inner, "{now}", day)
}

// filterPath wraps an Elasticsearch handler with filter_path: the reply
// is buffered and, if JSON, filtered.
func filterPath(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get("filter_path")
		if v == "" {
			h(w, r)
			return
		}
		f, err := elastic.ParseFilterPath(v)
		if err != nil {
			esError(w, http.StatusBadRequest, "illegal_argument_exception", err.Error())
			return
		}
		if f == nil {
			h(w, r)
			return
		}
		bw := &bufferedWriter{ResponseWriter: w}
		h(bw, r)
		body := bw.buf.Bytes()
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") && len(body) > 0 {
			if out, err := f.Apply(body); err == nil {
				body = out
			}
		}
		w.Header().Del("Content-Length")
		if bw.code != 0 {
			w.WriteHeader(bw.code)
		}
		w.Write(body)
	}
}

// bufferedWriter holds a reply's status and body.
type bufferedWriter struct {
	http.ResponseWriter
	code int
	buf  bytes.Buffer
}

// Unwrap lets http.ResponseController reach the connection.
func (b *bufferedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

func (b *bufferedWriter) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.buf.Write(p)
}
