#!/usr/bin/env bash
# Runs every fuzz target of the root module in turn with go test -fuzz, each
# for FUZZTIME (default 1000000x: a million executions; or a duration such
# as 5m), and prints each target's last progress line. scripts/test.sh (so
# CI) runs it with FUZZTIME=10000x per target (a count: with Go 1.26 a
# duration can end in a spurious "context deadline exceeded",
# go.dev/issue/75804); go test alone runs every target's seed corpus as an
# ordinary test.
#
# -fuzzminimizetime is bounded (FUZZMINIMIZE, default 5s) because the
# fuzzing engine minimizes every input that finds new coverage, a worker
# reports no executions until its minimization ends, and minimizing an
# input of n bytes runs it up to n²/2 times: with the default 60 s, inputs
# of a few KB (the whole-transcript seeds) keep workers busy, showing
# "0/sec", for up to a minute at a time.
#
# Usage: scripts/fuzz.sh [target regexp]   (e.g. scripts/fuzz.sh HTTP)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$PATH:/usr/local/go/bin"
fuzztime="${FUZZTIME:-1000000x}"
minimize="${FUZZMINIMIZE:-5s}"
filter="${1:-.}"
cd "$repo"
# Every "func FuzzX(" in a _test.go file, with its package directory.
grep -rl --include='*_test.go' '^func Fuzz' adapters app domain engine internal 2>/dev/null | sort | while read -r file; do
	dir="./$(dirname "$file")"
	grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r target; do
		[[ "$target" =~ $filter ]] || continue
		printf '==> %s %s (-fuzztime=%s)\n' "$dir" "$target" "$fuzztime"
		out="$(go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime="$minimize" "$dir" 2>&1)" || {
			printf '%s\n' "$out"
			exit 1
		}
		printf '%s\n' "$out" | grep 'execs:' | tail -1
	done
done
