package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/query"
)

var tailCommand = &command{
	name:  "tail",
	args:  "[--url URL] [--since D] [--limit N] [--output text|jsonl|raw] 'LOGQL'",
	short: "follow the lines of a log query live, from a server",
	long: `Prints the newest lines of a log query (--limit of them, from the last --since),
then every new line as the server stores it, until interrupted. It follows a
running sluice or Loki server through the Loki tail API (a WebSocket), at
--url (default $SLUICE_URL or http://localhost:3100): the server holds its data
directory, so there is nothing to follow in one that no server writes to.

--delay-for S (0 to 5 seconds) waits that long for late lines before showing
a second, for shippers whose lines arrive out of order.`,
	flags: func(fs *flag.FlagSet) func([]string, *env) error {
		var o tailOpts
		fs.StringVar(&o.url, "url", "", "the server (default $SLUICE_URL or http://localhost:3100)")
		fs.StringVar(&o.tenant, "tenant", "", "the tenant (X-Scope-OrgID)")
		fs.StringVar(&o.since, "since", "1h", "show the last lines from this `duration` back first")
		fs.IntVar(&o.limit, "limit", 30, "at most this many past lines first")
		fs.IntVar(&o.delay, "delay-for", 0, "wait this many `seconds` for late lines")
		fs.StringVar(&o.output, "output", "text", "text, jsonl or raw")
		fs.StringVar(&o.output, "o", "text", "shorthand for --output")
		return o.run
	},
}

type tailOpts struct {
	url, tenant, since, output string
	limit, delay               int
}

func (o *tailOpts) run(args []string, e *env) error {
	if len(args) != 1 {
		return usageError("give one LogQL log query")
	}
	expr, err := parseQuery(o.output, args[0])
	if err != nil {
		return err
	}
	if _, ok := expr.(*logql.LogExpr); !ok {
		return usageError("tail follows a log query, not a metric query")
	}
	since, err := logql.ParseDuration(o.since)
	if err != nil {
		return usageError("--since %q: %v", o.since, err)
	}
	base := cmp.Or(o.url, os.Getenv("SLUICE_URL"), "http://localhost:3100")
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/loki/api/v1/tail")
	if err != nil {
		return usageError("--url %q: %v", base, err)
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.RawQuery = url.Values{"query": {args[0]}, "limit": {strconv.Itoa(o.limit)}, "delay_for": {strconv.Itoa(o.delay)},
		"start": {strconv.FormatInt(time.Now().Add(-since).UnixNano(), 10)}}.Encode()
	ctx, stop := e.context()
	defer stop()
	h := http.Header{}
	if o.tenant != "" {
		h.Set("X-Scope-OrgID", o.tenant)
	}
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.Body != nil {
			var msg [512]byte
			n, _ := resp.Body.Read(msg[:])
			return fmt.Errorf("tail %s: %v: %s", base, err, strings.TrimSpace(string(msg[:n])))
		}
		return fmt.Errorf("tail %s: %v", base, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	colour := isTerminal(e.stdout)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted
			}
			return fmt.Errorf("tail: %v", err)
		}
		var msg struct {
			Streams []struct {
				Stream map[string]string `json:"stream"`
				Values [][2]string       `json:"values"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			return fmt.Errorf("tail: decode a message: %v", err)
		}
		res := &query.Result{Type: "streams"}
		for _, s := range msg.Streams {
			st := query.Stream{Labels: labelsOf(s.Stream)}
			for _, v := range s.Values {
				ns, err := strconv.ParseInt(v[0], 10, 64)
				if err != nil {
					return fmt.Errorf("tail: entry time %q: %v", v[0], err)
				}
				st.Entries = append(st.Entries, query.Entry{Time: ns, Line: v[1]})
			}
			res.Streams = append(res.Streams, st)
		}
		if err := printResult(e.stdout, res, o.output, query.Forward, colour); err != nil {
			return err
		}
	}
}
