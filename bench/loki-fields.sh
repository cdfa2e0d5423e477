#!/usr/bin/env bash
# loki-fields.sh: what keeping the keys of pushed JSON lines as columns costs Loki-push ingest. The
# canonical corpus (JSON lines) is pushed as Loki protobuf by `sluice bench` to `sluice serve` on a
# fresh data directory, with --loki-json-fields=true and =false in turn (the order swapped every
# other run), RUNS times; reported per run and as medians: lines/s stored, the server's CPU seconds
# per million lines, and the ratio of the two sides' lines/s.
#
#   bench/loki-fields.sh                     # RUNS=3, DURATION=20s, CONNS=4, BATCH=1000
#   RUNS=1 DURATION=3s bench/loki-fields.sh  # a quick check that it works (not a figure)
#
# Server and client share the machine's cores, as they do in e2e: the ratio is the figure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=loki-fields
source "$root/bench/lib.sh"
use_corpus
runs="${RUNS:-3}"
duration="${DURATION:-20s}"
conns="${CONNS:-4}"
batch="${BATCH:-1000}"
bin="$root/bin/sluice"
run="$(mktemp -d "$cache/loki-fields-run.XXXXXX")"
cleanup() {
	stop_servers
	rm -rf "$run"
}
trap cleanup EXIT

log "building sluice"
build_sluice

declare -A rates cpus
for ((i = 1; i <= runs; i++)); do
	order=(true false)
	if ((i % 2 == 0)); then order=(false true); fi
	for fields in "${order[@]}"; do
		rm -rf "$run/data"
		port="$(free_port)"
		start_sluice "$port" "$run/data" --loki-json-fields="$fields"
		c0="$(cpu_of "$spid")"
		out="$("$bin" bench --protocol loki-protobuf --corpus "$corpus" --batch "$batch" --conns "$conns" \
			--duration "$duration" "http://127.0.0.1:$port")"
		c1="$(cpu_of "$spid")"
		stop_server "$spid"
		lines="$(sed -n 's/^lines stored: \([0-9]*\),.*/\1/p' <<<"$out")"
		rate="$(sed -n 's/^lines stored: [0-9]*, \([0-9]*\) lines\/s.*/\1/p' <<<"$out")"
		errs="$(sed -n 's/^errors: //p' <<<"$out")"
		[[ "$errs" == none ]] || { log "!!! errors: $errs"; exit 1; }
		cpu="$(awk -v a="$c0" -v b="$c1" -v n="$lines" 'BEGIN {printf "%.2f", (b - a) / n * 1e6}')"
		log "run $i, json fields $fields: $rate lines/s, $cpu server CPU s per million lines"
		rates[$fields]+="$rate "
		cpus[$fields]+="$cpu "
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
rt="$(median <<<"${rates[true]}")" rf="$(median <<<"${rates[false]}")"
ct="$(median <<<"${cpus[true]}")" cf="$(median <<<"${cpus[false]}")"
echo "**median: keys as columns $rt lines/s ($ct CPU s per million), as text $rf lines/s ($cf), ratio $(awk -v a="$rt" -v b="$rf" 'BEGIN {printf "%.2f", a / b}')**"
