#!/usr/bin/env bash
# http.sh: the canonical corpus sent over HTTP to /insert/jsonline in a few parallel requests
# (issue 4's bulk figure).
#
#   bench/http.sh                        # the corpus in PARTS=4 parallel POSTs
#   ROUNDS=4 bench/http.sh               # each POST 4 times in turn: past what the heads may buffer
#   LINES=20000 bench/http.sh            # a quick check on a small corpus
#   SERVE_FLAGS='--max-head-bytes 268435456' bench/http.sh
#
# Starts `sluice serve` on a fresh data directory in a temp dir (127.0.0.1, a free port; PORT to
# choose one), splits the corpus into PARTS files by lines (kept in the cache dir for the next run),
# posts them at once with curl, each ROUNDS times in turn, and reports:
#   - the lines the replies accepted, summed from their JSON ({"accepted":N,"rejected":M,...}),
#     not the lines sent; lines/s and MB/s are accepted lines (and their share of the bytes sent)
#     over the time from the first request to the last reply: the whole time the client waits,
#     every accepted line durable (fdatasync'ed) when its reply comes;
#   - the lines rejected, and the first errors the replies name;
#   - the server's CPU time and peak RSS, the time a clean stop takes (SIGINT; the heads not yet
#     flushed stay in the WAL), and what `sluice stats` finds stored (parts plus WAL).
# It exits non-zero when a reply is not a 2xx with a JSON body, when accepted + rejected is not
# the number of lines sent, or when the store does not hold exactly the accepted lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=http
source "$root/bench/lib.sh"
use_corpus
parts="${PARTS:-4}"
rounds="${ROUNDS:-1}"
split_dir="$cache/http-parts-$corpus_name-$parts"
bin="$root/bin/sluice"

run="$(mktemp -d "$cache/http-run.XXXXXX")"
cleanup() {
	stop_servers
	rm -rf "$run" "$split_dir.tmp"
}
trap cleanup EXIT

build_sluice
lines=$(wc -l <"$corpus")
bytes=$(stat -c %s "$corpus")
split_corpus

port="${PORT:-$(free_port)}"
# shellcheck disable=SC2086
"$bin" serve --data "$run/data" --listen "127.0.0.1:$port" ${SERVE_FLAGS:-} 2>"$run/server.log" &
server=$!
pids+=("$server")
wait_ready "http://127.0.0.1:$port/ready" "$server" sluice "$run/server.log"

log "posting $lines lines ($((bytes / 1000000)) MB) in ${#files[@]} parallel requests, $rounds round(s) each"
start=$(date +%s.%N)
pids=()
for i in "${!files[@]}"; do
	for ((r = 0; r < rounds; r++)); do
		curl -sS -o "$run/reply.$i.$r" -w '%{http_code}\n' -X POST -H 'Content-Type: application/x-ndjson' -H 'Expect:' \
			-T "${files[$i]}" "127.0.0.1:$port/insert/jsonline?_stream_fields=service,host" || echo "curl-failed"
	done >"$run/code.$i" &
	pids+=($!)
done
wait "${pids[@]}"
end=$(date +%s.%N)
secs=$(awk "BEGIN {print $end - $start}")

cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$server/stat")
rss=$(awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$server/status")
stop_start=$(date +%s.%N)
stop_server "$server" || { log "the server exited with status $? when stopped; the end of its log:"; tail -20 "$run/server.log" >&2; exit 1; }
stop_secs=$(awk "BEGIN {print $(date +%s.%N) - $stop_start}")
"$bin" stats --data "$run/data" >"$run/stats.txt"

# Sums the replies: prints "accepted rejected" and the problems found, one a line, to stderr.
read -r accepted rejected < <(python3 - "$run" "${#files[@]}" "$rounds" <<'EOF'
import json, sys
run, nfiles, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
accepted = rejected = 0
errors = []
for i in range(nfiles):
    codes = open("%s/code.%d" % (run, i)).read().split()
    for r in range(rounds):
        code = codes[r] if r < len(codes) else "none"
        body = open("%s/reply.%d.%d" % (run, i, r), errors="replace").read()
        if not code.startswith("2"):
            print("PROBLEM: request %d round %d answered %s: %s" % (i, r, code, body[:300]), file=sys.stderr)
            continue
        try:
            reply = json.loads(body)
            accepted += reply["accepted"]
            rejected += reply["rejected"]
            errors += reply.get("errors", [])
        except (ValueError, KeyError, TypeError) as e:
            print("PROBLEM: request %d round %d: reply is not {accepted, rejected}: %s: %s" % (i, r, e, body[:300]), file=sys.stderr)
for e in errors[:5]:
    print("rejected: %s" % e, file=sys.stderr)
print(accepted, rejected)
EOF
)
stored=$(awk '/^parts:/ {p = $3} /^head:/ {h = $2} END {print p + h}' "$run/stats.txt")

sent=$((lines * rounds))
problems=0
sort "$run"/code.* | uniq -c | sed 's/^/http.sh: replies: /' >&2
grep -q . < <(grep -hv '^2' "$run"/code.*) && problems=1
if ((accepted + rejected != sent)); then
	log "!!! the replies account for $((accepted + rejected)) lines ($accepted accepted, $rejected rejected), $sent were sent"
	problems=1
fi
if ((rejected > 0)); then
	log "!!! $rejected lines rejected (the corpus has none that should be)"
fi
if ((stored != accepted)); then
	log "!!! the store holds $stored lines, the replies accepted $accepted"
	problems=1
fi

bench_header LINES PARTS ROUNDS SERVE_FLAGS PORT SLUICE_BENCH_DIR
echo "- corpus: \`$corpus_name\`, $lines lines, $bytes bytes, in ${#files[@]} parallel POSTs to \`/insert/jsonline?_stream_fields=service,host\`, each sent $rounds time(s) in turn"
echo
echo "| lines sent | accepted | rejected | first request to last reply | accepted lines/s | MB/s | server CPU | peak RSS | clean stop (SIGINT) | stored |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk -v s="$sent" -v a="$accepted" -v r="$rejected" -v t="$secs" -v b="$bytes" -v n="$rounds" -v c="$cpu" -v m="$rss" -v st="$stop_secs" -v d="$stored" \
	'BEGIN {printf "| %d | %d | %d | %.2f s | %.0f | %.0f | %s s | %s MB | %.2f s | %d |\n", s, a, r, t, a / t, b * n * (a / s) / t / 1e6, c, m, st, d}'
echo
echo "Every accepted line is durable (fdatasync'ed) when its reply comes; MB/s counts the accepted lines' share of the bytes sent."
tail -2 "$run/stats.txt"
exit "$problems"
