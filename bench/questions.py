#!/usr/bin/env python3
"""questions.py: asks, times and compares the questions of bench/questions.txt; bench/questions.sh
runs it against the servers it started.

    questions.py check FILE                       # parses FILE, prints how many questions per corpus
    questions.py cold-ids FILE CORPUS [ONLY]      # the ids of the questions marked `cold: yes`
    questions.py run  --corpus C --questions FILE --sluice URL --vl URL --runs N --timeout S
                      --lines N --out RESULTS.json --replies DIR [--only REGEX]
    questions.py cold (the same arguments) --id ID  # one ask per side of servers just restarted, added to RESULTS
    questions.py report [--header TEXT] [--total S] [--load TEXT] RESULTS.json...

The questions file: blocks of `key: value` lines separated by blank lines; `#` starts a comment
line. A block with `corpus:` starts a corpus' section:
  corpus    app, k8s, mixed or loghub
  all       a LogQL selector of every line (the line count is checked against the corpus')
  line-id   what identifies a returned line on both sides: a field of the JSON line (dots go into
            nested objects; VictoriaLogs' flattened field of the same name), or `_line` (the raw
            line; VictoriaLogs' _msg)
and every other block is a question of that corpus:
  id        unique, short
  ask       the question as an operator asks it
  kind      instant (sluice: /query at the end of the range, over [2d]; VictoriaLogs: /query over the
            range), step (the whole range in 10 s steps, see below) or log (newest 100 lines,
            direction backward; VictoriaLogs: `| sort by (_time desc) | limit 100`)
  compare   series (default of instant and step: the same label sets and values within 1e-6
            relative), topk (the same values; label sets may differ only among those tied at the
            smallest value kept) or lines (default of log)
  logql     for sluice
  logsql    for VictoriaLogs
  value     VictoriaLogs' result field, when it is not the one field named like `count(*)`
  why       why the two forms ask the same question (shown in the report)
  cold      yes: asked once more on freshly restarted servers (COLD=1)

Answers. sluice's vector and matrix are {labels: value}; VictoriaLogs' rows are keyed by their fields
other than the value and `_time`. Label names are compared with every character other than letters,
digits and `_` as `_` (LogQL's `http_status` is LogsQL's `http.status`), and a label with an empty value
is no label (LogsQL groups lines without the field under ""; LogQL drops the label).

Steps. Loki's range query gives at each step t the count over (t-10s, t]; VictoriaLogs'
`stats by (_time:10s)` counts over [b, b+10s) with b a multiple of 10 s. sluice is asked with start
and end at b+10s-1ns, so its window at t = b+10s-1ns is exactly [b, b+10s) in integer nanoseconds,
and each point is compared with VictoriaLogs' bucket b.
"""
import argparse
import datetime
import http.client
import json
import math
import os
import re
import sys
import time
import urllib.parse

START = "2026-01-15T00:00:00Z"
END = "2026-01-17T00:00:00Z"
STEP = 10  # seconds
LIMIT = 100
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
KINDS = ("instant", "step", "log")
COMPARES = ("series", "topk", "lines")
KEYS = {"id", "ask", "kind", "compare", "logql", "logsql", "value", "why", "cold"}


def die(msg):
    print("questions.py: " + msg, file=sys.stderr)
    sys.exit(2)


# --- the questions file ----------------------------------------------------------------------------

def parse_questions(path):
    """Returns {corpus: {"all", "line-id", "questions": [dict]}} in file order."""
    corpora, cur, ids = {}, None, set()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks, block, start = [], {}, 1
    for n, line in enumerate(text.split("\n") + [""], 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if block:
                blocks.append((start, block))
            block = {}
            continue
        if not block:
            start = n
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not re.fullmatch(r"[a-z-]+", key):
            die("%s:%d: not a `key: value` line: %r" % (path, n, line))
        if key in block:
            die("%s:%d: %s given twice in one block" % (path, n, key))
        block[key] = value.strip()
    for n, b in blocks:
        if "corpus" in b:
            if set(b) != {"corpus", "all", "line-id"}:
                die("%s:%d: a corpus block has corpus, all and line-id, not %s" % (path, n, sorted(b)))
            cur = corpora.setdefault(b["corpus"], {"all": b["all"], "line-id": b["line-id"], "questions": []})
            continue
        if cur is None:
            die("%s:%d: a question before any corpus block" % (path, n))
        missing = {"id", "ask", "kind", "logql", "logsql"} - set(b)
        if missing or set(b) - KEYS:
            die("%s:%d: question %s: missing %s, unknown %s" % (path, n, b.get("id"), sorted(missing), sorted(set(b) - KEYS)))
        if b["id"] in ids:
            die("%s:%d: id %s used twice" % (path, n, b["id"]))
        ids.add(b["id"])
        if b["kind"] not in KINDS:
            die("%s:%d: kind %r is not one of %s" % (path, n, b["kind"], KINDS))
        b.setdefault("compare", "lines" if b["kind"] == "log" else "series")
        if b["compare"] not in COMPARES or (b["compare"] == "lines") != (b["kind"] == "log"):
            die("%s:%d: compare %r does not fit kind %s" % (path, n, b["compare"], b["kind"]))
        cur["questions"].append(b)
    return corpora


def selected(questions, only):
    if not only:
        return questions
    r = re.compile(only)
    return [q for q in questions if r.search(q["id"])]


# --- asking ----------------------------------------------------------------------------------------

class Timeout(Exception):
    pass


def rfc3339_ns(s):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z", s)
    if not m:
        raise ValueError("not an RFC 3339 UTC time: %r" % s)
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int((t - EPOCH).total_seconds()) * 10**9 + int(((m.group(2) or "") + "000000000")[:9])


def get(base, path, params, timeout):
    """GETs base+path?params; returns (status, body, seconds), timing from before the connection
    to the last byte of the body (as curl's time_total). Raises Timeout past timeout seconds."""
    u = urllib.parse.urlsplit(base)
    url = path + "?" + urllib.parse.urlencode(params)
    t0 = time.perf_counter()
    deadline = t0 + timeout
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("GET", url, headers={"Accept-Encoding": "identity"})
        conn.sock.settimeout(max(0.001, deadline - time.perf_counter()))
        resp = conn.getresponse()
        chunks = []
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise Timeout()
            conn.sock.settimeout(left)
            c = resp.read1(1 << 20)
            if not c:
                break
            chunks.append(c)
        return resp.status, b"".join(chunks), time.perf_counter() - t0
    except (TimeoutError, OSError) as e:
        if isinstance(e, TimeoutError) or "timed out" in str(e):
            raise Timeout()
        raise
    finally:
        conn.close()


class Asker:
    def __init__(self, a, corpus):
        self.sluice, self.vl, self.timeout, self.corpus = a.sluice, a.vl, a.timeout, corpus
        self.step_start = self.step_end = None
        self.pids = [p for p in (a.sluice_pid, a.vl_pid) if p]
        self.dirty = False  # a query timed out since the last wait_idle

    def request(self, side, q):
        """(base, path, params) of question q for side."""
        kind, expr = q["kind"], q["logql" if side == "sluice" else "logsql"]
        if side == "sluice":
            if kind == "instant":
                return self.sluice, "/loki/api/v1/query", {"query": expr, "time": END}
            if kind == "log":
                return self.sluice, "/loki/api/v1/query_range", {"query": expr, "start": START, "end": END,
                                                                   "limit": LIMIT, "direction": "backward"}
            off = STEP * 10**9 - 1
            return self.sluice, "/loki/api/v1/query_range", {"query": expr, "start": str(self.step_start + off),
                                                               "end": str(self.step_end + off), "step": STEP}
        if kind == "step":
            return self.vl, "/select/logsql/query", {"query": expr, "start": str(self.step_start),
                                                      "end": str(self.step_end + STEP * 10**9 - 1)}
        p = {"query": expr, "start": START, "end": END}
        if kind == "log":
            p["limit"] = LIMIT
        return self.vl, "/select/logsql/query", p

    def ask(self, side, q):
        """("ok", body, seconds) or ("timeout", None, None) or ("error", message, None)."""
        base, path, params = self.request(side, q)
        try:
            code, body, secs = get(base, path, params, self.timeout)
        except Timeout:
            self.dirty = True
            return "timeout", None, None
        except OSError as e:
            return "error", "%s: %s" % (type(e).__name__, e), None
        if code != 200:
            return "error", "HTTP %d: %s" % (code, body[:300].decode("utf-8", "replace")), None
        return "ok", body, secs

    def running(self):
        """Queries still running: sluice's sluice_queries_running, VictoriaLogs' selects."""
        n = 0
        for base, metric in ((self.sluice, "sluice_queries_running"), (self.vl, "vl_concurrent_select_current")):
            try:
                _, body, _ = get(base, "/metrics", {}, 10)
            except (Timeout, OSError):
                continue
            for line in body.decode().splitlines():
                if line.startswith(metric + " ") or line.startswith(metric + "{"):
                    n += int(float(line.rsplit(" ", 1)[1]))
        return n

    def cpu_busy(self, window=0.5):
        """Whether a server process used more than a tenth of a core over the last window seconds."""
        def ticks():
            t = []
            for pid in self.pids:
                try:
                    with open("/proc/%d/stat" % pid) as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    t.append(int(fields[11]) + int(fields[12]))  # utime + stime
                except (OSError, IndexError, ValueError):
                    t.append(0)
            return t
        a = ticks()
        time.sleep(window)
        b = ticks()
        hz = os.sysconf("SC_CLK_TCK")
        return any((y - x) / hz > window / 10 for x, y in zip(a, b))

    def wait_idle(self, bound):
        """Waits until neither server runs a query and neither process uses CPU: over a tenth of a
        core for a tenth of a second (what one side's collector or background work does after its
        reply slowed the other side's next answer: app-post-errors-plain at 20M lines 123 ms asked
        right after VictoriaLogs, 77 ms once it was quiet), or for half a second after a timeout (a
        query whose client has gone may still be computing). At most bound seconds. Returns the
        seconds waited past the first look, or None if still busy at the bound."""
        t0 = time.monotonic()
        window = 0.5 if self.dirty else 0.1
        while self.running() > 0 or (self.pids and self.cpu_busy(window)):
            if time.monotonic() - t0 > bound:
                return None
            time.sleep(0.2)
        self.dirty = False
        return max(0.0, time.monotonic() - t0 - window)


# --- answers ---------------------------------------------------------------------------------------

class Unreadable(Exception):
    pass


def norm_labels(d):
    return tuple(sorted((re.sub(r"[^A-Za-z0-9_]", "_", k), str(v)) for k, v in d.items() if str(v) != ""))


def show_key(k):
    labels, bucket = k if isinstance(k, tuple) and len(k) == 2 and isinstance(k[1], (int, type(None))) else (k, None)
    s = "{" + ", ".join("%s=%s" % kv for kv in labels) + "}"
    if bucket is not None:
        s += "@" + datetime.datetime.fromtimestamp(bucket, datetime.timezone.utc).strftime("%H:%M:%S")
    return s


def line_id(line, id_field):
    if id_field == "_line":
        return line
    try:
        v = json.loads(line)
    except ValueError:
        return None
    for part in id_field.split("."):
        if not isinstance(v, dict):
            return None
        v = v.get(part)
    return v


def read_sluice(body, q, id_field):
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise Unreadable("sluice: not JSON: %s" % e)
    if doc.get("status") != "success":
        raise Unreadable("sluice: status %r" % doc.get("status"))
    data = doc["data"]
    kind = data["resultType"]
    if q["compare"] == "lines":
        if kind != "streams":
            raise Unreadable("sluice: %s where log lines were expected" % kind)
        return [(int(ts), line_id(line, id_field)) for s in data["result"] for ts, line in s["values"]]
    out = {}
    if kind == "vector":
        for r in data["result"]:
            out[(norm_labels(r["metric"]), None)] = float(r["value"][1])
    elif kind == "scalar":
        out[((), None)] = float(data["result"][1])
    elif kind == "matrix":
        if q["kind"] != "step":
            raise Unreadable("sluice: a matrix for an instant question")
        for r in data["result"]:
            for t, v in r["values"]:
                # t is b+10s-1ns as a float: round to the second, less one step.
                out[(norm_labels(r["metric"]), int(round(float(t))) - STEP)] = float(v)
    else:
        raise Unreadable("sluice: result type %r" % kind)
    return out


def read_vl(body, q, id_field):
    rows = []
    for n, line in enumerate(body.decode("utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise Unreadable("VictoriaLogs: row %d: not JSON: %s" % (n, e))
    if q["compare"] == "lines":
        f = "_msg" if id_field == "_line" else id_field
        return [(rfc3339_ns(r["_time"]), r.get(f)) for r in rows]
    out = {}
    for r in rows:
        if q.get("value"):
            vf = q["value"]
            if vf not in r:
                raise Unreadable("VictoriaLogs: a row without %s: %s" % (vf, r))
        else:
            named = [k for k in r if "(" in k]
            if len(named) != 1:
                raise Unreadable("VictoriaLogs: a row without one stats result (say which with `value:`): %s" % r)
            vf = named[0]
        bucket = None
        if q["kind"] == "step":
            if "_time" not in r:
                raise Unreadable("VictoriaLogs: a row without _time in a step question: %s" % r)
            bucket = rfc3339_ns(r["_time"]) // 10**9
        labels = norm_labels({k: v for k, v in r.items() if k not in (vf, "_time")})
        v = float(r[vf]) if r[vf] != "" else float("nan")
        key = (labels, bucket)
        if key in out:
            raise Unreadable("VictoriaLogs: series %s twice" % show_key(key))
        out[key] = v
    return out


def close(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)


def fmt(v):
    return "%d" % v if v == int(v) and abs(v) < 1e15 else "%.6g" % v


def show_series(s, n=8):
    items = sorted(s.items(), key=lambda kv: (kv[0][1] or 0, kv[0][0]))
    txt = ", ".join("%s: %s" % (show_key(k), fmt(v)) for k, v in items[:n])
    return "{%s%s} (%d values)" % (txt, ", ..." if len(items) > n else "", len(items))


def summarize(q, ans):
    if q["compare"] == "lines":
        return "%d line%s" % (len(ans), "" if len(ans) == 1 else "s")
    if len(ans) == 1:
        return fmt(next(iter(ans.values())))
    if q["kind"] == "step":
        return "%d points of %d series" % (len(ans), len({k[0] for k in ans}))
    return "%d series" % len(ans)


def compare(q, s, v):
    """None if the answers agree, else why not."""
    if q["compare"] == "lines":
        if len(s) != len(v):
            return "sluice returns %d lines, VictoriaLogs %d" % (len(s), len(v))
        if not s:
            return None
        oldest = min(ts for ts, _ in s + v)
        ss = sorted((ts, i or "") for ts, i in s if ts > oldest)
        vs = sorted((ts, i or "") for ts, i in v if ts > oldest)
        if ss != vs:
            a, b = set(ss) - set(vs), set(vs) - set(ss)
            return "lines differ (ties at the oldest time allowed): sluice only %s; VictoriaLogs only %s" % (
                [str(x)[:120] for x in sorted(a)[:3]], [str(x)[:120] for x in sorted(b)[:3]])
        return None
    if q["compare"] == "topk":
        sv, vv = sorted(s.values(), reverse=True), sorted(v.values(), reverse=True)
        if len(sv) != len(vv) or not all(close(a, b) for a, b in zip(sv, vv)):
            return "sluice %s; VictoriaLogs %s" % (show_series(s), show_series(v))
        if sv:
            low = sv[-1]
            if {k for k, x in s.items() if not close(x, low)} != {k for k, x in v.items() if not close(x, low)}:
                return "different series above the tie: sluice %s; VictoriaLogs %s" % (show_series(s), show_series(v))
        return None
    if set(s) != set(v):
        only_s, only_v = set(s) - set(v), set(v) - set(s)
        return "series differ: sluice only %s; VictoriaLogs only %s; sluice %s; VictoriaLogs %s" % (
            [show_key(k) for k in sorted(only_s, key=str)[:4]], [show_key(k) for k in sorted(only_v, key=str)[:4]],
            show_series(s), show_series(v))
    bad = [k for k in s if not close(s[k], v[k])]
    if bad:
        return "values differ in %d series, e.g. %s: sluice %s, VictoriaLogs %s; sluice %s; VictoriaLogs %s" % (
            len(bad), show_key(bad[0]), fmt(s[bad[0]]), fmt(v[bad[0]]), show_series(s), show_series(v))
    return None


# --- running ---------------------------------------------------------------------------------------

def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def log(msg):
    print("questions.sh: " + msg, file=sys.stderr, flush=True)


class SetupError(Exception):
    pass


def setup(a):
    """The corpus' questions and an Asker, after checking that both sides hold every line of the
    corpus and finding the range of its times. Raises SetupError."""
    corpora = parse_questions(a.questions)
    if a.corpus not in corpora:
        raise SetupError("no questions for corpus %s in %s" % (a.corpus, a.questions))
    c = corpora[a.corpus]
    asker = Asker(a, a.corpus)
    asker.timeout = max(a.timeout, 300)  # these questions are not timed
    os.makedirs(a.replies, exist_ok=True)
    # What each side holds, and the whole range for the step questions.
    count_q = {"kind": "instant", "compare": "series", "id": "-",
               "logql": "sum(count_over_time(%s [2d]))" % c["all"], "logsql": "* | stats count()"}
    got = {}
    for side in ("sluice", "vl"):
        st, body, _ = asker.ask(side, count_q)
        if st != "ok":
            raise SetupError("%s: counting the lines: %s %s" % (side, st, body or ""))
        ans = (read_sluice if side == "sluice" else read_vl)(body, count_q, c["line-id"])
        got[side] = int(sum(ans.values()))
    if got["sluice"] != a.lines or got["vl"] != a.lines:
        raise SetupError("%s: the corpus has %d lines; sluice holds %d, VictoriaLogs %d" % (a.corpus, a.lines, got["sluice"], got["vl"]))
    st, body, _ = asker.ask("vl", {"kind": "instant", "logsql": "* | stats min(_time) tmin, max(_time) tmax"})
    if st != "ok":
        raise SetupError("VictoriaLogs: the time range: %s %s" % (st, body))
    r = json.loads(body.decode().splitlines()[0])
    tmin, tmax = rfc3339_ns(r["tmin"]), rfc3339_ns(r["tmax"])
    step = STEP * 10**9
    asker.step_start, asker.step_end = tmin // step * step, tmax // step * step
    log("%s: both hold %d lines, %s to %s" % (a.corpus, a.lines, r["tmin"], r["tmax"]))
    asker.timeout = a.timeout
    return c, asker


def ask_checked(asker, q, side, replies):
    st, body, secs = asker.ask(side, q)
    if st == "ok":
        with open(os.path.join(replies, "%s.%s" % (q["id"], side)), "wb") as f:
            f.write(body)
    return st, body, secs


def measure_floor(asker, bound, n=31):
    """The median time, per side, of a GET of a page that does no work (sluice's /ready,
    VictoriaLogs' /health) asked as questions are: on a new connection, each after the wait for
    idle servers that comes before every timed question (run_question), so that both wake from the
    same rest. It is the client's and the HTTP stack's share of every time, which no engine can go
    below."""
    times = {"sluice": [], "vl": []}
    for _ in range(n):
        for side, base, path in (("sluice", asker.sluice, "/ready"), ("vl", asker.vl, "/health")):
            asker.wait_idle(bound)
            st, _, secs = get(base, path, {}, asker.timeout)
            if st == 200:
                times[side].append(secs)
    return {side: median(t) * 1000 if t else 0.0 for side, t in times.items()}


def run_question(asker, c, q, runs, first, replies, bound):
    """Asks q once per side (the answers compared), then runs times per side, alternating, first
    going first. Returns the result dict."""
    order = [first, "vl" if first == "sluice" else "sluice"]
    res = {"id": q["id"], "ask": q["ask"], "kind": q["kind"], "logql": q["logql"], "logsql": q["logsql"],
           "why": q.get("why", ""), "sluice": None, "vl": None, "status": "ok", "detail": "", "answer": "", "waited": 0.0}
    state, bodies, times = {}, {}, {"sluice": [], "vl": []}

    def one(side, keep):
        w = asker.wait_idle(bound)
        if w is None:
            res["detail"] += " a query was still running after %d s;" % bound
        else:
            res["waited"] += w
        st, body, secs = ask_checked(asker, q, side, replies) if keep else asker.ask(side, q)
        if st != "ok":
            state[side] = st if st == "timeout" else "error: " + body
            return
        if keep:
            bodies[side] = body
        else:
            times[side].append(secs)

    for side in order:
        state[side] = "ok"
        one(side, True)
    for _ in range(runs):
        for side in order:
            if state[side] == "ok":
                one(side, False)
    for side in order:
        if state[side] == "ok":
            res[side] = median(times[side]) * 1000 if times[side] else None
    if res["waited"] >= 1:
        res["detail"] += " waited %.0f s in all for busy servers (a query running, or CPU in use) before asking;" % res["waited"]
    errs = [(side, state[side]) for side in order if state[side] != "ok"]
    if errs:
        res["status"] = "; ".join("%s %s" % ("sluice" if s == "sluice" else "VL", "timeout" if st == "timeout" else "error") for s, st in errs)
        res["detail"] += " ".join("%s: %s" % (s, st) for s, st in errs if st != "timeout")
    if "sluice" in bodies and "vl" in bodies:
        try:
            s = read_sluice(bodies["sluice"], q, c["line-id"])
            v = read_vl(bodies["vl"], q, c["line-id"])
        except (Unreadable, KeyError, TypeError, IndexError, ValueError) as e:
            res["status"], res["detail"] = "DIFF", "unreadable answer: %s: %s" % (type(e).__name__, e)
        else:
            why = compare(q, s, v)
            if why:
                res["status"], res["detail"] = "DIFF", why
            elif not s:
                res["status"], res["detail"] = "empty", "both answers are empty: the question tests nothing"
            res["answer"] = summarize(q, s)
    return res


def cmd_run(a):
    try:
        c, asker = setup(a)
    except SetupError as e:
        log("!!! %s: %s" % (a.corpus, e))
        doc = {"corpus": a.corpus, "lines": a.lines, "runs": a.runs, "timeout": a.timeout, "results": [], "cold": [],
               "error": str(e)}
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        return 1
    qs = selected(c["questions"], a.only)
    bound = a.wait or 10 * a.timeout
    floor = measure_floor(asker, bound)
    log("%s: client floor (a GET of /ready, /health): sluice %.2f ms, VL %.2f ms" % (a.corpus, floor["sluice"], floor["vl"]))
    results = []
    for n, q in enumerate(qs):
        first = "sluice" if n % 2 == 0 else "vl"
        r = run_question(asker, c, q, a.runs, first, a.replies, bound)
        results.append(r)
        ratio = "%.2f" % (r["sluice"] / r["vl"]) if r["status"] == "ok" and r["sluice"] and r["vl"] else "-"
        log("%s %s: sluice %s ms, VL %s ms, ratio %s, %s %s %s" % (a.corpus, q["id"], ms(r["sluice"]), ms(r["vl"]), ratio,
                                                             r["status"], r["answer"], r["detail"]))
    doc = {"corpus": a.corpus, "lines": a.lines, "runs": a.runs, "timeout": a.timeout, "results": results, "cold": [],
           "step_start": asker.step_start, "step_end": asker.step_end, "floor": floor}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    return 1 if any(r["status"] == "DIFF" or "error" in r["status"] for r in results) else 0


def cmd_cold(a):
    # No other query before this one: the servers have just started.
    with open(a.out, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("error"):
        return 1
    c = parse_questions(a.questions)[a.corpus]
    asker = Asker(a, a.corpus)
    asker.step_start, asker.step_end = doc["step_start"], doc["step_end"]
    q = [q for q in c["questions"] if q["id"] == a.id]
    if not q:
        die("no question %s" % a.id)
    q = q[0]
    out = {"id": q["id"]}
    # Both processes settle first: VictoriaLogs starts right after
    # sluice, and a first query that shares the 2 cores with the other
    # server's start-up (or its own: sluice warms its block cache) times
    # that, not itself.
    asker.dirty = True
    asker.wait_idle(a.wait or 10 * a.timeout)
    for side in ("sluice", "vl"):
        st, _, secs = asker.ask(side, q)
        out[side] = secs * 1000 if st == "ok" else st
        asker.wait_idle(a.wait or 10 * a.timeout)
    with open(a.out, encoding="utf-8") as f:
        doc = json.load(f)
    doc["cold"].append(out)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    log("%s %s cold: sluice %s ms, VL %s ms" % (a.corpus, q["id"], ms(out["sluice"]), ms(out["vl"])))
    return 0


# --- the report ------------------------------------------------------------------------------------

def ms(x):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return "%.1f" % x if x < 100 else "%.0f" % x


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def md(s):
    return s.replace("|", "\\|")


def cmd_report(a):
    docs = []
    if not a.results:
        print("questions.py: no results to report", file=sys.stderr)
        return 1
    for p in a.results:
        with open(p, encoding="utf-8") as f:
            docs.append(json.load(f))
    order = {"app": 0, "k8s": 1, "mixed": 2, "loghub": 3}
    docs.sort(key=lambda d: order.get(d["corpus"], 9))
    out = []
    if a.header:
        out.append(a.header)
    out.append("- the questions and their LogQL and LogsQL: `bench/questions.txt`; sluice's instant queries at %s over [2d],"
               " log queries over [%s, %s] limit %d backward, step questions over each corpus' whole range in %d s steps"
               % (END, START, END, LIMIT, STEP))
    if docs:
        out.append("- each question asked once per side untimed (the answers compared), then %d times per side alternating;"
                   " median; timeout %g s" % (docs[0]["runs"], docs[0]["timeout"]))
    if a.total is not None:
        out.append("- the whole run took %d s%s" % (a.total, "; making and loading each corpus (seconds; a few when cached): " + a.load.rstrip(", ") if a.load else ""))
    bad = 0
    all_ratios = []
    for d in docs:
        rs = d["results"]
        ratios = [(r["sluice"] / r["vl"], r["id"]) for r in rs if r["status"] == "ok" and r["sluice"] and r["vl"]]
        all_ratios += ratios
        out.append("")
        out.append("### %s (%d lines)" % (d["corpus"], d["lines"]))
        out.append("")
        if d.get("error"):
            out.append("Not run: %s" % md(d["error"]))
            bad += 1
            continue
        fl = d.get("floor") or {"sluice": 0.0, "vl": 0.0}
        if fl["sluice"] or fl["vl"]:
            out.append("Client floor (the median GET of /ready and of /health, asked as the questions are): sluice %.2f ms,"
                       " VL %.2f ms. Above floor: (sluice - its floor) / (VL - its floor), when VL's time is over its floor."
                       % (fl["sluice"], fl["vl"]))
            out.append("")
        out.append("| id | question | sluice ms | VL ms | sluice / VL | above floor | status |")
        out.append("|---|---|---|---|---|---|---|")
        for r in rs:
            ratio = "%.2f" % (r["sluice"] / r["vl"]) if r["status"] == "ok" and r["sluice"] and r["vl"] else "-"
            above = "-"
            if r["status"] == "ok" and r["sluice"] and r["vl"] and r["vl"] > fl["vl"]:
                above = "%.2f" % (max(r["sluice"] - fl["sluice"], 0) / (r["vl"] - fl["vl"]))
            # A side that timed out in a timed run may have answered the untimed ask: then the
            # answers were compared all the same.
            status = r["status"] + (" (%s)" % r["answer"] if r["answer"] and r["status"] != "DIFF" else "")
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (r["id"], md(r["ask"]), ms(r["sluice"]), ms(r["vl"]), ratio, above, md(status)))
        g = geomean([x for x, _ in ratios])
        out.append("")
        if ratios:
            worst = max(ratios)
            out.append("Geometric mean of sluice / VL: %.2f over %d questions; worst %.2f (%s)." % (g, len(ratios), worst[0], worst[1]))
        else:
            out.append("No question answered on both sides with the same answer.")
        not_ok = [r for r in rs if r["status"] != "ok"]
        if not_ok:
            out.append("Not timed as fine (%d): %s." % (len(not_ok), ", ".join("%s (%s)" % (r["id"], r["status"]) for r in not_ok)))
        for r in not_ok:
            if r["status"] == "DIFF" or "error" in r["status"]:
                bad += 1
            if r["detail"].strip():
                out.append("- %s: %s" % (r["id"], md(r["detail"].strip())[:1500]))
        if d["cold"]:
            warm = {r["id"]: r for r in rs}
            out.append("")
            out.append("Cold (first query after a restart of both servers, once neither uses CPU; the OS page cache stays warm):")
            out.append("")
            out.append("| id | sluice cold ms | sluice warm ms | VL cold ms | VL warm ms |")
            out.append("|---|---|---|---|---|")
            for cr in d["cold"]:
                w = warm.get(cr["id"], {})
                out.append("| %s | %s | %s | %s | %s |" % (cr["id"], ms(cr["sluice"]), ms(w.get("sluice")), ms(cr["vl"]), ms(w.get("vl"))))
    if len(docs) > 1 and all_ratios:
        worst = max(all_ratios)
        out.append("")
        out.append("All corpora: geometric mean of sluice / VL %.2f over %d questions; worst %.2f (%s)." % (
            geomean([x for x, _ in all_ratios]), len(all_ratios), worst[0], worst[1]))
    text = "\n".join(out)
    print(text)
    print()
    print("---- Markdown for BENCHMARKS.md (the above, as is) ----")
    print("```markdown")
    print(text.strip())
    print("```")
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("file")
    c = sub.add_parser("cold-ids")
    c.add_argument("file")
    c.add_argument("corpus")
    c.add_argument("only", nargs="?", default="")
    for name in ("run", "cold"):
        c = sub.add_parser(name)
        c.add_argument("--corpus", required=True)
        c.add_argument("--questions", required=True)
        c.add_argument("--sluice", required=True)
        c.add_argument("--vl", required=True)
        c.add_argument("--runs", type=int, default=3)
        c.add_argument("--timeout", type=float, default=30)
        c.add_argument("--sluice-pid", type=int, default=0)
        c.add_argument("--vl-pid", type=int, default=0)
        c.add_argument("--wait", type=float, default=0, help="seconds to wait for running queries (0: 10 x timeout)")
        c.add_argument("--lines", type=int, required=True)
        c.add_argument("--out", required=True)
        c.add_argument("--replies", required=True)
        c.add_argument("--only", default="")
        if name == "cold":
            c.add_argument("--id", required=True)
    c = sub.add_parser("report")
    c.add_argument("--header", default="")
    c.add_argument("--total", type=int)
    c.add_argument("--load", default="")
    c.add_argument("results", nargs="*")
    a = p.parse_args()
    if a.cmd == "check":
        qs = parse_questions(a.file)
        print("questions.sh: %d questions: %s" % (sum(len(c["questions"]) for c in qs.values()),
                                                  ", ".join("%s %d" % (k, len(c["questions"])) for k, c in qs.items())))
        return 0
    if a.cmd == "cold-ids":
        qs = parse_questions(a.file).get(a.corpus, {"questions": []})["questions"]
        print(" ".join(q["id"] for q in selected(qs, a.only) if q.get("cold") == "yes"))
        return 0
    if a.cmd == "run":
        return cmd_run(a)
    if a.cmd == "cold":
        return cmd_cold(a)
    return cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
