#!/usr/bin/env bash
# sink-kafka.sh: sluice → Kafka (issue 17): the records per second a kafka sink (zstd, and the
# defaults otherwise: batch 10000, value line, labels as headers, one transaction per batch; linger
# 50ms, not 1s, so that the last batch does not wait a second for more)
# delivers from sluice's WAL to a one-node KRaft broker (Apache Kafka 4.1.0) on this machine, on the
# canonical corpus. Target: >= 500,000 records/s.
#
#   bench/sink-kafka.sh                      # 3 runs (RUNS=n to change)
#   LINES=20000 RUNS=1 bench/sink-kafka.sh   # a quick check on a small corpus
#   COMPRESSION=lz4 bench/sink-kafka.sh      # zstd (the default), lz4, snappy, gzip or none
#   PARTITIONS=8 bench/sink-kafka.sh         # the topic's partitions (default 8)
#   BATCH=50000 bench/sink-kafka.sh          # records per batch, i.e. per transaction (default 10000)
#   PACE=0.25 bench/sink-kafka.sh            # the sink paced while ingest is busy (sinks[].pace)
#   KEEP=1 ...                               # keep the logs (sluice's, the broker's)
#   PROFILE=/tmp/prof ...                    # a CPU profile of sluice from the first push (PROFILE_SECS,
#                                            # default 10 s) into /tmp/prof/sink.RUN.pprof
#
# Needs java and the broker's jars, which scripts/e2e-setup.sh installs into
# ${SLUICE_E2E_DIR:-~/.cache/sluice-e2e}/kafka-4.1.0/libs.
#
# Each run, on fresh directories, not timed: a broker is formatted and started, `sluice serve`
# starts with the sink, and one line goes through (the broker makes its transaction log, the sink
# the topic, with PARTITIONS partitions, and its producer id). Then, timed: the corpus is posted to
# /insert/jsonline in chunks of 100,000 lines, one after the other, while the sink delivers, and
# the time runs from the first push to GET /api/v1/sinks showing the sink's backlog at 0 bytes
# with every line counted as sent (polled every 20 ms). It is ingest and delivery at once, sharing
# the machine with the broker; when the last push was acknowledged is printed beside it. Each
# batch (BATCH records) is one transaction (acks=all). records/s = lines / that time. Medians
# over the runs, with the range.
#
# Then, in the same run, with sluice stopped and the same broker: bench/kafkaproduce, a bare
# franz-go producer with the sink's client settings, produces the same records (the corpus parsed
# by sluice's own code, untimed: key, value and headers as the sink makes them) to topics of
# PARTITIONS partitions, timed: transactional as the sink (one transaction of BATCH records after
# the other) and plain (idempotent, one flush at the end); and sluice's sink code alone on the same
# lines, from a WAL written before the timing (no ingest beside it). Then, the broker stopped, the
# same pushes to a `sluice serve` without sinks, timed to the last acknowledged push: ingest with
# the sink / without is the ratio of those times. The ratios sluice/bare are
# over the transactional one. The CPU seconds (user+system, from /proc) of sluice, of the bare producer and
# of the broker over each timed span say who had the machine's 2 cores.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=sink-kafka
source "$root/bench/lib.sh"
use_corpus
runs="${RUNS:-3}"
compression="${COMPRESSION:-zstd}"
partitions="${PARTITIONS:-8}"
batch="${BATCH:-10000}"
libs="${SLUICE_E2E_DIR:-$HOME/.cache/sluice-e2e}/kafka-4.1.0/libs"
if [[ ! -f "$libs/kafka_2.13-4.1.0.jar" ]] || ! command -v java >/dev/null; then
	log "no Kafka jars in $libs (or no java): run scripts/e2e-setup.sh first"
	exit 1
fi
build_sluice
bin="$root/bin/sluice"

run="$(mktemp -d "$cache/sink-kafka-run.XXXXXX")"
cleanup() {
	stop_servers
	if [[ -n "${KEEP:-}" ]]; then log "logs kept in $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT

log "building bench/kafkaproduce"
(cd "$root" && go build -o "$run/kafkaproduce" ./bench/kafkaproduce)

lines=$(wc -l <"$corpus")
split -l 100000 -d -a 4 "$corpus" "$run/chunk-"

# start_broker DIR PORT CPORT: formats a one-node KRaft broker in DIR and starts it.
start_broker() {
	local dir=$1
	mkdir -p "$dir"
	cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$3
listeners=PLAINTEXT://127.0.0.1:$2,CONTROLLER://127.0.0.1:$3
advertised.listeners=PLAINTEXT://127.0.0.1:$2
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
auto.create.topics.enable=false
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
	cat >"$dir/log4j2.properties" <<LOG
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
LOG
	local java=(java "-Dlog4j2.configurationFile=$dir/log4j2.properties" -cp "$libs/*")
	"${java[@]}" kafka.tools.StorageTool format -t "$("${java[@]}" kafka.tools.StorageTool random-uuid)" \
		-c "$dir/server.properties" >"$dir/format.log" 2>&1
	start_broker_again "$dir"
}

# start_broker_again DIR: starts the broker of DIR (formatted by start_broker); sets broker_pid
# and waits for "Kafka Server started" in DIR/server.log.
start_broker_again() {
	local dir=$1 i
	java -Xms1g -Xmx1g "-Dlog4j2.configurationFile=$dir/log4j2.properties" -cp "$libs/*" \
		kafka.Kafka "$dir/server.properties" >>"$dir/stdout.log" 2>&1 &
	broker_pid=$!
	pids+=("$broker_pid")
	for ((i = 0; i < 1200; i++)); do
		if grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null; then return 0; fi
		if ! kill -0 "$broker_pid" 2>/dev/null; then
			log "the broker exited before it started; the end of its log:"
			tail -20 "$dir/stdout.log" "$dir/server.log" >&2
			return 1
		fi
		sleep 0.05
	done
	log "the broker did not start in 60 s"
	return 1
}

# sink_state PORT: prints the sink's backlog bytes and records sent (the config has one sink), and
# its last error. Read with bash's own regular expressions: a python3 per poll took most of a core
# while the sink delivered, on a machine of two.
sink_state() {
	local j backlog=? sent=? err=""
	j=$(curl -sf "http://127.0.0.1:$1/api/v1/sinks") || true
	if [[ $j =~ \"backlog_bytes\":([0-9]+) ]]; then backlog=${BASH_REMATCH[1]}; fi
	if [[ $j =~ \"records_sent\":([0-9]+) ]]; then sent=${BASH_REMATCH[1]}; fi
	if [[ $j =~ \"last_error\":\"([^\"]*) ]]; then err=${BASH_REMATCH[1]}; fi
	echo "$backlog $sent $err"
}

# stop_broker: stops the broker with SIGTERM (the JVM ignores the SIGINT that bash ignores for a
# background job) and waits for it.
stop_broker() {
	local p rest=()
	kill -TERM "$broker_pid"
	wait "$broker_pid" || true
	for p in "${pids[@]}"; do
		if [[ "$p" != "$broker_pid" ]]; then rest+=("$p"); fi
	done
	pids=("${rest[@]}")
}

# wait_sent PORT N: waits until the sink has sent N records and its backlog is 0.
wait_sent() {
	local i state backlog sent
	for ((i = 0; ; i++)); do
		state=$(sink_state "$1")
		read -r backlog sent _ <<<"$state"
		if [[ "$backlog" == 0 && "$sent" != "?" && "$sent" -ge "$2" ]]; then
			if [[ "$sent" != "$2" ]]; then
				log "the sink sent $sent records, want $2"
				return 1
			fi
			return 0
		fi
		if ((i > 30000)); then
			log "the sink did not catch up in 10 minutes: $state"
			return 1
		fi
		sleep 0.02
	done
}

# proc_cpu PID: the CPU seconds (user+system) of PID so far.
proc_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz}' "/proc/$1/stat"
}

# one_run N: one measured run; prints the seconds to deliver, to the last acknowledged push, the
# CPU seconds of sluice and of the broker over the first, then the bare producer's line for
# each mode.
one_run() {
	local dir="$run/r$1" port kport cport t0 ta t1 code
	mkdir -p "$dir"
	port=$(free_port)
	kport=$(free_port)
	cport=$(free_port)
	cat >"$dir/sluice.yaml" <<CONF
sinks:
  - name: bench-kafka
    type: kafka
    batch: $batch
    linger: 50ms
    retry: {initial: 50ms, max: 200ms}
    budget_bytes: 17179869184
${PACE:+    pace: $PACE
}    kafka:
      brokers: ["127.0.0.1:$kport"]
      topic: bench
      partitions: $partitions
      compression: $compression
CONF
	# Warm-up (not timed): the broker makes its transaction log, the sink the topic and its
	# producer id, with one line.
	start_broker "$dir/kafka" "$kport" "$cport"
	local pprof=false
	if [[ -n "${PROFILE:-}" ]]; then pprof=true; fi
	"$bin" serve --data "$dir/data" --listen "127.0.0.1:$port" --pprof=$pprof --config "$dir/sluice.yaml" \
		>"$dir/sluice.log" 2>&1 &
	local spid=$!
	pids+=("$spid")
	wait_ready "http://127.0.0.1:$port/ready" "$spid" sluice "$dir/sluice.log"
	head -1 "$corpus" | curl -sSf -o /dev/null -T - -X POST -H 'Content-Type: application/x-ndjson' -H 'Expect:' \
		"http://127.0.0.1:$port/insert/jsonline"
	wait_sent "$port" 1
	# Timed: from the first push of the corpus to every line delivered.
	local scpu0 bcpu0 scpu bcpu
	scpu0=$(proc_cpu "$spid")
	bcpu0=$(proc_cpu "$broker_pid")
	local ppid=""
	if [[ -n "${PROFILE:-}" ]]; then
		mkdir -p "$PROFILE"
		curl -sf -o "$PROFILE/sink.$1.pprof" "127.0.0.1:$port/debug/pprof/profile?seconds=${PROFILE_SECS:-10}" &
		ppid=$!
	fi
	t0=$(date +%s%N)
	for chunk in "$run"/chunk-*; do
		code=$(curl -sS -o "$dir/post.reply" -w '%{http_code}' -T "$chunk" -X POST \
			-H 'Content-Type: application/x-ndjson' -H 'Expect:' "http://127.0.0.1:$port/insert/jsonline")
		if [[ "$code" != 2* ]]; then
			log "posting $chunk: $code $(head -c 300 "$dir/post.reply")"
			return 1
		fi
	done
	ta=$(date +%s%N)
	wait_sent "$port" $((lines + 1))
	t1=$(date +%s%N)
	if [[ -n "$ppid" ]]; then wait "$ppid" || log "no CPU profile"; fi
	scpu=$(awk -v a="$scpu0" -v b="$(proc_cpu "$spid")" 'BEGIN {printf "%.2f", b - a}')
	bcpu=$(awk -v a="$bcpu0" -v b="$(proc_cpu "$broker_pid")" 'BEGIN {printf "%.2f", b - a}')
	stop_server "$spid"
	# The bare producer, on the same broker, sluice stopped.
	"$run/kafkaproduce" -brokers "127.0.0.1:$kport" -topic bare -corpus "$corpus" -partitions "$partitions" \
		-batch "$batch" -compression "$compression" -modes sink,txn,plain -cpu-of "$broker_pid" >"$dir/bare.out"
	stop_broker
	rm -rf "$dir/data" "$dir/kafka/data"
	# The same pushes to a sluice without sinks, the broker stopped: the ingest figure the sink's
	# (to the last acknowledged push) is compared with.
	local tn0 tn1 npid
	port=$(free_port)
	"$bin" serve --data "$dir/nosink" --listen "127.0.0.1:$port" --pprof=false >"$dir/nosink.log" 2>&1 &
	npid=$!
	pids+=("$npid")
	wait_ready "http://127.0.0.1:$port/ready" "$npid" sluice "$dir/nosink.log"
	head -1 "$corpus" | curl -sSf -o /dev/null -T - -X POST -H 'Content-Type: application/x-ndjson' -H 'Expect:' \
		"http://127.0.0.1:$port/insert/jsonline"
	tn0=$(date +%s%N)
	for chunk in "$run"/chunk-*; do
		code=$(curl -sS -o "$dir/post.reply" -w '%{http_code}' -T "$chunk" -X POST \
			-H 'Content-Type: application/x-ndjson' -H 'Expect:' "http://127.0.0.1:$port/insert/jsonline")
		if [[ "$code" != 2* ]]; then
			log "posting $chunk without sinks: $code $(head -c 300 "$dir/post.reply")"
			return 1
		fi
	done
	tn1=$(date +%s%N)
	stop_server "$npid"
	rm -rf "$dir/nosink"
	python3 -c "print('%.3f %.3f %s %s %.3f' % (($t1 - $t0) / 1e9, ($ta - $t0) / 1e9, '$scpu', '$bcpu', ($tn1 - $tn0) / 1e9))"
	cat "$dir/bare.out"
}

secs=()
acks=()
for ((r = 1; r <= runs; r++)); do
	# (not in $(...): the EXIT trap must see the servers it started)
	one_run "$r" >"$run/secs-$r"
	read -r s a sc bc na <"$run/secs-$r"
	secs+=("$s")
	acks+=("$a")
	log "run $r: $lines records delivered in $s s ($(python3 -c "print(round($lines / $s))") records/s); the last push acknowledged at $a s (without sinks: $na s, ingest with the sink / without $(python3 -c "print(round($na / $a, 2))")); CPU s: sluice $sc, broker $bc"
	while read -r _ mode _ _ _ bs _ brs _ bcpu _ _ bbcpu; do
		log "run $r: kafkaproduce $mode: $bs s ($brs records/s); CPU s: producer $bcpu, broker $bbcpu"
	done < <(tail -n +2 "$run/secs-$r")
done

bench_header RUNS LINES COMPRESSION PARTITIONS BATCH PACE
echo "- corpus: \`$corpus_name\`, $lines lines; a kafka sink (compression $compression, batch $batch, linger 50ms, pace ${PACE:-none}, value line, labels as headers, one transaction per batch, acks=all) to a one-node Kafka 4.1.0 broker on this machine, topic of $partitions partitions; time from the first push of the corpus (chunks of 100,000 lines, one after the other) to the sink's backlog at 0 with every line sent"
echo
python3 - "$lines" "$run" "$runs" <<'PY'
import statistics, sys
lines, run, runs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
secs, acks, scpu, bcpu, nacks = [], [], [], [], []
bare = {}  # mode -> list of (seconds, producer cpu, broker cpu)
for r in range(1, runs + 1):
    out = open(f"{run}/secs-{r}").read().split("\n")
    s, a, sc, bc, na = out[0].split()
    secs.append(float(s)); acks.append(float(a)); scpu.append(float(sc)); bcpu.append(float(bc)); nacks.append(float(na))
    for l in out[1:]:
        f = l.split()
        if f:
            bare.setdefault(f[1], []).append((float(f[5]), float(f[9]), float(f[12])))
med = statistics.median(secs)
print("| records | delivered in (s), median | records/s | runs (s) | last push acknowledged at (s), median | CPU s sluice / broker, median |")
print("|---|---|---|---|---|---|")
print(f"| {lines} | {med:.2f} | {lines / med:,.0f} | {' '.join(f'{s:.2f}' for s in secs)} | {statistics.median(acks):.2f} | {statistics.median(scpu):.2f} / {statistics.median(bcpu):.2f} |")
print()
names = {"sink": "sluice's sink alone, from a WAL written before", "txn": "bare franz-go, transactional", "plain": "bare franz-go, not transactional"}
print("| bench/kafkaproduce, same records and broker | seconds, median | records/s | runs (s) | CPU s producer / broker, median |")
print("|---|---|---|---|---|")
meds = {}
for mode, rs in bare.items():
    bs = meds[mode] = statistics.median(x[0] for x in rs)
    print(f"| {names.get(mode, mode)} | {bs:.2f} | {lines / bs:,.0f} | {' '.join(f'{x[0]:.2f}' for x in rs)} | {statistics.median(x[1] for x in rs):.2f} / {statistics.median(x[2] for x in rs):.2f} |")
print()
print(f"ingest with the sink / without (the last push acknowledged, medians): {statistics.median(nacks):.2f} s / {statistics.median(acks):.2f} s = "
      f"**{statistics.median(nacks) / statistics.median(acks):.2f}** (runs without sinks: {' '.join(f'{x:.2f}' for x in nacks)} s)")
if "txn" in meds:
    print()
    print(f"sluice / bare (transactional): {meds['txn'] / med:.2f} with ingest in the timed span"
          + (f", {meds['txn'] / meds['sink']:.2f} for the sink alone" if "sink" in meds else ""))
PY
