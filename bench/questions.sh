#!/usr/bin/env bash
# questions.sh: issue 15's public benchmark. The questions of bench/questions.txt (at least 40, as an
# operator asks them, each in LogQL and in LogsQL) against sluice and VictoriaLogs v1.52.1 started by
# this script in the same run, on four corpus shapes, every answer compared.
#
#   bench/questions.sh                          # every corpus (app k8s mixed loghub), 2M lines each
#   LINES=100000 RUNS=1 bench/questions.sh      # a quick check on small corpora
#   CORPUS=mixed ONLY='nginx|logfmt' bench/questions.sh   # some corpora; questions whose id matches
#   TIMEOUT=30 RUNS=3 COLD=1 KEEP=1             # the defaults, but KEEP (=1: keep replies and logs)
#
# For each corpus (CORPUS: a space-separated list, or a regex over app|k8s|mixed|loghub):
#  1. makes it: `gen.py app|k8s|mixed LINES --seed 1` through bench/corpus.sh, or the Loghub samples
#     ../shared/loghub/*/*_2k.log concatenated; bench/feed.py turns it into what both systems load
#     (see feed.py: the same lines, times and stream labels on both sides);
#  2. loads it once per format version and writer layout into the cache dir ${SLUICE_BENCH_DIR:-~/.cache/sluice-bench}:
#     sluice by `sluice ingest` (app, k8s: q40-sluice-vN.L-CORPUS, N.L the part format's version and layout: part_key) or by
#     its Loki push API (mixed, Loghub: the raw line with an explicit time), VictoriaLogs by one POST
#     to /insert/jsonline and a clean stop (q40-vl-v1.52.1-CORPUS). Remove a directory to reload;
#  3. starts both on copies of those, on free ports of 127.0.0.1, and runs bench/questions.py: per
#     question one untimed ask per side (the answers compared), then RUNS timed asks per side,
#     alternating sluice and VictoriaLogs (which goes first alternates from question to question),
#     the median of each side; every ask waits until sluice's sluice_queries_running and
#     VictoriaLogs' running selects are 0 and neither process uses CPU (over a tenth of a core for a
#     tenth of a second, half a second after a timeout): one side's work after its reply (its
#     collector) no longer slows the other's answer. Past TIMEOUT seconds a side is "timeout" and is
#     not asked again; a wait lasts at most WAIT seconds, default 10 x TIMEOUT, and the row says if
#     they were still busy then;
#  4. with COLD=1 (the default), for the questions marked cold: restarts both servers, waits until
#     neither uses CPU (their start-up done: sluice warms its block cache, VictoriaLogs opens its
#     parts) and asks each side once (the first query of a fresh process; the OS page cache stays warm);
#  5. prints a table per corpus (id, question, sluice ms, VL ms, ratio, ratio above each side's client floor, status), the geometric mean and
#     the worst ratio, and a Markdown block for BENCHMARKS.md. A question whose answers differ is DIFF,
#     with both answers, and gets no ratio. Exits non-zero if any answer is DIFF or an error.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=questions
source "$root/bench/lib.sh"
lines_wanted="${LINES:-2000000}"
runs="${RUNS:-3}"
timeout="${TIMEOUT:-30}"
cold="${COLD:-1}"
only="${ONLY:-}"
corpora_arg="${CORPUS:-app k8s mixed loghub}"
qfile="${QUESTIONS:-$root/bench/questions.txt}"
py="$root/bench/questions.py"
feed="$root/bench/feed.py"
version="$(part_key)"
bin="$root/bin/sluice"

corpora=()
for c in app k8s mixed loghub; do
	if [[ " $corpora_arg " == *" $c "* ]] || [[ "$c" =~ ^($corpora_arg)$ ]]; then corpora+=("$c"); fi
done
((${#corpora[@]})) || { log "CORPUS=$corpora_arg names none of app k8s mixed loghub"; exit 2; }
python3 "$py" check "$qfile" >&2

run="$(mktemp -d "$cache/questions-run.XXXXXX")"
cleanup() {
	stop_servers
	if [[ -n "${KEEP:-}" ]]; then log "replies and logs kept in $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT
# The servers' own limits lie past the client's TIMEOUT, so that a slow query is the client's timeout.
limit="$(python3 -c 'import sys; print(float(sys.argv[1]) + 5)' "$timeout")s"
vl_flags=(-search.maxQueryDuration="$limit" -loggerLevel=WARN)
sluice_flags=(--query-timeout "$limit" --discover-service-name= --discover-log-levels=false)
t_all=$SECONDS

log "building sluice"
build_sluice
build_vl

# feed_for CORPUS: makes (or finds) the file both sides load and sets feed_file, stream, vl_args.
feed_for() {
	local c=$1 raw
	case $c in
	loghub)
		feed_file="$cache/q40-feed-loghub.ndjson" stream=source
		[[ -s "$feed_file" ]] || python3 "$feed" text-loghub "$root/../shared/loghub" "$feed_file.tmp"
		;;
	*)
		feed_file="$cache/q40-feed-$c-$lines_wanted.ndjson"
		case $c in app) stream=service,host ;; k8s) stream=namespace,container ;; mixed) stream=kind ;; esac
		if [[ ! -s "$feed_file" ]]; then
			raw="$(CORPUS_KIND=$c CORPUS_LINES=$lines_wanted "$root/bench/corpus.sh")"
			case $c in app) python3 "$feed" json-app "$raw" "$feed_file.tmp" ;; k8s) python3 "$feed" json-k8s "$raw" "$feed_file.tmp" ;; mixed) python3 "$feed" text-mixed "$raw" "$feed_file.tmp" ;; esac
		fi
		;;
	esac
	[[ -s "$feed_file" ]] || mv "$feed_file.tmp" "$feed_file"
	case $c in
	app) vl_args="_stream_fields=service,host&_time_field=_time,time,ts,@timestamp&_msg_field=msg" ;;
	k8s) vl_args="_stream_fields=namespace,container&_time_field=time&_msg_field=log" ;;
	*) vl_args="_stream_fields=$stream&_time_field=_time&_msg_field=_msg" ;;
	esac
}

# load CORPUS: loads the feed into both, once, into the cache dir; sets sdata and vdata.
load() {
	local c=$1 key port code t0
	if [[ $c == loghub ]]; then key=loghub; else key="$c-$lines_wanted"; fi
	sdata="$cache/q40-sluice-$version-$key" vdata="$cache/q40-vl-$vl_version-$key"
	if [[ ! -e "$sdata/MANIFEST" ]]; then
		rm -rf "$sdata" "$sdata.tmp"
		t0=$SECONDS
		case $c in
		app | k8s)
			log "$c: loading into sluice with sluice ingest ($sdata)"
			"$bin" ingest --quiet --data "$sdata.tmp" --stream-fields "$stream" "$feed_file" >&2
			;;
		*)
			log "$c: loading into sluice over its Loki push API ($sdata)"
			port="$(free_port)"
			"$bin" serve --data "$sdata.tmp" --listen "127.0.0.1:$port" --fsync never "${sluice_flags[@]}" >"$run/sluice-load-$c.log" 2>&1 &
			spid=$!
			pids+=("$spid")
			wait_ready "http://127.0.0.1:$port/ready" "$spid" sluice "$run/sluice-load-$c.log"
			python3 "$feed" push "http://127.0.0.1:$port/loki/api/v1/push" "$feed_file" "$stream" >/dev/null
			stop_server "$spid" || { log "sluice did not stop cleanly after the load; its log:"; tail -20 "$run/sluice-load-$c.log" >&2; exit 1; }
			# What a push leaves is in the WAL (and small parts); an ingest of nothing replays it,
			# then flushes and merges it into parts as a bulk load ends (store.Compact), so that
			# the questions read parts, as on the other corpora, and no merge runs while they are timed.
			"$bin" ingest --quiet --data "$sdata.tmp" /dev/null >&2
			;;
		esac
		mv "$sdata.tmp" "$sdata"
		log "$c: sluice loaded in $((SECONDS - t0)) s"
	fi
	if [[ ! -d "$vdata" ]]; then
		log "$c: loading into VictoriaLogs $vl_version ($vdata)"
		rm -rf "$vdata.tmp"
		t0=$SECONDS
		port="$(free_port)"
		start_vl "$vdata.tmp" "$port" "$run/vl-load-$c.log" "${vl_flags[@]}"
		code="$(curl -sS -o "$run/vl-load.reply" -w '%{http_code}' -T "$feed_file" -X POST -H 'Content-Type: application/stream+json' -H 'Expect:' \
			"http://127.0.0.1:$port/insert/jsonline?$vl_args")"
		if [[ "$code" != 200 ]]; then
			log "VictoriaLogs answered $code to the load: $(head -c 500 "$run/vl-load.reply")"
			exit 1
		fi
		stop_server "$vl_pid" || { log "VictoriaLogs did not stop cleanly after the load; its log:"; tail -20 "$run/vl-load-$c.log" >&2; exit 1; }
		mv "$vdata.tmp" "$vdata"
		log "$c: VictoriaLogs loaded in $((SECONDS - t0)) s"
	fi
}

# start_both: starts sluice and VictoriaLogs on the run's copies; sets surl, vurl, sluice_pid, vl_pid.
start_both() {
	local sport vport
	sport="$(free_port)"
	"$bin" serve --data "$run/sluice-data" --listen "127.0.0.1:$sport" "${sluice_flags[@]}" >>"$run/sluice-$c.log" 2>&1 &
	sluice_pid=$!
	pids+=("$sluice_pid")
	wait_ready "http://127.0.0.1:$sport/ready" "$sluice_pid" sluice "$run/sluice-$c.log"
	vport="$(free_port)"
	start_vl "$run/vl-data" "$vport" "$run/vl-$c.log" "${vl_flags[@]}"
	surl="http://127.0.0.1:$sport" vurl="http://127.0.0.1:$vport"
}

stop_both() {
	stop_server "$sluice_pid" || log "sluice exited with status $? (its log: $run/sluice-$c.log)"
	stop_server "$vl_pid" || log "VictoriaLogs exited with status $? (its log: $run/vl-$c.log)"
}

# set_args: questions.py's arguments for corpus $c and the servers running now.
set_args() {
	args=(--corpus "$c" --questions "$qfile" --sluice "$surl" --vl "$vurl" --runs "$runs" --timeout "$timeout" --wait "${WAIT:-0}"
		--sluice-pid "$sluice_pid" --vl-pid "$vl_pid"
		--lines "$feed_lines" --out "$run/results-$c.json" --replies "$run/replies-$c")
	if [[ -n "$only" ]]; then args+=(--only "$only"); fi
}

status=0
load_secs=()
for c in "${corpora[@]}"; do
	t0=$SECONDS
	feed_for "$c"
	load "$c"
	load_secs+=("$c $((SECONDS - t0))")
	feed_lines="$(wc -l <"$feed_file")"
	cp -a "$sdata" "$run/sluice-data"
	cp -a "$vdata" "$run/vl-data"
	start_both
	set_args
	python3 "$py" run "${args[@]}" || status=1
	if ((cold)); then
		for id in $(python3 "$py" cold-ids "$qfile" "$c" "$only"); do
			stop_both
			start_both
			set_args
			python3 "$py" cold "${args[@]}" --id "$id" || status=1
		done
	fi
	stop_both
	rm -rf "$run/sluice-data" "$run/vl-data"
done

shopt -s nullglob
header="$(bench_header LINES RUNS TIMEOUT CORPUS ONLY COLD SLUICE_BENCH_DIR)"
python3 "$py" report --header "$header" --total "$((SECONDS - t_all))" --load "$(printf '%s, ' "${load_secs[@]}")" "$run"/results-*.json || status=1
exit "$status"
