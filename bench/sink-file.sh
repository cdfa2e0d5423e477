#!/usr/bin/env bash
# sink-file.sh: ingest with one file sink against ingest without sinks, in the same run (issue 17's
# "ingest throughput with one active sink ≥ 80% of the no-sink figure in the same run; memory
# bounded by configuration, reported"). The file sink's destination is sluice's own code (no other
# process), so what the sink costs is all in sluice's CPU.
#
#   bench/sink-file.sh                          # the canonical corpus (2M lines), RUNS=3
#   LINES=200000 RUNS=1 bench/sink-file.sh      # a quick check on a small corpus
#   COMPRESSION=none bench/sink-file.sh         # zstd (the default), gzip or none
#   PROFILE=/tmp/prof LINES=1000000 RUNS=1 bench/sink-file.sh   # CPU and heap profiles of sluice
#   PACE=0.25 bench/sink-file.sh                # the sink paced while ingest is busy (sinks[].pace)
#
# RUNS times, the order of the sides reversed every other run:
#   - sink: `sluice serve` on a fresh data directory with one file sink of every tenant (COMPRESSION;
#     BATCH and LINGER set its batch and linger when given), the corpus posted in PARTS parallel POSTs
#     as bench/http.sh does. Ingest lines/s is the accepted lines over the time from the first
#     request to the last reply; delivered lines/s over the time until GET /api/v1/sinks shows the
#     sink's backlog at 0 with every accepted line sent, and the catch-up time is the seconds from
#     the last reply to then (with PACE, the sink works less while ingest is busy and delivers the
#     rest after it: read the ingest ratio with the catch-up time). The files' lines are then counted.
#   - nosink: the same posts to a `sluice serve` without sinks.
# Peak RSS (VmHWM) of each side at the last reply and once the store settled (every accepted line in
# parts or in a head no flush is due for; with the sink, also once the sink caught up). sluice's CPU
# seconds over each side. PROFILE=DIR serves with --pprof and writes a CPU profile of sluice from the
# first request (PROFILE_SECS, default 10 s) for each side (sink.RUN.pprof, nosink.RUN.pprof) and a
# heap profile of the sink's side at the last reply (heap.RUN.pprof). Medians of the runs, and each
# run's figures. Exits non-zero when a reply is not 2xx, a line is rejected, or the files do not
# hold exactly the accepted lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=sink-file
source "$root/bench/lib.sh"
use_corpus
runs="${RUNS:-3}"
parts="${PARTS:-4}"
compression="${COMPRESSION:-zstd}"
split_dir="$cache/http-parts-$corpus_name-$parts"
bin="$root/bin/sluice"

run="$(mktemp -d "$cache/sink-file-run.XXXXXX")"
cleanup() {
	stop_servers
	rm -rf "$run" "$split_dir.tmp"
}
trap cleanup EXIT

build_sluice

lines=$(wc -l <"$corpus")
bytes=$(stat -c %s "$corpus")
split_corpus
problems=0

last() { awk '{print $NF}' <<<"$1"; }

# profile SIDE PORT: starts a CPU profile of the server on PORT in the background; sets ppid.
profile() {
	ppid=""
	if [[ -n "${PROFILE:-}" ]]; then
		mkdir -p "$PROFILE"
		curl -sf -o "$PROFILE/$1.$r.pprof" "127.0.0.1:$2/debug/pprof/profile?seconds=${PROFILE_SECS:-10}" &
		ppid=$!
	fi
}

run_sink() {
	local port data out start ingested done_at st backlog sent n
	port="$(free_port)"
	data="$run/data"
	out="$run/out"
	rm -rf "$out"
	{
		echo "sinks:"
		echo "  - name: bench-file"
		echo "    type: file"
		echo "    tenant: '*'"
		if [[ -n "${BATCH:-}" ]]; then echo "    batch: $BATCH"; fi
		if [[ -n "${LINGER:-}" ]]; then echo "    linger: $LINGER"; fi
		if [[ -n "${PACE:-}" ]]; then echo "    pace: $PACE"; fi
		echo "    file:"
		echo "      dir: '$out'"
		echo "      compression: $compression"
	} >"$run/sluice.yaml"
	local prof=()
	if [[ -n "${PROFILE:-}" ]]; then prof=(--pprof); fi
	# shellcheck disable=SC2086
	start_sluice "$port" "$data" --config "$run/sluice.yaml" "${prof[@]}" ${SERVE_FLAGS:-}
	profile sink "$port"
	start=$(now)
	post_corpus "$port"
	ingested=$(now)
	rss_reply_sink+="$(peak_rss "$spid") "
	if [[ -n "${PROFILE:-}" ]]; then curl -sf -o "$PROFILE/heap.$r.pprof" "127.0.0.1:$port/debug/pprof/heap" || log "!!! no heap profile"; fi
	wait_sink "$port"
	done_at=$(now)
	wait_stored "$port"
	rss_sink+="$(peak_rss "$spid") "
	cpu_sink+="$(cpu_of "$spid") "
	if [[ -n "$ppid" ]]; then wait "$ppid" || log "!!! no CPU profile"; fi
	stop_server "$spid" || { log "!!! sluice exited with status $? when stopped"; tail -20 "$run/serve.log" >&2; problems=1; }
	case "$compression" in
	zstd) n="$(cat "$out"/*.ndjson.zst | zstd -dc | wc -l)" ;;
	gzip) n="$(cat "$out"/*.ndjson.gz | gzip -dc | wc -l)" ;;
	*) n="$(cat "$out"/*.ndjson | wc -l)" ;;
	esac
	if [[ "$n" != "$accepted" ]]; then
		log "!!! the files hold $n lines, $accepted lines were accepted"
		problems=1
	fi
	fig_ingest_sink+="$(rate "$accepted" "$start" "$ingested") "
	fig_sink+="$(rate "$accepted" "$start" "$done_at") "
	catchup+="$(awk -v a="$ingested" -v b="$done_at" 'BEGIN {printf "%.2f", b - a}') "
	log "run $r sink: ingest $(last "$fig_ingest_sink") lines/s, delivered $(last "$fig_sink") lines/s, caught up $(last "$catchup") s after the last reply, peak RSS $(last "$rss_sink") MB ($(last "$rss_reply_sink") MB at the last reply), CPU: sluice $(last "$cpu_sink") s"
	rm -rf "$data" "$out"
}

run_nosink() {
	local port data start ingested
	port="$(free_port)"
	data="$run/data"
	local prof=()
	if [[ -n "${PROFILE:-}" ]]; then prof=(--pprof); fi
	# shellcheck disable=SC2086
	start_sluice "$port" "$data" "${prof[@]}" ${SERVE_FLAGS:-}
	profile nosink "$port"
	start=$(now)
	post_corpus "$port"
	ingested=$(now)
	rss_reply_nosink+="$(peak_rss "$spid") "
	wait_stored "$port"
	rss_nosink+="$(peak_rss "$spid") "
	cpu_nosink+="$(cpu_of "$spid") "
	if [[ -n "$ppid" ]]; then wait "$ppid" || log "!!! no CPU profile"; fi
	stop_server "$spid" || { log "!!! sluice exited with status $? when stopped"; tail -20 "$run/serve.log" >&2; problems=1; }
	fig_ingest_nosink+="$(rate "$accepted" "$start" "$ingested") "
	log "run $r nosink: ingest $(last "$fig_ingest_nosink") lines/s, peak RSS $(last "$rss_nosink") MB ($(last "$rss_reply_nosink") MB at the last reply), CPU: sluice $(last "$cpu_nosink") s"
	rm -rf "$data"
}

fig_sink="" fig_ingest_sink="" fig_ingest_nosink="" rss_sink="" rss_nosink="" rss_reply_sink="" rss_reply_nosink=""
cpu_sink="" cpu_nosink="" catchup=""
for ((r = 1; r <= runs; r++)); do
	if ((r % 2)); then order=(sink nosink); else order=(nosink sink); fi
	for side in "${order[@]}"; do
		"run_$side"
	done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
mis=$(median "$fig_ingest_sink") min=$(median "$fig_ingest_nosink")
bench_header LINES RUNS PARTS COMPRESSION BATCH LINGER PACE SERVE_FLAGS SLUICE_BENCH_DIR
echo "- corpus: \`$corpus_name\`, $lines lines, $bytes bytes, in ${#files[@]} parallel POSTs to \`/insert/jsonline?_stream_fields=service,host\`"
echo "- sink: one file sink of every tenant, compression $compression, batch ${BATCH:-default}, linger ${LINGER:-default}, pace ${PACE:-none}"
echo
echo "| figure | median | runs |"
echo "|---|---|---|"
echo "| ingest lines/s with the sink | $mis | $fig_ingest_sink|"
echo "| ingest lines/s without sinks | $min | $fig_ingest_nosink|"
echo "| ingest with the sink / without | **$(ratio "$mis" "$min")** | |"
echo "| delivered to the files, lines/s (first request to the sink's backlog at 0) | $(median "$fig_sink") | $fig_sink|"
echo "| catch-up: seconds from the last reply to the sink's backlog at 0 | $(median "$catchup") | $catchup|"
echo "| sluice CPU s with the sink (to the store settled) | $(median "$cpu_sink") | $cpu_sink|"
echo "| sluice CPU s without sinks (to the store settled) | $(median "$cpu_nosink") | $cpu_nosink|"
echo "| peak RSS with the sink, MB (the sink caught up, the store settled) | $(median "$rss_sink") | $rss_sink|"
echo "| peak RSS without sinks, MB (the store settled) | $(median "$rss_nosink") | $rss_nosink|"
echo "| peak RSS with the sink, MB, at the last reply | $(median "$rss_reply_sink") | $rss_reply_sink|"
echo "| peak RSS without sinks, MB, at the last reply | $(median "$rss_reply_nosink") | $rss_reply_nosink|"
exit "$problems"
