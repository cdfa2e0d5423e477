#!/usr/bin/env bash
# The whole test suite: what `make test` runs and what CI calls. It installs
# what the tests need, so that it passes on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "toolchain"
if ! command -v go >/dev/null; then
	echo "Go is not installed: install Go 1.26 or newer (https://go.dev/dl/) and re-run" >&2
	exit 1
fi
go version
go mod download

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-clean:" >&2
	echo "$unformatted" >&2
	exit 1
fi
echo ok

step "go vet"
go vet ./...

step "build"
vcs=false; [ -d .git ] && vcs=true
go build -buildvcs=$vcs -o bin/sluice ./cmd/sluice
bin/sluice version

step "e2e dependencies (real clients for e2e/; cached)"
scripts/e2e-setup.sh

step "allocation tests, without the race detector (it allocates; they skip or lie under -race)"
# The packages with a Test...Alloc... function, and those tests only.
alloc_pkgs=$(grep -rlE --include='*_test.go' '^func Test[A-Za-z0-9_]*Alloc' . | xargs -n1 dirname | sort -u)
alloc_out=$(go test -count=1 -v -run 'Alloc' $alloc_pkgs 2>&1) || { echo "$alloc_out"; exit 1; }
echo "$alloc_out" | grep -E '^(ok|FAIL|---)' | grep -v -- '--- PASS' || true
alloc_ran=$(echo "$alloc_out" | grep -c -- '--- PASS: Test' || true)
alloc_skipped=$(echo "$alloc_out" | grep -c -- '--- SKIP: Test' || true)
echo "$alloc_ran allocation tests passed, $alloc_skipped skipped"
if [ "$alloc_ran" -eq 0 ] || [ "$alloc_skipped" -ne 0 ]; then
	echo "the allocation pass must run every allocation test:" >&2
	echo "$alloc_out" | grep -- '--- SKIP' -A2 >&2 || true
	exit 1
fi

step "a small generated corpus for the tests gated on SLUICE_CORPUS"
# The canonical corpus (bench/corpus.sh) is 700 MB; a sample of the same
# generator keeps those tests to seconds. Cached between runs.
corpus_lines=20000
if [ -n "${SLUICE_CORPUS:-}" ]; then
	echo "SLUICE_CORPUS=$SLUICE_CORPUS (given)"
elif [ ! -f ../shared/corpus/gen.py ]; then
	echo "../shared/corpus/gen.py is absent: the tests gated on SLUICE_CORPUS skip"
elif ! command -v python3 >/dev/null; then
	echo "python3 is not installed: the tests gated on SLUICE_CORPUS skip"
else
	corpus_dir="${XDG_CACHE_HOME:-$HOME/.cache}/sluice-test"
	corpus="$corpus_dir/app-$corpus_lines-seed1.log"
	if [ ! -s "$corpus" ] || [ ../shared/corpus/gen.py -nt "$corpus" ]; then
		mkdir -p "$corpus_dir"
		python3 ../shared/corpus/gen.py app "$corpus_lines" --seed 1 > "$corpus.tmp"
		mv "$corpus.tmp" "$corpus"
	fi
	export SLUICE_CORPUS="$corpus"
	echo "SLUICE_CORPUS=$SLUICE_CORPUS ($(wc -l < "$corpus") lines, $(du -h "$corpus" | cut -f1))"
fi

step "tests, with the race detector (fuzz seeds included)"
# -json through scripts/testsum: go test's usual output (the packages'
# ok and FAIL lines, what failed), then every skipped test and its reason.
go build -o bin/testsum ./scripts/testsum
go test -race -count=1 -json ./... | bin/testsum
