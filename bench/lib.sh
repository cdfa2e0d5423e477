# lib.sh: what the bench scripts share. Sourced, not run: `source "$root/bench/lib.sh"` after
# setting root (the repository) and name (the script's, for messages).

cache="${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench}"
vl_version=v1.52.1
vl_bin="$cache/victoria-logs-$vl_version"
bench_started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
bench_load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$cache"

log() { echo "$name.sh: $*" >&2; }

# use_corpus: makes (or finds) the corpus and sets corpus and corpus_name. LINES picks a smaller
# one than the canonical 2M lines (bench/corpus.sh's CORPUS_LINES).
use_corpus() {
	export CORPUS_LINES="${LINES:-${CORPUS_LINES:-2000000}}"
	corpus="$("$root/bench/corpus.sh")"
	corpus_name="$(basename "$corpus" .ndjson)"
}

# part_key: the part format's version and the writer's layout (internal/store/part/part.go,
# v8.2), which name the cached stores: a store another writer wrote is loaded anew.
part_key() {
	local f="$root/internal/store/part/part.go"
	echo "v$(sed -n 's/^\tVersion *= \([0-9]*\)$/\1/p' "$f").$(sed -n 's/^\tLayout *= \([0-9]*\)$/\1/p' "$f")"
}

# free_port: a TCP port of 127.0.0.1 nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_ready URL PID WHAT LOG: polls URL until it answers 2xx; fails, with the end of LOG, if PID
# exits first or 120 s pass.
wait_ready() {
	local i
	for ((i = 0; i < 1200; i++)); do
		curl -sf -o /dev/null "$1" && return 0
		if ! kill -0 "$2" 2>/dev/null; then
			log "$3 exited before it was ready; the end of its log:"
			tail -20 "$4" >&2
			return 1
		fi
		sleep 0.1
	done
	log "$3 not ready after 120 s"
	return 1
}

# Servers the script started, by PID: stop_servers (in the EXIT trap) stops those still running.
pids=()

# stop_server PID: stops a server this script started, cleanly (SIGINT: VictoriaLogs then writes
# what it holds to disk; sluice stops as on SIGTERM), waits for it and forgets it. Returns its
# exit status.
stop_server() {
	local p rest=() rc=0
	kill -INT "$1" 2>/dev/null || true
	wait "$1" || rc=$?
	for p in "${pids[@]}"; do
		if [[ "$p" != "$1" ]]; then rest+=("$p"); fi
	done
	pids=("${rest[@]}")
	return "$rc"
}

stop_servers() {
	local p
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pids=()
}

# start_vl DIR PORT LOG [FLAG...]: starts VictoriaLogs on the data directory DIR, on 127.0.0.1:PORT,
# logging to LOG, as ../shared/ANCHORS.md says; sets vl_pid and waits until it is ready.
start_vl() {
	"$vl_bin" -storageDataPath="$1" -httpListenAddr="127.0.0.1:$2" -retentionPeriod=100y "${@:4}" >"$3" 2>&1 &
	vl_pid=$!
	pids+=("$vl_pid")
	wait_ready "http://127.0.0.1:$2/health" "$vl_pid" VictoriaLogs "$3"
}

# build_sluice: builds bin/sluice from the work tree.
build_sluice() {
	(cd "$root" && go build -o "$root/bin/sluice" ./cmd/sluice)
}

# build_vl: builds VictoriaLogs $vl_version with ../shared/anchors/victorialogs/build.sh (from the Go
# module proxy) into the cache dir, once.
build_vl() {
	if [[ ! -x "$vl_bin" ]]; then
		log "building VictoriaLogs $vl_version into $vl_bin (once)"
		"$root/../shared/anchors/victorialogs/build.sh" "$vl_bin.tmp" >&2
		mv "$vl_bin.tmp" "$vl_bin"
	fi
}

# vl_load_url PORT: the URL that loads NDJSON into VictoriaLogs as ../shared/ANCHORS.md says.
vl_load_url() {
	echo "http://127.0.0.1:$1/insert/jsonline?_stream_fields=service,host&_time_field=time,ts,@timestamp,timestamp&_msg_field=msg"
}

# vl_post PORT FILE OUT: posts FILE to VictoriaLogs, the reply's body to OUT; prints the status.
# A Content-Type is needed: with curl's default (a form) the body is read as form fields and nothing
# is stored, still with a 200. -T streams the file rather than reading it into memory.
vl_post() {
	curl -sS -o "$3" -w '%{http_code}' -T "$2" -X POST -H 'Content-Type: application/stream+json' -H 'Expect:' "$(vl_load_url "$1")"
}

# bench_command VAR...: the command line to paste, with the settings given in the environment.
bench_command() {
	local v
	for v in "$@"; do
		if [[ -n "${!v:-}" ]]; then printf '%s=%q ' "$v" "${!v}"; fi
	done
	printf 'bench/%s.sh' "$name"
}

# bench_header VAR...: the report's first lines: the command, the commit, the date, the load.
bench_header() {
	echo
	echo "## bench/$name.sh"
	echo
	echo "- command: \`$(bench_command "$@")\` (in $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . 2>/dev/null || echo ', with uncommitted changes'))"
	echo "- date: $bench_started; load average at the start $bench_load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores, $(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1)"
}

# pg_prepare: checks that PostgreSQL 15 is installed (PG_BIN, default /usr/lib/postgresql/15/bin) and
# makes pgdir for its data, outside the cache dir (as root, the postgres user must reach it, and as_pg
# runs a command as that user). stop_pg, which the caller's cleanup runs, stops what start_pg started.
pg_prepare() {
	pgbin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
	if [[ ! -x "$pgbin/initdb" ]]; then
		log "PostgreSQL 15 is not installed ($pgbin/initdb); scripts/e2e-setup.sh installs postgresql-15"
		exit 1
	fi
	pgdir="$(mktemp -d /tmp/sluice-bench-pg.XXXXXX)"
	pg_pid=""
	as_pg=()
	if ((EUID == 0)); then
		as_pg=(runuser -u postgres --)
		chown postgres: "$pgdir"
		chmod 755 "$pgdir"
	fi
}

# start_pg [PREFIX...]: initdb in pgdir and start PostgreSQL on a free port of 127.0.0.1 with PG_OPTS,
# the command prefixed by PREFIX (nice -n 5, say); sets pg_port, pg_pid and dsn.
start_pg() {
	pg_port="$(free_port)"
	"${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -A trust -U postgres --no-sync -E UTF8 --locale=C >"$pgdir/initdb.log" 2>&1 ||
		{ log "initdb failed:"; cat "$pgdir/initdb.log" >&2; exit 1; }
	"$@" "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $pg_port -k $pgdir ${PG_OPTS:-}" start >/dev/null ||
		{ log "PostgreSQL did not start:"; tail -20 "$pgdir/log" >&2; exit 1; }
	pg_pid="$(head -1 "$pgdir/data/postmaster.pid")"
	dsn="postgres://postgres@127.0.0.1:$pg_port/postgres?sslmode=disable"
}

# stop_pg: stops the postmaster by its PID (a fast shutdown) and waits until it is gone; it is not
# this script's child, so wait(1) cannot.
stop_pg() {
	[[ -n "${pg_pid:-}" ]] || return 0
	kill -INT "$pg_pid" 2>/dev/null || true
	while kill -0 "$pg_pid" 2>/dev/null; do sleep 0.1; done
	pg_pid=""
}

# --- the corpus in parallel POSTs, for bench/http.sh and the sink scripts -------------------------

# split_corpus: splits $corpus into $parts parts of whole lines, once, into $split_dir (made whole
# in .tmp, then renamed; shared by the scripts), and sets files.
split_corpus() {
	if [[ ! -d "$split_dir" ]]; then
		rm -rf "$split_dir.tmp"
		mkdir -p "$split_dir.tmp"
		split -n "l/$parts" -d -a 3 "$corpus" "$split_dir.tmp/part."
		mv "$split_dir.tmp" "$split_dir"
	fi
	files=("$split_dir"/part.*)
}

# post_corpus PORT: posts the corpus parts ($files) at once, as bench/http.sh does; sets accepted
# and rejected from the replies (in $run), and problems=1 if a request failed or a line was lost.
post_corpus() {
	local i
	local cpids=()
	rm -f "$run"/reply.* "$run"/code.*
	for i in "${!files[@]}"; do
		curl -sS -o "$run/reply.$i" -w '%{http_code}\n' -X POST -H 'Content-Type: application/x-ndjson' -H 'Expect:' \
			-T "${files[$i]}" "127.0.0.1:$1/insert/jsonline?_stream_fields=service,host" >"$run/code.$i" 2>&1 &
		cpids+=($!)
	done
	wait "${cpids[@]}"
	accepted=0
	rejected=0
	for i in "${!files[@]}"; do
		if [[ "$(cat "$run/code.$i")" != 2* ]]; then
			log "!!! request $i answered $(cat "$run/code.$i"): $(head -c 300 "$run/reply.$i")"
			problems=1
			continue
		fi
		accepted=$((accepted + $(grep -o '"accepted":[0-9]*' "$run/reply.$i" | cut -d: -f2)))
		rejected=$((rejected + $(grep -o '"rejected":[0-9]*' "$run/reply.$i" | cut -d: -f2)))
	done
	if ((rejected > 0 || accepted != lines)); then
		log "!!! $accepted lines accepted and $rejected rejected of $lines"
		problems=1
	fi
}

# start_sluice PORT DATA [FLAG...]: starts sluice serve ($bin, its log in $run/serve.log); sets spid.
start_sluice() {
	"$bin" serve --data "$2" --listen "127.0.0.1:$1" "${@:3}" >"$run/serve.log" 2>&1 &
	spid=$!
	pids+=("$spid")
	wait_ready "http://127.0.0.1:$1/ready" "$spid" sluice "$run/serve.log"
}

# wait_stored PORT: waits until the store has settled after the posts: every accepted line is in
# parts or in a head that no flush is due for (head bytes under the flush size, 64 MiB by default,
# HEAD_BYTES if SERVE_FLAGS changes it), so no flush runs. Then the peak RSS of two sides holds
# the same work: the flushes of the head to parts that follow the last reply are in both.
wait_stored() {
	local m head parts hrows i
	for ((i = 0; i < 6000; i++)); do
		m="$(curl -sf "127.0.0.1:$1/metrics")" || { log "!!! GET /metrics failed"; problems=1; return; }
		head="$(awk '/^sluice_store_head_bytes / {printf "%d", $2}' <<<"$m")"
		hrows="$(awk '/^sluice_store_head_rows / {printf "%d", $2}' <<<"$m")"
		parts="$(awk '/^sluice_store_part_rows / {printf "%d", $2}' <<<"$m")"
		if ((${head:-0} < ${HEAD_BYTES:-67108864} && ${parts:-0} + ${hrows:-0} >= accepted)); then return; fi
		sleep 0.05
	done
	log "!!! the store did not settle in 5 minutes: head $head bytes, $hrows rows, parts $parts rows"
	problems=1
}

now() { date +%s.%N; }
# rate N A B: N per second from time A to time B.
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN {printf "%.0f", n / (b - a)}'; }
# peak_rss PID: the process's peak RSS in MB.
peak_rss() { awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$1/status"; }
# cpu_of PID: the process's CPU seconds so far (user and system; its command may hold spaces).
hz="$(getconf CLK_TCK)"
cpu_of() { awk -v hz="$hz" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz}' "/proc/$1/stat"; }

# wait_quiet PID...: waits, at most 30 s, until none of the processes uses more than a tenth of a
# core over a tenth of a second: a server's work after its reply (its collector) would otherwise
# run beside the next query timed on the other server (bench/questions.py waits the same way).
wait_quiet() {
	local t0=$SECONDS p busy
	local -a c0
	while ((SECONDS - t0 < 30)); do
		c0=()
		for p in "$@"; do c0+=("$(cpu_of "$p" 2>/dev/null || echo 0)"); done
		sleep 0.1
		busy=0
		local i=0
		for p in "$@"; do
			awk -v a="${c0[i]}" -v b="$(cpu_of "$p" 2>/dev/null || echo 0)" 'BEGIN {exit !(b - a > 0.01)}' && busy=1
			i=$((i + 1))
		done
		((busy)) || return 0
	done
}

# wait_sink PORT: waits until the sink of the sluice at PORT (pid $spid) has caught up: its backlog
# is 0 and it sent every accepted line.
wait_sink() {
	local st backlog sent
	while :; do
		st="$(curl -sf "127.0.0.1:$1/api/v1/sinks")" || { log "!!! GET /api/v1/sinks failed"; problems=1; return; }
		backlog="$(grep -o '"backlog_bytes":[0-9]*' <<<"$st" | cut -d: -f2)"
		sent="$(grep -o '"records_sent":[0-9]*' <<<"$st" | cut -d: -f2)"
		if [[ "$backlog" == 0 && "${sent:-0}" -ge "$accepted" ]]; then return; fi
		if ! kill -0 "$spid" 2>/dev/null; then log "!!! sluice exited"; tail -20 "$run/serve.log" >&2; exit 1; fi
		sleep 0.02
	done
}
