#!/usr/bin/env bash
# sink-pg.sh: sluice -> PostgreSQL (issue 17's "≥ 500,000 rows/s, and ≥ 0.5x of a bare pgx CopyFrom of
# the same rows measured in the same run", and "ingest throughput with one active sink ≥ 80% of the
# no-sink figure in the same run; memory bounded by configuration, reported").
#
#   bench/sink-pg.sh                       # the canonical corpus (2M lines), RUNS=3
#   LINES=20000 RUNS=1 bench/sink-pg.sh    # a quick check on a small corpus
#   BATCH=20000 LINGER=200ms bench/sink-pg.sh
#   CONCURRENCY=2 bench/sink-pg.sh         # two batches in PostgreSQL at once (the sink's concurrency)
#   PACE=0.25 bench/sink-pg.sh             # the sink paced while ingest is busy (sinks[].pace)
#   JSON_TYPE=json bench/sink-pg.sh        # labels and fields as json (the sink's json_type), in both tables
#   PROFILE=/tmp/prof LINES=200000 RUNS=1 bench/sink-pg.sh   # CPU profiles of sluice during the sink runs
#
# Starts a private PostgreSQL 15 (as internal/sink/postgres/pgtest does: initdb as the postgres user
# when root, trust authentication, 127.0.0.1 on a free port, data in a temp dir, PostgreSQL's defaults
# otherwise, fsync on; PG_OPTS adds server options; PG_NICE runs it, and so its backends, at that
# nice level: PostgreSQL on the same 2 cores then yields them to ingest and catches up after), then RUNS times, the order of the sides reversed
# every other run:
#   - sink: `sluice serve` on a fresh data directory with one postgres sink of every tenant (the
#     default table; BATCH, LINGER, CONCURRENCY, POOL, PACE set its batch, linger, concurrency, pool and pace when given), the corpus posted
#     in PARTS parallel POSTs as bench/http.sh does. Rows/s is the lines accepted over the time from
#     the first request until GET /api/v1/sinks shows the sink's backlog at 0 with every accepted line
#     sent; the table's row count is then checked. Ingest lines/s is the accepted lines over the time
#     from the first request to the last reply, as in bench/http.sh.
#   - nosink: the same posts to a `sluice serve` without sinks: the ingest figure the sink's is
#     compared with.
#   - copy: bench/pgcopy parses the same corpus into the same rows (sluice's parser and the sink's
#     record code, untimed) and copies them with one bare pgx CopyFrom into a fresh table of the same
#     shape; rows/s of the CopyFrom alone.
# PROFILE=DIR serves with --pprof and writes a CPU profile of sluice for each sink run into DIR
# (sink.RUN.pprof, from the first request: PROFILE_SECS, default 10 s) and a heap profile when the
# last reply came (heap.RUN.pprof).
# The servers' peak RSS (VmHWM) is reported with and without the sink, at the last reply and once
# the store settled (wait_stored: the head flushes that follow the last reply done; with the sink,
# also once it caught up): before, the run without the sink was read at its last reply, before
# its head was flushed, and the sink's run after, which made the sink look 270 MB dearer. Medians of the runs, and each
# run's figures. Exits non-zero when a reply is not 2xx, a line is rejected, or a table does not hold
# exactly the accepted lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=sink-pg
source "$root/bench/lib.sh"
use_corpus
runs="${RUNS:-3}"
parts="${PARTS:-4}"
split_dir="$cache/http-parts-$corpus_name-$parts"
bin="$root/bin/sluice"

pg_prepare
run="$(mktemp -d "$cache/sink-pg-run.XXXXXX")"
cleanup() {
	stop_servers
	stop_pg
	if [[ -n "${KEEP_PG_LOG:-}" ]]; then cp "$pgdir/log" "$KEEP_PG_LOG" 2>/dev/null || true; fi
	rm -rf "$run" "$pgdir" "$split_dir.tmp"
}
trap cleanup EXIT

build_sluice
log "building bench/pgcopy"
(cd "$root" && go build -o "$run/pgcopy" ./bench/pgcopy)

lines=$(wc -l <"$corpus")
bytes=$(stat -c %s "$corpus")
split_corpus

pg_nice=()
if [[ -n "${PG_NICE:-}" ]]; then pg_nice=(nice -n "$PG_NICE"); fi
start_pg "${pg_nice[@]}"
psql() { PGOPTIONS='-c client_min_messages=warning' "$pgbin/psql" -X -q -At -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }
log "PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port (pid $pg_pid)"

problems=0

# pg_cpu: the CPU seconds of the PostgreSQL backends that have exited (the postmaster's waited-for
# children), the noise of the machine aside (cpu_of, post_corpus, wait_stored: bench/lib.sh).
pg_cpu() { awk -v hz="$hz" '{printf "%.2f", ($16 + $17) / hz}' "/proc/$pg_pid/stat"; }
# pg_cpu_all: the CPU seconds of PostgreSQL so far: the postmaster's own, its exited backends' and
# its live ones' (a sink's backend lives as long as its connection).
pg_cpu_all() {
	local p t
	t="$(awk -v hz="$hz" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13 + $14 + $15) / hz}' "/proc/$pg_pid/stat")"
	for p in $(ps -o pid= --ppid "$pg_pid"); do
		t="$(awk -v t="$t" -v hz="$hz" '{sub(/.*\) /, ""); printf "%.2f", t + ($12 + $13) / hz}' "/proc/$p/stat" 2>/dev/null || echo "$t")"
	done
	echo "$t"
}
# ingest_cpu SPID START SCPU0 PCPU0 PORT: what the ingest phase (the first request to the last reply)
# cost: sluice's CPU, PostgreSQL's, each in cores, and sluice's WAL fsyncs (count, mean latency),
# which PostgreSQL's writes on the same disk slow.
ingest_cpu() {
	local secs m
	secs="$(awk -v a="$2" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}')"
	m="$(curl -sf "127.0.0.1:$5/metrics")" || true
	awk -v s="$secs" -v a="$3" -v b="$(cpu_of "$1")" -v c="$4" -v d="$(pg_cpu_all)" \
		-v fs="$(awk '/^sluice_wal_fsync_duration_seconds_sum / {print $2}' <<<"$m")" \
		-v fn="$(awk '/^sluice_wal_fsync_duration_seconds_count / {print $2}' <<<"$m")" \
		'BEGIN {printf "ingest %.2f s: sluice CPU %.2f s (%.2f cores), PostgreSQL %.2f s (%.2f cores); WAL fsyncs %d, mean %.2f ms",
			s, b - a, (b - a) / s, d - c, (d - c) / s, fn, (fn > 0 ? 1000 * fs / fn : 0)}'
}

run_sink() {
	local port data start ingested done_at st backlog sent count deliver_s batches retries scpu pcpu pcpu0
	port="$(free_port)"
	data="$run/data"
	psql "DROP TABLE IF EXISTS sluice_logs; DROP TABLE IF EXISTS sluice_sink_positions"
	{
		echo "sinks:"
		echo "  - name: bench-pg"
		echo "    type: postgres"
		echo "    tenant: '*'"
		if [[ -n "${BATCH:-}" ]]; then echo "    batch: $BATCH"; fi
		if [[ -n "${LINGER:-}" ]]; then echo "    linger: $LINGER"; fi
		if [[ -n "${CONCURRENCY:-}" ]]; then echo "    concurrency: $CONCURRENCY"; fi
		if [[ -n "${PACE:-}" ]]; then echo "    pace: $PACE"; fi
		echo "    postgres:"
		echo "      dsn: '$dsn'"
		if [[ -n "${POOL:-}" ]]; then echo "      pool: $POOL"; fi
		if [[ -n "${JSON_TYPE:-}" ]]; then echo "      json_type: $JSON_TYPE"; fi
	} >"$run/sluice.yaml"
	local prof=() ppid=""
	if [[ -n "${PROFILE:-}" ]]; then prof=(--pprof); fi
	# shellcheck disable=SC2086
	start_sluice "$port" "$data" --config "$run/sluice.yaml" "${prof[@]}" ${SERVE_FLAGS:-}
	pcpu0="$(pg_cpu)"
	local icpu0 ipcpu0 iphase
	icpu0="$(cpu_of "$spid")" ipcpu0="$(pg_cpu_all)"
	if [[ -n "${PROFILE:-}" ]]; then
		mkdir -p "$PROFILE"
		curl -sf -o "$PROFILE/sink.$r.pprof" "127.0.0.1:$port/debug/pprof/profile?seconds=${PROFILE_SECS:-10}" &
		ppid=$!
	fi
	start=$(now)
	post_corpus "$port"
	ingested=$(now)
	iphase="$(ingest_cpu "$spid" "$start" "$icpu0" "$ipcpu0" "$port")"
	rss_reply_sink+="$(peak_rss "$spid") "
	if [[ -n "${PROFILE:-}" ]]; then curl -sf -o "$PROFILE/heap.$r.pprof" "127.0.0.1:$port/debug/pprof/heap" || log "!!! no heap profile"; fi
	wait_sink "$port"
	done_at=$(now)
	scpu="$(cpu_of "$spid")"
	wait_stored "$port"
	if [[ -n "$ppid" ]]; then wait "$ppid" || log "!!! no CPU profile"; fi
	# The time the sink spent in the destination's Deliver (COPY and commit), of the whole.
	deliver_s="$(curl -sf "127.0.0.1:$port/metrics" | awk '/^sluice_sink_delivery_seconds_sum/ {print $2}')"
	batches="$(curl -sf "127.0.0.1:$port/metrics" | awk '/^sluice_sink_delivery_seconds_count/ {print $2}')"
	retries="$(curl -sf "127.0.0.1:$port/metrics" | awk '/^sluice_sink_retries_total/ {print $2}')"
	rss_sink+="$(peak_rss "$spid") "
	stop_server "$spid" || { log "!!! sluice exited with status $? when stopped"; tail -20 "$run/serve.log" >&2; problems=1; }
	count="$(psql "SELECT count(*) FROM sluice_logs")"
	# The sink's backends exited with the server's connections.
	pcpu="$(awk -v a="$pcpu0" -v b="$(pg_cpu)" 'BEGIN {printf "%.2f", b - a}')"
	if [[ "$count" != "$accepted" ]]; then
		log "!!! sluice_logs holds $count rows, $accepted lines were accepted"
		problems=1
	fi
	fig_sink+="$(rate "$accepted" "$start" "$done_at") "
	fig_ingest_sink+="$(rate "$accepted" "$start" "$ingested") "
	catchup+="$(awk -v a="$ingested" -v b="$done_at" 'BEGIN {printf "%.2f", b - a}') "
	log "run $r sink: $accepted rows, ingest $(rate "$accepted" "$start" "$ingested") lines/s, in PostgreSQL $(rate "$accepted" "$start" "$done_at") rows/s (caught up $(awk -v a="$ingested" -v b="$done_at" 'BEGIN {printf "%.2f", b - a}') s after the last reply, $(awk -v a="$start" -v b="$done_at" 'BEGIN {printf "%.2f", b - a}') s, ${batches:-?} batches, ${retries:-?} retries, ${deliver_s:-?} s in Deliver), peak RSS $(peak_rss_last "$rss_sink") MB ($(peak_rss_last "$rss_reply_sink") MB at the last reply), CPU: sluice $scpu s, PostgreSQL backends $pcpu s; $iphase"
	psql "DROP TABLE IF EXISTS sluice_logs; DROP TABLE IF EXISTS sluice_sink_positions"
	rm -rf "$data"
}

run_nosink() {
	local port data start ingested
	port="$(free_port)"
	data="$run/data"
	# shellcheck disable=SC2086
	start_sluice "$port" "$data" ${SERVE_FLAGS:-}
	local icpu0 ipcpu0 iphase
	icpu0="$(cpu_of "$spid")" ipcpu0="$(pg_cpu_all)"
	start=$(now)
	post_corpus "$port"
	ingested=$(now)
	iphase="$(ingest_cpu "$spid" "$start" "$icpu0" "$ipcpu0" "$port")"
	rss_reply_nosink+="$(peak_rss "$spid") "
	local scpu
	wait_stored "$port"
	scpu="$(cpu_of "$spid")"
	rss_nosink+="$(peak_rss "$spid") "
	stop_server "$spid" || { log "!!! sluice exited with status $? when stopped"; tail -20 "$run/serve.log" >&2; problems=1; }
	fig_ingest_nosink+="$(rate "$accepted" "$start" "$ingested") "
	log "run $r nosink: ingest $(rate "$accepted" "$start" "$ingested") lines/s, peak RSS $(peak_rss_last "$rss_nosink") MB ($(peak_rss_last "$rss_reply_nosink") MB at the last reply), CPU: sluice $scpu s (to the store settled); $iphase"
	rm -rf "$data"
}

run_copy() {
	local out n pcpu0
	pcpu0="$(pg_cpu)"
	out="$("$run/pgcopy" -dsn "$dsn" -corpus "$corpus" -table pgcopy_logs -types "${JSON_TYPE:-jsonb}")"
	n="$(psql "SELECT count(*) FROM pgcopy_logs")"
	out+=", PostgreSQL backends CPU $(awk -v a="$pcpu0" -v b="$(pg_cpu)" 'BEGIN {printf "%.2f", b - a}') s"
	if [[ "$n" != "$lines" ]]; then
		log "!!! pgcopy_logs holds $n rows, the corpus has $lines lines"
		problems=1
	fi
	fig_copy+="$(awk '{print $6 + 0}' <<<"$out") "
	log "run $r copy: $out"
	psql "DROP TABLE IF EXISTS pgcopy_logs"
}

peak_rss_last() { awk '{print $NF}' <<<"$1"; }

catchup="" fig_sink="" fig_copy="" fig_ingest_sink="" fig_ingest_nosink="" rss_sink="" rss_nosink="" rss_reply_sink="" rss_reply_nosink=""
for ((r = 1; r <= runs; r++)); do
	if ((r % 2)); then order=(sink nosink copy); else order=(copy nosink sink); fi
	for side in "${order[@]}"; do
		"run_$side"
	done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
ms=$(median "$fig_sink") mc=$(median "$fig_copy") mis=$(median "$fig_ingest_sink") min=$(median "$fig_ingest_nosink")
bench_header LINES RUNS PARTS BATCH LINGER CONCURRENCY POOL PACE JSON_TYPE PG_OPTS PG_NICE SERVE_FLAGS SLUICE_BENCH_DIR
echo "- corpus: \`$corpus_name\`, $lines lines, $bytes bytes, in ${#files[@]} parallel POSTs to \`/insert/jsonline?_stream_fields=service,host\`"
echo "- sink: one postgres sink of every tenant, the default table (labels and fields ${JSON_TYPE:-jsonb}), batch ${BATCH:-default}, linger ${LINGER:-default}, concurrency ${CONCURRENCY:-default}, pool ${POOL:-default}, pace ${PACE:-none}; PostgreSQL 15 with its defaults (fsync on)${PG_OPTS:+ and $PG_OPTS}${PG_NICE:+, at nice $PG_NICE}"
echo
echo "| figure | median | runs |"
echo "|---|---|---|"
echo "| sluice -> PostgreSQL, rows/s (first request to the sink's backlog at 0) | $ms | $fig_sink|"
echo "| bare pgx CopyFrom of the same rows, rows/s | $mc | $fig_copy|"
echo "| sluice / bare CopyFrom | **$(ratio "$ms" "$mc")x** | |"
echo "| catch-up: seconds from the last reply to the sink's backlog at 0 | $(median "$catchup") | $catchup|"
echo "| ingest lines/s with the sink | $mis | $fig_ingest_sink|"
echo "| ingest lines/s without sinks | $min | $fig_ingest_nosink|"
echo "| ingest with the sink / without | **$(ratio "$mis" "$min")** | |"
echo "| peak RSS with the sink, MB (the sink caught up, the store settled) | $(median "$rss_sink") | $rss_sink|"
echo "| peak RSS without sinks, MB (the store settled) | $(median "$rss_nosink") | $rss_nosink|"
echo "| peak RSS with the sink, MB, at the last reply | $(median "$rss_reply_sink") | $rss_reply_sink|"
echo "| peak RSS without sinks, MB, at the last reply | $(median "$rss_reply_nosink") | $rss_reply_nosink|"
exit "$problems"
