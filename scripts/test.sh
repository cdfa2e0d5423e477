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

step "tests, with the race detector (fuzz seeds included)"
go test -race -count=1 ./...
