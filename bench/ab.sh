#!/usr/bin/env bash
# ab.sh: one LogQL question's engine CPU at two commits, alternated.
#
#   bench/ab.sh OLD_REV DATA_DIR 'QUERY' [ROUNDS]
#
# Builds bench/querycpu at OLD_REV (in a throwaway worktree, with this
# tree's querycpu source: it uses only the store's and the engine's public
# calls) and at the working tree, copies DATA_DIR once (querycpu takes the
# store's lock), and runs the two binaries in turn ROUNDS times (default
# 3), each run timing the question ten times after two untimed ones. Read
# the medians side by side: on this shared machine a single HTTP-timed run
# moves by 10-20%, a median of process CPU by a few percent.
set -euo pipefail
old=${1:?old revision}; data=${2:?store directory}; q=${3:?query}; rounds=${4:-3}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add -q --detach "$work/old" "$old"
mkdir -p "$work/old/bench/querycpu"
cp "$root/bench/querycpu/main.go" "$work/old/bench/querycpu/main.go"
(cd "$work/old" && go build -o "$work/querycpu-old" ./bench/querycpu)
(cd "$root" && go build -o "$work/querycpu-new" ./bench/querycpu)
cp -r "$data" "$work/data"
rm -f "$work/data/LOCK"
for r in $(seq "$rounds"); do
	for side in old new; do
		printf '%s round %d: ' "$side" "$r"
		"$work/querycpu-$side" -data "$work/data" -query "$q"
	done
done
