#!/usr/bin/env bash
# pg-ceiling.sh: what bounds a bare COPY of the PostgreSQL sink's rows (issue 17 expected a bare pgx
# CopyFrom near 1.0-1.2M rows/s; bench/sink-pg.sh measures ~160k here). Starts a private PostgreSQL 15
# as bench/sink-pg.sh does (fsync on, PostgreSQL's defaults, PG_OPTS added) and runs bench/pgcopy once
# per variant on the same corpus, each into a fresh table:
#   base        the default table (no index), pgx.CopyFromRows, one COPY of every row
#   binary      the same rows in binary COPY written by hand, as the sink writes them
#   text-copy   text COPY format
#   json        labels and fields as json (stored as text, checked) instead of jsonb
#   json-binary the same in binary COPY by hand, as the sink writes a json_type: json table
#   text-cols   labels and fields as text
#   unlogged    an UNLOGGED table (no WAL)
#   gin         with a GIN index on fields
#   time-idx    with a btree index on (tenant, time)
#   brin        with a BRIN index on time
#   batch10k    one COPY and transaction per 10,000 rows, as the sink's default batch
#   batch10k-async  the same with synchronous_commit off
#   batch100k   one COPY and transaction per 100,000 rows
#   streams2    batch10k on two connections at once (every other batch each): parallel COPY streams
#   json-unlogged   json columns in an UNLOGGED table (the cheapest table that keeps the columns)
#   narrow      a table of time and tenant alone: small rows, as ../shared/INFRA.md's 1M rows/s were
# Each line gives rows/s and the CPU seconds of pgcopy and of its PostgreSQL backends during the copy
# (pgcopy reads /proc), and, when pidstat (Debian sysstat) is installed, the CPU seconds pidstat saw
# each second of the run in PostgreSQL's processes: the COPY backend, the WAL writer, and the others
# (checkpointer, background writer, ...), whose work a COPY also makes.
# One run each: noisy on a shared machine. VARIANTS="base gin" picks some.
#
#   LINES=200000 bench/pg-ceiling.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=pg-ceiling
source "$root/bench/lib.sh"
use_corpus
variants="${VARIANTS:-base binary text-copy json json-binary text-cols unlogged json-unlogged gin time-idx brin batch10k batch10k-async batch100k streams2 narrow}"

pg_prepare
run="$(mktemp -d "$cache/pg-ceiling-run.XXXXXX")"
cleanup() {
	stop_pg
	rm -rf "$run" "$pgdir"
}
trap cleanup EXIT

log "building bench/pgcopy"
(cd "$root" && go build -o "$run/pgcopy" ./bench/pgcopy)
start_pg
lines=$(wc -l <"$corpus")

bench_header LINES VARIANTS PG_OPTS SLUICE_BENCH_DIR
echo "- corpus: \`$corpus_name\`, $lines lines; PostgreSQL 15 with its defaults (fsync on)${PG_OPTS:+ and $PG_OPTS}; one run each"
echo
have_pidstat=""
if command -v pidstat >/dev/null; then have_pidstat=1; fi
echo "| variant | rows/s | seconds | pgcopy CPU s | backend CPU s | pidstat: backend / walwriter / other PG CPU s |"
echo "|---|---|---|---|---|---|"
for v in $variants; do
	case "$v" in
	base) args=() ;;
	binary) args=(-mode binary) ;;
	text-copy) args=(-mode text) ;;
	json) args=(-types json) ;;
	json-binary) args=(-types json -mode binary) ;;
	text-cols) args=(-types text) ;;
	unlogged) args=(-unlogged) ;;
	gin) args=(-index gin) ;;
	time-idx) args=(-index time) ;;
	brin) args=(-index brin) ;;
	batch10k) args=(-batch 10000) ;;
	batch10k-async) args=(-batch 10000 -sync-commit off) ;;
	batch100k) args=(-batch 100000) ;;
	streams2) args=(-batch 10000 -streams 2) ;;
	json-unlogged) args=(-types json -unlogged) ;;
	narrow) args=(-narrow) ;;
	*) log "unknown variant $v"; exit 2 ;;
	esac
	# A checkpoint between variants, so that none pays for the one before's.
	PGOPTIONS="-c client_min_messages=warning" "$pgbin/psql" -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c 'DROP TABLE IF EXISTS pgcopy_logs' -c CHECKPOINT >/dev/null
	spid=""
	if [[ -n "$have_pidstat" ]]; then
		# -l: the command line, which names the process's role (postgres: walwriter, ... COPY).
		pidstat -u -h -l -C postgres 1 >"$run/pidstat.$v" 2>&1 &
		spid=$!
	fi
	out="$("$run/pgcopy" -dsn "$dsn" -corpus "$corpus" -table pgcopy_logs "${args[@]}")"
	pg_split="-"
	if [[ -n "$spid" ]]; then
		kill -INT "$spid" 2>/dev/null || true
		wait "$spid" || true
		# %CPU over one-second intervals: their sum / 100 is CPU seconds. -C matched the command
		# lines: pgcopy's and pidstat's name PostgreSQL too, only the server's start "postgres:".
		pg_split="$(awk '/^#/ || $10 != "postgres:" {next} {c = $8; cmd = ""; for (i = 10; i <= NF; i++) cmd = cmd " " $i
			if (cmd ~ /walwriter/) w += c; else if (cmd ~ /(COPY|idle|postgres postgres)/) b += c; else o += c}
			END {printf "%.2f / %.2f / %.2f", b / 100, w / 100, o / 100}' "$run/pidstat.$v")"
	fi
	read -r _ n _ secs _ rate _ ccpu _ bcpu <<<"$out"
	if [[ "$n" != "$lines" ]]; then
		log "!!! $v: $n rows copied, the corpus has $lines lines"
		exit 1
	fi
	echo "| $v | $rate | $secs | $ccpu | $bcpu | $pg_split |"
done
