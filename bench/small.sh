#!/usr/bin/env bash
# small.sh: issue 18's small-request figure: one-line pushes over CONNS keep-alive connections, the
# server pinned to one core, `sluice bench` on the other, against sluice (durable: every 2xx after
# the WAL's fdatasync) and against a bare net/http handler answering 204 (bench/httpfloor
# -mode nethttp), in the same run, alternated; the medians of RUNS runs and their ratio.
#
#   bench/small.sh                              # RUNS=5, DURATION=10s, CONNS=256, PROTOCOL=jsonline
#   RUNS=1 DURATION=2s bench/small.sh           # a quick check that it works (not a figure)
#   PROTOCOL=loki-json bench/small.sh           # any `sluice bench` protocol, one line per request
#   SERVER_CORE=0 CLIENT_CORE=1 WARMUP=2s SERVE_FLAGS='--max-inflight 256' bench/small.sh
#   PROFILE=/tmp/prof bench/small.sh            # also sluice's CPU profile of each counted run
#   CLIENT=nethttp bench/small.sh               # `sluice bench --client nethttp` (default raw)
#   SERVE_FLAGS='--ingest-server net/http' bench/small.sh
#                                               # sluice's ingest on net/http (default fasthttp)
#   SIDES='floor fasthttp victorialogs sluice' bench/small.sh
#                                               # also fasthttp answering 204 (bench/fasthttpfloor)
#                                               # and VictoriaLogs (one-line jsonline pushes to its
#                                               # /insert/jsonline, _msg_field=msg; it answers before
#                                               # any fsync: not durable), taking turns with the others
#
# Each run starts the floor, then sluice on a fresh data directory (the order swapped every other
# run), each under `taskset -c SERVER_CORE`, and drives it with `taskset -c CLIENT_CORE sluice bench
# --client CLIENT --conns CONNS --batch 1` for WARMUP (not counted), then for DURATION (counted). The
# raw client (a bare HTTP/1.1 keep-alive client, no pipelining) costs the client core far less per
# request than net/http's, whose client topped out near the floor's rate: both sides then
# measured the client, not the server. Reported per side:
# requests/s, p50 and p99 latency (`sluice bench`'s HDR histogram), errors, the server's CPU per
# request (its process's user and system time from /proc/PID/stat, and the server core's user,
# system and softirq time from /proc/stat: where the floor's time and sluice's differ); for sluice
# also the bytes and allocations per request: the server's runtime.MemStats TotalAlloc and Mallocs
# deltas over the counted run (go_memstats_alloc_bytes_total and go_memstats_mallocs_total from its
# /metrics, which reads runtime.MemStats; everything the process allocated, flushes included) over
# the ingest requests it answered in that time (sluice_ingest_requests_total), and the requests per
# WAL fdatasync (sluice_wal_fsyncs_total: how well the group commit batches). It checks that sluice
# answered no error, that the lines it counts as stored (sluice_ingest_lines_total) are at least the
# 2xx answers `sluice bench` saw, and exits non-zero otherwise.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=small
source "$root/bench/lib.sh"
runs="${RUNS:-5}"
duration="${DURATION:-10s}"
warmup="${WARMUP:-2s}"
conns="${CONNS:-256}"
protocol="${PROTOCOL:-jsonline}"
client="${CLIENT:-raw}"
server_core="${SERVER_CORE:-0}"
client_core="${CLIENT_CORE:-1}"
sides_list="${SIDES:-floor sluice}"
declare -A label=([floor]="net/http 204" [fasthttp]="fasthttp 204" [victorialogs]="VictoriaLogs $vl_version" [sluice]=sluice)
for side in $sides_list; do
	if [[ -z "${label[$side]:-}" ]]; then
		echo "small.sh: SIDES: unknown side $side (floor, fasthttp, victorialogs, sluice)" >&2
		exit 2
	fi
done
if [[ " $sides_list " != *" floor "* || " $sides_list " != *" sluice "* ]]; then
	echo "small.sh: SIDES must hold floor and sluice (the ratio is theirs)" >&2
	exit 2
fi
bin="$root/bin/sluice"

run="$(mktemp -d "$cache/small-run.XXXXXX")"
cleanup() {
	stop_servers
	rm -rf "$run"
}
trap cleanup EXIT

build_sluice
log "building bench/httpfloor"
(cd "$root" && go build -o "$run/httpfloor" ./bench/httpfloor)
if [[ " $sides_list " == *" fasthttp "* ]]; then
	log "building bench/fasthttpfloor (a module of its own)"
	(cd "$root/bench/fasthttpfloor" && go build -o "$run/fasthttpfloor" .)
fi
if [[ " $sides_list " == *" victorialogs "* ]]; then build_vl; fi

# metric URL NAME: the sum of NAME's samples in URL's /metrics.
metric() {
	curl -sf "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 {s += $NF} END {printf "%.0f\n", s}'
}

# drive URL SECONDS-LABEL OUT: runs sluice bench against URL for DURATION, output to OUT.
drive() {
	taskset -c "$client_core" "$bin" bench --protocol "$protocol" --client "$client" --conns "$conns" --batch 1 --duration "$2" "$1" >"$3" 2>>"$run/bench.log"
}

# field OUT: requests/s, p50, p99 and errors of a sluice bench report.
rps() { sed -n 's/^requests: .* s, \([0-9]*\) requests\/s$/\1/p' "$1"; }
pct() { awk -v q="p$2" '$1 == q {print $2}' "$1"; }
errs() { sed -n 's/^errors: //p' "$1"; }

# cpu_mark PID: the ticks PID has run (user and system) and the server
# core's user, system and softirq ticks, from /proc.
cpu_mark() {
	printf '%s %s\n' "$(awk '{print $14 + $15}' "/proc/$1/stat")" \
		"$(awk -v c="cpu$server_core" '$1 == c {print $2 + $3, $4, $8}' /proc/stat)"
}
# cpu_per_request MARK0 MARK1 OUT: microseconds per request between the
# marks: the process's, then the server core's user/system/softirq.
cpu_per_request() {
	local n
	n="$(sed -n 's/^requests: \([0-9]*\) .*/\1/p' "$3")"
	awk -v a="$1" -v b="$2" -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(a, x, " "); split(b, y, " "); f = (n > 0 ? 1e6 / hz / n : 0)
		printf "%.1f (%.1f/%.1f/%.1f)", (y[1] - x[1]) * f, (y[2] - x[2]) * f, (y[3] - x[3]) * f, (y[4] - x[4]) * f
	}'
}

problems=0
declare -a rows
declare -A rps_of
read -r -a sides <<<"$sides_list"
for ((r = 1; r <= runs; r++)); do
	# Each run starts one place further along the list: with two sides, they alternate.
	order=()
	for ((i = 0; i < ${#sides[@]}; i++)); do order+=("${sides[(i + r - 1) % ${#sides[@]}]}"); done
	for side in "${order[@]}"; do
		port="$(free_port)"
		url="http://127.0.0.1:$port"
		if [[ $side != sluice ]]; then
			target="$url"
			case $side in
			floor)
				taskset -c "$server_core" "$run/httpfloor" -mode nethttp -listen "127.0.0.1:$port" >"$run/floor.log" 2>&1 &
				;;
			fasthttp)
				taskset -c "$server_core" "$run/fasthttpfloor" -listen "127.0.0.1:$port" >"$run/floor.log" 2>&1 &
				;;
			victorialogs)
				taskset -c "$server_core" "$vl_bin" -storageDataPath="$run/vl-$r" -httpListenAddr="127.0.0.1:$port" -retentionPeriod=100y >"$run/floor.log" 2>&1 &
				# The generated lines' message is their msg field.
				target="$url/?_msg_field=msg"
				;;
			esac
			spid=$!
			pids+=("$spid")
			if [[ $side == victorialogs ]]; then
				wait_ready "$url/health" "$spid" VictoriaLogs "$run/floor.log"
			else
				for ((i = 0; i < 100; i++)); do curl -s -o /dev/null -X POST -d x "$url/" && break; sleep 0.1; done
			fi
			drive "$target" "$warmup" "$run/warm.txt"
			c0="$(cpu_mark "$spid")"
			drive "$target" "$duration" "$run/out.txt"
			c1="$(cpu_mark "$spid")"
			# SIGTERM: a background job of a script ignores SIGINT, and
			# so does the floor, which sets no handler.
			kill -TERM "$spid" 2>/dev/null || true
			wait "$spid" 2>/dev/null || true
			pids=("${pids[@]/$spid/}")
			rm -rf "$run/vl-$r"
			rps_of[$side]+=" $(rps "$run/out.txt")"
			rows+=("| $r | ${label[$side]} | $(rps "$run/out.txt") | $(pct "$run/out.txt" 50) | $(pct "$run/out.txt" 99) | $(errs "$run/out.txt") | $(cpu_per_request "$c0" "$c1" "$run/out.txt") | | | |")
		else
			# shellcheck disable=SC2086
			env ${SERVE_ENV:-} taskset -c "$server_core" "$bin" serve --data "$run/data-$r" --listen "127.0.0.1:$port" --pprof ${SERVE_FLAGS:-} >"$run/serve.log" 2>&1 &
			spid=$!
			pids+=("$spid")
			wait_ready "$url/ready" "$spid" sluice "$run/serve.log"
			drive "$url" "$warmup" "$run/warm.txt"
			a0="$(metric "$url" go_memstats_alloc_bytes_total)"
			m0="$(metric "$url" go_memstats_mallocs_total)"
			q0="$(metric "$url" sluice_ingest_requests_total)"
			l0="$(metric "$url" sluice_ingest_lines_total)"
			f0="$(metric "$url" sluice_wal_fsyncs_total)"
			prof=
			if [[ -n "${PROFILE:-}" ]]; then
				mkdir -p "$PROFILE"
				secs=$(awk -v d="$duration" 'BEGIN {sub(/s$/, "", d); printf "%d", (d + 0 > 1 ? d - 1 : 1)}')
				curl -sf -o "$PROFILE/sluice-$r.cpu.pprof" "$url/debug/pprof/profile?seconds=$secs" &
				prof=$!
			fi
			c0="$(cpu_mark "$spid")"
			drive "$url" "$duration" "$run/out.txt"
			c1="$(cpu_mark "$spid")"
			if [[ -n "$prof" ]]; then wait "$prof" || log "run $r: no CPU profile"; fi
			a1="$(metric "$url" go_memstats_alloc_bytes_total)"
			m1="$(metric "$url" go_memstats_mallocs_total)"
			q1="$(metric "$url" sluice_ingest_requests_total)"
			l1="$(metric "$url" sluice_ingest_lines_total)"
			f1="$(metric "$url" sluice_wal_fsyncs_total)"
			stop_server "$spid" || { log "!!! sluice exited with status $? when stopped"; problems=1; }
			rm -rf "$run/data-$r"
			reqs=$((q1 - q0))
			ok="$(sed -n 's/^lines stored: \([0-9]*\),.*/\1/p' "$run/out.txt")"
			if [[ "$(errs "$run/out.txt")" != none ]]; then
				log "!!! run $r: sluice answered errors: $(errs "$run/out.txt")"
				problems=1
			fi
			if ((l1 - l0 < ok)); then
				log "!!! run $r: sluice counts $((l1 - l0)) lines stored, sluice bench saw $ok answered 2xx"
				problems=1
			fi
			bpr=$(awk -v a=$((a1 - a0)) -v q="$reqs" 'BEGIN {printf "%.0f", (q > 0 ? a / q : 0)}')
			apr=$(awk -v a=$((m1 - m0)) -v q="$reqs" 'BEGIN {printf "%.1f", (q > 0 ? a / q : 0)}')
			rpf=$(awk -v f=$((f1 - f0)) -v q="$reqs" 'BEGIN {printf "%.1f", (f > 0 ? q / f : 0)}')
			rps_of[sluice]+=" $(rps "$run/out.txt")"
			rows+=("| $r | sluice | $(rps "$run/out.txt") | $(pct "$run/out.txt" 50) | $(pct "$run/out.txt" 99) | $(errs "$run/out.txt") | $(cpu_per_request "$c0" "$c1" "$run/out.txt") | $bpr | $apr | $rpf |")
		fi
		log "run $r $side: $(head -1 "$run/out.txt"); p50 $(pct "$run/out.txt" 50), p99 $(pct "$run/out.txt" 99)"
	done
done

# median N...: the middle value, or the mean of the two middle ones.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
# shellcheck disable=SC2086
mf="$(median ${rps_of[floor]:-0})"
# shellcheck disable=SC2086
ms="$(median ${rps_of[sluice]:-0})"
bench_header RUNS DURATION WARMUP CONNS PROTOCOL CLIENT SERVER_CORE CLIENT_CORE SERVE_FLAGS SERVE_ENV SIDES
echo "- one line per request ($protocol), $conns keep-alive connections, server on core $server_core, \`sluice bench --client $client\` on core $client_core; $runs runs of $duration after $warmup of warm-up, the servers ($sides_list) taking turns"
echo "- bytes and allocations per request: the sluice process's runtime.MemStats TotalAlloc and Mallocs deltas (go_memstats_alloc_bytes_total, go_memstats_mallocs_total on /metrics) over the counted run, divided by the ingest requests it answered"
echo
echo "- CPU µs/request: the server process's user and system time over the counted run, then (in brackets) the server core's user/system/softirq time (the kernel's network work for both ends of a loopback connection runs partly there), each over the requests counted"
echo
echo "| run | server | requests/s | p50 | p99 | errors | CPU µs/request | bytes/request | allocs/request | requests/fsync |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
awk -v s="$ms" -v f="$mf" 'BEGIN {printf "**median: sluice %d requests/s, net/http 204 %d requests/s, ratio %.2f**\n", s, f, (f > 0 ? s / f : 0)}'
for side in "${sides[@]}"; do
	if [[ $side == floor || $side == sluice ]]; then continue; fi
	# shellcheck disable=SC2086
	m="$(median ${rps_of[$side]})"
	awk -v n="${label[$side]}" -v m="$m" -v s="$ms" -v f="$mf" 'BEGIN {printf "- median %s: %d requests/s (%.2f of net/http 204%s)\n", n, m, (f > 0 ? m / f : 0), (s > 0 ? sprintf("; sluice is %.2f of it", s / m) : "")}'
done
exit "$problems"
