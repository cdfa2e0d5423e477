package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluicelog/sluice/internal/rules"
)

// rulesAdmin is the running rules as GET and PUT /api/v1/rules see them:
// a *rules.Live.
type rulesAdmin interface {
	Current() *rules.Set
	Put(data []byte, dryRun bool) (*rules.Set, bool, error)
}

// MaxRulesBody bounds the body of PUT /api/v1/rules.
const MaxRulesBody = 64 << 20

func (s *Server) rulesRoutes() {
	s.mux.Handle("GET /api/v1/rules", s.admin(http.HandlerFunc(s.handleRulesGet)))
	s.mux.Handle("PUT /api/v1/rules", s.admin(http.HandlerFunc(s.handleRulesPut)))
}

// rulesInfo is a version of the rules, as the API shows it.
type rulesInfo struct {
	File   string   `json:"file"`
	SHA256 string   `json:"sha256"`
	Loaded string   `json:"loaded"`           // RFC 3339
	Tenant string   `json:"tenant,omitempty"` // ?tenant=: rules lists this tenant's alone
	Rules  []string `json:"rules"`            // the names, in order
	Source string   `json:"source,omitempty"`
}

func infoOf(set *rules.Set, withSource bool) rulesInfo {
	in := rulesInfo{File: set.File, SHA256: set.Hash, Loaded: set.Loaded.UTC().Format(time.RFC3339Nano), Rules: set.Names()}
	if withSource {
		in.Source = string(set.Source)
	}
	return in
}

// liveRules returns the running rules, or answers 404 when the server
// runs without --rules.
func (s *Server) liveRules(w http.ResponseWriter) (rulesAdmin, bool) {
	live, ok := s.cfg.Rules.(rulesAdmin)
	if !ok || live.Current() == nil {
		http.Error(w, "rules: the server runs without --rules: there are no rules to show or replace (start it with --rules FILE)", http.StatusNotFound)
		return nil, false
	}
	return live, true
}

// handleRulesGet answers the running rules file: its path, SHA-256, load
// time, rule names and bytes. The file is one for every tenant (a rule's
// tenant: key limits it to one); ?tenant=T lists the names of the rules
// that apply to T's lines alone.
func (s *Server) handleRulesGet(w http.ResponseWriter, r *http.Request) {
	live, ok := s.liveRules(w)
	if !ok {
		return
	}
	set := live.Current()
	info := infoOf(set, true)
	if t := r.URL.Query().Get("tenant"); t != "" {
		info.Tenant, info.Rules = t, set.NamesFor(t)
	}
	writeRulesJSON(w, http.StatusOK, info)
}

// handleRulesPut checks the body as a rules file and, unless
// ?dry_run=1, writes it over the rules file and swaps it in. A bad file
// answers 400 with each problem (line, column, and the message naming the
// rule's index, name and key); the running rules stay.
func (s *Server) handleRulesPut(w http.ResponseWriter, r *http.Request) {
	live, ok := s.liveRules(w)
	if !ok {
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRulesBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			http.Error(w, fmt.Sprintf("rules: the body is over %d bytes (MaxRulesBody)", MaxRulesBody), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "rules: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	dry := r.URL.Query().Get("dry_run")
	dryRun := dry == "1" || dry == "true"
	set, changed, err := live.Put(data, dryRun)
	var le *rules.Error
	switch {
	case errors.As(err, &le):
		type problem struct {
			Line int    `json:"line,omitempty"`
			Col  int    `json:"col,omitempty"`
			Msg  string `json:"msg"`
		}
		out := struct {
			Status string    `json:"status"`
			Error  string    `json:"error"`
			Errors []problem `json:"errors"`
		}{Status: "error", Error: le.Error()}
		for _, p := range le.Problems {
			out.Errors = append(out.Errors, problem{p.Line, p.Col, p.Msg})
		}
		writeRulesJSON(w, http.StatusBadRequest, out)
		return
	case err != nil:
		http.Error(w, "rules: "+err.Error()+" (the running rules stay)", http.StatusInternalServerError)
		return
	}
	writeRulesJSON(w, http.StatusOK, struct {
		Status  string `json:"status"`
		DryRun  bool   `json:"dry_run"`
		Changed bool   `json:"changed"`
		rulesInfo
	}{"ok", dryRun, changed, infoOf(set, false)})
}

func writeRulesJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
