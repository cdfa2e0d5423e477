#!/usr/bin/env bash
# Installs what the end-to-end tests (e2e/) need, and caches it:
#   - a Python virtualenv with the real client libraries, in $DIR/venv;
#   - rsyslog and rsyslog-elasticsearch, with apt (system packages);
#   - syslog-ng 3.38 with its http() module, unpacked into $DIR/syslog-ng
#     (its Debian packages conflict with rsyslog's, so it is not installed:
#     the tests run it with LD_LIBRARY_PATH and --module-path);
#   - Grafana Loki's query CLI, logcli, built from its Go module into
#     $DIR/logcli-$LOGCLI_VERSION (cold: about 7 minutes and 2.4 GB of Go
#     module cache; the binary alone is kept).
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

setup_venv
setup_rsyslog
setup_syslog_ng
setup_logcli
say "ready in $((SECONDS - start)) s: $DIR"
