package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/query"
	"github.com/sluicelog/sluice/internal/record"
)

// Tailing: /loki/api/v1/tail upgrades to a WebSocket and sends the lines
// of a log query as they arrive, in Loki's message shape:
// {"streams":[{"stream":{..},"values":[["ns","line"],..]}],"dropped_entries":null}.
//
// It polls the store: first the newest `limit` lines since `start`, then
// every tailPoll the lines after the newest sent, up to now minus
// delay_for. A line that arrives with a time before the newest already
// sent (more than delay_for late) is not shown: raise delay_for for
// shippers that send late.

const (
	tailPoll     = time.Second
	tailMaxBatch = 1000 // lines per message
	maxDelayFor  = 5    // seconds, as Loki's limit
)

func (s *Server) handleTail(w http.ResponseWriter, r *http.Request) {
	q, ok := s.queryRequest(w, r)
	if !ok {
		return
	}
	t, err := s.newTail(q)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	// The library refuses a browser's request from another origin (a page
	// elsewhere reading logs through a user's browser); clients that send
	// no Origin (logcli, Grafana's server) are let in.
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the request
	}
	defer conn.CloseNow()
	ctx := conn.CloseRead(r.Context())
	err = t.run(ctx, s, func(msg []byte) error {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return conn.Write(wctx, websocket.MessageText, msg)
	})
	switch {
	case err == nil, errors.Is(err, context.Canceled), websocket.CloseStatus(err) != -1:
		conn.Close(websocket.StatusNormalClosure, "")
	default:
		s.log.Warn("tail", "query", q.get("query"), "err", err)
		conn.Close(websocket.StatusInternalError, truncate(err.Error(), 120))
	}
}

// tail is one tailing client's state.
type tail struct {
	params query.Params
	expr   *logql.LogExpr
	delay  time.Duration
	limit  int
	// Lines at the newest time sent, so that the next poll, which starts
	// at that time, does not send them twice.
	edge     int64
	edgeSeen map[string]bool
}

func (s *Server) newTail(q *queryRequest) (*tail, error) {
	p, err := q.params()
	if err != nil {
		return nil, err
	}
	expr, err := logql.Parse(p.Query)
	if err != nil {
		return nil, err
	}
	le, ok := expr.(*logql.LogExpr)
	if !ok {
		return nil, fmt.Errorf("%w: tailing needs a log query, not a metric query", errBadParam)
	}
	start, err := q.timeParam("start", q.now.Add(-defaultSince))
	if err != nil {
		return nil, err
	}
	t := &tail{params: p, expr: le, limit: p.Limit}
	if v := q.get("delay_for"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxDelayFor {
			return nil, fmt.Errorf("%w: delay_for must be 0 to %d seconds", errBadParam, maxDelayFor)
		}
		t.delay = time.Duration(n) * time.Second
	}
	t.params.Start = start.UnixNano()
	return t, nil
}

// run sends batches until ctx ends or send fails.
func (t *tail) run(ctx context.Context, s *Server, send func([]byte) error) error {
	// First the newest lines since start, oldest first.
	first := true
	tick := time.NewTicker(tailPoll)
	defer tick.Stop()
	for {
		p := t.params
		p.End = time.Now().Add(-t.delay).UnixNano() + 1
		if first {
			p.Direction, p.Limit = query.Backward, t.limit
		} else {
			p.Direction, p.Limit = query.Forward, tailMaxBatch
		}
		if p.End > p.Start {
			sn := s.st.Snapshot()
			res, err := s.engine.Eval(ctx, sn, t.expr, p)
			sn.Release()
			if err != nil {
				return err
			}
			if msg := t.message(res); msg != nil {
				if err := send(msg); err != nil {
					return err
				}
			}
			if !first && int(res.Stats.LinesOut) >= tailMaxBatch {
				continue // more waiting: no pause
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// message encodes the lines of res not sent before, and moves the
// cursor past them; nil when there are none.
func (t *tail) message(res *query.Result) []byte {
	type entry struct {
		ls record.Labels
		e  query.Entry
	}
	var fresh []entry
	newest := t.edge
	for _, s := range res.Streams {
		for _, e := range s.Entries {
			if e.Time == t.edge && t.edgeSeen[s.Labels.String()+"\x00"+e.Line] {
				continue
			}
			fresh = append(fresh, entry{s.Labels, e})
			newest = max(newest, e.Time)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	slices.SortStableFunc(fresh, func(a, b entry) int { return cmp.Compare(a.e.Time, b.e.Time) })
	if newest != t.edge {
		t.edge, t.edgeSeen = newest, map[string]bool{}
	}
	b := []byte(`{"streams":[`)
	for i, f := range fresh {
		if f.e.Time == t.edge {
			t.edgeSeen[f.ls.String()+"\x00"+f.e.Line] = true
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"stream":`...)
		b = f.ls.AppendJSON(b)
		b = append(b, `,"values":[["`...)
		b = strconv.AppendInt(b, f.e.Time, 10)
		b = append(b, `",`...)
		b = appendJSONString(b, f.e.Line)
		b = append(b, "]]}"...)
	}
	b = append(b, `],"dropped_entries":null}`...)
	t.params.Start = cmp.Or(t.edge, t.params.Start)
	return b
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
