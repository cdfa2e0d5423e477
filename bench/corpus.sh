#!/usr/bin/env bash
# corpus.sh: generate the canonical benchmark corpus once and print its path.
#
#   bench/corpus.sh            # app 2000000 --seed 1 (the canonical corpus, ~700 MB, ~1 min)
#   CORPUS_LINES=100000 bench/corpus.sh   # a smaller one for quick checks
#
# The file lives in ${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}, outside the repo, and is
# reused while it exists with the expected size. gen.py is deterministic (same arguments, same
# bytes), so the canonical corpus always has the same size. Generation writes to a temp file
# and renames it, so an interrupted run never leaves a truncated corpus behind.
# Only the path goes to stdout; progress goes to stderr.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gen="$root/../shared/corpus/gen.py"
kind="${CORPUS_KIND:-app}"
lines="${CORPUS_LINES:-2000000}"
seed="${CORPUS_SEED:-1}"
dir="${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}"
out="$dir/$kind-$lines-seed$seed.ndjson"

# Size of `gen.py app 2000000 --seed 1`, measured once; other corpora are checked by line count.
canonical_size=700246305

file_ok() {
	[[ -s "$out" ]] || return 1
	if [[ "$kind-$lines-$seed" == "app-2000000-1" ]]; then
		[[ "$(stat -c %s "$out")" == "$canonical_size" ]]
	else
		[[ "$(wc -l <"$out")" == "$lines" ]]
	fi
}

if file_ok; then
	echo "$out"
	exit 0
fi

if [[ ! -f "$gen" ]]; then
	echo "corpus.sh: generator not found at $gen (shared/ must sit beside the repo)" >&2
	exit 1
fi
mkdir -p "$dir"
tmp="$(mktemp "$out.tmp.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
echo "corpus.sh: generating $out (gen.py $kind $lines --seed $seed)..." >&2
python3 "$gen" "$kind" "$lines" --seed "$seed" >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
if ! file_ok; then
	echo "corpus.sh: $out has $(stat -c %s "$out") bytes, $(wc -l <"$out") lines; expected" \
		"$canonical_size bytes / $lines lines (did gen.py change?)" >&2
	exit 1
fi
echo "$out"
