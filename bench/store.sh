#!/usr/bin/env bash
# store.sh: loading the canonical corpus, `sluice ingest` against VictoriaLogs v1.52.1 in the same
# run (issue 3's figures).
#
#   bench/store.sh                 # 3 runs of each (RUNS=n to change), sluice with --fsync always
#   FSYNC=never bench/store.sh     # the WAL's policy for sluice's runs
#   VL=0 bench/store.sh            # sluice only
#   LINES=20000 RUNS=1 bench/store.sh   # a quick check on a small corpus
#
# Each run, alternating the two on fresh data directories in a temp dir:
#   - sluice: `sluice ingest --fsync FSYNC --data DIR corpus` under /usr/bin/time. The figure to
#     quote is the WHOLE COMMAND's wall time (process start to exit: parsing, WAL, flushes, and the
#     final flush and merge of the day into one part, which the user waits for). The command's own
#     "durable in" (the moment the last line was acknowledged by the WAL, before that final flush
#     and merge) is printed beside it, labelled as such, never as the throughput. Then peak RSS,
#     the parts' bytes on disk, and `sluice export` of everything to /dev/null.
#   - VictoriaLogs: started on an empty directory (as ../shared/ANCHORS.md says; not timed), the
#     corpus in one POST to /insert/jsonline, then a clean stop (SIGINT) that writes what it holds
#     to disk. Its whole time runs from the POST to the process' exit; the reply's time is printed
#     beside it, labelled: a 200 from VictoriaLogs does not mean the lines are on disk. It answers
#     200 and silently drops the lines whose time is in `timestamp` ("2026-01-15 08:00:00,123",
#     10% of the corpus): the lines it kept are its counter vl_rows_ingested_total. Its bytes on
#     disk are measured after the clean stop.
# Lines/s are the lines sent (every line of the corpus) over the whole time. Medians over the runs,
# with the runs' range. At the end sluice's last directory is exported and compared with the
# corpus (sort | md5sum): the round trip must give back every line, or the script fails.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=store
source "$root/bench/lib.sh"
use_corpus
runs="${RUNS:-3}"
fsync="${FSYNC:-always}"
with_vl="${VL:-1}"
bin="$root/bin/sluice"

run="$(mktemp -d "$cache/store-run.XXXXXX")"
cleanup() {
	stop_servers
	rm -rf "$run"
}
trap cleanup EXIT

build_sluice
[[ "$with_vl" == 0 ]] || build_vl
size=$(stat -c %s "$corpus")
lines=$(wc -l <"$corpus")

now() { date +%s.%N; }
calc() { awk "BEGIN {print $1}"; }
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# stat_of VALUES...: "median" or, with several runs, "median (min–max)", each through the awk format FMT.
fmt=%.2f
stat_of() {
	local m
	m=$(printf '%s\n' "$@" | median)
	if (($# > 1)); then
		printf '%s\n' "$@" | sort -g | awk -v m="$m" -v f="$fmt" 'NR == 1 {lo = $1} {hi = $1} END {printf f " (" f "–" f ")", m, lo, hi}'
	else
		awk -v m="$m" -v f="$fmt" 'BEGIN {printf f, m}'
	fi
}

declare -a s_wall s_durable s_rss s_disk s_export s_stored v_whole v_reply v_rss v_disk v_kept
for i in $(seq "$runs"); do
	# sluice
	rm -rf "$run/sluice"
	out=$({ /usr/bin/time -f 'TIME %e %M' "$bin" ingest --fsync "$fsync" --data "$run/sluice" "$corpus"; } 2>&1) ||
		{ log "sluice ingest failed: $out"; exit 1; }
	stored=$(awk '/^lines stored/ {print $3}' <<<"$out")
	d=$(awk '/^durable in/ {sub("s", "", $3); print $3}' <<<"$out")
	w=$(awk '/^TIME/ {print $2}' <<<"$out")
	r=$(awk '/^TIME/ {print $3}' <<<"$out")
	b=$(du -sb "$run/sluice/parts" | cut -f1)
	e=$({ /usr/bin/time -f 'TIME %e' "$bin" export --data "$run/sluice" >/dev/null; } 2>&1 | awk '/^TIME/ {print $2}')
	if [[ "$stored" != "$lines" ]]; then
		log "!!! sluice stored $stored of $lines lines"
		exit 1
	fi
	s_wall+=("$w") s_durable+=("$d") s_rss+=("$r") s_disk+=("$b") s_export+=("$e") s_stored+=("$stored")
	printf 'store.sh: run %d: sluice ingest: whole command %ss (%.0f lines/s); last line durable at %ss (the command then flushed and merged); peak RSS %d MB; parts %.1f MB; export %ss\n' \
		"$i" "$w" "$(calc "$lines/$w")" "$d" $((r / 1024)) "$(calc "$b/1e6")" "$e" >&2

	# VictoriaLogs
	[[ "$with_vl" == 0 ]] && continue
	rm -rf "$run/vl"
	port=$(free_port)
	start_vl "$run/vl" "$port" "$run/vl.log"
	t0=$(now)
	code=$(vl_post "$port" "$corpus" "$run/vl.reply")
	t1=$(now)
	if [[ "$code" != 200 ]]; then
		log "!!! VictoriaLogs answered $code: $(head -c 300 "$run/vl.reply")"
		exit 1
	fi
	kept=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^vl_rows_ingested_total\{type="jsonline"\}/ {print $2}')
	vr=$(awk '/VmHWM/ {print $2}' "/proc/$vl_pid/status")
	stop_server "$vl_pid" || { log "!!! VictoriaLogs did not stop cleanly; the end of its log:"; tail -20 "$run/vl.log" >&2; exit 1; }
	t2=$(now)
	vb=$(du -sb "$run/vl" | cut -f1)
	v_whole+=("$(calc "$t2 - $t0")") v_reply+=("$(calc "$t1 - $t0")") v_rss+=("$vr") v_disk+=("$vb") v_kept+=("$kept")
	printf 'store.sh: run %d: VictoriaLogs: whole %.2fs (%.0f lines/s); reply at %.2fs (not yet on disk); kept %s of %d lines; peak RSS %d MB; %.1f MB on disk after the clean stop\n' \
		"$i" "$(calc "$t2 - $t0")" "$(calc "$lines / ($t2 - $t0)")" "$(calc "$t1 - $t0")" "$kept" "$lines" $((vr / 1024)) "$(calc "$vb/1e6")" >&2
done

problems=0
if [[ "$("$bin" export --data "$run/sluice" | sort | md5sum)" == "$(sort "$corpus" | md5sum)" ]]; then
	roundtrip="export gives back the same lines (sort | md5sum equal)"
else
	roundtrip="!!! MISMATCH between export and the corpus (sort | md5sum)"
	log "$roundtrip"
	problems=1
fi

rate() { local v out=(); for v in "$@"; do out+=("$(calc "$lines / $v")"); done; printf '%s\n' "${out[@]}"; }
mb() { local v out=(); for v in "$@"; do out+=("$(calc "$v / 1e6")"); done; printf '%s\n' "${out[@]}"; }
kb_to_mb() { local v out=(); for v in "$@"; do out+=("$(calc "$v / 1024")"); done; printf '%s\n' "${out[@]}"; }

bench_header LINES RUNS FSYNC VL SLUICE_BENCH_DIR
echo "- corpus: \`$corpus_name\`, $lines lines, $size bytes; $runs run(s) of each, alternating, on fresh directories; median$( ((runs > 1)) && echo ' (min–max)') of the runs"
echo "- whole: sluice's \`ingest\` command from start to exit (its final flush and merge included); VictoriaLogs from the POST to its exit after a clean stop (SIGINT)"
echo "- at: sluice's \"durable in\", the last line acknowledged by the WAL, before the final flush and merge; VictoriaLogs' reply, before its lines are on disk. Not the figure to quote as throughput"
echo
echo "| system | lines kept | whole (s) | lines/s, whole | at (s) | lines/s, at | peak RSS (MB) | on disk (MB) | export (MB/s) |"
echo "|---|---|---|---|---|---|---|---|---|"
fmt=%.2f; sw=$(stat_of "${s_wall[@]}"); sd=$(stat_of "${s_durable[@]}")
fmt=%.0f; swr=$(stat_of $(rate "${s_wall[@]}")); sdr=$(stat_of $(rate "${s_durable[@]}")); srss=$(stat_of $(kb_to_mb "${s_rss[@]}"))
fmt=%.1f; sdisk=$(stat_of $(mb "${s_disk[@]}"))
fmt=%.0f; sexp=$(stat_of $(for e in "${s_export[@]}"; do calc "$size / $e / 1e6"; done))
echo "| sluice ingest --fsync $fsync | ${s_stored[0]} | $sw | $swr | $sd (last line durable) | $sdr | $srss | $sdisk ($(calc "$size / $(printf '%s\n' "${s_disk[@]}" | median)" | xargs printf '%.1f')x smaller) | $sexp |"
if [[ "$with_vl" != 0 ]]; then
	fmt=%.2f; vw=$(stat_of "${v_whole[@]}"); vrp=$(stat_of "${v_reply[@]}")
	fmt=%.0f; vwr=$(stat_of $(rate "${v_whole[@]}")); vrr=$(stat_of $(rate "${v_reply[@]}")); vrss=$(stat_of $(kb_to_mb "${v_rss[@]}"))
	fmt=%.1f; vdisk=$(stat_of $(mb "${v_disk[@]}"))
	echo "| VictoriaLogs $vl_version, one POST | ${v_kept[0]} (drops $((lines - v_kept[0]))) | $vw | $vwr | $vrp (reply, not on disk) | $vrr | $vrss | $vdisk | — |"
	echo
	sm=$(printf '%s\n' "${s_wall[@]}" | median) vm=$(printf '%s\n' "${v_whole[@]}" | median)
	echo "Whole time, sluice / VictoriaLogs: $(calc "$sm / $vm" | xargs printf '%.2f')x; sluice takes the corpus at $(calc "$vm / $sm" | xargs printf '%.2f')x VictoriaLogs' lines/s."
fi
echo
echo "Round trip: $roundtrip."
"$bin" stats --data "$run/sluice" | tail -2 | sed 's/^/    /'
exit "$problems"
