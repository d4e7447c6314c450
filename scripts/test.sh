#!/usr/bin/env bash
# Runs every test of the repository, from any working directory, on a fresh
# machine too (Debian 12: what is missing is installed, see below):
#   1. installs the npm packages of the TypeScript SDK client (interop/ts)
#      with npm ci, only when package-lock.json or Node changed since the
#      last install;
#   1b. gofmt -l, go vet and staticcheck (pinned, honnef.co/go/tools) in
#      every module, the nested ones too; staticcheck.conf says what is off;
#   2. go test -race ./... in the root module (app/cmd/agentmcp's tests run
#      Debian's prometheus against the binary; the docs test: README.md
#      and docs/*.md checked against the binary, their runnable blocks run
#      with curl and socat; the command sandbox's tests run bubblewrap,
#      installed from Debian's bubblewrap package; the PostgreSQL store's
#      tests run clusters of their own with Debian's postgresql server
#      binaries, AGENTMCP_REQUIRE_POSTGRES=1 making a missing one a
#      failure, not a skip);
#   2b. the security tests again as an unprivileged user: their test
#      binaries built as root (go test -c) and run under setpriv as
#      agentmcp-test (scripts/lib.sh need_test_user), with HOME, TMPDIR and
#      GOCACHE in a directory that user owns (skipped when not run as root:
#      then step 2 already ran unprivileged);
#   3. go test -race -count=1 ./... in interop/, a nested module that ./...
#      does not enter (it builds the agentmcp binary and drives it with the official
#      Go and TypeScript MCP SDK clients);
#   4. go vet and go test -race ./... in otel/, the nested OpenTelemetry
#      module (the tracer, checked with the SDK's in-memory exporter);
#   5. go vet and go test -race ./... in examples/mysession, a host's own
#      module over the exported packages only;
#   6. go vet and go test -race -count=1 ./... in bench/, the nested benchmark
#      module: its smoke mode, no timing (every server the benchmarks
#      measure, agentmcp's and its peers', each in a process of its own,
#      answers correctly on every transport and wire);
#   7. the official MCP conformance suite, 2025-11-25 and 2026-07-28 legs
#      and the tasks extension's scenarios, against the loopback host, then
#      again against two loopback replicas sharing one PostgreSQL
#      (conformance/run.sh installs Node 22 and the suite from npm itself);
#   8. the end-to-end test of the remote host: oauth2-mock-server over HTTPS,
#      nginx as the TLS proxy, the TypeScript SDK client (e2e/run.sh);
#   9. the end-to-end test of replicas: two serve remote replicas on one
#      PostgreSQL (internal/pgtest's) behind nginx round-robin, a session
#      whose every request lands on the other replica, then kill -9 of one
#      mid-task (e2e/replicas.sh).
#  10. go vet and go test -count=1 ./... in browser/, the nested module of
#       the turn view's browser test: Debian's chromium headless (installed
#       with scripts/lib.sh need_chromium) driven by chromedp, with web/'s
#       npm packages (npm ci in web/, only when its package-lock.json or
#       Node changed): the ext-apps host side and axe-core, and esbuild,
#       with which the test also checks that the committed view
#       (adapters/agent/view/turn.html) is what web/ builds.
# Needs Go 1.26 or later (on PATH or in /usr/local/go/bin). Installs, with
# scripts/lib.sh: gcc and libc6-dev for the race detector, prometheus for
# the metrics test, curl and socat for the docs test, postgresql for the
# PostgreSQL store's tests, npm, and the Debian
# packages e2e/run.sh needs, with
# apt-get when run as root (otherwise it stops with one line naming the
# package); Node 22 from npm into
# scripts/node when the machine's node is missing or older than 20 (Debian
# 12's is 18), put first on PATH for the whole run.
# Prints one line per step, with its result and time (the conformance step
# adds one line per leg, the tasks leg included: passed, baselined,
# unexpected); every step's full
# output goes to a log file named on the first line (AGENTMCP_TEST_LOG
# chooses it). Stops at the first failure, printing the last 80 lines of
# that step's output (STEP_TAIL_LINES). Extra arguments go to the six go
# test runs, e.g. scripts/test.sh -count=1 -v.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ts="$repo/interop/ts"
lib_name="scripts/test.sh"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

tools() {
	export PATH="$PATH:/usr/local/go/bin"
	command -v go >/dev/null || die "go not found in PATH or /usr/local/go/bin (Go 1.26 or later)"
	need_cmd gcc gcc libc6-dev # go test -race needs cgo
	need_cmd prometheus prometheus # app/cmd/agentmcp's metrics test scrapes the binary with it
	need_cmd curl curl   # the docs test runs the guides' runnable blocks (docs/http.md, docs/operating.md)
	need_cmd socat socat # and docs/http.md's Unix-socket client
	need_cmd bwrap bubblewrap      # run_command's default sandbox, which the sandbox tests run
	need_postgres                  # the PostgreSQL store's tests run their own clusters (internal/pgtest)
	export AGENTMCP_REQUIRE_POSTGRES=1 # so they fail, never skip, should it go missing
	need_node
	echo "$(go version); gcc $(gcc -dumpversion); $(prometheus --version 2>&1 | head -n 1); $(bwrap --version); postgres $("$(compgen -G '/usr/lib/postgresql/*/bin/postgres' | sort -V | tail -n 1)" --version | awk '{print $3}'); node $(node --version) ($(command -v node)); npm $(npm --version)" | tee /dev/fd/3
}

# npm ci wipes and reinstalls node_modules, so it runs only when the lock or
# the Node version changed since the last install (recorded in a stamp).
npm_packages() {
	local dir="$1" stamp="$1/node_modules/.agentmcp-installed" want
	want="$(node --version) $(cksum <"$dir/package-lock.json")"
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		echo "up to date ($(node --version), package-lock.json unchanged)"
	else
		(cd "$dir" && npm ci --no-audit --no-fund)
		printf '%s\n' "$want" >"$stamp"
	fi
}
ts_packages() { npm_packages "$ts"; }

# The turn view's browser test (browser/, a module of its own so the main
# module never depends on chromedp): chromium from Debian, web/'s npm
# packages (build time only: nothing of them ships but the committed view).
browser_tests() {
	need_chromium
	npm_packages "$repo/web"
	echo "$(chromium --version 2>/dev/null)" | tee /dev/fd/3
	(cd "$repo/browser" && go vet ./... && go test -count=1 "$@" ./...)
}

# The security tests (the command sandbox and its launcher, the state
# directory's owner, the workspace's resource and subscription refusals) once more as an unprivileged user, each package's
# test binary built as root and run under setpriv in a directory of that
# user's: what a sandbox stops must not depend on running as root.
security_tests=(
	"app:TestSandbox|TestServeStdioAgentTools|TestServeCommandFlags|TestStateDirOwner|TestResource"
	"adapters/landlock:."
	"adapters/bubblewrap:."
	"adapters/workspace:TestRunCommand|TestResource|TestSubscri"
	"adapters/sqlite:TestOpenRefuses"
	"internal/pgtest:." # as anyone but root, the test cluster runs as that user
)
unprivileged() {
	if [[ "$(id -u)" != 0 ]]; then
		echo "not root: step 2 already ran every test as uid $(id -u)" | tee /dev/fd/3
		return 0
	fi
	need_cmd setpriv util-linux
	local u dir entry pkg run
	u="$(need_test_user)"
	dir="$(mktemp -d /var/tmp/agentmcp-unprivileged.XXXXXX)"
	mkdir -p "$dir/bin" "$dir/home" "$dir/tmp" "$dir/gocache"
	for entry in "${security_tests[@]}"; do
		pkg="${entry%%:*}"
		(cd "$repo" && go test -c -o "$dir/bin/${pkg//\//_}.test" "./$pkg")
	done
	chown -R "$u:" "$dir"
	chmod 0755 "$dir"
	for entry in "${security_tests[@]}"; do
		pkg="${entry%%:*}" run="${entry#*:}"
		echo "==> ./$pkg -test.run '$run' as $u"
		(cd "$dir/home" && setpriv --reuid="$u" --regid="$u" --clear-groups \
			env HOME="$dir/home" TMPDIR="$dir/tmp" GOCACHE="$dir/gocache" XDG_RUNTIME_DIR= \
			"$dir/bin/${pkg//\//_}.test" -test.run "$run" -test.count=1 -test.v) ||
			{ rm -rf "$dir"; return 1; }
	done
	rm -rf "$dir"
	echo "as $u (uid $(id -u "$u")): ${#security_tests[@]} packages' security tests passed" | tee /dev/fd/3
}

# The seeds already ran as tests; this explores a little past them on every
# run. A local campaign is FUZZTIME=1000000x bash scripts/fuzz.sh. A count,
# not a duration: Go 1.26's fuzzing coordinator can fail a target with a
# bare "context deadline exceeded", nothing found, when a duration -fuzztime
# ends while a worker is busy (go.dev/issue/75804, fixed in Go 1.27); a
# count has no deadline to race.
fuzz() { FUZZTIME="${FUZZTIME:-10000x}" FUZZMINIMIZE="${FUZZMINIMIZE:-1s}" bash "$repo/scripts/fuzz.sh"; }

# gofmt, go vet and staticcheck in every module (the nested ones are not in
# the root's ./...). staticcheck is pinned: a new release's new checks
# would fail a clean checkout that passed yesterday. staticcheck.conf at
# the root says which default check is off and why; a finding kept on
# purpose carries //lint:ignore with its reason.
staticcheck_version=v0.8.2
lint() {
	local bin m unformatted
	bin="$(mktemp -d "${TMPDIR:-/tmp}/agentmcp-staticcheck.XXXXXX")"
	GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
	for m in "${modules[@]}"; do
		echo "==> $m"
		unformatted="$(cd "$repo/$m" && gofmt -l .)"
		[[ -z "$unformatted" ]] || { echo "not gofmt'ed: $unformatted"; rm -rf "$bin"; return 1; }
		(cd "$repo/$m" && go vet ./... && "$bin/staticcheck" ./...) || { rm -rf "$bin"; return 1; }
	done
	rm -rf "$bin"
	echo "gofmt, go vet, staticcheck $staticcheck_version: clean in ${#modules[@]} modules" | tee /dev/fd/3
}
modules=(. interop otel examples/mysession bench browser)

# -count=1 in the nested modules: their tests build and run binaries that
# go test's result cache cannot see, so a cached pass could hide a change.
conformance() {
	bash "$repo/conformance/run.sh"
	grep -E '^conformance ([0-9-]+|tasks)( replicas)?: .* unexpected$' "$steps_log" | tail -n 6 >&3
}

steps_begin "${AGENTMCP_TEST_LOG:-}"
run_step "tools: go, gcc, prometheus, node, npm" tools
run_step "npm packages for the TypeScript SDK client (interop/ts)" ts_packages
run_step "gofmt, go vet, staticcheck (every module)" lint
run_step "go test -race ./... (root module)" bash -c 'cd "$1" && shift && go test -race "$@" ./...' _ "$repo" "$@"
run_step "security tests as an unprivileged user (setpriv)" unprivileged
run_step "every fuzz target, briefly (FUZZTIME=${FUZZTIME:-10000x})" fuzz
run_step "go test -race -count=1 ./... (interop module)" bash -c 'cd "$1/interop" && shift && go test -race -count=1 "$@" ./...' _ "$repo" "$@"
# The OpenTelemetry instrumentation is a module of its own, so the main
# module depends on no OpenTelemetry; the root module's ./... does not enter it.
run_step "go vet, go test -race ./... (otel module)" bash -c 'cd "$1/otel" && shift && go vet ./... && go test -race "$@" ./...' _ "$repo" "$@"
# examples/mysession: a host's own module importing only exported packages
# (its go.mod replaces the root module with this checkout): its session
# passes ports/porttest, its own carrier the carrier kit, its transcript replays.
run_step "go vet, go test -race ./... (examples/mysession module)" bash -c 'cd "$1/examples/mysession" && shift && go vet ./... && go test -race "$@" ./...' _ "$repo" "$@"
run_step "go vet, go test -race -count=1 ./... (bench module, smoke mode)" bash -c 'cd "$1/bench" && shift && go vet ./... && go test -race -count=1 "$@" ./...' _ "$repo" "$@"
run_step "official MCP conformance suite, both legs and the tasks scenarios" conformance
run_step "end to end: remote host, nginx, a real authorization server" bash "$repo/e2e/run.sh"
run_step "end to end: two replicas on one PostgreSQL behind nginx, kill -9 of one" bash "$repo/e2e/replicas.sh"
run_step "go vet, go test -count=1 ./... (browser module: the turn view in chromium)" browser_tests "$@"
echo "all tests passed"
