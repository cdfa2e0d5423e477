#!/usr/bin/env bash
# Regenerates cmd/sluice/default.pgo, the profile the sluice binary is
# built with (Go's profile-guided optimization), from CPU profiles of the
# parsers', the store's and the query engine's benchmarks and, when $SLUICE_CORPUS is set, of
# BenchmarkCorpus.
# Run it after changing a hot path, and commit the profile with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for p in json logfmt text syslog pattern multiline; do
	go test -pgo=off -run '^$' -bench . -benchtime=2s -cpuprofile "$dir/$p.prof" "./internal/parse/$p/" >/dev/null
done
# The store's hot paths: encoding batches, writing and reading parts.
go test -pgo=off -run '^$' -bench . -benchtime=2s -cpuprofile "$dir/rows.prof" ./internal/rows/ >/dev/null
go test -pgo=off -run '^$' -bench 'Write|Read' -benchtime=10x -cpuprofile "$dir/part.prof" ./internal/store/part/ >/dev/null
# The query engine's: literal counts, columnar json aggregations, the newest lines.
go test -pgo=off -run '^$' -bench Queries -benchtime=2s -cpuprofile "$dir/query.prof" ./internal/query/ >/dev/null
if [ -n "${SLUICE_CORPUS:-}" ]; then
	go test -pgo=off -run '^$' -bench Corpus -benchtime=3x -cpuprofile "$dir/corpus.prof" ./internal/parse/json/ >/dev/null
fi
go tool pprof -proto "$dir"/*.prof >cmd/sluice/default.pgo
echo "wrote cmd/sluice/default.pgo ($(wc -c <cmd/sluice/default.pgo) bytes)"
