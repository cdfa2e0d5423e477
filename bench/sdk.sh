#!/usr/bin/env bash
# sdk.sh: the Go SDK into sluice on loopback (issue 18's "SDK -> sluice >= 1,000,000 records/s from
# one process"): bench/sdkload sends RECORDS generated JSON records (about 110 bytes each) through
# one sdk.Client shared by GOROUTINES goroutines, with OverflowBlock (nothing dropped), and times
# it from the first Send until Close returns (every record acknowledged by the server, durable).
#
#   bench/sdk.sh                             # 2M records, 4 goroutines, NDJSON zstd and Loki protobuf
#   RUNS=3 RECORDS=500000 bench/sdk.sh
#   SENDERS=2 bench/sdk.sh                   # the Client's requests in flight (sdk.Config.Senders; default 4)
#
# Starts `sluice serve` on a fresh data directory (127.0.0.1, a free port) for each run, the two
# protocols alternated, and checks with `sluice stats` that the store holds every record sent.
# The client and the server share the machine's cores: the figure is what one machine does with
# both, not the server alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=sdk
source "$root/bench/lib.sh"
runs="${RUNS:-3}"
records="${RECORDS:-2000000}"
goroutines="${GOROUTINES:-4}"
senders="${SENDERS:-0}"
bin="$root/bin/sluice"

run="$(mktemp -d "$cache/sdk-run.XXXXXX")"
cleanup() {
	stop_servers
	rm -rf "$run"
}
trap cleanup EXIT

build_sluice
log "building bench/sdkload"
(cd "$root" && go build -o "$run/sdkload" ./bench/sdkload)

declare -A figures
for ((r = 1; r <= runs; r++)); do
	for proto in ndjson loki; do
		data="$run/data-$proto-$r"
		port="$(free_port)"
		"$bin" serve --data "$data" --listen "127.0.0.1:$port" >"$run/serve.log" 2>&1 &
		spid=$!
		pids+=("$spid")
		wait_ready "http://127.0.0.1:$port/ready" "$spid" sluice "$run/serve.log"
		out="$("$run/sdkload" -url "http://127.0.0.1:$port" -records "$records" -goroutines "$goroutines" -senders "$senders" -protocol "$proto")"
		stop_server "$spid"
		st="$("$bin" stats --data "$data" 2>/dev/null || true)"
		inparts="$(sed -n 's/^parts: [0-9]*, \([0-9]*\) lines.*/\1/p' <<<"$st")"
		inhead="$(sed -n 's/^head: \([0-9]*\) lines.*/\1/p' <<<"$st")"
		stored=$((${inparts:-0} + ${inhead:-0}))
		rate="$(sed -n 's/.*records\/s \([0-9]*\).*/\1/p' <<<"$out")"
		log "run $r $proto: $out; stored ${stored:-?}"
		if [[ -n "$stored" && "$stored" != "$records" ]]; then
			log "the store holds $stored records, $records were sent"
			exit 1
		fi
		figures[$proto]+="$rate "
		rm -rf "$data"
	done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
bench_header RUNS RECORDS GOROUTINES SENDERS
echo "- $records records of about 110 bytes, one sdk.Client, $goroutines goroutines calling Send, OverflowBlock, Senders ${SENDERS:-the default, 4}; from the first Send to Close returned"
echo
echo "| protocol | records/s (median) | runs |"
echo "|---|---|---|"
echo "| NDJSON, zstd | $(median "${figures[ndjson]}") | ${figures[ndjson]}|"
echo "| Loki push, protobuf + snappy | $(median "${figures[loki]}") | ${figures[loki]}|"
