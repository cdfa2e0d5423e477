#!/usr/bin/env python3
"""answers.py: reads and compares the answers bench/query.sh gets from sluice and VictoriaLogs.

    answers.py MODE --full F [--kept F --dropped F --kept-lo F --kept-hi F --vl F] [--same-as F]
               [--expect N] [--limit N]

F are reply bodies: sluice's are Loki API JSON (vector, matrix or streams), VictoriaLogs' are the
NDJSON rows of /select/logsql/query. Each is normalized to one of two shapes:

  series: {labels: number}, e.g. {"service=auth": 273}. A matrix (a range query's steps) is summed
          per series over its steps; VictoriaLogs' rows are keyed by their fields other than the
          stats result and `_time`, and summed over `_time` buckets.
  lines:  [(time in ns, trace_id)], one per line returned.

The files:
  --full     sluice's reply to the timed query (over every line it holds);
  --kept     sluice's reply to the same query restricted to the lines VictoriaLogs keeps;
  --dropped  sluice's reply to the same query restricted to the lines VictoriaLogs drops;
  --kept-lo, --kept-hi  sluice's quantiles at 0.987 and 0.993 on the kept lines (mode quantile);
  --vl       VictoriaLogs' reply to its form of the question;
  --same-as  sluice's reply to another form of the same question (the parameterized `| json`),
             which the full reply must equal.

MODE says what must hold:
  count     series of counts: full = kept + dropped per series, and kept = VL exactly.
  quantile  series of quantiles (phi = 0.99): kept and VL name the same series, and VL's value of
            each lies between sluice's quantiles at 0.987 and 0.993 on the kept lines (--kept-lo,
            --kept-hi). VictoriaLogs estimates a quantile from a reservoir of 10,000 samples per worker
            and takes the sample at rank int(phi*n) (lib/logstorage/stats_quantile.go; sluice
            interpolates as Prometheus does): with 10,000 samples or more the standard error of the
            rank is at most 0.001, so the band is 3 of them either side. The p99 of every line, the
            lines without the field counted as empty values (the form in ANCHORS.md), is about the
            0.9857 quantile of the lines with one (30% lack it): outside the band.
  lines     lines (a needle): full = kept + dropped, and kept holds the same trace ids as VL.
  newest    the newest --limit lines: kept and VL return as many lines and the same trace ids,
            except that lines tied at the oldest time returned may differ (either is right);
            full returns at least as many lines as VL and at most --limit.
An empty answer is an error, except on the dropped lines (the needle is not among them). With --same-as, full must equal that reply (counts exactly,
quantiles within 1e-9).

Prints a short summary of the answer for the table on stdout; on any disagreement prints
"MISMATCH: ..." lines to stderr and exits 1.
"""
import argparse
import json
import sys


class Mismatch(Exception):
    pass


def key_of(labels):
    return ",".join("%s=%s" % (k, labels[k]) for k in sorted(labels))


def trace_id_of_line(line):
    try:
        return json.loads(line).get("trace_id")
    except (ValueError, AttributeError):
        return None


def rfc3339_ns(s):
    # 2026-01-15T08:00:09.349829Z, up to 9 fractional digits, always UTC from VictoriaLogs.
    import calendar
    import time as _time
    date, _, rest = s.partition("T")
    rest = rest.rstrip("Z")
    hms, _, frac = rest.partition(".")
    secs = calendar.timegm(_time.strptime(date + "T" + hms, "%Y-%m-%dT%H:%M:%S"))
    return secs * 1_000_000_000 + int((frac + "000000000")[:9])


def read_sluice(path):
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except ValueError as e:
            raise Mismatch("%s: not JSON: %s" % (path, e))
    if doc.get("status") != "success":
        raise Mismatch("%s: status %r" % (path, doc.get("status")))
    data = doc["data"]
    kind = data["resultType"]
    if kind == "vector":
        return "series", {key_of(r["metric"]): float(r["value"][1]) for r in data["result"]}
    if kind == "matrix":
        out = {}
        for r in data["result"]:
            k = key_of(r["metric"])
            out[k] = out.get(k, 0.0) + sum(float(v) for _, v in r["values"])
        return "series", out
    if kind == "streams":
        rows = []
        for s in data["result"]:
            for ts, line in s["values"]:
                rows.append((int(ts), trace_id_of_line(line)))
        return "lines", rows
    raise Mismatch("%s: result type %r" % (path, kind))


def read_vl(path, mode):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise Mismatch("%s:%d: not JSON: %s" % (path, n, e))
    if mode in ("lines", "newest"):
        return "lines", [(rfc3339_ns(r["_time"]), r.get("trace_id")) for r in rows]
    out = {}
    for r in rows:
        stat = [k for k in r if k.startswith(("count(", "quantile("))]
        if len(stat) != 1:
            raise Mismatch("%s: a row without one stats result: %s" % (path, r))
        labels = {k: v for k, v in r.items() if k != stat[0] and k != "_time"}
        k = key_of(labels)
        v = float(r[stat[0]]) if r[stat[0]] != "" else float("nan")
        if mode == "count":
            out[k] = out.get(k, 0.0) + v
        elif k in out:
            raise Mismatch("%s: series %s twice" % (path, k))
        else:
            out[k] = v
    return "series", out


def load(path, side, mode, may_be_empty=False):
    shape, ans = read_sluice(path) if side == "sluice" else read_vl(path, mode)
    want = "lines" if mode in ("lines", "newest") else "series"
    if shape != want:
        raise Mismatch("%s: %s answer where %s was expected" % (path, shape, want))
    if not ans and not may_be_empty:
        raise Mismatch("%s: empty answer" % path)
    return ans


def show_series(s):
    return "{" + ", ".join("%s: %s" % (k or "{}", fmt(v)) for k, v in sorted(s.items())) + "}"


def fmt(v):
    return "%d" % v if v == int(v) else "%.6g" % v


def series_sum(s):
    return sum(s.values())


def counts_equal(a, b):
    return set(a) == set(b) and all(round(a[k]) == round(b[k]) for k in a)


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def summarize(mode, full):
    if mode == "count":
        if len(full) == 1:
            return fmt(series_sum(full))
        return "%d series, total %s" % (len(full), fmt(series_sum(full)))
    if mode == "quantile":
        return "%d series, %s to %s" % (len(full), "%.1f" % min(full.values()), "%.1f" % max(full.values()))
    return "%d line%s" % (len(full), "" if len(full) == 1 else "s")


def check(a):
    mode = a.mode
    full = load(a.full, "sluice", mode)
    summary = summarize(mode, full)
    if a.expect is not None and mode == "count" and round(series_sum(full)) != a.expect:
        raise Mismatch("sluice answers %s, the corpus has %d" % (fmt(series_sum(full)), a.expect))
    if a.same_as:
        other = load(a.same_as, "sluice", mode)
        if mode == "count":
            same = counts_equal(full, other)
        elif mode == "quantile":
            same = set(full) == set(other) and all(close(full[k], other[k], 1e-9) for k in full)
        else:
            same = sorted(full) == sorted(other)
        if not same:
            if mode in ("count", "quantile"):
                raise Mismatch("this form answers %s, the parameterized form %s" % (show_series(full), show_series(other)))
            raise Mismatch("this form returns %d lines, the parameterized form %d" % (len(full), len(other)))
        summary += " (= parameterized)"
    if not a.vl:
        return summary
    kept = load(a.kept, "sluice", mode)
    vl = load(a.vl, "vl", mode)
    if mode == "count":
        dropped = load(a.dropped, "sluice", mode, may_be_empty=True) if a.dropped else {}
        total = {k: kept.get(k, 0.0) + dropped.get(k, 0.0) for k in set(kept) | set(dropped)}
        if not counts_equal(full, total):
            raise Mismatch("sluice's answer %s is not its answer on VL's lines %s plus on the others %s" %
                           (show_series(full), show_series(kept), show_series(dropped)))
        if not counts_equal(kept, vl):
            raise Mismatch("sluice on VL's lines answers %s, VictoriaLogs %s" % (show_series(kept), show_series(vl)))
        summary += "; on VL's lines %s = VL" % (fmt(series_sum(kept)) if len(kept) == 1 else "total " + fmt(series_sum(kept)))
    elif mode == "quantile":
        if set(kept) != set(full):
            raise Mismatch("sluice's series %s, on VL's lines %s" % (sorted(full), sorted(kept)))
        lo = load(a.kept_lo, "sluice", mode)
        hi = load(a.kept_hi, "sluice", mode)
        if set(vl) != set(kept) or set(lo) != set(kept) or set(hi) != set(kept):
            raise Mismatch("sluice's series on VL's lines %s, VictoriaLogs' %s" % (sorted(kept), sorted(vl)))
        bad = [k for k in kept if not lo[k] <= vl[k] <= hi[k]]
        if bad:
            raise Mismatch("VictoriaLogs answers %s; sluice on VL's lines %s, its 0.987 quantiles %s and 0.993 %s"
                           % (show_series(vl), show_series(kept), show_series(lo), show_series(hi)))
        worst = max(abs(kept[k] - vl[k]) / max(abs(kept[k]), abs(vl[k])) for k in kept)
        summary += "; on VL's lines within %.1f%% of VL (and VL within sluice's q0.987–q0.993)" % (100 * worst)
    elif mode == "lines":
        dropped = load(a.dropped, "sluice", mode, may_be_empty=True) if a.dropped else []
        if sorted(t for _, t in full) != sorted(t for _, t in kept + dropped):
            raise Mismatch("sluice's %d lines are not its %d on VL's lines plus %d on the others" % (len(full), len(kept), len(dropped)))
        if sorted(t for _, t in kept) != sorted(t for _, t in vl):
            raise Mismatch("sluice on VL's lines returns trace ids %s, VictoriaLogs %s" %
                           (sorted(t for _, t in kept), sorted(t for _, t in vl)))
        summary += "; on VL's lines %d = VL" % len(kept)
    elif mode == "newest":
        if len(kept) != len(vl):
            raise Mismatch("sluice on VL's lines returns %d lines, VictoriaLogs %d" % (len(kept), len(vl)))
        oldest = min(ts for ts, _ in kept + vl)
        ks = {t for ts, t in kept if ts > oldest}
        vs = {t for ts, t in vl if ts > oldest}
        if ks != vs:
            raise Mismatch("sluice on VL's lines and VictoriaLogs differ in trace ids %s (sluice only) and %s (VL only)" %
                           (sorted(ks - vs), sorted(vs - ks)))
        if len(full) < len(vl) or len(full) > a.limit:
            raise Mismatch("sluice returns %d lines, VictoriaLogs %d, the limit is %d" % (len(full), len(vl), a.limit))
        summary += "; on VL's lines the same %d as VL" % len(kept)
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["count", "quantile", "lines", "newest"])
    p.add_argument("--full", required=True)
    p.add_argument("--kept")
    p.add_argument("--dropped")
    p.add_argument("--vl")
    p.add_argument("--same-as")
    p.add_argument("--kept-lo")
    p.add_argument("--kept-hi")
    p.add_argument("--expect", type=int)
    p.add_argument("--limit", type=int, default=100)
    a = p.parse_args()
    if a.vl and not a.kept:
        p.error("--vl needs --kept")
    if a.vl and a.mode == "quantile" and not (a.kept_lo and a.kept_hi):
        p.error("quantile with --vl needs --kept-lo and --kept-hi")
    try:
        print(check(a))
    except Mismatch as e:
        print("MISMATCH: %s" % e, file=sys.stderr)
        sys.exit(1)
    except (OSError, KeyError, TypeError, IndexError, ValueError) as e:
        print("MISMATCH: unreadable answer: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
