#!/usr/bin/env bash
# store.sh: the storage engine on the canonical corpus, as issue 3 measures it.
#
#   bench/store.sh              # 3 runs (RUNS=n to change), --fsync always
#   FSYNC=never bench/store.sh  # the WAL's policy for the runs
#
# Each run ingests the corpus into a fresh data directory with `sluice ingest` under
# /usr/bin/time, then exports everything back (to /dev/null, and once through sort | md5sum
# against the input to prove the round trip), and prints: lines/s until every line was durable,
# wall time including the final flush and merges, peak RSS, bytes on disk (parts), export MB/s.
# The data directory lives in ${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}/store-data.
# Medians over the runs are printed at the end. The machine is shared: compare medians.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
corpus="$("$root/bench/corpus.sh")"
runs="${RUNS:-3}"
fsync="${FSYNC:-always}"
dir="${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}/store-data"
bin="$root/bin/sluice"
(cd "$root" && go build -o "$bin" ./cmd/sluice)
size=$(stat -c %s "$corpus")
lines=$(wc -l <"$corpus")

calc() { awk "BEGIN {print $1}"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -a durable wall rss disk export
for i in $(seq "$runs"); do
	rm -rf "$dir"
	out=$( { /usr/bin/time -f 'TIME %e %M' "$bin" ingest --fsync "$fsync" --data "$dir" "$corpus"; } 2>&1 )
	d=$(awk '/^durable in/ {sub("s","",$3); print $3}' <<<"$out")
	w=$(awk '/^TIME/ {print $2}' <<<"$out")
	r=$(awk '/^TIME/ {print $3}' <<<"$out")
	b=$(du -sb "$dir/parts" | cut -f1)
	e=$( { /usr/bin/time -f 'TIME %e' "$bin" export --data "$dir" >/dev/null; } 2>&1 | awk '/^TIME/ {print $2}')
	durable+=("$d"); wall+=("$w"); rss+=("$r"); disk+=("$b"); export+=("$e")
	printf 'run %d: durable in %ss (%.0f lines/s), wall %ss, peak RSS %d MB, parts %.1f MB, export %ss (%.0f MB/s)\n' \
		"$i" "$d" "$(calc "$lines/$d")" "$w" $((r / 1024)) "$(calc "$b/1000000")" "$e" "$(calc "$size/$e/1000000")"
done

if [[ "$("$bin" export --data "$dir" | sort | md5sum)" == "$(sort "$corpus" | md5sum)" ]]; then
	echo "round trip: export gives back the same lines (sort | md5sum equal)"
else
	echo "round trip: MISMATCH between export and input" >&2
	exit 1
fi
"$bin" stats --data "$dir" | tail -4

d=$(printf '%s\n' "${durable[@]}" | median)
w=$(printf '%s\n' "${wall[@]}" | median)
r=$(printf '%s\n' "${rss[@]}" | median)
b=$(printf '%s\n' "${disk[@]}" | median)
e=$(printf '%s\n' "${export[@]}" | median)
printf '\nmedian of %d (--fsync %s): %.0f lines/s durable (%.0f MB/s), %.0f lines/s wall; peak RSS %d MB; %.1f MB on disk (%.1fx); export %.0f MB/s\n' \
	"$runs" "$fsync" "$(calc "$lines/$d")" "$(calc "$size/$d/1000000")" "$(calc "$lines/$w")" $((r / 1024)) \
	"$(calc "$b/1000000")" "$(calc "$size/$b")" "$(calc "$size/$e/1000000")"
echo "VictoriaLogs v1.26 on this machine (ANCHORS.md): 80-100k lines/s, 300 MB RSS, 68-74 MB on disk"
