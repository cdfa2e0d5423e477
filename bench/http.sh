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
#   - the server's CPU time and peak RSS, the time a clean stop takes (SIGTERM; the heads not yet
#     flushed stay in the WAL), and what `sluice stats` finds stored (parts plus WAL).
# It exits non-zero when a reply is not a 2xx with a JSON body, when accepted + rejected is not
# the number of lines sent, or when the store does not hold exactly the accepted lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CORPUS_LINES="${LINES:-${CORPUS_LINES:-2000000}}"
corpus="$("$root/bench/corpus.sh")"
name="$(basename "$corpus" .ndjson)"
parts="${PARTS:-4}"
rounds="${ROUNDS:-1}"
cache="${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}"
split_dir="$cache/http-parts-$name-$parts"
bin="$root/bin/sluice"

command="$(for v in LINES PARTS ROUNDS SERVE_FLAGS PORT SLUICE_BENCH_DIR; do [[ -n "${!v:-}" ]] && printf '%s=%q ' "$v" "${!v}"; done; printf 'bench/http.sh')"
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p "$cache"
run="$(mktemp -d "$cache/http-run.XXXXXX")"
server=""
cleanup() {
	if [[ -n "$server" ]]; then
		kill -TERM "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	rm -rf "$run" "$split_dir.tmp"
}
trap cleanup EXIT
log() { echo "http.sh: $*" >&2; }

(cd "$root" && go build -o "$bin" ./cmd/sluice)
lines=$(wc -l <"$corpus")
bytes=$(stat -c %s "$corpus")
if [[ ! -d "$split_dir" ]]; then # made whole in .tmp, then renamed
	rm -rf "$split_dir.tmp"
	mkdir -p "$split_dir.tmp"
	split -n "l/$parts" -d -a 3 "$corpus" "$split_dir.tmp/part."
	mv "$split_dir.tmp" "$split_dir"
fi
files=("$split_dir"/part.*)

port="${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
# shellcheck disable=SC2086
"$bin" serve --data "$run/data" --listen "127.0.0.1:$port" ${SERVE_FLAGS:-} 2>"$run/server.log" &
server=$!
for ((i = 0; ; i++)); do
	curl -sf -o /dev/null "127.0.0.1:$port/ready" && break
	if ! kill -0 "$server" 2>/dev/null || ((i > 1200)); then
		log "the server did not become ready; the end of its log:"
		tail -20 "$run/server.log" >&2
		exit 1
	fi
	sleep 0.1
done

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
kill -TERM "$server"
wait "$server" || { log "the server exited with status $? on SIGTERM; the end of its log:"; tail -20 "$run/server.log" >&2; server=""; exit 1; }
server=""
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

echo
echo "## bench/http.sh"
echo
echo "- command: \`$command\` (in $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . 2>/dev/null || echo ', with uncommitted changes'))"
echo "- date: $started; load average at the start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores, $(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1)"
echo "- corpus: \`$name\`, $lines lines, $bytes bytes, in ${#files[@]} parallel POSTs to \`/insert/jsonline?_stream_fields=service,host\`, each sent $rounds time(s) in turn"
echo
echo "| lines sent | accepted | rejected | first request to last reply | accepted lines/s | MB/s | server CPU | peak RSS | clean stop (SIGTERM) | stored |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk -v s="$sent" -v a="$accepted" -v r="$rejected" -v t="$secs" -v b="$bytes" -v n="$rounds" -v c="$cpu" -v m="$rss" -v st="$stop_secs" -v d="$stored" \
	'BEGIN {printf "| %d | %d | %d | %.2f s | %.0f | %.0f | %s s | %s MB | %.2f s | %d |\n", s, a, r, t, a / t, b * n * (a / s) / t / 1e6, c, m, st, d}'
echo
echo "Every accepted line is durable (fdatasync'ed) when its reply comes; MB/s counts the accepted lines' share of the bytes sent."
tail -2 "$run/stats.txt"
exit "$problems"
