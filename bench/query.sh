#!/usr/bin/env bash
# query.sh: the LogQL questions of issue 5, sluice against VictoriaLogs v1.52.1 in the same run,
# every answer checked.
#
#   bench/query.sh                       # canonical corpus, RUNS=5, TIMEOUT=60 (seconds a query)
#   LINES=20000 RUNS=1 bench/query.sh    # a quick check that everything works, on a small corpus
#   ONLY=p99 bench/query.sh              # only the questions whose name contains "p99"
#   KEEP=1 bench/query.sh                # keep the replies and the servers' logs (the dir is printed)
#
# One run:
#  1. makes the corpus (bench/corpus.sh; LINES picks a smaller one), builds sluice, and builds
#     VictoriaLogs v1.52.1 with ../shared/anchors/victorialogs/build.sh once into the cache dir
#     ${SLUICE_BENCH_DIR:-$HOME/.cache/sluice-bench};
#  2. loads the corpus into both, once per version, into that cache dir: sluice with
#     `sluice ingest --stream-fields service,host` (query-data-vN.L-CORPUS, N.L the part format's
#     version and writer layout), VictoriaLogs by one POST to /insert/jsonline as ../shared/ANCHORS.md says, then a
#     clean stop (SIGINT) so it persists what it holds (vl-data-v1.52.1-CORPUS). Remove a
#     directory to load it again;
#  3. copies both into a temp dir and starts both servers there, on free ports of 127.0.0.1;
#  4. for each question: asks sluice and VictoriaLogs once to warm up (these are the answers
#     checked), then RUNS times each, alternating (sluice, VL, sluice, VL, ...), each ask once
#     neither server uses CPU (wait_quiet), and takes each side's median of curl's time_total.
#     A query that takes longer than TIMEOUT seconds is
#     reported as "timeout" and not run again;
#  5. checks the answers (bench/answers.py) and prints a markdown table for BENCHMARKS.md.
# It exits non-zero when an answer is empty, an error, or differs between the two systems.
#
# The lines VictoriaLogs drops. It answers 200 to the load but silently drops every line whose
# time is in the `timestamp` field (`"timestamp": "2026-01-15 08:00:00,123"`, 10% of the corpus:
# 200,301 of the 2M lines): "cannot unmarshal rfc3339 timestamp". So the two hold different lines
# and their answers differ by those lines. The queries timed are the same on both sides (each over
# everything it holds); the check asks sluice twice more, untimed, with a line filter that keeps
# exactly the lines VictoriaLogs kept (`!= "\"timestamp\""`) and one that keeps exactly the others
# (`|= "\"timestamp\""`), and requires
#   - the answer on the kept lines to equal VictoriaLogs' answer (a count, a count per series, the
#     trace ids of the lines returned; a quantile between sluice's quantiles at 0.987 and 0.993,
#     as VictoriaLogs estimates it from samples, see answers.py);
#   - for counts and needles, the timed answer to be the sum of the two (so the timed answer itself
#     is checked, not only the filtered one).
# That the filters split the corpus as VictoriaLogs did is checked first: sluice's count of every
# line must be the corpus' line count, and its count of the kept lines VictoriaLogs' count.
#
# The forms. LogQL's `|=` searches the whole line, while a LogsQL word or phrase filter without a
# field searches only `_msg`: `"payment declined" | stats count()` (the form in ANCHORS.md) counts
# fewer lines than sluice's `|= "payment declined"`, because the phrase is also in error.message.
# The LogsQL below asks the same question, `("payment declined" OR error.message:"payment declined")`.
# Likewise VictoriaLogs' quantile counts a line without the field as an empty value (the p99 of
# every line, not of the lines that have a latency), so its form filters `http.latency_ms:*` first.
# Each question that parses JSON is asked in two LogQL forms: with `| json` parameters (only the
# fields it needs, `| json level`) and without (`| json` then a label filter, as most users write
# it); the unparameterized form must give the same answer as the parameterized one.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=query
source "$root/bench/lib.sh"
use_corpus
runs="${RUNS:-5}"
timeout="${TIMEOUT:-60}"
answers="$root/bench/answers.py"
# The data directory is named by the part format's version and layout (part_key): a store another writer wrote is loaded anew.
version="$(part_key)"
sdata="$cache/query-data-$version-$corpus_name"
vdata="$cache/vl-data-$vl_version-$corpus_name"
bin="$root/bin/sluice"

run="$(mktemp -d "$cache/query-run.XXXXXX")"
cleanup() {
	stop_servers
	rm -rf "$sdata.tmp" "$vdata.tmp"
	if [[ -n "${KEEP:-}" ]]; then log "replies and logs kept in $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT
vl_flags=(-search.maxQueryDuration="$((timeout + 5))s" -loggerLevel=WARN)

# --- build -------------------------------------------------------------------------------------
log "building sluice"
build_sluice
build_vl

# --- load, once per version ----------------------------------------------------------------------
if [[ ! -e "$sdata/MANIFEST" ]]; then
	log "loading $corpus_name into sluice ($sdata)"
	rm -rf "$sdata" "$sdata.tmp"
	"$bin" ingest --data "$sdata.tmp" --stream-fields service,host "$corpus" >&2
	mv "$sdata.tmp" "$sdata"
fi
if [[ ! -d "$vdata" ]]; then
	log "loading $corpus_name into VictoriaLogs $vl_version ($vdata)"
	rm -rf "$vdata.tmp"
	port="$(free_port)"
	start_vl "$vdata.tmp" "$port" "$run/vl-load.log" "${vl_flags[@]}"
	code="$(vl_post "$port" "$corpus" "$run/vl-load.reply")"
	if [[ "$code" != 200 ]]; then
		log "VictoriaLogs answered $code to the load: $(head -c 500 "$run/vl-load.reply")"
		exit 1
	fi
	stop_server "$vl_pid" || { log "VictoriaLogs did not stop cleanly after the load; its log:"; tail -20 "$run/vl-load.log" >&2; exit 1; }
	mv "$vdata.tmp" "$vdata"
fi

# --- start both on copies ------------------------------------------------------------------------
cp -a "$sdata" "$run/sluice-data"
cp -a "$vdata" "$run/vl-data"
sport="$(free_port)"
"$bin" serve --data "$run/sluice-data" --listen "127.0.0.1:$sport" --query-timeout "$((timeout + 5))s" >"$run/sluice.log" 2>&1 &
sluice_pid=$!
pids+=("$sluice_pid")
wait_ready "http://127.0.0.1:$sport/ready" "$sluice_pid" sluice "$run/sluice.log"
vport="$(free_port)"
start_vl "$run/vl-data" "$vport" "$run/vl.log" "${vl_flags[@]}"
surl="http://127.0.0.1:$sport"
vurl="http://127.0.0.1:$vport"

# The corpus spans 2026-01-15T08:00:00Z onwards (17 minutes for the 2M lines); these bounds hold
# all of it. Instant queries are evaluated at $end with a [2d] range: (start, end].
start=2026-01-15T00:00:00Z end=2026-01-17T00:00:00Z
step_start=2026-01-15T08:00:00Z step_end=2026-01-15T12:00:00Z

# ask SIDE KIND EXPR OUT: sends one query, writes the reply body to OUT and prints
# "HTTP_CODE SECONDS", or "timeout" past $timeout s, or "curl-error-N".
ask() {
	local side=$1 kind=$2 expr=$3 out=$4 url args=() r rc=0
	if [[ "$side" == sluice ]]; then
		args=(-G)
		case "$kind" in
		instant) url="$surl/loki/api/v1/query" args+=(--data-urlencode "time=$end") ;;
		log) url="$surl/loki/api/v1/query_range" args+=(--data-urlencode "start=$start" --data-urlencode "end=$end" --data-urlencode limit=100) ;;
		step) url="$surl/loki/api/v1/query_range" args+=(--data-urlencode "start=$step_start" --data-urlencode "end=$step_end" --data-urlencode step=60) ;;
		esac
	else
		url="$vurl/select/logsql/query"
		case "$kind" in
		instant) args=(--data-urlencode "start=$start" --data-urlencode "end=$end") ;;
		log) args=(--data-urlencode "start=$start" --data-urlencode "end=$end" --data-urlencode limit=100) ;;
		step) args=(--data-urlencode "start=$step_start" --data-urlencode "end=$step_end") ;;
		esac
	fi
	wait_quiet "$sluice_pid" "$vl_pid"
	r="$(curl -s --max-time "$timeout" -o "$out" -w '%{http_code} %{time_total}' "${args[@]}" --data-urlencode "query=$expr" "$url")" || rc=$?
	if ((rc == 28)); then
		# sluice does not yet stop a query whose client has gone (issue 15): wait until it has
		# finished, so that it takes no CPU from the questions timed after it.
		[[ "$side" == sluice ]] && while curl -s "$surl/metrics" | grep -q '^sluice_queries_running [1-9]'; do sleep 1; done
		echo timeout
	elif ((rc != 0)); then
		echo "curl-error-$rc"
	else
		echo "$r"
	fi
}

# --- the corpus: what each side holds --------------------------------------------------------------
lines="$(wc -l <"$corpus")"
all='{service=~".+"}'
keep='!= "\"timestamp\""'
drop='|= "\"timestamp\""'
for f in total kept dropped; do
	case $f in total) e="sum(count_over_time($all [2d]))" ;; kept) e="sum(count_over_time($all $keep [2d]))" ;; dropped) e="sum(count_over_time($all $drop [2d]))" ;; esac
	r="$(ask sluice instant "$e" "$run/corpus.$f.json")"
	[[ "$r" == "200 "* ]] || { log "sluice: $e: $r $(head -c 500 "$run/corpus.$f.json")"; exit 1; }
done
r="$(ask vl instant '* | stats count()' "$run/corpus.vl.ndjson")"
[[ "$r" == "200 "* ]] || { log "VictoriaLogs: * | stats count(): $r $(head -c 500 "$run/corpus.vl.ndjson")"; exit 1; }
if ! corpus_check="$(python3 "$answers" count --expect "$lines" --full "$run/corpus.total.json" --kept "$run/corpus.kept.json" \
	--dropped "$run/corpus.dropped.json" --vl "$run/corpus.vl.ndjson" 2>"$run/corpus.err")"; then
	log "!!! the corpus check failed: the two systems do not hold the lines this script assumes"
	cat "$run/corpus.err" >&2
	exit 1
fi
held_sluice="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["result"][0]["value"][1])' "$run/corpus.total.json")"
held_vl="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["count(*)"])' "$run/corpus.vl.ndjson")"
log "corpus: $lines lines; sluice holds $held_sluice, VictoriaLogs $held_vl ($corpus_check)"

# --- the questions ---------------------------------------------------------------------------------
# q ID FORM KIND MODE NAME LOGQL LOGSQL [SAME_AS]: LOGQL has @F@ where the check's line filter goes
# (nothing when timed). FORM is "param" (`| json` with parameters, or no parser) or "plain"
# (`| json` without), whose answer must equal the row SAME_AS.
ids=() forms=() kinds=() modes=() names=() logqls=() logsqls=() sames=()
q() {
	ids+=("$1") forms+=("$2") kinds+=("$3") modes+=("$4") names+=("$5") logqls+=("$6") logsqls+=("$7") sames+=("${8:-}")
}
q needle param log lines "one trace_id (needle)" \
	"$all@F@ |= \"7ce42c8218072e8c35bf992dc9e9c616\"" \
	'trace_id:7ce42c8218072e8c35bf992dc9e9c616'
q phrase param instant count "count of a phrase" \
	"sum(count_over_time($all@F@ |= \"payment declined\" [2d]))" \
	'("payment declined" OR error.message:"payment declined") | stats count()'
q level param instant count "level=error count by service" \
	"sum by (service) (count_over_time($all@F@ | json level | level=\"error\" [2d]))" \
	'level:=error | stats by (service) count()'
q level-plain plain instant count "level=error count by service" \
	"sum by (service) (count_over_time($all@F@ | json | level=\"error\" [2d]))" \
	'level:=error | stats by (service) count()' level
q status param instant count "count of http.status >= 500" \
	"sum(count_over_time($all@F@ | json http_status=\"http.status\" | http_status >= 500 | __error__=\"\" [2d]))" \
	'http.status:>=500 | stats count()'
q status-plain plain instant count "count of http.status >= 500" \
	"sum(count_over_time($all@F@ | json | http_status >= 500 | __error__=\"\" [2d]))" \
	'http.status:>=500 | stats count()' status
q p99 param instant quantile "p99 of http.latency_ms by service" \
	"quantile_over_time(0.99, $all@F@ | json lat=\"http.latency_ms\" | unwrap lat | __error__=\"\" [2d]) by (service)" \
	'http.latency_ms:* | stats by (service) quantile(0.99, http.latency_ms)'
q p99-plain plain instant quantile "p99 of http.latency_ms by service" \
	"quantile_over_time(0.99, $all@F@ | json | unwrap http_latency_ms | __error__=\"\" [2d]) by (service)" \
	'http.latency_ms:* | stats by (service) quantile(0.99, http.latency_ms)' p99
q per-minute param step count "count by level per minute (4 h, step 60 s; totals per level checked)" \
	"sum by (level) (count_over_time($all@F@ | json level [1m]))" \
	'* | stats by (_time:1m, level) count()'
q per-minute-plain plain step count "count by level per minute (4 h, step 60 s; totals per level checked)" \
	"sum by (level) (count_over_time($all@F@ | json [1m]))" \
	'* | stats by (_time:1m, level) count()' per-minute
q newest param log newest "newest 100 lines of a service with a word" \
	'{service="reports"}@F@ |= "declined"' \
	'_stream:{service="reports"} ("declined" OR error.message:"declined") | sort by (_time desc) | limit 100'
q ci-phrase param instant count "case-insensitive phrase count" \
	"sum(count_over_time($all@F@ |~ \"(?i)payment declined\" [2d]))" \
	'(i("payment declined") OR error.message:i("payment declined")) | stats count()'

# md TEXT: TEXT as code in a markdown table cell, $all abbreviated.
md() {
	local s="${1//"$all"/\$all}"
	printf '`%s`' "${s//|/\\|}"
}
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.1f–%.1f", lo * 1000, hi * 1000}'; }

failures=() timeouts=()
fail() {
	failures+=("$1")
	printf '\nquery.sh: !!! %s\n\n' "$1" >&2
}

rows=()
ratios_param=() ratios_plain=()
for i in "${!ids[@]}"; do
	id="${ids[$i]}" kind="${kinds[$i]}" mode="${modes[$i]}" qname="${names[$i]}"
	if [[ -n "${ONLY:-}" && "$id $qname" != *"$ONLY"* ]]; then continue; fi
	tmpl="${logqls[$i]}"
	sexpr="${tmpl//@F@/}" vexpr="${logsqls[$i]}"
	sout="$run/$id.sluice.json" vout="$run/$id.vl.ndjson"
	log "$id: $sexpr"

	# Warm-up: these replies are the answers checked.
	sstate=ok vstate=ok
	r="$(ask sluice "$kind" "$sexpr" "$sout")"
	case "$r" in "200 "*) ;; timeout) sstate=timeout ;; *) sstate="error $r: $(head -c 300 "$sout")" ;; esac
	r="$(ask vl "$kind" "$vexpr" "$vout")"
	case "$r" in "200 "*) ;; timeout) vstate=timeout ;; *) vstate="error $r: $(head -c 300 "$vout")" ;; esac

	stimes=() vtimes=()
	for ((n = 0; n < runs; n++)); do
		if [[ "$sstate" == ok ]]; then
			r="$(ask sluice "$kind" "$sexpr" "$run/discard")"
			case "$r" in "200 "*) stimes+=("${r#* }") ;; timeout) sstate=timeout ;; *) sstate="error $r: $(head -c 300 "$run/discard")" ;; esac
		fi
		if [[ "$vstate" == ok ]]; then
			r="$(ask vl "$kind" "$vexpr" "$run/discard")"
			case "$r" in "200 "*) vtimes+=("${r#* }") ;; timeout) vstate=timeout ;; *) vstate="error $r: $(head -c 300 "$run/discard")" ;; esac
		fi
	done

	sms="$sstate" vms="$vstate" ratio="—" answer="—"
	[[ "$sstate" == error* ]] && { fail "$id: sluice answered with an error: ${sstate#error }"; sms=error; }
	[[ "$vstate" == error* ]] && { fail "$id: VictoriaLogs answered with an error: ${vstate#error }"; vms=error; }
	if [[ "$sstate" == ok ]]; then
		sms="$(printf '%s\n' "${stimes[@]}" | median | awk '{printf "%.1f", $1 * 1000}')"
		((runs > 1)) && sms+=" ($(printf '%s\n' "${stimes[@]}" | spread))"
	fi
	if [[ "$vstate" == ok ]]; then
		vms="$(printf '%s\n' "${vtimes[@]}" | median | awk '{printf "%.1f", $1 * 1000}')"
		((runs > 1)) && vms+=" ($(printf '%s\n' "${vtimes[@]}" | spread))"
	fi
	if [[ "$sstate" == ok && "$vstate" == ok ]]; then
		ratio="$(awk "BEGIN {printf \"%.2f\", ${sms%% *} / ${vms%% *}}")"
		if [[ "${forms[$i]}" == plain ]]; then ratios_plain+=("$ratio"); else ratios_param+=("$ratio"); fi
	fi

	# The check (untimed).
	if [[ "$sstate" == ok && "$vstate" == ok ]]; then
		same="${sames[$i]}"
		check=(python3 "$answers" "$mode" --full "$sout")
		if [[ -n "$same" && -s "$run/$same.sluice.json" ]]; then
			check+=(--same-as "$run/$same.sluice.json")
		else
			kexpr="${tmpl//@F@/ $keep}" dexpr="${tmpl//@F@/ $drop}"
			ok=1
			parts=(kept dropped)
			case "$mode" in
			# The newest 100 of all lines are not the newest of the kept plus those of the others.
			newest) parts=(kept) ;;
			# VictoriaLogs' quantile is an estimate; the band it must fall in (see answers.py).
			quantile) parts=(kept kept-lo kept-hi) ;;
			esac
			for part in "${parts[@]}"; do
				case "$part" in
				kept) e="$kexpr" ;;
				dropped) e="$dexpr" ;;
				kept-lo) e="${kexpr/quantile_over_time(0.99,/quantile_over_time(0.987,}" ;;
				kept-hi) e="${kexpr/quantile_over_time(0.99,/quantile_over_time(0.993,}" ;;
				esac
				r="$(ask sluice "$kind" "$e" "$run/$id.$part.json")"
				if [[ "$r" != "200 "* ]]; then
					fail "$id: sluice's check query answered $r: $e: $(head -c 300 "$run/$id.$part.json")"
					ok=0
				fi
			done
			check+=(--kept "$run/$id.kept.json" --vl "$vout")
			case "$mode" in
			count | lines) check+=(--dropped "$run/$id.dropped.json") ;;
			quantile) check+=(--kept-lo "$run/$id.kept-lo.json" --kept-hi "$run/$id.kept-hi.json") ;;
			esac
			((ok)) || check=()
		fi
		if ((${#check[@]})); then
			if answer="$("${check[@]}" 2>"$run/$id.err")"; then
				:
			else
				fail "$id: answers differ: $(cat "$run/$id.err") (sluice: $sexpr; VictoriaLogs: $vexpr)"
				answer="**MISMATCH**"
			fi
		else
			answer="**check failed**"
		fi
	elif [[ "$sstate" == timeout ]]; then
		answer="not checked (sluice timed out)"
		timeouts+=("$id (sluice)")
	elif [[ "$vstate" == timeout ]]; then
		answer="not checked (VictoriaLogs timed out)"
		timeouts+=("$id (VictoriaLogs)")
	fi
	log "$id: sluice $sms ms, VictoriaLogs $vms ms, ratio $ratio; $answer"
	rows+=("| $qname | ${forms[$i]/param/parameterized} | $(md "${tmpl//@F@/}") | $(md "$vexpr") | $sms | $vms | $ratio | $answer |")
done

geomean() { awk '{s += log($1); n++} END {if (n) printf "%.2f (%d rows)", exp(s / n), n; else print "none"}'; }

# Memory after the questions: each server's peak and current resident set (VmHWM, VmRSS; the
# current one as anonymous memory, the heap, and file pages mapped, which for sluice are the parts'
# pages it has read and the kernel may drop), and what sluice's block cache holds (its budget is a
# sixteenth of the memory, 64 MiB to 1 GiB).
kib() { awk -v k="$2" '$1 == k":" {printf "%d", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo "?"; }
cache_mb="$(curl -s "$surl/metrics" | awk '$1 == "sluice_store_block_cache_bytes" {printf "%d", $2 / 1048576}')"
rss() { echo "peak $(kib "$1" VmHWM) MB, now $(kib "$1" VmRSS) MB ($(kib "$1" RssAnon) anonymous, $(kib "$1" RssFile) file pages)"; }
memory="sluice $(rss "$sluice_pid"), its block cache ${cache_mb:-?} MB; VictoriaLogs $(rss "$vl_pid")"
log "memory after the questions: $memory"

# --- the report ------------------------------------------------------------------------------------
bench_header LINES RUNS TIMEOUT ONLY SLUICE_BENCH_DIR
echo "- corpus: \`$corpus_name\`, $lines lines; sluice holds $held_sluice (part format $version, $(du -sm "$run/sluice-data" | cut -f1) MB);" \
	"VictoriaLogs $vl_version holds $held_vl ($(du -sm "$run/vl-data" | cut -f1) MB): it drops the lines whose time is in \`timestamp\` (\`2026-01-15 08:00:00,123\`)"
echo "- each query asked once to warm up (the answer checked), then $runs times on each side alternating; median of curl's time_total$( ((runs > 1)) && echo ', (min–max) of the runs'); timeout ${timeout} s"
echo "- \`\$all\` is \`$all\`; sluice's instant queries at $end, log queries over [$start, $end] with limit 100, VictoriaLogs over the same range"
echo "- memory after the questions (resident sets from /proc): $memory"
echo "- answers: sluice's answer over every line it holds; then its answer on the lines VictoriaLogs holds, which must equal VictoriaLogs' (the unparameterized forms must equal the parameterized)"
echo
echo "| question | form | sluice (LogQL) | VictoriaLogs $vl_version (LogsQL) | sluice ms | VL ms | sluice / VL | answers |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Geometric mean of sluice / VL: parameterized forms $(printf '%s\n' "${ratios_param[@]}" | grep . | geomean), unparameterized forms $(printf '%s\n' "${ratios_plain[@]}" | grep . | geomean)."
if ((${#failures[@]})); then
	echo
	echo "!!! ${#failures[@]} check(s) FAILED:"
	printf -- '- %s\n' "${failures[@]}"
	exit 1
fi
if ((${#timeouts[@]})); then
	echo "Every answer that came checked: no mismatch. Timed out after ${timeout} s, so not checked: ${timeouts[*]}."
else
	echo "Every answer checked: no mismatch."
fi
