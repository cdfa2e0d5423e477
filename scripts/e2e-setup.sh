#!/usr/bin/env bash
# Installs what the end-to-end tests (e2e/) need, and caches it:
#   - a Python virtualenv with the real client libraries, in $DIR/venv;
#   - rsyslog and rsyslog-elasticsearch, with apt (system packages);
#   - PostgreSQL 15 (apt) and Apache Kafka's jars (mvn, into
#     $DIR/kafka-$KAFKA_VERSION) for the sink tests;
#   - syslog-ng 3.38 with its http() module, unpacked into $DIR/syslog-ng
#     (its Debian packages conflict with rsyslog's, so it is not installed:
#     the tests run it with LD_LIBRARY_PATH and --module-path);
#   - Grafana Loki's query CLI, logcli, built from its Go module into
#     $DIR/logcli-$LOGCLI_VERSION (cold: about 7 minutes and 2.4 GB of Go
#     module cache; the binary alone is kept);
#   - the real Loki and OTLP clients of e2e/clients_*_test.go, each built
#     from e2e/testdata/clients/NAME into $DIR/NAME-VERSION: Promtail (from
#     Loki's module, as logcli), an OpenTelemetry Collector of our own (from
#     its Go modules), a Rust program with tracing-loki (cargo), a Java one
#     with loki4j (mvn, javac) and a Node one with pino-loki (npm). Each is
#     rebuilt when its sources (or its pinned versions) change.
# DIR is ${SLUICE_E2E_DIR:-$HOME/.cache/sluice-e2e}; the tests look there too.
#
# Idempotent: each part leaves a marker naming what it installed and is
# skipped while the marker matches and the result still runs, so a cached
# run takes a second or two. Works on a fresh Debian 12 with only the
# package registries reachable. SLUICE_E2E=off skips it (the tests then
# skip too).
set -euo pipefail

DIR=${SLUICE_E2E_DIR:-$HOME/.cache/sluice-e2e}

# The Python packages, pinned so that every machine tests the same clients.
# Changing this list reinstalls the virtualenv.
PY_PACKAGES=(
	python-logging-loki==0.3.1
	loki-logger-handler==1.1.2
	opentelemetry-sdk==1.45.2
	opentelemetry-exporter-otlp-proto-http==1.45.2
	elasticsearch==9.5.1
)
APT_PACKAGES=(rsyslog rsyslog-elasticsearch)
SYSLOG_NG_DEBS=(syslog-ng-core syslog-ng-mod-http)
# logcli's version; a new one is built beside the old one (e2e/logcli.go
# names the same file).
LOGCLI_VERSION=v3.7.8
# Promtail is built from the same Loki module (its Go module cache is warm
# from the logcli build).
PROMTAIL_VERSION=$LOGCLI_VERSION
# The other clients' versions are pinned in their own files under
# e2e/testdata/clients (go.mod, Cargo.toml and Cargo.lock, pom.xml,
# package.json and package-lock.json); these name the build directories
# (e2e/clients_loki_test.go names the same ones).
OTELCOL_VERSION=v0.165.0
TRACING_LOKI_VERSION=0.2.7
LOKI4J_VERSION=2.0.0
# Apache Kafka for the Kafka sink tests (e2e/testdata/kafka/pom.xml pins
# the same version; internal/sink/kafka/kafkatest names the directory).
KAFKA_VERSION=4.1.0
PINO_LOKI_VERSION=3.0.0
REPO=$(cd "$(dirname "$0")/.." && pwd)
CLIENTS=$REPO/e2e/testdata/clients

say() { printf 'e2e-setup: %s\n' "$*"; }
die() { printf 'e2e-setup: %s\n' "$*" >&2; exit 1; }

if [ "${SLUICE_E2E:-}" = off ]; then
	say "SLUICE_E2E=off: nothing to install (the e2e tests will skip)"
	exit 0
fi

mkdir -p "$DIR"
start=$SECONDS

# ---- apt: run as root, or through sudo without a password.
SUDO=()
apt_checked=false
apt_updated=false
need_apt() {
	$apt_checked && return 0
	command -v apt-get >/dev/null || die "apt-get not found: this script needs Debian 12 (or a derivative) to install $*"
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			SUDO=(sudo -n)
		else
			die "installing $* needs apt-get as root: run this script as root, or as a user with password-less sudo (or install them yourself: apt-get install $*)"
		fi
	fi
	apt_checked=true
}
apt_get() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "$@"; }

# apt_update refreshes the package lists once per run, and only when a
# package has no candidate (a fresh machine has no lists at all).
apt_update_for() {
	local p missing=false
	for p in "$@"; do
		# (no grep -q in a pipe: under pipefail its early exit fails the pipe)
		case $(apt-cache policy "$p" 2>/dev/null) in
		*"Candidate: (none)"* | "") missing=true ;;
		esac
	done
	if $missing && ! $apt_updated; then
		say "apt-get update (no candidate for some of: $*)"
		apt_get update >/dev/null
		apt_updated=true
	fi
}

installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }

# apt_install installs the named packages that are not installed yet,
# without starting their services (a log daemon of the system's is no use
# to the tests, and would take /dev/log).
apt_install() {
	local want=() p
	for p in "$@"; do installed "$p" || want+=("$p"); done
	[ ${#want[@]} -eq 0 ] && return 0
	need_apt "${want[@]}"
	apt_update_for "${want[@]}"
	say "apt-get install ${want[*]}"
	local policy=/usr/sbin/policy-rc.d made_policy=false
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\n# e2e-setup.sh: no service starts while it installs packages\nexit 101\n' |
			"${SUDO[@]}" tee "$policy" >/dev/null
		"${SUDO[@]}" chmod 755 "$policy"
		made_policy=true
	fi
	local rc=0
	apt_get install --no-install-recommends "${want[@]}" >"$DIR/apt.log" 2>&1 || rc=$?
	if [ $rc -ne 0 ] && ! $apt_updated; then
		# Stale package lists name files the mirror no longer has.
		say "apt-get install failed: apt-get update, then once more"
		apt_get update >/dev/null
		apt_updated=true
		rc=0
		apt_get install --no-install-recommends "${want[@]}" >"$DIR/apt.log" 2>&1 || rc=$?
	fi
	if $made_policy; then "${SUDO[@]}" rm -f "$policy"; fi
	if [ $rc -ne 0 ]; then
		tail -n 20 "$DIR/apt.log" >&2
		die "apt-get install ${want[*]} failed (log: $DIR/apt.log)"
	fi
}

# ---- 1. Python virtualenv with the client libraries.
setup_venv() {
	local venv=$DIR/venv marker=$DIR/venv/.e2e-installed want="${PY_PACKAGES[*]}"
	if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ] && "$venv/bin/python" -c 'import sys' 2>/dev/null; then
		say "python venv: cached ($venv)"
		return
	fi
	local py=/usr/bin/python3
	[ -x "$py" ] || py=$(command -v python3 || true)
	if [ -z "$py" ] || ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
		say "python3 cannot make a virtualenv: installing python3 and python3-venv"
		apt_install python3 python3-venv
		py=/usr/bin/python3
	fi
	say "python venv: creating $venv with $("$py" --version 2>&1)"
	rm -rf "$venv"
	"$py" -m venv "$venv"
	say "pip install ${PY_PACKAGES[*]}"
	"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input "${PY_PACKAGES[@]}" ||
		die "pip install failed"
	"$venv/bin/python" -c 'import logging_loki, loki_logger_handler, opentelemetry.sdk, elasticsearch' ||
		die "the venv cannot import the client libraries"
	printf '%s' "$want" >"$marker"
	say "python venv: done"
}

# ---- 2. rsyslog (system packages).
setup_rsyslog() {
	local p all=true
	for p in "${APT_PACKAGES[@]}"; do installed "$p" || all=false; done
	if $all; then
		say "rsyslog: installed ($(dpkg-query -W -f='${Version}' rsyslog))"
		return
	fi
	apt_install "${APT_PACKAGES[@]}"
	say "rsyslog: installed ($(dpkg-query -W -f='${Version}' rsyslog))"
}

# ---- 2b. PostgreSQL 15 for the sink tests (a system package: the tests
# run initdb and pg_ctl from /usr/lib/postgresql/15/bin as the postgres user,
# on a temporary directory and a free port on 127.0.0.1).
setup_postgres() {
	if installed postgresql-15; then
		say "postgresql: installed ($(dpkg-query -W -f='${Version}' postgresql-15))"
		return
	fi
	apt_install postgresql-15
	say "postgresql: installed ($(dpkg-query -W -f='${Version}' postgresql-15))"
}

# ---- 2c. Apache Kafka for the Kafka sink tests: the broker's jars from
# Maven Central (e2e/testdata/kafka/pom.xml) copied into
# $DIR/kafka-$KAFKA_VERSION/libs; the tests format and start a one-node
# KRaft broker from them (java -cp 'libs/*' kafka.Kafka) on a temporary
# directory and free ports on 127.0.0.1. Java 17 and maven come from
# Debian when missing.
setup_kafka() {
	local out=$DIR/kafka-$KAFKA_VERSION src=$REPO/e2e/testdata/kafka sum
	sum=$(src_sum "$src" "$KAFKA_VERSION")
	if client_cached "$out" "$sum" test -f "$out/libs/kafka_2.13-$KAFKA_VERSION.jar" && command -v java >/dev/null; then
		say "kafka: cached ($out)"
		return
	fi
	if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
		say "java or mvn missing: installing Debian's openjdk-17-jre-headless and maven"
		apt_install openjdk-17-jre-headless maven
	fi
	local tmp log=$DIR/kafka-build.log t0=$SECONDS
	tmp=$(client_build_dir "$out")
	trap 'rm -rf "$tmp"' EXIT
	say "kafka: copying the jars of $src/pom.xml (log: $log)"
	cp "$src/pom.xml" "$tmp/"
	mvn -B -q -f "$tmp/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "copying the Kafka jars failed (log: $log)"
	}
	[ -f "$tmp/libs/kafka_2.13-$KAFKA_VERSION.jar" ] || die "no kafka_2.13-$KAFKA_VERSION.jar in $tmp/libs (log: $log)"
	rm -rf "$tmp/target" "$tmp/pom.xml"
	client_done "$tmp" "$out" "$sum"
	trap - EXIT
	say "kafka: installed $out ($(ls "$out/libs" | wc -l) jars) in $((SECONDS - t0)) s"
}

# ---- 3. syslog-ng, unpacked beside (not over) rsyslog.
syslog_ng_runs() {
	local root=$1
	LD_LIBRARY_PATH=$root/usr/lib/syslog-ng "$root/usr/sbin/syslog-ng" --version >/dev/null 2>&1
}
setup_syslog_ng() {
	local root=$DIR/syslog-ng marker=$DIR/syslog-ng/.e2e-installed
	if [ -f "$marker" ] && syslog_ng_runs "$root"; then
		say "syslog-ng: cached ($root, $(cat "$marker"))"
		return
	fi
	# Its shared libraries (not syslog-ng itself) are installed with apt:
	# they conflict with nothing.
	local deps
	deps=$(apt-cache depends "${SYSLOG_NG_DEBS[@]}" 2>/dev/null |
		awk '$1 == "Depends:" && $2 !~ /^</ {print $2}' |
		grep -v -E '^(syslog-ng|sysvinit-utils|lsb-base|init-system-helpers)' | sort -u || true)
	if [ -z "$deps" ]; then
		need_apt "${SYSLOG_NG_DEBS[@]}"
		apt_update_for "${SYSLOG_NG_DEBS[@]}"
		deps=$(apt-cache depends "${SYSLOG_NG_DEBS[@]}" |
			awk '$1 == "Depends:" && $2 !~ /^</ {print $2}' |
			grep -v -E '^(syslog-ng|sysvinit-utils|lsb-base|init-system-helpers)' | sort -u || true)
	fi
	# shellcheck disable=SC2086
	apt_install $deps
	apt_update_for "${SYSLOG_NG_DEBS[@]}"
	local tmp
	tmp=$(mktemp -d "$DIR/download.XXXXXX")
	say "syslog-ng: apt-get download ${SYSLOG_NG_DEBS[*]}"
	# apt-get download writes to the current directory; as root it warns
	# that the download is unsandboxed, which is harmless here.
	download() {
		rm -f "$tmp"/*.deb
		(cd "$tmp" && apt-get -q download "${SYSLOG_NG_DEBS[@]}" >"$DIR/apt-download.log" 2>&1)
	}
	if ! download; then
		if ! $apt_updated; then
			# Stale package lists name files the mirror no longer has.
			say "apt-get download failed: apt-get update, then once more"
			need_apt "${SYSLOG_NG_DEBS[@]}"
			apt_get update >/dev/null
			apt_updated=true
		fi
		download || {
			tail -n 20 "$DIR/apt-download.log" >&2
			rm -rf "$tmp"
			die "apt-get download ${SYSLOG_NG_DEBS[*]} failed (log: $DIR/apt-download.log)"
		}
	fi
	local deb
	mkdir -p "$tmp/root"
	for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
	syslog_ng_runs "$tmp/root" || {
		LD_LIBRARY_PATH=$tmp/root/usr/lib/syslog-ng "$tmp/root/usr/sbin/syslog-ng" --version >&2 || true
		rm -rf "$tmp"
		die "the unpacked syslog-ng does not run"
	}
	[ -f "$tmp/root/usr/lib/syslog-ng/3.38/libhttp.so" ] || die "syslog-ng-mod-http has no libhttp.so in 3.38"
	rm -rf "$root"
	mv "$tmp/root" "$root"
	rm -rf "$tmp"
	LD_LIBRARY_PATH=$root/usr/lib/syslog-ng "$root/usr/sbin/syslog-ng" --version >"$tmp.version"
	sed -n 1p "$tmp.version" >"$marker"
	rm -f "$tmp.version"
	say "syslog-ng: unpacked into $root ($(cat "$marker"))"
}

# ---- 4. logcli, built from Loki's module.
# `go install github.com/grafana/loki/v3/cmd/logcli@V` refuses a module
# whose go.mod has replace directives, so it is built in a throwaway module
# that requires Loki and copies its replace and exclude directives (but
# the ones to a directory inside Loki's tree, which its module zip does not
# make a module: those packages come from their own module versions).

# go_mod_directives prints the replace and exclude directives of a go.mod,
# one a line, single-line and block forms alike, without comments and
# without replacements by a local directory.
go_mod_directives() {
	awk '
	function emit(kind, spec,   target) {
		if (kind == "replace") {
			target = spec
			sub(/^.*=>[ \t]*/, "", target)
			if (target ~ /^"?(\.\.?\/|\/)/) {
				printf "e2e-setup: logcli: dropped replace %s (a local directory)\n", spec > "/dev/stderr"
				return
			}
		}
		print kind " " spec
	}
	{ sub(/\/\/.*/, ""); sub(/^[ \t]+/, ""); sub(/[ \t]+$/, "") }
	$0 == "" { next }
	block != "" { if ($0 == ")") block = ""; else emit(block, $0); next }
	($1 == "replace" || $1 == "exclude") && $2 == "(" && NF == 2 { block = $1; next }
	$1 == "replace" || $1 == "exclude" { kind = $1; sub(/^[a-z]+[ \t]+/, ""); emit(kind, $0) }
	' "$1"
}

logcli_runs() { "$1" --version 2>&1 | grep -F "version ${LOGCLI_VERSION#v} " >/dev/null; }

setup_logcli() {
	local bin=$DIR/logcli-$LOGCLI_VERSION
	if [ -x "$bin" ] && logcli_runs "$bin"; then
		say "logcli: cached ($bin)"
		return
	fi
	command -v go >/dev/null || die "building logcli needs Go (1.26 or newer): install it and re-run"
	# Left by an interrupted run (a build in progress is younger than this).
	find "$DIR" -maxdepth 1 -name 'logcli-build.*' -mmin +120 -exec rm -rf {} + 2>/dev/null || true
	local tmp
	tmp=$(mktemp -d "$DIR/logcli-build.XXXXXX")
	# An interrupted build leaves nothing behind: the binary is built in
	# $tmp and renamed into place only once it runs.
	trap 'rm -rf "$tmp"' EXIT
	trap 'rm -rf "$tmp"; exit 130' INT
	trap 'rm -rf "$tmp"; exit 143' TERM
	local -x GOWORK=off
	local mod=github.com/grafana/loki/v3 log=$DIR/logcli-build.log gomod
	say "logcli: building $mod/cmd/logcli@$LOGCLI_VERSION (cold: about 7 minutes; log: $log)"
	: >"$log"
	# (a go.mod of its own first, so that no module around $DIR is touched)
	printf 'module sluice-e2e/logcli\n' >"$tmp/go.mod"
	gomod=$(cd "$tmp" && go mod download -json "$mod@$LOGCLI_VERSION" 2>>"$log" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') || true
	[ -n "$gomod" ] && [ -f "$gomod" ] || {
		tail -n 20 "$log" >&2
		die "go mod download $mod@$LOGCLI_VERSION failed (log: $log)"
	}
	{
		printf 'module sluice-e2e/logcli\n\n'
		go_mod_directives "$gomod"
	} >"$tmp/go.mod"
	{ echo "---- $tmp/go.mod:"; cat "$tmp/go.mod"; echo "----"; } >>"$log"
	(
		cd "$tmp"
		go get "$mod/cmd/logcli@$LOGCLI_VERSION" &&
			go build -o "$tmp/logcli" -trimpath \
				-ldflags "-s -w -X $mod/pkg/util/build.Version=${LOGCLI_VERSION#v} -X $mod/pkg/util/build.Branch=$LOGCLI_VERSION" \
				"$mod/cmd/logcli"
	) >>"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "building logcli failed (log: $log)"
	}
	logcli_runs "$tmp/logcli" || {
		"$tmp/logcli" --version >&2 || true
		die "the logcli just built does not say it is $LOGCLI_VERSION"
	}
	mv -f "$tmp/logcli" "$bin"
	rm -rf "$tmp"
	trap - EXIT INT TERM
	say "logcli: built $bin ($("$bin" --version 2>&1 | sed -n 1p))"
}

# ---- 5. The clients of e2e/clients_*_test.go, built from
# e2e/testdata/clients/NAME into $DIR/NAME-VERSION/.


# src_sum prints a checksum of the files of a client's source directory
# (build outputs excluded) and of extra words (versions): a change to any
# of them rebuilds the client.
src_sum() {
	local src=$1
	shift
	{
		printf '%s\n' "$@"
		(cd "$src" && find . -type f ! -path './target/*' ! -path './node_modules/*' ! -path './classes/*' -print | LC_ALL=C sort |
			while read -r f; do printf '%s ' "$f"; sha256sum <"$f"; done)
	} | sha256sum | cut -c1-16
}

# client_cached says whether $DIR/NAME-VERSION holds a build of the
# current sources (its marker names their checksum) that still runs
# (the command after the checksum exits 0).
client_cached() {
	local out=$1 sum=$2
	shift 2
	[ -f "$out/.e2e-installed" ] && [ "$(cat "$out/.e2e-installed")" = "$sum" ] && "$@" >/dev/null 2>&1
}

# client_build_dir makes a fresh build directory beside $out, removed if
# the script is interrupted (then the next run builds again).
client_build_dir() {
	local out=$1
	find "$DIR" -maxdepth 1 -name "$(basename "$out").build.*" -mmin +120 -exec rm -rf {} + 2>/dev/null || true
	mktemp -d "$out.build.XXXXXX"
}

# client_done puts a finished build in place of the old one and writes its
# marker.
client_done() {
	local tmp=$1 out=$2 sum=$3
	printf '%s' "$sum" >"$tmp/.e2e-installed"
	rm -rf "$out"
	mv "$tmp" "$out"
}

# 5a. Promtail. Loki 3.7's module keeps Promtail's library
# (clients/pkg/promtail) but not its command, so the command is our own
# small main.go, built as logcli is: in a wrapper module that requires
# Loki and copies its replace and exclude directives.
promtail_runs() { case $("$1" -h 2>&1) in *config.file*) return 0 ;; *) return 1 ;; esac; }
setup_promtail() {
	local out=$DIR/promtail-$PROMTAIL_VERSION src=$CLIENTS/promtail sum
	sum=$(src_sum "$src" "$PROMTAIL_VERSION")
	if client_cached "$out" "$sum" promtail_runs "$out/promtail"; then
		say "promtail: cached ($out)"
		return
	fi
	command -v go >/dev/null || die "building promtail needs Go (1.26 or newer): install it and re-run"
	local tmp log=$DIR/promtail-build.log mod=github.com/grafana/loki/v3 gomod t0=$SECONDS
	tmp=$(client_build_dir "$out")
	trap 'rm -rf "$tmp"' EXIT
	local -x GOWORK=off
	say "promtail: building $src with $mod@$PROMTAIL_VERSION (log: $log)"
	: >"$log"
	printf 'module sluice-e2e/promtail\n' >"$tmp/go.mod"
	gomod=$(cd "$tmp" && go mod download -json "$mod@$PROMTAIL_VERSION" 2>>"$log" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') || true
	[ -n "$gomod" ] && [ -f "$gomod" ] || {
		tail -n 20 "$log" >&2
		die "go mod download $mod@$PROMTAIL_VERSION failed (log: $log)"
	}
	{
		printf 'module sluice-e2e/promtail\n\n'
		go_mod_directives "$gomod" 2>/dev/null
	} >"$tmp/go.mod"
	mkdir "$tmp/src"
	mv "$tmp/go.mod" "$tmp/src/go.mod"
	cp "$src/main.go" "$tmp/src/"
	(
		cd "$tmp/src"
		go get "$mod@$PROMTAIL_VERSION" &&
			go build -mod=mod -o "$tmp/promtail" -trimpath -ldflags "-s -w" .
	) >>"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "building promtail failed (log: $log)"
	}
	rm -rf "$tmp/src"
	promtail_runs "$tmp/promtail" || die "the promtail just built does not run: $("$tmp/promtail" -h 2>&1 | head -5)"
	client_done "$tmp" "$out" "$sum"
	trap - EXIT
	say "promtail: built $out/promtail in $((SECONDS - t0)) s"
}

# 5b. An OpenTelemetry Collector of our own (filelog receiver, batch
# processor, otlphttp exporter), its module versions pinned in its go.mod
# and go.sum.
otelcol_runs() { "$1" --version >/dev/null 2>&1; }
setup_otelcol() {
	local out=$DIR/otelcol-$OTELCOL_VERSION src=$CLIENTS/otelcol sum
	sum=$(src_sum "$src" "$OTELCOL_VERSION")
	if client_cached "$out" "$sum" otelcol_runs "$out/otelcol"; then
		say "otelcol: cached ($out)"
		return
	fi
	command -v go >/dev/null || die "building the OpenTelemetry Collector needs Go (1.26 or newer): install it and re-run"
	local tmp log=$DIR/otelcol-build.log t0=$SECONDS
	tmp=$(client_build_dir "$out")
	trap 'rm -rf "$tmp"' EXIT
	say "otelcol: building $src (log: $log)"
	(cd "$src" && GOWORK=off GOFLAGS=-mod=readonly go build -o "$tmp/otelcol" -trimpath -ldflags "-s -w" .) >"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "building the OpenTelemetry Collector failed (log: $log)"
	}
	otelcol_runs "$tmp/otelcol" || die "the otelcol just built does not run: $("$tmp/otelcol" --version 2>&1 | head -5)"
	client_done "$tmp" "$out" "$sum"
	trap - EXIT
	say "otelcol: built $out/otelcol in $((SECONDS - t0)) s"
}

# 5c. A Rust program that logs through tracing-loki, built with cargo
# (versions pinned in its Cargo.lock; crates in cargo's own cache, the
# build's target directory kept in $DIR/cargo-target for rebuilds).
setup_tracing_loki() {
	local out=$DIR/tracing-loki-$TRACING_LOKI_VERSION src=$CLIENTS/tracing-loki sum
	sum=$(src_sum "$src" "$TRACING_LOKI_VERSION")
	if client_cached "$out" "$sum" test -x "$out/e2e-tracing-loki"; then
		say "tracing-loki: cached ($out)"
		return
	fi
	# rustup installs into ~/.cargo/bin, which a non-login shell may not have.
	command -v cargo >/dev/null || { [ -x "$HOME/.cargo/bin/cargo" ] && PATH=$HOME/.cargo/bin:$PATH; }
	command -v cargo >/dev/null || die "building the tracing-loki program needs Rust's cargo (1.75 or newer): install it (rustup or Debian's cargo) and re-run"
	local tmp log=$DIR/tracing-loki-build.log t0=$SECONDS
	tmp=$(client_build_dir "$out")
	trap 'rm -rf "$tmp"' EXIT
	say "tracing-loki: building $src with cargo (log: $log)"
	CARGO_TARGET_DIR=$DIR/cargo-target cargo build --release --locked --quiet \
		--manifest-path "$src/Cargo.toml" >"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "building the tracing-loki program failed (log: $log)"
	}
	cp "$DIR/cargo-target/release/e2e-tracing-loki" "$tmp/"
	client_done "$tmp" "$out" "$sum"
	trap - EXIT
	say "tracing-loki: built $out/e2e-tracing-loki in $((SECONDS - t0)) s"
}

# 5d. A Java program that logs through loki4j: its jars copied from Maven
# Central by mvn (pom.xml), Main.java compiled with javac. Java 11 or newer
# and Maven come from Debian when missing.
setup_loki4j() {
	local out=$DIR/loki4j-$LOKI4J_VERSION src=$CLIENTS/loki4j sum
	sum=$(src_sum "$src" "$LOKI4J_VERSION")
	if client_cached "$out" "$sum" test -f "$out/classes/Main.class"; then
		say "loki4j: cached ($out)"
		return
	fi
	if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
		say "javac or mvn missing: installing Debian's default-jdk-headless and maven"
		apt_install default-jdk-headless maven
	fi
	local tmp log=$DIR/loki4j-build.log t0=$SECONDS
	tmp=$(client_build_dir "$out")
	trap 'rm -rf "$tmp"' EXIT
	say "loki4j: copying the jars of $src/pom.xml and compiling Main.java (log: $log)"
	# (-f on a copy: mvn writes target/ beside the pom)
	cp "$src/pom.xml" "$tmp/"
	{
		mvn -B -q -f "$tmp/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" &&
			javac -encoding UTF-8 -d "$tmp/classes" -cp "$tmp/libs/*" "$src/Main.java"
	} >"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "building the loki4j program failed (log: $log)"
	}
	cp "$src/logback.xml" "$tmp/"
	rm -rf "$tmp/target" "$tmp/pom.xml"
	client_done "$tmp" "$out" "$sum"
	trap - EXIT
	say "loki4j: built $out in $((SECONDS - t0)) s"
}

# 5e. A Node program that logs through pino-loki, installed with npm ci
# (versions pinned in its package-lock.json). Node 20 or newer and npm come
# from Debian when missing.
setup_pino_loki() {
	local out=$DIR/pino-loki-$PINO_LOKI_VERSION src=$CLIENTS/pino-loki sum
	sum=$(src_sum "$src" "$PINO_LOKI_VERSION")
	if client_cached "$out" "$sum" test -f "$out/node_modules/pino-loki/package.json"; then
		say "pino-loki: cached ($out)"
		return
	fi
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		say "node or npm missing: installing Debian's nodejs and npm"
		apt_install nodejs npm
	fi
	local tmp log=$DIR/pino-loki-build.log t0=$SECONDS
	tmp=$(client_build_dir "$out")
	trap 'rm -rf "$tmp"' EXIT
	say "pino-loki: npm ci in a copy of $src (log: $log)"
	cp "$src/package.json" "$src/package-lock.json" "$src/send.mjs" "$tmp/"
	(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund) >"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		die "npm ci for the pino-loki program failed (log: $log)"
	}
	client_done "$tmp" "$out" "$sum"
	trap - EXIT
	say "pino-loki: installed $out in $((SECONDS - t0)) s"
}

# (in a function, read whole before it runs: an edit of this file while it
# runs does not change what it does)
main() {
	setup_venv
	setup_rsyslog
	setup_postgres
	setup_kafka
	setup_syslog_ng
	setup_logcli
	setup_promtail
	setup_otelcol
	setup_tracing_loki
	setup_loki4j
	setup_pino_loki
	say "ready in $((SECONDS - start)) s: $DIR"
}
main "$@"; exit
