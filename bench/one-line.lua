-- wrk script for one-line NDJSON pushes (BENCHMARKS.md, issue 4):
--   taskset -c 1 wrk -t2 -c256 -d10s --latency -s bench/one-line.lua http://127.0.0.1:3198/insert/jsonline
wrk.method = "POST"
wrk.body   = '{"time":"2026-01-15T08:00:00Z","level":"info","msg":"one line push","service":"api","host":"h1"}\n'
wrk.headers["Content-Type"] = "application/x-ndjson"
