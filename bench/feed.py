#!/usr/bin/env python3
"""feed.py: turns a corpus into what bench/questions.sh loads into sluice and VictoriaLogs, so that
both hold the same lines, with the same times (to the nanosecond) and the same stream labels.

    feed.py json-app   IN OUT     # app NDJSON, for `sluice ingest` and VictoriaLogs' /insert/jsonline
    feed.py json-k8s   IN OUT     # k8s NDJSON, likewise
    feed.py text-mixed IN OUT     # gen.py mixed: one entry per line, {"_time", "kind", "_msg"}
    feed.py text-loghub DIR OUT   # the Loghub samples DIR/*/*_2k.log, concatenated: {"_time", "source", "_msg"}
    feed.py push URL FILE LABEL   # posts the entries of FILE to sluice's Loki push API at URL,
                                  # stream label LABEL, the raw line as the line; prints the count

The JSON shapes are loaded as they are, both sides parsing every line at ingest, with two changes
made to both sides' copy:
  - app: VictoriaLogs cannot read the time in `timestamp` ("2026-01-15 08:00:00,123", 10% of the
    lines) and drops those lines while answering 200. Those lines get a `_time` field in front
    (RFC 3339, the same instant), which both read first (sluice's --time-field and VictoriaLogs'
    _time_field both name `_time` first).
  - k8s: the stream labels a shipper would set, `namespace` and `container`, are lifted to the top
    of each record from `kubernetes.namespace_name` and `kubernetes.container_name`. sluice names a
    stream label from a nested field with its dots (`kubernetes.namespace_name`), which a LogQL
    selector cannot name, so the nested fields cannot be the stream fields.
The text shapes (gen.py mixed, whose nginx lines carry no time sluice reads at their start, and
Loghub, whose times have a dozen formats, some without a year) are loaded as entries with an
explicit time and the raw line as the message: into sluice over its Loki push API (line kept as
sent), into VictoriaLogs as {"_time", LABEL, "_msg"} over /insert/jsonline. mixed takes each
line's own time (its time field, logfmt's ts=, nginx's [...] to the second); Loghub's lines get
2026-01-15T08:00:00Z plus 10 ms per line in file order (their own times span 2005 to 2017).
"""
import datetime
import glob
import json
import os
import re
import sys
import urllib.request

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def ns_of_rfc3339(s):
    # 2026-01-15T08:00:00.123456789Z (0 to 9 fraction digits), UTC.
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z", s)
    if not m:
        raise ValueError("not an RFC 3339 UTC time: %r" % s)
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int((t - EPOCH).total_seconds()) * 10**9 + int(((m.group(2) or "") + "000000000")[:9])


def rfc3339_of_ns(ns):
    s, frac = divmod(ns, 10**9)
    return (EPOCH + datetime.timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%S") + ".%09dZ" % frac


def comma_time_ns(s):
    # 2026-01-15 08:00:00,123 (UTC, as gen.py writes it)
    t = datetime.datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=datetime.timezone.utc)
    return int((t - EPOCH).total_seconds()) * 10**9 + t.microsecond * 1000


def app_ns(d):
    if "time" in d:
        return ns_of_rfc3339(d["time"])
    if "ts" in d:
        return d["ts"] * 10**6
    if "@timestamp" in d:
        return ns_of_rfc3339(d["@timestamp"])
    return comma_time_ns(d["timestamp"])


def json_app(src, dst):
    for line in src:
        line = line.rstrip("\n")
        if '"timestamp"' in line:
            d = json.loads(line)
            if "timestamp" in d and not any(k in d for k in ("time", "ts", "@timestamp")):
                line = '{"_time":"%s",%s' % (rfc3339_of_ns(comma_time_ns(d["timestamp"])), line[1:].lstrip())
        dst.write(line + "\n")


def json_k8s(src, dst):
    for line in src:
        d = json.loads(line)
        k = d["kubernetes"]
        dst.write('{"namespace":%s,"container":%s,%s\n' % (json.dumps(k["namespace_name"]), json.dumps(k["container_name"]), line.rstrip("\n")[1:]))


MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}


def mixed_entry(line):
    """(kind, time in ns) of one line of gen.py mixed."""
    if line.startswith("{"):
        d = json.loads(line)
        if "kubernetes" in d:
            return "k8s", ns_of_rfc3339(d["time"])
        return "app", app_ns(d)
    if line.startswith("ts="):
        return "logfmt", ns_of_rfc3339(line[3:line.index(" ")])
    m = re.search(r" \[(\d\d)/(\w\w\w)/(\d{4}):(\d\d):(\d\d):(\d\d) \+0000\] ", line)
    if not m:
        raise ValueError("a line of no known kind: %r" % line[:200])
    t = datetime.datetime(int(m.group(3)), MONTHS[m.group(2)], int(m.group(1)), int(m.group(4)), int(m.group(5)),
                          int(m.group(6)), tzinfo=datetime.timezone.utc)
    return "nginx", int((t - EPOCH).total_seconds()) * 10**9


def entry(ns, label, value, msg):
    return '{"_time":"%s",%s:%s,"_msg":%s}\n' % (rfc3339_of_ns(ns), json.dumps(label), json.dumps(value), json.dumps(msg, ensure_ascii=False))


def text_mixed(src, dst):
    for line in src:
        line = line.rstrip("\n")
        kind, ns = mixed_entry(line)
        dst.write(entry(ns, "kind", kind, line))


def text_loghub(root, dst):
    base = ns_of_rfc3339("2026-01-15T08:00:00Z")
    files = sorted(glob.glob(os.path.join(root, "*", "*_2k.log")))
    if not files:
        raise SystemExit("feed.py: no Loghub samples in %s/*/*_2k.log" % root)
    n = 0
    for f in files:
        source = os.path.basename(os.path.dirname(f))
        with open(f, encoding="utf-8") as fh:
            for line in fh.read().splitlines():
                line = line.rstrip("\r")
                if not line.strip():
                    continue
                dst.write(entry(base + n * 10_000_000, "source", source, line))
                n += 1


def push(url, path, label):
    """Posts the entries to sluice's /loki/api/v1/push in bodies of about 8 MB, one stream per
    label value, in file order."""
    sent = 0

    def post(streams):
        body = json.dumps({"streams": [{"stream": {label: v}, "values": vals} for v, vals in streams.items()]}).encode()
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=600) as r:
            if r.status // 100 != 2:
                raise SystemExit("feed.py: push answered %d: %s" % (r.status, r.read(500)))
            reply = r.read()
            if reply.strip():
                try:
                    doc = json.loads(reply)
                except ValueError:
                    doc = {}
                if doc.get("rejected"):
                    raise SystemExit("feed.py: sluice rejected lines of a push: %s" % reply[:500])

    streams, size = {}, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            streams.setdefault(d[label], []).append([str(ns_of_rfc3339(d["_time"])), d["_msg"]])
            size += len(line)
            sent += 1
            if size >= 8 << 20:
                post(streams)
                streams, size = {}, 0
    if streams:
        post(streams)
    print(sent)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    cmd = sys.argv[1]
    if cmd == "push":
        push(*sys.argv[2:5])
        return
    src, out = sys.argv[2], sys.argv[3]
    with open(out, "w", encoding="utf-8") as dst:
        if cmd == "text-loghub":
            text_loghub(src, dst)
            return
        with open(src, encoding="utf-8") as f:
            {"json-app": json_app, "json-k8s": json_k8s, "text-mixed": text_mixed}[cmd](f, dst)


if __name__ == "__main__":
    main()
