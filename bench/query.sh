#!/usr/bin/env bash
# query.sh: the eight LogQL questions of issue 5 on the canonical corpus, warm, through the
# server's Loki API, beside VictoriaLogs' and Loki's times on this machine (../shared/ANCHORS.md).
#
#   bench/query.sh            # 5 runs of each query (RUNS=n to change); median in ms
#   ONLY=needle bench/query.sh
#
# The corpus is ingested once with service and host as stream labels into
# ${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}/query-data-vN, N the part format's version (remove it to re-ingest), then
# `sluice serve` runs on it and each query is timed with curl (time_total), after one warm-up.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
corpus="$("$root/bench/corpus.sh")"
runs="${RUNS:-5}"
# The data directory is named by the part format's version: a new format is ingested anew.
version="$(sed -n 's/^\tVersion *= \([0-9]*\)$/\1/p' "$root/internal/store/part/part.go")"
dir="${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}/query-data-v$version"
bin="$root/bin/sluice"
addr=127.0.0.1:3199
(cd "$root" && go build -o "$bin" ./cmd/sluice)
if [ ! -e "$dir/MANIFEST" ]; then
	rm -rf "$dir"
	"$bin" ingest --data "$dir" --stream-fields service,host "$corpus" >&2
fi
"$bin" serve --data "$dir" --listen "$addr" --pprof=false 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf "http://$addr/ready" >/dev/null && break; sleep 0.1; done

# The corpus spans 2026-01-15T08:00:00Z onwards; these bounds hold all of it.
start=2026-01-15T00:00:00Z end=2026-01-17T00:00:00Z
all='{service=~".+"}'
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# name | VictoriaLogs ms | Loki ms | endpoint | query
queries=(
	"needle|12|1228|query_range|$all |= \"7ce42c8218072e8c35bf992dc9e9c616\""
	"phrase count|55|2475|query|sum(count_over_time($all |= \"payment declined\" [2d]))"
	"level=error by service|22|3125|query|sum by (service) (count_over_time($all | json level | level=\"error\" [2d]))"
	"http.status>=500 count|50|3722|query|sum(count_over_time($all | json http_status=\"http.status\" | http_status >= 500 | __error__=\"\" [2d]))"
	"p99 latency by service|205|10362|query|quantile_over_time(0.99, $all | json lat=\"http.latency_ms\" | unwrap lat | __error__=\"\" [2d]) by (service)"
	"count by level per minute|70|4108|query_range_step|sum by (level) (count_over_time($all | json level [1m]))"
	"newest 100 of a service with a word|50|27|query_range|{service=\"reports\"} |= \"declined\""
	"case-insensitive phrase count|77|2860|query|sum(count_over_time($all |~ \"(?i)payment declined\" [2d]))"
)

printf '%-38s %10s %14s %12s %10s\n' query "sluice ms" "VictoriaLogs" "Loki" "vs VL"
for q in "${queries[@]}"; do
	IFS='|' read -r name vl loki kind expr <<<"$q"
	if [ -n "${ONLY:-}" ] && [[ "$name" != *"$ONLY"* ]]; then continue; fi
	args=(--data-urlencode "query=$expr")
	case "$kind" in
	query) url="http://$addr/loki/api/v1/query"; args+=(--data-urlencode "time=2026-01-17T00:00:00Z") ;;
	query_range) url="http://$addr/loki/api/v1/query_range"; args+=(--data-urlencode "start=$start" --data-urlencode "end=$end" --data-urlencode "limit=100") ;;
	query_range_step) url="http://$addr/loki/api/v1/query_range"; args+=(--data-urlencode "start=2026-01-15T08:00:00Z" --data-urlencode "end=2026-01-15T12:00:00Z" --data-urlencode "step=60") ;;
	esac
	curl -sf -G "${args[@]}" "$url" >/tmp/sluice-query-bench.json || { echo "$name: query failed" >&2; curl -s -G "${args[@]}" "$url" >&2; continue; }
	times=()
	for _ in $(seq "$runs"); do
		times+=("$(curl -sf -o /dev/null -w '%{time_total}' -G "${args[@]}" "$url")")
	done
	ms=$(printf '%s\n' "${times[@]}" | median | awk '{printf "%.1f", $1*1000}')
	printf '%-38s %10s %14s %12s %9.2fx\n' "$name" "$ms" "$vl" "$loki" "$(awk "BEGIN {print $ms/$vl}")"
done
