#!/usr/bin/env bash
# http.sh: the canonical corpus sent over HTTP to /insert/jsonline in a few parallel requests
# (issue 4's bulk figure). Starts `sluice serve` on a fresh data directory, splits the corpus
# into PARTS files (default 4) by lines, posts them at once with curl, and prints the lines/s
# until every response came back (each a 2xx: every line durable), the server's CPU time and
# peak RSS, and what was stored. ROUNDS=N (default 1) has each curl post its file N times in
# turn: past what the heads may buffer (--max-head-bytes), ingest runs at the flush's pace.
# SERVE_FLAGS adds flags to `sluice serve`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
corpus="$("$root/bench/corpus.sh")"
parts="${PARTS:-4}"
rounds="${ROUNDS:-1}"
work="${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}/http"
bin="$root/bin/sluice"
port="${PORT:-3197}"
(cd "$root" && go build -o "$bin" ./cmd/sluice)
mkdir -p "$work"
lines=$(wc -l <"$corpus")
if [[ ! -s "$work/part.0" || "$(cat "$work/parts" 2>/dev/null)" != "$parts" ]]; then
	rm -f "$work"/part.*
	split -n "l/$parts" -d -a 1 "$corpus" "$work/part."
	echo "$parts" >"$work/parts"
fi
rm -rf "$work/data"
# shellcheck disable=SC2086
"$bin" serve --data "$work/data" --listen "127.0.0.1:$port" --pprof=false ${SERVE_FLAGS:-} 2>"$work/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$port/ready" >/dev/null; do sleep 0.1; done
start=$(date +%s.%N)
pids=()
for f in "$work"/part.?; do
	for ((r = 0; r < rounds; r++)); do
		curl -sS -o "$f.reply" -w '%{http_code}\n' -X POST -H 'Content-Type: application/x-ndjson' \
			--data-binary "@$f" "127.0.0.1:$port/insert/jsonline"
	done >"$f.code" &
	pids+=($!)
done
wait "${pids[@]}"
end=$(date +%s.%N)
cat "$work"/part.?.code | sort | uniq -c
secs=$(awk "BEGIN {print $end-$start}")
awk "BEGIN {printf \"%d lines in %.2f s: %.0f lines/s, %.0f MB/s (every line durable when the replies came)\\n\", $lines*$rounds, $secs, $lines*$rounds/$secs, $(stat -c %s "$corpus")*$rounds/$secs/1e6}"
awk -v hz="$(getconf CLK_TCK)" '{printf "server CPU %.1f s (user+system)\n", ($14+$15)/hz}' "/proc/$server/stat"
awk '/VmHWM/ {printf "server peak RSS %d MB\n", $2/1024}' "/proc/$server/status"
kill -TERM $server
wait $server || true
trap - EXIT
"$bin" stats --data "$work/data" | tail -3
