#!/usr/bin/env bash
# json-vs-simdjson.sh: sluice's JSON parser against simdjson parse_many, in one run.
#
#   bench/json-vs-simdjson.sh                  # build, make the corpus, run, summarize
#   bench/json-vs-simdjson.sh --summarize DIR  # summarize the raw outputs of an earlier run
#
# Runs simdjson DOM parse_many and then the Go BenchmarkCorpus alternately, ROUNDS
# times each, both pinned to core CORE, so that whatever noise the shared machine
# makes hits both sides. Prints the median GB/s of each and the ratio Go/simdjson.
# Compare ratios taken in one run, never absolute figures across runs (ANCHORS.md).
#
# Environment:
#   CORPUS   NDJSON file (default: bench/corpus.sh, the canonical corpus)
#   CORE     CPU to pin both sides to (default 1)
#   ROUNDS   alternations (default 3)
#   RUNS     simdjson passes per round (default 5)
#   COUNT    go test -count per round (default 5)
#   OUT      directory for the raw outputs (default: a new temp dir, kept)
#
# Samples are pooled: ROUNDS*RUNS simdjson passes and ROUNDS*COUNT Go benchmark
# results; each side's figure is the median of its pool.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pkg=./internal/parse/json/
bench_re='BenchmarkCorpus'

# median: median of the numbers on stdin, one per line (empty if none).
median() {
	sort -g | awk '{v[NR] = $1} END {
		if (NR == 0) exit
		if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
	}'
}

# simdjson_samples FILE...: every per-run GB/s figure from parse_many's summary lines.
simdjson_samples() {
	awk '/^simdjson_/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^runs=/) {
			n = split(substr($i, 6), r, ",")
			for (j = 1; j <= n; j++) print r[j]
		}
	}' "$@"
}

# simdjson_field NAME FILE: a key=value field of the first summary line.
simdjson_field() {
	awk -v k="$1" '/^simdjson_/ {
		for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit }
	}' "$2"
}

# go_samples FILE...: "NAME MB/s" for every benchmark result line, e.g.
#   BenchmarkCorpus-2   3   567891234 ns/op   1233.03 MB/s   12 B/op   0 allocs/op
# The -GOMAXPROCS suffix is dropped so that runs pinned to one core (no suffix)
# and unpinned runs (-2) name the same benchmark.
go_samples() {
	awk '/^Benchmark/ {
		for (i = 3; i <= NF; i++) if ($i == "MB/s") {
			name = $1; sub(/-[0-9]+$/, "", name)
			print name, $(i - 1)
		}
	}' "$@"
}

summarize() {
	local dir="$1"
	local sj_files=("$dir"/simdjson.*.out) go_files=("$dir"/go.*.out)
	[[ -e "${sj_files[0]}" ]] || { echo "no simdjson.*.out in $dir" >&2; return 1; }
	[[ -e "${go_files[0]}" ]] || { echo "no go.*.out in $dir" >&2; return 1; }

	local sj_med sj_n
	sj_med="$(simdjson_samples "${sj_files[@]}" | median)"
	sj_n="$(simdjson_samples "${sj_files[@]}" | wc -l)"
	[[ -n "$sj_med" ]] || { echo "no simdjson results in $dir" >&2; return 1; }
	echo "corpus: $(simdjson_field bytes "${sj_files[0]}") bytes," \
		"$(simdjson_field docs "${sj_files[0]}") lines; raw outputs in $dir"
	printf '%-34s %8s GB/s  (median of %d; rounds: %s)\n' "simdjson DOM parse_many" "$sj_med" "$sj_n" \
		"$(awk '/^simdjson_/ {for (i = 1; i <= NF; i++) if ($i ~ /^median_gbps=/) printf "%s%s", sep, substr($i, 13); sep = " "}' "${sj_files[@]}")"

	local names name go_med_mb go_med go_n ratio
	names="$(go_samples "${go_files[@]}" | awk '{print $1}' | sort -u)"
	if [[ -z "$names" ]]; then
		echo "no Go benchmark results with MB/s in $dir/go.*.out" >&2
		return 1
	fi
	for name in $names; do
		go_med_mb="$(go_samples "${go_files[@]}" | awk -v n="$name" '$1 == n {print $2}' | median)"
		go_n="$(go_samples "${go_files[@]}" | awk -v n="$name" '$1 == n' | wc -l)"
		go_med="$(awk -v m="$go_med_mb" 'BEGIN {printf "%.3f", m / 1000}')" # testing's MB/s is 1e6 B/s
		ratio="$(awk -v g="$go_med" -v s="$sj_med" 'BEGIN {printf "%.3f", g / s}')"
		printf '%-34s %8s GB/s  (median of %d, %s MB/s)  ratio go/simdjson %s\n' \
			"$name" "$go_med" "$go_n" "$go_med_mb" "$ratio"
		echo "json_vs_simdjson bench=$name simdjson_gbps=$sj_med go_gbps=$go_med ratio=$ratio" \
			"simdjson_samples=$sj_n go_samples=$go_n"
	done
}

if [[ "${1:-}" == "--summarize" ]]; then
	[[ $# -eq 2 ]] || { echo "usage: $0 --summarize DIR" >&2; exit 64; }
	summarize "$2"
	exit
fi
[[ $# -eq 0 ]] || { echo "usage: $0 [--summarize DIR]" >&2; exit 64; }

core="${CORE:-1}"
rounds="${ROUNDS:-3}"
runs="${RUNS:-5}"
count="${COUNT:-5}"
# The Go side is compiled with the profile the sluice binary is built with
# (cmd/sluice/default.pgo), so the figure is the shipped parser's; PGO=off
# measures without it.
pgo="${PGO:-$root/cmd/sluice/default.pgo}"

# The harness: Debian's libsimdjson-dev, then make (a no-op when up to date).
if [[ ! -f /usr/include/simdjson.h ]]; then
	if [[ "$(id -u)" == 0 ]]; then
		apt-get update -qq && apt-get install -y -qq libsimdjson-dev >&2
	else
		echo "libsimdjson-dev is missing: sudo apt-get install -y libsimdjson-dev" >&2
		exit 1
	fi
fi
make -s -C "$root/bench/simdjson" parse_many >&2

corpus="${CORPUS:-$("$root/bench/corpus.sh")}"
[[ -s "$corpus" ]] || { echo "corpus $corpus is missing or empty" >&2; exit 1; }
corpus="$(cd "$(dirname "$corpus")" && pwd)/$(basename "$corpus")" # go test runs in the package dir

cd "$root"
# Compile the test package outside the timed, pinned runs; fail early if the
# benchmark is not there.
if ! listed="$(go test -pgo="$pgo" -list "$bench_re" "$pkg" 2>&1)"; then
	echo "$listed" >&2
	echo "go test -list $pkg failed" >&2
	exit 1
fi
if ! grep -q "^$bench_re\$" <<<"$listed"; then
	echo "no $bench_re in $pkg" >&2
	exit 1
fi

out="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/json-vs-simdjson.XXXXXX")}"
mkdir -p "$out"
echo "core $core, $rounds rounds, corpus $corpus, pgo $pgo, raw outputs in $out" >&2
for r in $(seq 1 "$rounds"); do
	echo "round $r/$rounds: simdjson" >&2
	# Exit status 2 means parse errors: keep the output, the summary shows errors=.
	taskset -c "$core" "$root/bench/simdjson/parse_many" -n "$runs" "$corpus" \
		>"$out/simdjson.$r.out" 2>"$out/simdjson.$r.err" || [[ $? -eq 2 ]]
	cat "$out/simdjson.$r.out" >&2
	echo "round $r/$rounds: go test -bench $bench_re" >&2
	# -run '^$', not -run x: x matches tests such as TestLineKeptByteExact, and a
	# test failing mid-edit would then sink the benchmark run.
	if ! SLUICE_CORPUS="$corpus" taskset -c "$core" go test -pgo="$pgo" -run '^$' -bench "$bench_re" \
		-benchtime=3x -count "$count" "$pkg" >"$out/go.$r.out" 2>&1; then
		cat "$out/go.$r.out" >&2
		echo "go test failed in round $r" >&2
		exit 1
	fi
	grep '^Benchmark' "$out/go.$r.out" >&2 || true
done
echo >&2
summarize "$out"
