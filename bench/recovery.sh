#!/usr/bin/env bash
# recovery.sh: how long a restart takes to recover a WAL of about 1 GB.
#
# Ingests the canonical corpus plus its first 300 MB again with a head large enough that
# nothing is flushed, kills the process (kill -9) once the ack log says every line is durable,
# then times `sluice stats` on the directory, which recovers it: once with a head large enough
# to hold the whole WAL (pure replay), once with the default 64 MB head (replay that flushes
# parts as it goes, as a restarted server does).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
corpus="$("$root/bench/corpus.sh")"
work="${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}/recovery"
bin="$root/bin/sluice"
(cd "$root" && go build -o "$bin" ./cmd/sluice)
mkdir -p "$work"
input="$work/input.ndjson"
if [[ ! -s "$input" ]]; then
	{ cat "$corpus"; head -c 300000000 "$corpus" | sed '$d'; } >"$input.tmp"
	mv "$input.tmp" "$input"
fi
want=$(wc -l <"$input")

load() {
	rm -rf "$work/data" "$work/ack"
	"$bin" ingest --quiet --head-bytes 8000000000 --memory-limit 8000000000 --data "$work/data" --ack-log "$work/ack" "$input" &
	pid=$!
	until [[ -s "$work/ack" && "$(tail -1 "$work/ack")" == "$want" ]]; do sleep 0.2; done
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
}

for head in 8000000000 67108864; do
	load
	wal=$(du -sb "$work/data/wal" | cut -f1)
	start=$(date +%s.%N)
	/usr/bin/time -f 'TIME %e s, %M KB' "$bin" stats --head-bytes "$head" --data "$work/data" >"$work/stats.txt" 2>"$work/time.txt"
	end=$(date +%s.%N)
	printf 'WAL %.0f MB, head %d MB: recovered in %.2f s (%s); %s\n' "$(awk "BEGIN {print $wal/1e6}")" $((head >> 20)) \
		"$(awk "BEGIN {print $end-$start}")" "$(grep TIME "$work/time.txt" | cut -d' ' -f2-)" "$(grep '^recovered' "$work/stats.txt")"
done
