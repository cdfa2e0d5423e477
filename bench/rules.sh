#!/usr/bin/env bash
# rules.sh: what the rule stage costs `sluice ingest` on the canonical corpus (issue 16): the whole
# command with no rules, with 10 and with 1,000, the three alternated in each round; medians.
#
#   bench/rules.sh                  # 3 rounds (RUNS=n to change)
#   LINES=20000 RUNS=1 bench/rules.sh   # a quick check on a small corpus
#
# The rule sets are made here, as operators write them for the corpus' eight services (the issue's
# mix): 70% literal line filters per service and path (`{service="x"} |= "/api/v1/..."`, drop), 20%
# regexps on error text (`|~ "(timeout|refused) ..."`, a counter by host), 10% redactions gated
# by a literal (e-mail addresses, `password=`-style pairs). The 10-rule set is the first ten of
# the 1,000. Each run loads the corpus into a new data directory with `--fsync always`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name=rules
source "$root/bench/lib.sh"
use_corpus
runs="${RUNS:-3}"
build_sluice
bin="$root/bin/sluice"
work="$(mktemp -d "$cache/rules-run.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# rules N: writes N rules to stdout.
rules() {
	python3 - "$1" <<'EOF'
import sys
n = int(sys.argv[1])
services = ["auth", "checkout", "gateway", "inventory", "notifier", "payments", "reports", "search"]
paths = ["/api/v1/orders", "/api/v1/cart/items", "/api/v1/users", "/api/v2/search", "/static/app.js", "/login", "/healthz"]
print("rules:")
for i in range(n):
    svc = services[i % len(services)]
    print(f"  - name: r{i}")
    k = i % 10
    if k < 7:
        print(f"    match: '{{service=\"{svc}\"}} |= \"{paths[i % len(paths)]}/{i}\"'")
        print("    drop: true")
    elif k < 9:
        print(f"    match: '{{service=\"{svc}\"}} |~ \"(timeout|refused) (on|from) shard-{i}\"'")
        print(f"    metric: {{name: shard_errors_{i}_total, labels: [host], max_series: 100}}")
    else:
        gate = "@example.com" if i < 80 else f"password=secret{i}"
        print(f"    match: '{{service=\"{svc}\"}} |= \"{gate}\"'")
        print("    redact: {detectors: [email, secret_pairs]}")
EOF
}
rules 10 >"$work/rules-10.yaml"
rules 1000 >"$work/rules-1000.yaml"
"$bin" rules check "$work/rules-1000.yaml" >/dev/null

# ingest SET: loads the corpus with the rule set SET (none, 10 or 1000); prints the seconds.
ingest() {
	local data="$work/data-$1" args=() t0 t1
	rm -rf "$data"
	[[ "$1" == none ]] || args=(--rules "$work/rules-$1.yaml")
	t0=$(date +%s%N)
	"$bin" ingest --quiet --fsync always --data "$data" "${args[@]}" "$corpus"
	t1=$(date +%s%N)
	rm -rf "$data"
	python3 -c "print('%.2f' % (($t1 - $t0) / 1e9))"
}

declare -A times
for ((r = 1; r <= runs; r++)); do
	for set in none 10 1000; do
		s=$(ingest "$set")
		times[$set]+="$s "
		log "round $r: $set rules: $s s"
	done
done
median() { python3 -c 'import statistics, sys; print("%.2f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
lines=$(wc -l <"$corpus")
none=$(median ${times[none]})
bench_header RUNS LINES
echo "- corpus: \`$corpus_name\`, $lines lines; \`sluice ingest --fsync always\`, whole command, median of $runs"
echo
echo "| rules | whole (s) | lines/s | of the no-rules figure | runs (s) |"
echo "|---|---|---|---|---|"
for set in none 10 1000; do
	m=$(median ${times[$set]})
	python3 -c "import sys; m, n, l = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); print('| %s | %.2f | %.0f | %.0f%% | %s |' % (sys.argv[4], m, l / m, 100 * n / m, sys.argv[5]))" "$m" "$none" "$lines" "$set" "${times[$set]}"
done
