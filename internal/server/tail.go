package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/query"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
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
//
// Tails share their snapshots of the store (tailSnapshots), and at most
// Admission.MaxTails are open at once, MaxTenantTails per tenant: one
// more gets 429 before the upgrade.

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
	if q.multi() { // as Loki, whose tailer takes one tenant
		http.Error(w, "multi-tenant tail is not supported: name one tenant in X-Scope-OrgID", http.StatusBadRequest)
		return
	}
	if err := s.checkQuerySize(q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t, err := s.newTail(q)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	release, err := s.tails.enter(r.Context(), q.tenant, 0, 0)
	if err != nil {
		refuseGate(w, r, err)
		return
	}
	defer func() {
		release()
		if s.tails.running() == 0 {
			s.tailSnap.idle()
		}
	}()
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
		if first {
			p.Direction, p.Limit = query.Backward, t.limit
		} else {
			p.Direction, p.Limit = query.Forward, tailMaxBatch
		}
		sn := s.tailSnap.acquire(s.st)
		// Up to the time the snapshot was taken: a line stored after it
		// is in the next one.
		p.End = sn.at.Add(-t.delay).UnixNano() + 1
		if p.End <= p.Start {
			s.tailSnap.release(sn)
		} else {
			res, err := s.engine.Eval(ctx, tailSource{sn, t.expr.Selector}, t.expr, p)
			s.tailSnap.release(sn)
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

// tailSnapshotAge is how old a snapshot tails may share. Taking one
// copies the head's view of every stream under the head's lock: with a
// thousand tails each taking its own every second, ingest and every
// other query waited on that lock (/labels took 19 s).
const tailSnapshotAge = tailPoll / 2

// tailSnapshots shares store snapshots among the tails polling within
// tailSnapshotAge of each other.
//
// Concurrency: safe for concurrent use.
type tailSnapshots struct {
	mu  sync.Mutex
	cur *sharedSnapshot
}

// sharedSnapshot is a snapshot, the time just before it was taken, and
// how many tails use it.
type sharedSnapshot struct {
	sn    *store.Snapshot
	at    time.Time
	users int // guarded by tailSnapshots.mu
	// The streams of each tenant and selector, in all time: listing a
	// tenant's streams walks them all (20,000 streams: milliseconds), too
	// much for every tail every second.
	mu      sync.Mutex
	streams map[string][]store.Stream
}

// tailSource is the source of one tail's queries: a shared snapshot
// whose streams it lists once per selector.
type tailSource struct {
	*sharedSnapshot
	sel logql.Selector
}

// Streams returns every stream of tenant that the tail's selector
// matches, whatever their times: a stream without rows in [from, to]
// yields nothing when scanned.
func (ts tailSource) Streams(tenant string, from, to int64) []store.Stream {
	key := tenant + "\x00" + ts.sel.String()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out, ok := ts.streams[key]
	if !ok {
		for _, st := range ts.sn.Streams(tenant, math.MinInt64, math.MaxInt64) {
			if ts.sel.Matches(st.Labels.Value) {
				out = append(out, st)
			}
		}
		if ts.streams == nil {
			ts.streams = map[string][]store.Stream{}
		}
		ts.streams[key] = out
	}
	return out
}

func (ts tailSource) Scan(ctx context.Context, tenant string, stream store.Stream, from, to int64, opts store.ScanOptions, fn store.RowFunc) error {
	return ts.sn.Scan(ctx, tenant, stream, from, to, opts, fn)
}

func (ts tailSource) ScanColumns(ctx context.Context, tenant string, stream store.Stream, from, to int64, shard store.Shard, order store.Order, blockFn store.BlockFunc, metaOK store.MetaFunc, rowFn store.RowFunc) error {
	return ts.sn.ScanColumns(ctx, tenant, stream, from, to, shard, order, blockFn, metaOK, rowFn)
}

// acquire returns a snapshot of st no older than tailSnapshotAge; the
// caller must release it.
func (c *tailSnapshots) acquire(st *store.Store) *sharedSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && time.Since(c.cur.at) < tailSnapshotAge {
		c.cur.users++
		return c.cur
	}
	old := c.cur
	at := time.Now()
	c.cur = &sharedSnapshot{sn: st.Snapshot(), at: at, users: 1}
	if old != nil && old.users == 0 {
		old.sn.Release()
	}
	return c.cur
}

func (c *tailSnapshots) release(s *sharedSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.users--; s.users == 0 && s != c.cur {
		s.sn.Release()
	}
}

// idle releases the current snapshot if no tail uses it, so that no
// part stays pinned once the last tail has gone.
func (c *tailSnapshots) idle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.cur.users == 0 {
		c.cur.sn.Release()
		c.cur = nil
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
